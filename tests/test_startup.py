"""Loading the plugin stays cheap: every pytest run pays for it, rollout tests or not.

What only a rollout test needs (the engine, the recorder, the failure report, deepdiff,
syrupy, the SDKs, httpx) is imported when such a test runs. The timing itself is measured
by the benchmark (docs/performance.md); this pins what is imported.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
import pytest
import pytest_rollout.plugin
print(" ".join(sorted(m for m in sys.modules)))
"""

NOT_AT_START_UP = (
    "deepdiff",
    "syrupy",
    "openai",
    "anthropic",
    "httpx",
    "httpx2",
    "pydantic",
    "pytest_rollout.session.engine",
    "pytest_rollout.format.recorder",
    "pytest_rollout.diff.drift",
    "pytest_rollout.view.page",
)


@pytest.fixture(scope="module")
def loaded() -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


@pytest.mark.parametrize("module", NOT_AT_START_UP)
def test_loading_the_plugin_does_not_import(loaded: set[str], module: str) -> None:
    assert module not in loaded


def test_the_public_names_load_on_first_use() -> None:
    code = (
        "import sys, pytest_rollout\n"
        "assert 'pytest_rollout.diff.compare' not in sys.modules\n"
        "from pytest_rollout import compare, Turn\n"
        "assert 'pytest_rollout.diff.compare' in sys.modules\n"
        "assert compare.__module__ == 'pytest_rollout.diff.compare'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
