"""Who acted: the ``agent`` the recorder puts on an event, and the ``handoff`` between agents.

In a run with several agents every event names the agent that acted (``data.agent``), and a
``handoff`` event ``{from, to}`` marks each place where control passed from one agent to
another (docs/agents.md). The recorder asks who is acting as each event is emitted; this
module owns what it then does to the event, so that the recorder's hot path stays one test.
A run where nobody is named is written exactly as before: no ``agent`` field, no handoff.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from .events import HANDOFF, RUN_STARTED

__all__ = [
    "MAX_AGENT_NAME",
    "Acting",
    "AgentOf",
    "acting_agent",
    "stamped_payload",
    "with_agent",
]

#: Who is acting now: an agent's name, or ``None`` when nobody is named.
AgentOf = Callable[[], str | None]

#: The longest agent name kept whole; a longer one is cut (names come from frameworks and
#: users, and reach every line of the run).
MAX_AGENT_NAME: Final = 200


def acting_agent(agent_of: AgentOf) -> str | None:
    """Who ``agent_of`` says is acting, as a name fit for a line; ``None`` when nobody is
    named or the question failed (naming the agent must never break the run)."""
    try:
        name = agent_of()
    except Exception:
        return None
    if not isinstance(name, str) or not name:
        return None
    return str(name[:MAX_AGENT_NAME])


def with_agent(event_type: str, data: Mapping[str, Any], agent: str) -> Mapping[str, Any]:
    """``data`` naming ``agent``, unless it names an agent of its own already (the run's
    start, written with its first event, is nobody's)."""
    if "agent" in data or event_type in (HANDOFF, RUN_STARTED):
        return data
    return {**data, "agent": agent}


def stamped_payload(payload: bytes, agent: str) -> bytes:
    """An encoded payload (the bytes of a JSON object) with ``"agent"`` added at its end."""
    name = orjson.dumps(agent)
    if payload == b"{}":
        return b'{"agent":' + name + b"}"
    return payload[:-1] + b',"agent":' + name + b"}"


class Acting:
    """Who acted last in one run (the recorder asks under its lock)."""

    __slots__ = ("agent",)

    def __init__(self) -> None:
        self.agent: str | None = None

    def hand_over(self, agent: str | None, handed_to: Any) -> bytes | None:
        """Note that ``agent`` acts now, or that a ``handoff`` the caller records itself
        hands control to ``handed_to``; the payload of the ``handoff`` to record first
        where control passed from another agent (the agent that passed it names it)."""
        if handed_to is not None:
            if isinstance(handed_to, str):
                self.agent = handed_to
            return None
        previous = self.agent
        if agent is None or agent == previous:
            return None
        self.agent = agent
        if previous is None:
            return None
        return orjson.dumps({"from": previous, "to": agent, "agent": previous})
