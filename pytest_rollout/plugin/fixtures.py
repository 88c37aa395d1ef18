"""The fixtures: ``rollout``, ``golden`` and ``recorded_provider``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .core import PLUGIN_KEY

if TYPE_CHECKING:
    from ..session import RolloutSession
    from ..store.golden import GoldenRef

__all__ = ["golden", "recorded_provider", "rollout"]


@pytest.fixture
def rollout(request: pytest.FixtureRequest) -> Iterator[RolloutSession]:
    """This test's agent run: wrap providers and tools with it, run the agent inside
    ``rollout.run()``, then ``assert rollout == golden``."""
    runs = request.config.stash[PLUGIN_KEY].runs
    session = runs.session_for(request.node)
    with runs.seal_for(request.node, session):
        yield session
        session.stop_endpoints()  # rollout.endpoint(): no request after the test
    runs.finish(request.node, session)


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> GoldenRef:
    """This test's golden file, for ``assert rollout == golden``."""
    from ..store.golden import GoldenRef

    runs = request.config.stash[PLUGIN_KEY].runs
    return GoldenRef(str(runs.golden_for(request.node)))


@pytest.fixture
def recorded_provider(rollout: RolloutSession) -> Any:
    """A provider that serves this test's golden turns, for agents that take one directly."""
    return rollout.recorded_provider()
