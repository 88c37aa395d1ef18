"""OpenAI Agents SDK tools: a ``FunctionTool`` (what ``@function_tool`` makes) recorded.

The SDK calls a tool through ``on_invoke_tool(context, input_json)``. The copy made here
(the SDK's own ``copy``, which rebinds the tool's invoker to the copy) has that invoker
wrapped: the call is recorded with the arguments parsed from ``input_json``, as the turn
announced them, never with the context; in replay the recorded answer is returned and the
tool does not run. The SDK's own handling stays inside: an error its failure handler turns
into a message for the model is recorded as that message.

An agent run as a tool (``Agent.as_tool``) is recorded as a call too, but always runs, in
replay as well: its own turns and tool calls are recorded, and replayed, as the inner
agent's.

Who is acting (:func:`resolver`): the agent of the innermost agent span around the caller.
The SDK opens one per agent it runs, a handed-off agent's and an agent-as-tool's included,
and keeps it open, as the current span or under the spans of its turns and tool calls,
whether or not tracing is on.
"""

from __future__ import annotations

import copy
import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from importlib import import_module
from typing import Any, Final

import orjson

from ..tools import ToolRecorder, acall_recorded
from .accepted import unsupported

__all__ = ["resolver", "wrap"]

#: How many spans up from the current one an agent span is looked for (a turn's or a tool
#: call's span sits right under its agent's; custom spans add a few).
_MAX_DEPTH: Final = 32


def _arguments(input_json: Any) -> dict[str, Any]:
    """The call's arguments as the model sent them: the parsed JSON object."""
    try:
        parsed = orjson.loads(input_json or "{}")
    except (orjson.JSONDecodeError, TypeError):
        return {"input": input_json}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


class RecordedInvoker:
    """A ``FunctionTool``'s invoker whose calls are recorded; what else the SDK asks of the
    invoker (argument preparation for approvals, its markers) is the wrapped one's."""

    def __init__(
        self, recorder: ToolRecorder, name: str, inner: Callable[[Any, str], Awaitable[Any]]
    ) -> None:
        self._recorder = recorder
        self._name = name
        self._inner = inner

    async def __call__(self, context: Any, input_json: str) -> Any:
        inner = self._inner

        def run() -> Awaitable[Any]:
            return inner(context, input_json)

        return await acall_recorded(self._recorder, self._name, _arguments(input_json), run)

    def __agents_bind_function_tool__(self, tool: Any) -> RecordedInvoker:
        """The SDK binds an invoker to each copy of its tool: bind the wrapped one."""
        bind = getattr(self._inner, "__agents_bind_function_tool__", None)
        inner = bind(tool) if callable(bind) else self._inner
        return self if inner is self._inner else type(self)(self._recorder, self._name, inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class AgentToolInvoker(RecordedInvoker):
    """The invoker of an agent run as a tool: the call is recorded, and the agent runs in
    replay too (a recorded answer would skip its turns, which the golden holds and replay
    serves)."""

    async def __call__(self, context: Any, input_json: str) -> Any:
        recorder, name = self._recorder, self._name
        call_id, _, _ = recorder.tool_started(name, _arguments(input_json))
        t0 = time.perf_counter()
        try:
            result = await self._inner(context, input_json)
        except Exception as exc:
            recorder.tool_failed(name, call_id, t0, exc)
            raise
        recorder.tool_returned(name, call_id, t0, result)
        return result


def wrap(recorder: ToolRecorder, tool: Any) -> tuple[Any, list[str]]:
    """A copy of a ``FunctionTool`` whose calls are recorded, and its name."""
    if not callable(getattr(tool, "on_invoke_tool", None)) or not hasattr(tool, "name"):
        raise unsupported(tool, "Agents SDK")
    wrapped = copy.copy(tool)
    # The SDK marks the tools Agent.as_tool makes.
    invoker = (
        AgentToolInvoker if getattr(tool, "_is_agent_tool", False) is True else RecordedInvoker
    )
    wrapped.on_invoke_tool = invoker(recorder, tool.name, wrapped.on_invoke_tool)
    function = _function_of(tool)
    if function is not None:
        recorder.expect_return(tool.name, function)
    return wrapped, [tool.name]


def _function_of(tool: Any) -> Any:
    """The function a ``@function_tool`` was made from, whose return annotation says which
    classes replay may rebuild its results as; ``None`` where the SDK does not keep it
    where this looks (a tool made by hand, another SDK release): its typed results then
    come back as their recorded JSON, with a warning."""
    invoke = getattr(getattr(tool, "on_invoke_tool", None), "_invoke_tool_impl", None)
    if not inspect.isfunction(invoke):
        return None
    try:
        found = inspect.getclosurevars(invoke).nonlocals.get("the_func")
    except (TypeError, ValueError):
        return None
    return found if callable(found) else None


def _agent_of(span: Any, agent_data: type) -> str | None:
    """The name of the agent span that is ``span`` or was current before it, and so on up
    (what each span keeps to restore when it ends)."""
    for _ in range(_MAX_DEPTH):
        data = span.span_data
        if isinstance(data, agent_data):
            name: Any = getattr(data, "name", None)
            return name if isinstance(name, str) else None
        token = getattr(span, "_prev_span_token", None)
        if token is None:
            return None
        span = token.old_value
        if span is None or span is token.MISSING:
            return None
    return None


@functools.cache
def resolver() -> Callable[[], str | None] | None:
    """Who is acting in an Agents SDK run (``None``: the SDK has no tracing spans)."""
    try:
        tracing = import_module("agents.tracing")
        agent_data: type = tracing.AgentSpanData
        current_span: Callable[[], Any] = tracing.get_current_span
    except (ImportError, AttributeError):
        return None
    # The context variable behind get_current_span(), read at the cost of one lookup on
    # every event outside an agent run; the public function where a release moved it.
    var = getattr(getattr(tracing, "scope", None), "_current_span", None)
    if isinstance(var, ContextVar):
        current_span = var.get

    def acting() -> str | None:
        try:
            span = current_span()
            return None if span is None else _agent_of(span, agent_data)
        except Exception:  # naming the agent never breaks the run
            return None

    return acting
