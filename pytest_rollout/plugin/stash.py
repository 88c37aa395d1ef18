"""Where the plugin keeps per-session and per-test state: pytest stash keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import pytest

if TYPE_CHECKING:
    from ..session.outcome import TestOutcome
    from ..session.rollout import RolloutSession
    from .settings import HookSettings, MarkerOptions

__all__ = ["CALL_REPORT_KEY", "HOOKS_KEY", "MARKER_KEY", "OUTCOME_KEY", "SESSION_KEY"]

#: The session of a test that used the ``rollout`` fixture, until the test is over.
SESSION_KEY: Final[pytest.StashKey[RolloutSession]] = pytest.StashKey()
#: The test's ``rollout`` marker, parsed once.
MARKER_KEY: Final[pytest.StashKey[MarkerOptions]] = pytest.StashKey()
#: What the test's path-scoped hooks add, asked once.
HOOKS_KEY: Final[pytest.StashKey[HookSettings]] = pytest.StashKey()
CALL_REPORT_KEY: Final[pytest.StashKey[pytest.TestReport]] = pytest.StashKey()
#: What the test's report says of its run, decided once: the report, the HTML page and the
#: CI log all show these lines (``None``: nothing to say).
OUTCOME_KEY: Final[pytest.StashKey[TestOutcome | None]] = pytest.StashKey()
