"""The analyzers that read tool calls: repeated identical calls (``antipatterns``) and the
calls that led up to a failure (``error_chain``), plus :func:`find_antipatterns` for the
assertions made on a finished run. See docs/analyzers.md.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..format.events import (
    ERROR_CONTEXT,
    RUN_FAILED,
    TOOL_ANTIPATTERN,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    Event,
)
from ..format.jsonable import json_copy as plain
from .handlers import Analyzer, Emitted, Handler
from .values import canonical_or_none, whole

__all__ = ["Antipattern", "ErrorChain", "RepeatedCalls", "find_antipatterns"]


@dataclass(frozen=True, slots=True)
class Antipattern:
    """A tool called with the same canonical arguments ``count`` times, at ``steps``."""

    name: str
    arguments: Any
    count: int
    steps: tuple[int, ...]


class _Repeats:
    """Counts tool calls by (name, canonical arguments); knows when a pair reaches the
    threshold."""

    __slots__ = ("_pairs", "reached", "threshold")

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        # (name, canonical arguments) -> [arguments of the first call, steps of the calls]
        self._pairs: dict[tuple[str, bytes], tuple[Any, list[int]]] = {}
        self.reached: list[tuple[str, bytes]] = []  # in the order they reached the threshold

    def add(self, data: Mapping[str, Any], step: int) -> tuple[str, Any, list[int]] | None:
        """Count a ``tool.call.started``; the pair and its steps when it just reached the
        threshold."""
        name = data.get("name")
        if not isinstance(name, str):
            return None
        arguments = data.get("arguments")
        key = canonical_or_none(arguments)
        if key is None:
            return None
        pair = (name, key)
        found = self._pairs.get(pair)
        if found is None:
            found = self._pairs[pair] = (plain(arguments), [])
        steps = found[1]
        steps.append(step)
        if len(steps) != self.threshold:
            return None
        self.reached.append(pair)
        return name, found[0], list(steps)

    def antipatterns(self) -> list[Antipattern]:
        found = []
        for pair in self.reached:
            arguments, steps = self._pairs[pair]
            found.append(Antipattern(pair[0], arguments, len(steps), tuple(steps)))
        return found


def find_antipatterns(events: Sequence[Event], threshold: int = 3) -> list[Antipattern]:
    """The tools a finished run called with the same canonical arguments ``threshold`` or
    more times (``tool.call.started`` events), in the order each reached ``threshold``.
    ``count`` and ``steps`` cover every such call of the run."""
    if not whole(threshold, 2):
        raise ValueError(f"threshold must be a whole number of 2 or more, got {threshold!r}")
    repeats = _Repeats(threshold)
    for event in events:
        if event.type == TOOL_CALL_STARTED and isinstance(event.data, Mapping):
            repeats.add(event.data, event.step)
    return repeats.antipatterns()


class RepeatedCalls(Analyzer):
    """``antipatterns``: ``tool.antipattern`` after the call that makes a tool with the same
    canonical arguments reach the threshold (once per tool and arguments)."""

    __slots__ = ("_repeats",)

    def __init__(self, threshold: int) -> None:
        self._repeats = _Repeats(threshold)

    def after_handlers(self) -> Mapping[str, Handler]:
        return {TOOL_CALL_STARTED: self._call_started}

    def _call_started(self, data: Mapping[str, Any], step: int) -> Emitted:
        reached = self._repeats.add(data, step)
        if reached is None:
            return []
        name, arguments, steps = reached
        found = {"name": name, "arguments": plain(arguments), "count": self._repeats.threshold}
        return [(TOOL_ANTIPATTERN, {**found, "steps": steps})]


class _Call:
    """A tool call as ``error.context`` lists it."""

    __slots__ = ("arguments", "error", "id", "name", "step")

    def __init__(self, data: Mapping[str, Any], step: int) -> None:
        self.step = step
        self.name = plain(data.get("name"))
        self.arguments = plain(data.get("arguments"))
        self.id = _call_id(data.get("call_id"))
        self.error: Any = None

    def as_data(self) -> dict[str, Any]:
        data = {"step": self.step, "name": self.name, "arguments": self.arguments}
        if self.error is not None:
            data["error"] = self.error
        return data


def _call_id(value: Any) -> bytes | None:
    return None if value is None else canonical_or_none(value)


class ErrorChain(Analyzer):
    """``error_chain``: ``error.context`` before ``run.failed``, with the error, its cause
    chain and the last ``calls`` tool calls with their errors."""

    __slots__ = ("_calls", "_keep", "_open", "_open_ids", "_serial")

    def __init__(self, calls: int) -> None:
        self._keep = calls
        self._calls: deque[_Call] = deque(maxlen=calls)  # the last calls
        # the calls still waiting for their completion, in call order, and by call id
        self._open: dict[int, _Call] = {}
        self._open_ids: dict[bytes, list[int]] = {}
        self._serial = 0

    def before_handlers(self) -> Mapping[str, Handler]:
        return {RUN_FAILED: self._error_context}

    def after_handlers(self) -> Mapping[str, Handler]:
        return {TOOL_CALL_STARTED: self._call_started, TOOL_CALL_COMPLETED: self._call_completed}

    def _call_started(self, data: Mapping[str, Any], step: int) -> Emitted:
        if self._keep == 0:
            return []
        call = _Call(data, step)
        self._calls.append(call)
        serial = self._serial = self._serial + 1
        self._open[serial] = call
        if call.id is not None:
            self._open_ids.setdefault(call.id, []).append(serial)
        return []

    def _call_completed(self, data: Mapping[str, Any], step: int) -> Emitted:
        serial = self._started_call(_call_id(data.get("call_id")))
        if serial is None:
            return []
        call = self._open.pop(serial)
        if call.id is not None:
            waiting = self._open_ids[call.id]
            waiting.remove(serial)
            if not waiting:
                del self._open_ids[call.id]
        error = data.get("error")
        if error is not None:
            call.error = plain(error)
        return []

    def _started_call(self, call_id: bytes | None) -> int | None:
        """The open call a completion with ``call_id`` completes: the oldest open call with
        that id, else (by order) the oldest open call without an id, else the oldest."""
        waiting = None if call_id is None else self._open_ids.get(call_id)
        if waiting:
            return waiting[0]
        unnamed = next((s for s, c in self._open.items() if c.id is None), None)
        return unnamed if unnamed is not None else next(iter(self._open), None)

    def _error_context(self, data: Mapping[str, Any], step: int) -> Emitted:
        error = data.get("error")
        if not isinstance(error, Mapping):
            return []
        causes = error.get("causes")
        return [
            (
                ERROR_CONTEXT,
                {
                    "error": plain({k: v for k, v in error.items() if k != "causes"}),
                    "causes": plain(causes) if isinstance(causes, list) else [],
                    "last_tool_calls": [c.as_data() for c in self._calls],
                },
            )
        ]
