"""Who is acting in a run: the agent a test names with ``rollout.agent()``, else the one a
framework says is running (docs/agents.md).

The recorder asks as each event is emitted (:attr:`~pytest_rollout.format.recorder.Recorder
.agent_of`) and writes the answer on the event; where the answer changes it records a
``handoff``. Nothing is asked until an agent is named or a framework says it can tell: a
run that names nobody costs nothing and is written as before.

The name lives in a context variable, so it follows the agent's code into the asyncio tasks
it starts (and into threads that copy the context, as frameworks running sync tools do),
and two agents running at once each name their own events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import RolloutError
from ..format.agents import MAX_AGENT_NAME
from ..format.recorder import Recorder

__all__ = ["Agents", "agents_of", "named_agent"]

_NAMED: ContextVar[str | None] = ContextVar("pytest_rollout_agent", default=None)


def named_agent() -> str | None:
    """The agent named by the innermost ``rollout.agent()`` block around the caller."""
    return _NAMED.get()


class Agents:
    """Who is acting in one run, as its recorder asks: the named agent, else the first
    framework that can tell."""

    def __init__(self) -> None:
        self._resolvers: list[Callable[[], str | None]] = []

    def __call__(self) -> str | None:
        named = _NAMED.get()
        if named is not None:
            return named
        for resolve in self._resolvers:
            try:
                found = resolve()
            except Exception:  # one framework's failure must not hide another's answer
                continue
            if found:
                return found
        return None

    def add_resolver(self, resolve: Callable[[], str | None]) -> None:
        """Ask ``resolve`` who is acting when no agent is named (a framework integration
        that can tell which of its agents is running); added once however often asked."""
        if resolve not in self._resolvers:
            self._resolvers.append(resolve)

    @contextmanager
    def acting(self, name: str) -> Iterator[None]:
        """Inside the block, ``name`` is the acting agent."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        if not isinstance(name, str) or not name.strip():
            raise RolloutError(f"rollout.agent() takes an agent's name, got {name!r}")
        if len(name) > MAX_AGENT_NAME:
            raise RolloutError(
                f"rollout.agent(): an agent's name has at most {MAX_AGENT_NAME} characters"
            )
        token = _NAMED.set(name)
        try:
            yield
        finally:
            try:
                _NAMED.reset(token)
            except ValueError:  # left in another context (an async generator's close)
                _NAMED.set(None)


def agents_of(recorder: Recorder) -> Agents:
    """The run's :class:`Agents`, made (and asked from then on) at the first need."""
    agent_of = recorder.agent_of
    if isinstance(agent_of, Agents):
        return agent_of
    agents = recorder.agent_of = Agents()
    return agents
