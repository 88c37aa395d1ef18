"""Replay divergences (docs/replay.md): what kind of departure from the recording, and whose."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from ..errors import RolloutError
from ..format.events import (
    GUARDRAIL_CHECKED,
    HANDOFF,
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    MCP_TOOLS_LISTED,
    REPLAY_DIVERGENCE,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    TOOL_HOOK_MUTATION,
    Event,
)
from .agents import agent_of, router_at
from .compare import Comparison, FirstDivergence, StepStatus

__all__ = [
    "Divergence",
    "DivergenceKind",
    "ReplayDivergenceError",
    "caused_by_divergence",
    "classify",
    "named_agents",
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
    AGENT_MISMATCH = "agent_mismatch"
    GUARDRAIL_MISMATCH = "guardrail_mismatch"

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
    DivergenceKind.AGENT_MISMATCH: "router",
    DivergenceKind.GUARDRAIL_MISMATCH: "harness",
}


#: The words for each attribution.
_ATTRIBUTED: Final = {
    "agent": "attributed to the agent",
    "harness": "attributed to the harness: the agent's prompt, model or tools",
    "router": "attributed to the agent that routed",
}


@dataclass(frozen=True, slots=True)
class Divergence:
    """One departure from the recording: where, what kind, and a sentence of detail."""

    kind: DivergenceKind
    step: int
    detail: str
    #: The agent it is attributed to, in a run that names its agents (for an
    #: ``agent_mismatch``, the agent that routed control there).
    agent: str | None = None

    @property
    def attribution(self) -> str:
        return self.kind.attribution

    @property
    def where(self) -> str:
        """``step 7``, or ``step 7 (billing)`` when an agent is named."""
        return f"step {self.step}" if self.agent is None else f"step {self.step} ({self.agent})"

    def headline(self) -> str:
        return f"{self.kind.value} at {self.where} ({self.kind.attributed})"


class ReplayDivergenceError(RolloutError):
    """Raised to the agent when replay cannot answer: the run left its recording.

    Nothing live is ever called in its place. ``divergence`` says where and how.
    """

    __module__ = "pytest_rollout"

    def __init__(self, divergence: Divergence) -> None:
        self.divergence = divergence
        super().__init__(f"{divergence.headline()}: {divergence.detail}")


def classify(comparison: Comparison, several_agents: bool = True) -> Divergence | None:
    """Name the kind of the first divergence of a comparison (``a`` is the recording).

    Used when replay itself raised nothing, e.g. the agent changed its final answer, or a
    run was compared outside replay. ``several_agents``: the runs name two agents or more,
    so the divergence names the agent it is attributed to (one agent's run is its own).
    """
    first = comparison.first
    if first is None:
        return None
    recorded, actual = first.a_event, first.b_event
    if _only_agent_changed(first) or HANDOFF in (_type(recorded), _type(actual)):
        return _agent_mismatch(first)
    kind = _kind(first)
    detail = _guard_detail(first) if kind is DivergenceKind.GUARDRAIL_MISMATCH else _detail(first)
    agent = agent_of(actual) or agent_of(recorded) if several_agents else None
    return Divergence(kind, first.step, detail, agent)


def _guard_detail(first: FirstDivergence) -> str:
    """``guardrail 'no_refunds' now blocks (the recording: allow)``."""
    recorded, actual = first.a_event, first.b_event
    event = actual or recorded
    assert event is not None
    kind = "guardrail" if event.type == GUARDRAIL_CHECKED else "hook"
    name = event.data.get("name")
    was = None if recorded is None else recorded.data.get("action")
    now = None if actual is None else actual.data.get("action")
    if actual is None:
        return f"{kind} {name!r} ran in the recording ({was}), not in this run"
    if recorded is None:
        return f"{kind} {name!r} ran in this run ({now}), not in the recording"
    if was == now:
        return f"{kind} {name!r}: {_detail(first)}"
    return f"{kind} {name!r} now says {now} (the recording: {was})"


def _type(event: Event | None) -> str | None:
    return None if event is None else event.type


def _kind(first: FirstDivergence) -> DivergenceKind:
    recorded, actual = first.a_event, first.b_event
    recorded_call = recorded is not None and recorded.type in _TOOL_TYPES
    actual_call = actual is not None and actual.type in _TOOL_TYPES
    event = actual or recorded
    assert event is not None
    if recorded_call and actual_call:
        return DivergenceKind.TOOL_CALL_MISMATCH
    if recorded_call:
        return DivergenceKind.MISSING_CALL
    if actual_call:
        return DivergenceKind.UNRECORDED_CALL
    if first.status is StepStatus.ONLY_IN_B and event.type.startswith(_TURN_PREFIX):
        return DivergenceKind.UNRECORDED_TURN
    if event.type in _SETUP_TYPES:  # the run started, or an MCP server listed, otherwise
        return DivergenceKind.SETUP_MISMATCH
    if event.type == LLM_TURN_STARTED:
        return DivergenceKind.PROMPT_MISMATCH
    if event.type == LLM_TURN_COMPLETED and any(
        c.path.startswith("data.tool_calls") for c in first.changes
    ):
        return DivergenceKind.TOOL_CALL_MISMATCH
    if event.type in _ANSWER_TYPES:
        return DivergenceKind.RESPONSE_MISMATCH
    return _other_kind(first, event)


def _other_kind(first: FirstDivergence, event: Event) -> DivergenceKind:
    """The kind of a difference in an event that is neither a turn, a call nor the run's
    start or end: a guardrail's or hook's decision, or a custom event."""
    if event.type not in (GUARDRAIL_CHECKED, TOOL_HOOK_MUTATION):
        return DivergenceKind.EVENT_MISMATCH
    if first.changes and all(c.path.startswith("data.before") for c in first.changes):
        return DivergenceKind.TOOL_CALL_MISMATCH  # the agent gave it other arguments
    return DivergenceKind.GUARDRAIL_MISMATCH


def _only_agent_changed(first: FirstDivergence) -> bool:
    return bool(first.changes) and all(c.path == "data.agent" for c in first.changes)


def _agent_mismatch(first: FirstDivergence) -> Divergence:
    """Another agent did this (or control passed elsewhere): the agent that routed it
    there, in this run, is the one it is attributed to."""
    recorded, actual = first.a_event, first.b_event
    router = router_at(first.b_events, actual) or router_at(first.a_events, recorded)
    if router is None:
        router = agent_of(recorded) if actual is None or actual.type != HANDOFF else None
    names = (agent_of(recorded), agent_of(actual))
    if actual is not None and actual.type == HANDOFF:
        names = (recorded.data.get("to") if recorded is not None else None, actual.data.get("to"))
    detail = f"the recording has {_named(names[0])} here, this run {_named(names[1])}"
    return Divergence(DivergenceKind.AGENT_MISMATCH, first.step, detail, router)


def _named(agent: object) -> str:
    return f"agent {agent!r}" if isinstance(agent, str) else "no agent"


def _detail(first: FirstDivergence) -> str:
    recorded, actual = first.a_event, first.b_event
    if recorded is None and actual is not None:
        return f"only this run has {actual.type} here"
    if actual is None and recorded is not None:
        return f"only the recording has {recorded.type} here"
    if first.changes:
        return f"first difference in {first.changes[0].path}"
    return "the events differ"


def named_agents(divergences: Iterable[Divergence], run: Sequence[Event]) -> tuple[Divergence, ...]:
    """Replay's divergences, each naming the agent that was acting when it was raised (the
    ``replay.divergence`` event the run recorded for it says so), where the run names any."""
    named: dict[tuple[str, int], str] = {}
    for event in run:
        agent = agent_of(event)
        if event.type == REPLAY_DIVERGENCE and agent is not None:
            named.setdefault((str(event.data.get("kind")), event.step), agent)
    if not named:
        return tuple(divergences)
    return tuple(
        d if d.agent is not None else replace(d, agent=named.get((d.kind.value, d.step)))
        for d in divergences
    )


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
