"""The event model: one recorded event of an agent run, and the core vocabulary."""

from __future__ import annotations

from typing import Any, Final, NamedTuple

__all__ = [
    "ERROR_FAMILIES",
    "RUN_COMPLETED",
    "RUN_FAILED",
    "RUN_STARTED",
    "STEP_TYPE_PREFIXES",
    "TERMINAL_TYPES",
    "Event",
    "is_step_carrying",
]

RUN_STARTED: Final = "run.started"
RUN_COMPLETED: Final = "run.completed"
RUN_FAILED: Final = "run.failed"
LLM_TURN_STARTED: Final = "llm.turn.started"
LLM_TURN_COMPLETED: Final = "llm.turn.completed"
TOOL_CALL_STARTED: Final = "tool.call.started"
TOOL_CALL_COMPLETED: Final = "tool.call.completed"
USAGE_DELTA: Final = "usage.delta"
DROP_DETECTED: Final = "recorder.drop_detected"
AUDIT_ACTION: Final = "audit.action"

TERMINAL_TYPES: Final = frozenset({RUN_COMPLETED, RUN_FAILED})

#: Event types counted by the "errors" criterion of the regression score.
ERROR_FAMILIES: Final = frozenset(
    {
        RUN_FAILED,
        "hook.failed",
        "tool_hook.failed",
        "memory.observe.failed",
        "skill.fork.failed",
        "error.context",
    }
)

#: Types whose events belong to an LLM turn and so must sit at step 1 or later.
STEP_TYPE_PREFIXES: Final = ("llm.turn.", "tool.call.")


def is_step_carrying(event_type: str) -> bool:
    """True for the types that must carry an explicit step of 1 or more."""
    return event_type.startswith(STEP_TYPE_PREFIXES)


class Event(NamedTuple):
    """One line of a rollout file (immutable).

    ``step`` is the event's effective step: ``data["step"]`` when present, otherwise the
    step of the event before it (``run.started`` is always step 0). ``line`` is the 1-based
    line the event was read from, or ``None`` for events that never touched a file.

    A named tuple rather than a frozen dataclass: a loader builds 100,000 of them, and a
    tuple is built in half the time.
    """

    seq: int
    ts: str
    type: str
    data: dict[str, Any]
    step: int
    line: int | None = None

    def to_json_obj(self) -> dict[str, Any]:
        """The on-disk form of the event (without ``line``)."""
        return {"ts": self.ts, "seq": self.seq, "type": self.type, "data": self.data}
