"""Who acted, in a trace: the agent each span speaks for, and the handoffs between agents.

A span that carries ``gen_ai.agent.name`` (or, without it, ``gen_ai.agent.id``) names the
agent of its own events and of its descendants' that name none of their own: an
``invoke_agent`` span names the agent for its subtree. OpenInference's ``agent.name`` is read
as ``gen_ai.agent.name`` (:mod:`.openinference`).

The GenAI conventions define no handoff span yet; what instrumentations write is read:

* ``gen_ai.operation.name`` ``agent_handoff`` (OpenTelemetry's instrumentation of the OpenAI
  Agents SDK, and this project's export) or ``handoff`` (Sentry), with
  ``gen_ai.handoff.from_agent`` / ``gen_ai.handoff.to_agent``;
* the Agents SDK's own span data as attributes: ``type`` ``handoff``, ``from_agent``,
  ``to_agent``;
* an ``execute_tool`` span with ``gen_ai.agent.handoff.source.name`` /
  ``gen_ai.agent.handoff.target.name`` (the form proposed to the conventions: the transfer
  tool's call, which stays a tool call);
* OpenInference's handoff (a ``TOOL`` span named ``handoff to X``), which
  :mod:`.openinference` rewrites into the first form.

A foreign trace that names fewer than two agents and holds no handoff is a single-agent run:
its events name nobody, as a recorded single-agent run's do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..format.agents import MAX_AGENT_NAME
from . import conventions as c
from .otlp import Span

__all__ = [
    "FROM_AGENT",
    "TO_AGENT",
    "agent_name",
    "handoff_data",
    "handoff_of",
    "named",
    "span_agents",
    "with_agent",
]

FROM_AGENT: Final = "gen_ai.handoff.from_agent"
TO_AGENT: Final = "gen_ai.handoff.to_agent"
#: The proposed conventions' handoff, on the ``execute_tool`` span of the transfer tool.
_PROPOSED: Final = ("gen_ai.agent.handoff.source.name", "gen_ai.agent.handoff.target.name")
#: Where a handoff span says who handed to whom, in the order they are looked for.
_PAIRS: Final = ((FROM_AGENT, TO_AGENT), _PROPOSED, ("from_agent", "to_agent"))


def agent_name(value: Any) -> str | None:
    """An attribute's value as an agent's name (text, cut as the recorder cuts it; an
    integer id as its digits), or ``None`` when it names nobody."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        return None
    return value[:MAX_AGENT_NAME]


def named(attributes: Mapping[str, Any]) -> str | None:
    """The agent a span names itself: ``gen_ai.agent.name``, else ``gen_ai.agent.id``."""
    name = attributes.get(c.AGENT_NAME)
    found = None if name is None else agent_name(name)
    if found is None:
        given = attributes.get(c.AGENT_ID)
        found = None if given is None else agent_name(given)
    return found


def handoff_of(span: Span) -> tuple[str | None, str | None] | None:
    """``(from, to)`` of a handoff span (either may be ``None`` when the span does not say),
    or ``None`` when ``span`` is not a handoff."""
    attrs = span.attributes
    op = c.operation(span)
    if op == c.TOOL:
        pairs: Iterable[tuple[str, str]] = (_PROPOSED,) if _PROPOSED[1] in attrs else ()
    else:
        pairs = _PAIRS if op == c.HANDOFF else ()
    for source, target in pairs:
        if source in attrs or target in attrs:
            return agent_name(attrs.get(source)), agent_name(attrs.get(target))
    return (None, None) if op == c.HANDOFF else None


def handoff_data(source: str | None, target: str | None, acting: str | None) -> dict[str, Any]:
    """A ``handoff`` event's payload: the agent that handed over names it (the span's own
    agent when the span does not say who handed over)."""
    return {"from": source, "to": target, "agent": acting if source is None else source}


def with_agent(data: dict[str, Any], agent: str | None) -> dict[str, Any]:
    """``data`` naming ``agent`` (unchanged when nobody is named)."""
    if agent is not None:
        data["agent"] = agent
    return data


def span_agents(spans: list[Span], *, run_span: Span | None, own: bool) -> dict[str, str]:
    """Each span's agent (span id -> name): its own, else its nearest ancestor's.

    In an export of this project (``own``) every span names its agent as the event had it,
    and the run's span names the test, not an agent. A foreign trace that names fewer than
    two agents and holds no handoff names nobody (a single-agent run)."""
    skipped = run_span.span_id if own and run_span is not None else None
    found: dict[str, str | None] = {}
    for span in spans:
        name = named(span.attributes)
        if name is not None and span.span_id != skipped:
            found[span.span_id] = name
    if not own and len(set(found.values())) < 2 and not any(handoff_of(s) for s in spans):
        return {}
    by_id = {s.span_id: s for s in spans}
    for span in spans:  # each chain walked once, up to the first span already known
        chain: dict[str, None] = {}
        key: str | None = span.span_id
        while key is not None and key in by_id and key not in found and key not in chain:
            chain[key] = None
            key = by_id[key].parent_id
        agent = None if key is None else found.get(key)
        for link in chain:
            found[link] = agent
    return {k: v for k, v in found.items() if v is not None}
