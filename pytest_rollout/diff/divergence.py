"""Replay divergences (docs/replay.md): what kind of departure from the recording, and whose."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from ..errors import RolloutError
from ..format.events import (
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    MCP_TOOLS_LISTED,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
)
from .compare import Comparison, FirstDivergence, StepStatus

__all__ = [
    "Divergence",
    "DivergenceKind",
    "ReplayDivergenceError",
    "caused_by_divergence",
    "classify",
]


class DivergenceKind(StrEnum):
    TOOL_CALL_MISMATCH = "tool_call_mismatch"
    UNRECORDED_CALL = "unrecorded_call"
    MISSING_CALL = "missing_call"
    RESPONSE_MISMATCH = "response_mismatch"
    PROMPT_MISMATCH = "prompt_mismatch"
    UNRECORDED_TURN = "unrecorded_turn"
    UNCONSUMED = "unconsumed_turn"
    SETUP_MISMATCH = "setup_mismatch"
    EVENT_MISMATCH = "event_mismatch"

    @property
    def attribution(self) -> str:
        return _ATTRIBUTION[self]

    @property
    def attributed(self) -> str:
        """Whom the kind is attributed to, in words: ``attributed to the agent``, or to
        the harness, said as what it is (the configuration the agent runs with, never the
        test's own set-up)."""
        return _ATTRIBUTED[_ATTRIBUTION[self]]


_TOOL_TYPES: Final = frozenset({TOOL_CALL_STARTED, TOOL_CALL_COMPLETED})
_ANSWER_TYPES: Final = frozenset({LLM_TURN_COMPLETED, RUN_COMPLETED, RUN_FAILED})
#: What the agent was given to work with: the run's start, the tools an MCP server offered.
_SETUP_TYPES: Final = frozenset({RUN_STARTED, MCP_TOOLS_LISTED})
# The prefix shared by the event types of an LLM turn (wanted in format/events.py).
_TURN_PREFIX: Final = "llm.turn."

_ATTRIBUTION: Final = {
    DivergenceKind.TOOL_CALL_MISMATCH: "agent",
    DivergenceKind.UNRECORDED_CALL: "agent",
    DivergenceKind.MISSING_CALL: "agent",
    DivergenceKind.RESPONSE_MISMATCH: "agent",
    DivergenceKind.PROMPT_MISMATCH: "harness",
    DivergenceKind.UNRECORDED_TURN: "harness",
    DivergenceKind.UNCONSUMED: "agent",
    DivergenceKind.SETUP_MISMATCH: "harness",
    DivergenceKind.EVENT_MISMATCH: "agent",
}


#: The words for each attribution.
_ATTRIBUTED: Final = {
    "agent": "attributed to the agent",
    "harness": "attributed to the harness: the agent's prompt, model or tools",
}


@dataclass(frozen=True, slots=True)
class Divergence:
    """One departure from the recording: where, what kind, and a sentence of detail."""

    kind: DivergenceKind
    step: int
    detail: str

    @property
    def attribution(self) -> str:
        return self.kind.attribution

    def headline(self) -> str:
        return f"{self.kind.value} at step {self.step} ({self.kind.attributed})"


class ReplayDivergenceError(RolloutError):
    """Raised to the agent when replay cannot answer: the run left its recording.

    Nothing live is ever called in its place. ``divergence`` says where and how.
    """

    __module__ = "pytest_rollout"

    def __init__(self, divergence: Divergence) -> None:
        self.divergence = divergence
        super().__init__(f"{divergence.headline()}: {divergence.detail}")


def classify(comparison: Comparison) -> Divergence | None:
    """Name the kind of the first divergence of a comparison (``a`` is the recording).

    Used when replay itself raised nothing, e.g. the agent changed its final answer, or a
    run was compared outside replay.
    """
    first = comparison.first
    if first is None:
        return None
    recorded, actual = first.a_event, first.b_event
    recorded_call = recorded is not None and recorded.type in _TOOL_TYPES
    actual_call = actual is not None and actual.type in _TOOL_TYPES
    event = actual or recorded
    assert event is not None
    if recorded_call and actual_call:
        kind = DivergenceKind.TOOL_CALL_MISMATCH
    elif recorded_call:
        kind = DivergenceKind.MISSING_CALL
    elif actual_call:
        kind = DivergenceKind.UNRECORDED_CALL
    elif first.status is StepStatus.ONLY_IN_B and event.type.startswith(_TURN_PREFIX):
        kind = DivergenceKind.UNRECORDED_TURN
    elif event.type in _SETUP_TYPES:  # the run started, or an MCP server listed, otherwise
        kind = DivergenceKind.SETUP_MISMATCH
    elif event.type == LLM_TURN_STARTED:
        kind = DivergenceKind.PROMPT_MISMATCH
    elif event.type == LLM_TURN_COMPLETED and any(
        c.path.startswith("data.tool_calls") for c in first.changes
    ):
        kind = DivergenceKind.TOOL_CALL_MISMATCH
    elif event.type in _ANSWER_TYPES:
        kind = DivergenceKind.RESPONSE_MISMATCH
    else:
        kind = DivergenceKind.EVENT_MISMATCH
    return Divergence(kind, first.step, _detail(first))


def _detail(first: FirstDivergence) -> str:
    recorded, actual = first.a_event, first.b_event
    if recorded is None and actual is not None:
        return f"only this run has {actual.type} here"
    if actual is None and recorded is not None:
        return f"only the recording has {recorded.type} here"
    if first.changes:
        return f"first difference in {first.changes[0].path}"
    return "the events differ"


def caused_by_divergence(exc: BaseException) -> bool:
    """Whether ``exc`` is a replay divergence, or was raised because of one (an SDK that
    wraps what its transport raised, an agent that re-raises)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ReplayDivergenceError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
