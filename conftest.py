"""Project-wide test setup.

The bundled example agent is importable by the tests. And what in-process inner runs would
import again and again is imported once, up front: ``pytester.runpytest_inprocess`` forgets
every module an inner run imported when the run ends, so each run imported the plugin's
lazily loaded parts (the report, the audit trail, the viewer...) and the SDK resources its
agent used afresh: hundreds of runs, each paying for the same imports. Imported here, before
any inner run, they stay.

A user's process imports only what it uses, and when: that is pinned in subprocesses
(``tests/plugin/test_startup.py``, the command's tests), which this does not reach. Left out here is
the module whose presence is itself a signal: ``pytest_rollout.plugin.snapshot`` is imported
only when a test uses the rollout syrupy extension, and the plugin reads its presence so.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

import pytest_rollout

EXAMPLE_DIR = Path(__file__).resolve().parent / "examples" / "weather"
if str(EXAMPLE_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLE_DIR))

#: Parts of the SDKs and plugins that the inner runs' agents load on first use.
LAZY_THIRD_PARTY: Final = (
    "openai.resources.chat",
    "openai.resources.responses",
    "openai.lib.streaming.chat",
    "openai.lib.streaming.responses",
    "anthropic.resources.messages",
    "anthropic.lib.streaming",
    "syrupy.extensions.single_file",
)


def _register_hypothesis_profiles() -> None:
    """``pytest --hypothesis-profile=thorough`` draws ten times the examples of the suite's
    runs (100) in the property tests that do not set a count for their own cost."""
    with contextlib.suppress(ImportError):
        from hypothesis import settings  # noqa: PLC0415  (the test extra may be missing)

        settings.register_profile("thorough", max_examples=1000)


_register_hypothesis_profiles()


#: Modules not imported up front: the command's entry, and the syrupy extension's module.
_SIGNALS: Final = frozenset({"pytest_rollout.__main__", "pytest_rollout.plugin.snapshot"})


def _import_once() -> None:
    prefix = f"{pytest_rollout.__name__}."
    names = [m.name for m in pkgutil.walk_packages(pytest_rollout.__path__, prefix)]
    for name in [n for n in names if n not in _SIGNALS] + list(LAZY_THIRD_PARTY):
        # Without the test extra a module may not import: the tests that need it say so.
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


_import_once()


#: The helper modules of ``tests/`` that in-process inner runs share with the suite. An inner
#: run writes its own copy of them into its directory, but its ``import sdk_agents`` finds the
#: module this process imported already (``runpytest_inprocess`` forgets only the modules the
#: inner run imported itself). A global that an inner test rebinds for good (another system
#: prompt, another model) would outlive the test and change whichever test runs next here.
SHARED_HELPERS: Final = ("fake_models", "sdk_agents")
#: Globals that change on every call, by design: the fake service's last ``created`` time.
_VOLATILE: Final = frozenset({"_last_created"})
_MISSING: Final = object()


def _rebound(saved: dict[str, object], now: dict[str, object]) -> list[str]:
    names = (set(saved) | set(now)) - _VOLATILE
    return sorted(
        name
        for name in names
        if not name.startswith("__") and now.get(name, _MISSING) is not saved.get(name, _MISSING)
    )


@pytest.fixture(autouse=True)
def _shared_helpers_unchanged() -> Iterator[None]:
    """Fail a test that leaves a global of a shared helper module rebound, and restore it:
    an inner test sets such a global with its ``monkeypatch`` fixture, for itself only."""
    saved = {
        name: (module, dict(vars(module)))
        for name in SHARED_HELPERS
        if (module := sys.modules.get(name)) is not None
    }
    yield
    leaks: list[str] = []
    for name, (module, before) in saved.items():
        now = vars(module)
        for attribute in _rebound(before, now):
            leaks.append(f"{name}.{attribute}")
            if attribute in before:
                now[attribute] = before[attribute]
            else:
                del now[attribute]
    if leaks:
        pytest.fail(f"this test left {', '.join(leaks)} rebound: set it with monkeypatch")


#: What GitHub Actions sets that turns the plugin's CI outputs on: an inner run of a test
#: sees them only where the test sets them (tests/plugin/test_plugin_ci.py), so that this
#: suite run on GitHub neither adds annotations of its inner runs to its log nor writes
#: their summaries into its job's.
_CI_OUTPUTS: Final = ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE")


@pytest.fixture(autouse=True)
def _no_ci_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _CI_OUTPUTS:
        monkeypatch.delenv(name, raising=False)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that runs an inner pytest (the ``pytester`` fixture) ``slow``, so
    that ``pytest -m "not slow"`` leaves them to the whole run (see docs/architecture.md)."""
    for item in items:
        if "pytester" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
