"""OpenAI Agents SDK tools: a ``FunctionTool`` (what ``@function_tool`` makes) recorded.

The SDK calls a tool through ``on_invoke_tool(context, input_json)``. The copy made here
(the SDK's own ``copy``, which rebinds the tool's invoker to the copy) has that invoker
wrapped: the call is recorded with the arguments parsed from ``input_json``, as the turn
announced them, never with the context; in replay the recorded answer is returned and the
tool does not run. The SDK's own handling stays inside: an error its failure handler turns
into a message for the model is recorded as that message.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from ..tools import ToolRecorder, acall_recorded
from .accepted import unsupported

__all__ = ["wrap"]


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
        return self if inner is self._inner else RecordedInvoker(self._recorder, self._name, inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def wrap(recorder: ToolRecorder, tool: Any) -> tuple[Any, list[str]]:
    """A copy of a ``FunctionTool`` whose calls are recorded, and its name."""
    if not callable(getattr(tool, "on_invoke_tool", None)) or not hasattr(tool, "name"):
        raise unsupported(tool, "Agents SDK")
    wrapped = copy.copy(tool)
    wrapped.on_invoke_tool = RecordedInvoker(recorder, tool.name, wrapped.on_invoke_tool)
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
