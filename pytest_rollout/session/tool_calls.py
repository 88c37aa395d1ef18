"""The tool calls of a run: recorded live, or answered from the golden in replay.

A wrapped tool (:mod:`.tools`) reports each call here: its start (which claims the call the
model turn announced, and in replay finds the recorded answer), then its end, live or
replayed. A replayed answer is rebuilt as the type the tool returned when it was recorded
(:func:`~pytest_rollout.replay.rebuild.rebuild_result`), and a recorded error is raised again
as its own class where it can be (:func:`~pytest_rollout.replay.tool_errors.rebuild_error`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import orjson

from ..diff.divergence import ReplayDivergenceError
from ..format.events import TOOL_CALL_COMPLETED, TOOL_CALL_STARTED
from ..format.jsonable import json_copy, json_default, to_json_data_or_placeholder
from ..format.recorder import Recorder
from ..format.typed import PLAIN_TYPES, type_tag_of_class
from ..replay.rebuild import RebuildHook, allowed_classes, rebuild_result
from ..replay.recorded import RecordedCall, Replay
from ..replay.tool_errors import rebuild_error
from .exceptions import error_data, tool_error_data
from .tools import AnnouncedCalls, return_annotation

__all__ = ["RunSide", "ToolCalls"]

_clock = time.perf_counter


class RunSide(Protocol):
    """What the tool calls need of the run they belong to (the engine)."""

    recorder: Recorder

    @property
    def replay(self) -> Replay | None: ...

    def ensure_started(self) -> None: ...

    def tool_before_turn(self, name: str) -> None: ...

    def record(self, event_type: str, data: Mapping[str, Any]) -> None: ...

    def record_encoded(self, event_type: str, payload: bytes) -> None: ...

    def audited(self, name: str) -> bool: ...

    def audit_action(self, action: Mapping[str, Any], *, live: bool) -> None: ...

    def divergence_event(self, error: ReplayDivergenceError) -> None: ...


class ToolCalls:
    """The calls of one run, as wrapped tools report them (see :class:`.tools.ToolRecorder`)."""

    __slots__ = (
        "_allowed",
        "_announced",
        "_audits",
        "_functions",
        "_live_only",
        "_rebuild_hook",
        "_replays",
        "_run",
        "_started",
    )

    def __init__(
        self,
        run: RunSide,
        *,
        replays: bool,
        rebuild_hook: RebuildHook | None,
        audits: bool = False,
    ) -> None:
        self._run = run
        self._replays = replays
        self._audits = audits  # whether the run keeps an audit trail
        # A call's start records its event and nothing else: no replay, no audit trail.
        self._live_only = not (replays or audits)
        self._rebuild_hook = rebuild_hook
        self._announced = AnnouncedCalls()
        self._started = False
        self._functions: dict[str, Callable[..., Any]] = {}  # each wrapped tool's function
        # The classes each tool's return annotation lets replay build, once known.
        self._allowed: dict[str, dict[str, type]] = {}

    @property
    def announced(self) -> AnnouncedCalls:
        """The calls the last model turn announced, claimed as the tools are called."""
        return self._announced

    def tool_started(self, name: str, bound: Mapping[str, Any]) -> tuple[str | None, int, Any]:
        """Record a call's start; when replaying, find its recorded answer (or raise).

        The event is encoded once (:meth:`.tools.AnnouncedCalls.started`); the plain
        arguments are read back from its bytes only for what compares or redacts them
        (replay, the audit trail)."""
        run = self._run
        if not self._started:
            run.ensure_started()
            self._started = True
            if run.recorder.step == 0:  # no model turn came first: see Engine.tool_before_turn
                run.tool_before_turn(name)
        data, payload = self._announced.started(name, bound)
        if payload is None:
            run.record(TOOL_CALL_STARTED, data)
        else:
            run.record_encoded(TOOL_CALL_STARTED, payload)
        call_id = data["call_id"]
        if self._live_only:
            return call_id, 0, None  # the step is what a replayed answer needs
        replay = run.replay if self._replays else None
        audited = self._audits and run.audited(name)
        if replay is None and not audited:
            return call_id, 0, None  # the step is what a replayed answer needs
        step = run.recorder.step
        arguments = data["arguments"] if payload is None else orjson.loads(payload)["arguments"]
        # In the audit trail only: a run's events (and so its golden) do not depend on
        # whether the trail is on.
        action = {"call_id": call_id, "step": step, "name": name, "arguments": arguments}
        audit = run.audit_action if audited else _no_audit
        if replay is None:
            audit(action, live=True)
            return call_id, step, None
        try:
            answer = replay.claim_call(step, name, arguments)
        except ReplayDivergenceError as exc:
            audit(action, live=False)
            data = {"call_id": call_id, "name": name, "error": error_data(exc), "duration_ms": 0}
            run.record(TOOL_CALL_COMPLETED, data)
            run.divergence_event(exc)
            raise
        audit(action, live=answer is None)  # a fork's call after its step runs live
        return call_id, step, answer

    def replayed_result(self, name: str, call_id: str | None, step: int, call: RecordedCall) -> Any:
        """The recorded answer of a replayed call: its output, rebuilt as the type it had,
        or its error raised again. The output is a copy: an agent that changes what its tool
        returned (sorts a list in place, adds a key) must not change the golden it is
        compared with."""
        data: dict[str, Any] = {"call_id": call_id, "name": name, "duration_ms": 0}
        if call.error:
            raised = rebuild_error(call.error)
            # As recorded, unless the agent got another class than the golden names (one
            # that would steer the test run): then what it got, so the verdict sees it.
            as_raised = tool_error_data(raised)
            same = as_raised.get("class") == call.error.get("class")
            data["error"] = call.error if same else as_raised
            self._run.record(TOOL_CALL_COMPLETED, data)
            raise raised
        data["output"] = call.output
        if call.output_type is not None:
            data["output_type"] = call.output_type
        self._run.record(TOOL_CALL_COMPLETED, data)
        output = json_copy(call.output)
        allowed = None
        if call.output_type is not None and name in self._functions:
            allowed = self._allowed.get(name)
            if allowed is None:  # worked out once a tool, when a typed result needs it
                annotation = return_annotation(self._functions[name])
                allowed = self._allowed[name] = allowed_classes(annotation)
        return rebuild_result(
            output, call.output_type, self._rebuild_hook, tool=name, allowed=allowed
        )

    def expect_return(self, name: str, fn: Callable[..., Any]) -> None:
        """Tool ``name`` is ``fn``: what it says it returns rebuilds its replayed results
        (:func:`~pytest_rollout.replay.rebuild.rebuild_result`)."""
        self._functions[name] = fn

    def tool_returned(self, name: str, call_id: str | None, t0: float, output: Any) -> None:
        """A live call's ``tool.call.completed`` with its output (and the output's type, when
        it is not plain JSON)."""
        duration_ms = int((_clock() - t0) * 1e6 + 0.5) / 1000  # _since, inline
        data: dict[str, Any] = {
            "call_id": call_id,
            "name": name,
            "duration_ms": duration_ms,
            "output": output,
        }
        cls = type(output)
        if cls not in PLAIN_TYPES:  # type_tag, inline: this is on every call's path
            data["output_type"] = type_tag_of_class(cls)
        try:  # encode_event, inline: encoded once, as the arguments are
            payload = orjson.dumps(data, default=json_default)
        except Exception:  # keys that are not strings, a value that cannot be recorded
            data["output"] = to_json_data_or_placeholder(output)
            self._run.record(TOOL_CALL_COMPLETED, data)
            return
        self._run.record_encoded(TOOL_CALL_COMPLETED, payload)

    def tool_failed(self, name: str, call_id: str | None, t0: float, error: BaseException) -> None:
        """A live call's ``tool.call.completed`` with the error it raised."""
        data: dict[str, Any] = {"call_id": call_id, "name": name, "duration_ms": _since(t0)}
        data["error"] = tool_error_data(error)
        self._run.record(TOOL_CALL_COMPLETED, data)


def _no_audit(action: Mapping[str, Any], *, live: bool) -> None:
    """What a call's action is audited with when the run keeps no audit trail."""


def _since(t0: float) -> float:
    """Milliseconds since ``t0``, to the microsecond (what ``round(ms, 3)`` gives, at a
    fraction of its cost)."""
    return int((_clock() - t0) * 1e6 + 0.5) / 1000
