"""Runs with several agents in the comparison: who acted where (docs/agents.md).

An event's ``data.agent`` is part of its canonical form, so the same events done by another
agent are a divergence, and a ``handoff`` is an event like any other. A run that names no
agent at all (recorded before agents were named, or by code that names none) is compared
agent-blind: the other run's names and handoffs are left out of the comparison, so an older
golden stays valid for a run that now names its agents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..format.events import (
    HANDOFF,
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    RUN_STARTED,
    TERMINAL_TYPES,
    Event,
    JsonEvents,
)

__all__ = [
    "agent_of",
    "agent_pair",
    "agent_turns",
    "agents_named",
    "names_agents",
    "only_agent",
    "router_at",
    "several_agents",
    "turns_by_agent",
]


def agent_of(event: Event | None) -> str | None:
    """The agent an event names, if any."""
    if event is None:
        return None
    agent = event.data.get("agent")
    return agent if isinstance(agent, str) else None


def names_agents(events: Sequence[Event]) -> bool:
    """Whether any event of the run names its agent (or marks a handoff). Every comparison
    asks, of runs that mostly name nobody: one plain loop, a key looked up per event."""
    for event in events:
        data = event.data
        if ("agent" in data and isinstance(data["agent"], str)) or event.type == HANDOFF:
            return True
    return False


def agents_named(events: Sequence[Event]) -> list[str]:
    """The agents a run names, in the order they first act."""
    seen: dict[str, None] = {}
    for event in events:
        agent = agent_of(event)
        if agent is not None:
            seen.setdefault(agent, None)
    return list(seen)


def _without_handoffs(events: Sequence[Event], *, names: bool) -> Sequence[Event]:
    """The run without its handoffs, and, with ``names``, without its agents' names."""
    kept = [
        e._replace(data={k: v for k, v in e.data.items() if k != "agent"})
        if names and "agent" in e.data
        else e
        for e in events
        if e.type != HANDOFF
    ]
    return JsonEvents(kept) if isinstance(events, JsonEvents) else kept


def agent_pair(a: Sequence[Event], b: Sequence[Event]) -> tuple[Sequence[Event], Sequence[Event]]:
    """The two runs as the comparison sees them: as they are when both or neither name
    agents, else both agent-blind; without their handoffs when only one run marks them."""
    named_a, named_b = names_agents(a), names_agents(b)
    if named_a != named_b:
        blind_a = _without_handoffs(a, names=True) if named_a else a
        return blind_a, _without_handoffs(b, names=True) if named_b else b
    if not named_a:  # neither names an agent, so neither marks a handoff
        return a, b
    handed_a, handed_b = _hands_over(a), _hands_over(b)
    if handed_a == handed_b:
        return a, b
    # One run marks its handoffs, the other (an imported trace) names its agents only: the
    # names are compared, the marks are not.
    return (
        _without_handoffs(a, names=False) if handed_a else a,
        _without_handoffs(b, names=False) if handed_b else b,
    )


def _hands_over(events: Sequence[Event]) -> bool:
    return any(e.type == HANDOFF for e in events)


def only_agent(events: Sequence[Event], agent: str) -> Sequence[Event]:
    """One agent's part of a run, for ``rollout diff --agent``: the run's start and end and
    the events that name ``agent``, its turns numbered again from 1 in the order it took
    them (so that another agent's extra turn does not shift it)."""
    kept: list[Event] = []
    step = 0
    numbered: dict[int, int] = {}
    for event in events:
        if event.type == RUN_STARTED:
            kept.append(event)
            continue
        terminal = event.type in TERMINAL_TYPES
        if not terminal and agent_of(event) != agent:
            continue
        if event.type in (LLM_TURN_STARTED, LLM_TURN_COMPLETED) and event.step not in numbered:
            step += 1
            numbered[event.step] = step
        new_step = step if terminal else numbered.get(event.step, step)
        kept.append(_at_step(event, new_step))
    return JsonEvents(kept) if isinstance(events, JsonEvents) else kept


def _at_step(event: Event, step: int) -> Event:
    data: Mapping[str, Any] = event.data
    if "step" in data:
        data = {**data, "step": step}
    return event._replace(data=dict(data), step=step)


def turns_by_agent(events: Sequence[Event]) -> dict[str, int]:
    """How many LLM turns each named agent took."""
    counts: dict[str, int] = {}
    for event in events:
        if event.type == LLM_TURN_COMPLETED:
            agent = agent_of(event)
            if agent is not None:
                counts[agent] = counts.get(agent, 0) + 1
    return counts


def several_agents(a: Sequence[Event], b: Sequence[Event]) -> bool:
    """Whether the two runs name two agents or more between them (a framework names its one
    agent in every run: a report then has no need to say whose a divergence is)."""
    return len({*agents_named(a), *agents_named(b)}) > 1


def agent_turns(a: Sequence[Event], b: Sequence[Event]) -> tuple[tuple[str, int, int], ...]:
    """Each agent either run names, with its LLM turns in ``a`` and in ``b``; empty unless
    the runs name two agents or more (one agent's turns are the run's)."""
    turns_a, turns_b = turns_by_agent(a), turns_by_agent(b)
    names = list(dict.fromkeys([*turns_a, *turns_b]))
    if len(names) < 2:
        return ()
    return tuple((name, turns_a.get(name, 0), turns_b.get(name, 0)) for name in names)


def router_at(events: Sequence[Event], event: Event | None) -> str | None:
    """The agent that routed control to where ``event`` stands: the one that made the
    last handoff before it (``event`` itself, when it is a handoff), else ``None``."""
    if event is None:
        return None
    if event.type == HANDOFF:
        return agent_of(event)
    router = None
    for earlier in events:
        if earlier.seq >= event.seq:
            break
        if earlier.type == HANDOFF:
            router = agent_of(earlier)
    return router
