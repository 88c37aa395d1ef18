"""Guardrails and tool hooks in a run: what they decided is part of the record.

A hook is code that sits between the agent and its tools or its model and decides: let a
call through, block it, rewrite its arguments, or add something. ``rollout.hook(fn)``
wraps any such callable; each call of the wrapper is recorded as a ``tool.hook.mutation``
event: the hook's name, the arguments it was given (``before``), what it returned
(``after``), the ``action`` read from that, and the ``reason`` when it blocked. An OpenAI
Agents SDK guardrail (input, output or tool guardrail) wrapped the same way is recorded as a
``guardrail.checked`` event instead: its kind, ``allow`` or ``block`` (the tripwire), and
what it said.

The action of a plain hook: ``block`` when it raised (the reason is the error, which is
raised on) or returned ``False``; ``allow`` when it returned ``None``, ``True`` or its
arguments unchanged; ``modify`` when it returned something else; a mapping with an
``action`` key of its own (``allow``, ``block``, ``modify``, ``inject``) says it outright.

In a dry replay the recorded decision is served and the hook does not run (a guardrail that
asks a model would otherwise reach the network): the wrapper returns what the hook returned,
or raises its error again. A hook the recording holds no decision for is a replay
divergence, as an unrecorded tool call is. In full replay, record and live mode the hook
runs. A decision that differs from the golden's is a ``guardrail_mismatch``, attributed to
the harness (docs/agents.md).
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections import deque
from collections.abc import Mapping
from typing import Any, Final

from ..diff.divergence import DivergenceKind, ReplayDivergenceError
from ..errors import RolloutError
from ..format.events import GUARDRAIL_CHECKED, TOOL_HOOK_MUTATION
from ..format.jsonable import json_copy
from ..replay.mode import Mode
from ..replay.tool_errors import rebuild_error
from ..safety.sanitize import sanitize
from .engine import Engine
from .exceptions import tool_error_data

__all__ = ["Hooks"]

_MISSING: Final[Any] = object()

#: The actions a hook may name itself.
ACTIONS: Final = frozenset({"allow", "block", "modify", "inject"})


class Hooks:
    """The hooks and guardrails of one run: recorded live, or served from its golden."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._golden: dict[tuple[str, str], deque[Mapping[str, Any]]] | None = None
        self._served: dict[tuple[str, str], int] = {}

    @property
    def served(self) -> bool:
        """Whether decisions are served from the golden (dry replay)."""
        return self._engine.mode is Mode.DRY and self._engine.golden is not None

    def wrap(self, hook: Any, name: str | None = None) -> Any:
        """``hook`` recorded: an Agents SDK guardrail as a copy, any callable as a wrapper."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        guardrail = _guardrail_kind(hook)
        if guardrail is not None:
            return self._wrap_guardrail(hook, guardrail, name)
        if not callable(hook):
            raise RolloutError(f"rollout.hook() takes a callable or a guardrail, got {hook!r}")
        hook_name = name or getattr(hook, "__name__", None) or type(hook).__name__
        if inspect.iscoroutinefunction(hook):

            @functools.wraps(hook)
            async def ahooked(*args: Any, **kwargs: Any) -> Any:
                before = _arguments(args, kwargs)
                recorded = self._recorded(TOOL_HOOK_MUTATION, hook_name, before)
                if recorded is not None:
                    return _served(recorded)
                try:
                    result = await hook(*args, **kwargs)
                except Exception as exc:
                    self._record_raised(hook_name, before, exc)
                    raise
                self._record_returned(hook_name, before, result)
                return result

            return ahooked

        @functools.wraps(hook)
        def hooked(*args: Any, **kwargs: Any) -> Any:
            before = _arguments(args, kwargs)
            recorded = self._recorded(TOOL_HOOK_MUTATION, hook_name, before)
            if recorded is not None:
                return _served(recorded)
            try:
                result = hook(*args, **kwargs)
            except Exception as exc:
                self._record_raised(hook_name, before, exc)
                raise
            self._record_returned(hook_name, before, result)
            return result

        return hooked

    # -- plain hooks -------------------------------------------------------------------

    def _record_returned(self, name: str, before: Any, result: Any) -> None:
        after = json_copy(result)
        self._record(
            TOOL_HOOK_MUTATION,
            {"name": name, "action": _action(before, after), "before": before, "after": after},
        )

    def _record_raised(self, name: str, before: Any, exc: BaseException) -> None:
        error = tool_error_data(exc)
        data = {"name": name, "action": "block", "before": before, "after": None}
        self._record(TOOL_HOOK_MUTATION, {**data, "reason": error["message"], "error": error})

    # -- guardrails --------------------------------------------------------------------

    def _wrap_guardrail(self, guardrail: Any, kind: str, name: str | None) -> Any:
        function = guardrail.guardrail_function
        guard_name = name or _guardrail_name(guardrail)

        @functools.wraps(function)
        async def checked(*args: Any, **kwargs: Any) -> Any:
            recorded = self._recorded(GUARDRAIL_CHECKED, guard_name)
            if recorded is not None:
                return _guardrail_output(guardrail, recorded)
            result = function(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            self._record(GUARDRAIL_CHECKED, _guardrail_data(guard_name, kind, result))
            return result

        wrapped = copy.copy(guardrail)
        wrapped.guardrail_function = checked
        if name is not None and hasattr(wrapped, "name"):
            wrapped.name = name
        return wrapped

    # -- recording and serving ---------------------------------------------------------

    def _record(self, event_type: str, data: dict[str, Any]) -> None:
        engine = self._engine
        engine.ensure_started()
        # A decision made against a golden starts its replay: the run is compared with it
        # however the test ends (a guardrail that now blocks may end it before any turn).
        _ = engine.replay
        engine.record(event_type, data)

    def _recorded(
        self, event_type: str, name: str, before: Any = _MISSING
    ) -> Mapping[str, Any] | None:
        """The golden's next decision of this hook (dry replay), recorded again with the
        arguments the hook was given this time; ``None`` when the hook is to run."""
        if not self.served:
            return None
        if self._golden is None:
            self._golden = {}
            for event in self._engine.require_golden().events:
                if event.type in (GUARDRAIL_CHECKED, TOOL_HOOK_MUTATION):
                    key = (event.type, str(event.data.get("name")))
                    self._golden.setdefault(key, deque()).append(event.data)
        key = (event_type, name)
        served = self._served[key] = self._served.get(key, 0) + 1
        queue = self._golden.get(key)
        if not queue:
            raise self._diverge(event_type, name, served)
        data = queue.popleft()
        again = {k: v for k, v in data.items() if k not in ("step", "agent")}
        if before is not _MISSING:
            again["before"] = before
        self._record(event_type, again)
        return data

    def _diverge(self, event_type: str, name: str, served: int) -> ReplayDivergenceError:
        engine = self._engine
        what = "guardrail" if event_type == GUARDRAIL_CHECKED else "hook"
        detail = (
            f"{what} {sanitize(repr(name))} ran (check #{served}), and the recording holds "
            f"{served - 1} decision(s) of it"
        )
        replay = engine.replay
        assert replay is not None  # only a replay diverges
        error = replay.diverge(DivergenceKind.GUARDRAIL_MISMATCH, engine.recorder.step, detail)
        engine.divergence_event(error)
        return error


def _served(recorded: Mapping[str, Any]) -> Any:
    """What a hook returned when recorded (a copy), or the error it raised, raised again."""
    error = recorded.get("error")
    if isinstance(error, Mapping):
        raise rebuild_error(error)
    return json_copy(recorded.get("after"))


def _arguments(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """What a hook was given, as JSON: its one argument, else its arguments by kind."""
    if len(args) == 1 and not kwargs:
        return json_copy(args[0])
    if not args:
        return json_copy(dict(kwargs))
    return json_copy({"args": list(args), "kwargs": dict(kwargs)})


def _action(before: Any, after: Any) -> str:
    if isinstance(after, Mapping) and after.get("action") in ACTIONS:
        return str(after["action"])
    if after is False:
        return "block"
    if after is None or after is True or after == before:
        return "allow"
    return "modify"


def _guardrail_kind(hook: Any) -> str | None:
    """``input``, ``output`` or ``tool``: the kind of an Agents SDK guardrail, by its class."""
    if not callable(getattr(hook, "guardrail_function", None)):
        return None
    names = [cls.__name__ for cls in type(hook).__mro__]
    for cls_name, kind in (
        ("ToolInputGuardrail", "tool"),
        ("ToolOutputGuardrail", "tool"),
        ("InputGuardrail", "input"),
        ("OutputGuardrail", "output"),
    ):
        if cls_name in names:
            return kind
    return None


def _guardrail_name(guardrail: Any) -> str:
    get_name = getattr(guardrail, "get_name", None)
    if callable(get_name):
        try:
            return str(get_name())
        except Exception:  # a name that cannot be read: the function's
            pass
    name = getattr(guardrail, "name", None)
    return name if isinstance(name, str) else guardrail.guardrail_function.__name__


def _guardrail_data(name: str, kind: str, result: Any) -> dict[str, Any]:
    """``guardrail.checked`` of an Agents SDK guardrail's output: the tripwire blocks."""
    triggered = bool(getattr(result, "tripwire_triggered", False))
    behavior = getattr(result, "behavior", None)  # a tool guardrail's decision
    if isinstance(behavior, Mapping):
        action = {"allow": "allow", "reject_content": "block", "raise_exception": "block"}.get(
            str(behavior.get("type")), "allow"
        )
    else:
        action = "block" if triggered else "allow"
    info = json_copy(getattr(result, "output_info", None))
    return {
        "name": name,
        "kind": kind,
        "action": action,
        "reason": info if action == "block" else None,
        "output": json_copy(_output_fields(result)),
    }


def _output_fields(result: Any) -> Any:
    dump = getattr(result, "__dict__", None)
    return dict(dump) if isinstance(dump, dict) else result


def _guardrail_output(guardrail: Any, recorded: Mapping[str, Any]) -> Any:
    """The recorded output, rebuilt as the SDK's output class (the class of the guardrail's
    function's result: ``GuardrailFunctionOutput``, or a tool guardrail's)."""
    fields = recorded.get("output")
    module = import_agents()
    names = ("ToolGuardrailFunctionOutput",) if recorded.get("kind") == "tool" else ()
    for cls_name in (*names, "GuardrailFunctionOutput"):
        cls = getattr(module, cls_name, None)
        if cls is not None and isinstance(fields, Mapping):
            try:
                return cls(**fields)
            except TypeError:
                continue
    raise RolloutError(
        f"the recorded decision of guardrail {sanitize(repr(recorded.get('name')))} cannot "
        "be rebuilt as the Agents SDK's output; record the golden again"
    )


def import_agents() -> Any:
    import agents  # noqa: PLC0415  (only a wrapped guardrail needs the SDK)

    return agents
