"""AutoGen (AgentChat on autogen-core): who is acting in a team.

AutoGen's tools are made from plain functions, which ``rollout.tools`` wraps as any function
is (docs/frameworks.md); this module only names the agents. In a team (``RoundRobinGroupChat``,
``SelectorGroupChat``, ``Swarm``) each participant handles its messages inside the runtime,
which keeps the handling agent's id current (``MessageHandlerContext.agent_id()``): its type
is the participant's name followed by ``_`` and the team's id (its key). An agent run on its
own (``agent.run(task=...)``) runs outside any handler, and is named by nobody: a run of one
agent needs no names.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from importlib import import_module
from typing import Any

__all__ = ["agent_name", "resolver"]


def agent_name(agent_type: str, key: str) -> str:
    """The participant's name in an agent id: its type without the team's ``_<key>``."""
    suffix = f"_{key}"
    if key and agent_type.endswith(suffix) and len(agent_type) > len(suffix):
        return agent_type[: -len(suffix)]
    return agent_type


def _handler_agent_id(handler_context: Any) -> Any:
    """The handling agent's id by AutoGen's public question (raises outside a handler)."""
    try:
        return handler_context.agent_id()
    except RuntimeError:
        return None


@functools.cache
def resolver() -> Callable[[], str | None] | None:
    """Who is acting in an AutoGen team (``None``: autogen-core has no handler context)."""
    try:
        handler_context = import_module("autogen_core").MessageHandlerContext
    except (ImportError, AttributeError):
        return None
    # The context variable behind agent_id(), read without an exception on every event
    # outside a handler; the public question where a release keeps it elsewhere.
    var = getattr(handler_context, "_MESSAGE_HANDLER_CONTEXT", None)
    current: Callable[[], Any] = (
        functools.partial(var.get, None)
        if isinstance(var, ContextVar)
        else functools.partial(_handler_agent_id, handler_context)
    )

    def acting() -> str | None:
        try:
            agent_id = current()
            if agent_id is None:
                return None
            agent_type, key = agent_id.type, agent_id.key
        except Exception:  # naming the agent never breaks the run
            return None
        if not isinstance(agent_type, str) or not isinstance(key, str):
            return None
        return agent_name(agent_type, key) or None

    return acting
