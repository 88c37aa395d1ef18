"""Loading the plugin stays cheap: every pytest run pays for it, rollout tests or not.

What only a rollout test needs (the engine, the recorder, the failure report, deepdiff,
syrupy, the SDKs, httpx, and the redactor, the capture, the analyzers and the comparison)
is imported when such a test runs. The timing itself is measured by the benchmark
(docs/performance.md); this pins what is imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_rollout.analysis.analyzer_options import ANALYZERS, HMAC_KEY_VARIABLE
from pytest_rollout.plugin import flags
from pytest_rollout.replay.seal import NetworkPolicy
from pytest_rollout.safety.redact import RedactionMode
from pytest_rollout.store.capture import ENV_VAR, ENV_VARS, INI_KEYS

pytestmark = pytest.mark.slow  # pytest in processes of its own

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


#: The library's layers a session without a rollout test never loads.
NOT_WITHOUT_A_ROLLOUT_TEST = (
    "pytest_rollout.safety",
    "pytest_rollout.analysis",
    "pytest_rollout.diff",
)

#: Run in a pytest session: which of those layers are loaded at its end, in ``loaded.txt``.
LAYERS_CONFTEST = f"""
import sys

def pytest_sessionfinish(session):
    loaded = sorted(m for m in sys.modules if m.startswith({NOT_WITHOUT_A_ROLLOUT_TEST!r}))
    (session.config.rootpath / "loaded.txt").write_text(" ".join(loaded), encoding="utf-8")
"""


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest run in ``folder`` with the plugin and no other, in a process of its own (this
    one has loaded everything), without the environment variables that turn features on."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    for name in (
        flags.CAPTURE_DIR_VARIABLE,
        flags.HMAC_KEY_VARIABLE,
        *flags.CAPTURE_LIMIT_VARIABLES,
    ):
        env.pop(name, None)
    command = [sys.executable, "-m", "pytest", "-p", "pytest_rollout.plugin", *args]
    return subprocess.run(command, check=False, cwd=folder, env=env, capture_output=True, text=True)


def _loaded(folder: Path, *args: str) -> list[str]:
    """The layers loaded by the end of a session run in ``folder``."""
    done = _pytest(folder, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return (folder / "loaded.txt").read_text(encoding="utf-8").split()


def test_a_session_without_a_rollout_test_loads_no_redactor_nor_comparison(
    tmp_path: Path,
) -> None:
    (tmp_path / "conftest.py").write_text(LAYERS_CONFTEST, encoding="utf-8")
    (tmp_path / "test_plain.py").write_text(
        "def test_plain():\n    assert 1 + 1 == 2\n", encoding="utf-8"
    )
    assert _loaded(tmp_path) == []


def test_a_session_with_a_rollout_test_loads_them(tmp_path: Path) -> None:
    """The other side of the test above: the probe sees them when they are used."""
    (tmp_path / "conftest.py").write_text(LAYERS_CONFTEST, encoding="utf-8")
    (tmp_path / "test_agent_run.py").write_text(
        "import pytest\n"
        "@pytest.mark.rollout(model_calls=False)\n"
        "def test_agent_run(rollout):\n"
        "    with rollout.run(prompt='hi') as run:\n"
        "        run.output = 'hello'\n",
        encoding="utf-8",
    )
    loaded = _loaded(tmp_path, "--rollout-record")
    assert "pytest_rollout.safety.redact" in loaded


def test_an_ini_value_is_still_checked_at_start_up(tmp_path: Path) -> None:
    """Left unloaded until used, a setting the user wrote is still checked before any test
    runs."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nrollout_prices = gpt-x=abc\n", encoding="utf-8")
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n", encoding="utf-8")
    done = _pytest(tmp_path)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "rollout_prices:" in done.stderr


def test_the_options_name_what_the_library_names() -> None:
    """The options module names the redaction modes, the analyzers and two environment
    variables itself (importing them would load the library at start-up)."""
    assert tuple(m.value for m in RedactionMode) == flags.REDACTION_MODES
    assert RedactionMode(flags.REDACTION_MODES[0]) is RedactionMode.REDACTED
    assert flags.ANALYZERS == ANALYZERS
    assert tuple(p.value for p in NetworkPolicy) == flags.NETWORK_POLICIES
    assert flags.CAPTURE_DIR_VARIABLE == ENV_VAR
    assert flags.CAPTURE_LIMIT_KEYS == INI_KEYS
    assert flags.CAPTURE_LIMIT_VARIABLES == ENV_VARS
    assert flags.HMAC_KEY_VARIABLE == HMAC_KEY_VARIABLE
