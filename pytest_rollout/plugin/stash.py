"""Where the plugin keeps per-session and per-test state: pytest stash keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import pytest

if TYPE_CHECKING:
    from ..session import Engine
    from .settings import HookSettings, MarkerOptions

__all__ = ["CALL_REPORT_KEY", "ENGINE_KEY", "FAILURE_KEY", "HOOKS_KEY", "MARKER_KEY"]

#: The engine of a test that used the ``rollout`` fixture.
ENGINE_KEY: Final[pytest.StashKey[Engine]] = pytest.StashKey()
#: The test's ``rollout`` marker, parsed once.
MARKER_KEY: Final[pytest.StashKey[MarkerOptions]] = pytest.StashKey()
#: What the test's path-scoped hooks add, asked once.
HOOKS_KEY: Final[pytest.StashKey[HookSettings]] = pytest.StashKey()
CALL_REPORT_KEY: Final[pytest.StashKey[pytest.TestReport]] = pytest.StashKey()
#: The failure report of a test, rendered once: the report, the HTML page and the CI log
#: all show these lines.
FAILURE_KEY: Final[pytest.StashKey[list[str]]] = pytest.StashKey()
