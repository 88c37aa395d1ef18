"""CrewAI: who is acting in a crew.

CrewAI's tools are made from plain functions, which ``rollout.tools`` wraps as any function
is (docs/frameworks.md); this module only names the agents. CrewAI keeps no current agent
of its own, but hands the acting agent to the hooks it runs before each model call and each
tool call (``register_before_llm_call_hook``, ``register_before_tool_call_hook``). Two hooks
registered once (they change nothing and let every call through) note the agent's
``role``, and the agent is named while a task runs (``crewai.context.get_current_task_id``):
a manager's turns, and a coworker's it delegated to, are each named by their own role.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from importlib import import_module
from typing import Any

__all__ = ["resolver"]

#: The role of the agent whose model or tool call CrewAI announced last, in this context.
_ROLE: ContextVar[str | None] = ContextVar("pytest_rollout_crewai_role", default=None)


def note_agent(context: Any) -> None:
    """A before-call hook: note the role of the agent about to call (allows the call)."""
    try:
        role = getattr(getattr(context, "agent", None), "role", None)
    except Exception:  # noting the agent never stops the call
        role = None
    if isinstance(role, str) and role:
        _ROLE.set(role)


@functools.cache
def resolver() -> Callable[[], str | None] | None:
    """Who is acting in a crew (``None``: this CrewAI has no call hooks or task context).
    Registers the two hooks, once: CrewAI gives them to the agents made from then on."""
    try:
        hooks = import_module("crewai.hooks")
        task_id: Callable[[], Any] = import_module("crewai.context").get_current_task_id
        register_llm = hooks.register_before_llm_call_hook
        register_tool = hooks.register_before_tool_call_hook
    except (ImportError, AttributeError):
        return None
    register_llm(note_agent)
    register_tool(note_agent)
    role = _ROLE.get

    def acting() -> str | None:
        try:
            return None if task_id() is None else role()
        except Exception:  # naming the agent never breaks the run
            return None

    return acting
