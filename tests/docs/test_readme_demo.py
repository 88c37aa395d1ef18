"""The README's first command runs examples/demo.py: keep it true.

The README opens with two set-up commands, the demo and the test suite; a newcomer (and CI)
copies them from there, so they stay first and within the README's first 30 lines.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
from plugin_agent import UNUSED_PLUGINS

pytestmark = pytest.mark.slow  # the demo in a process of its own

ROOT: Final = Path(__file__).resolve().parents[2]

SETUP_COMMANDS: Final = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/python examples/demo.py",
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' "
    "&& .venv/bin/python -m pytest -n 2",
)
_COMMAND_BLOCK: Final = re.compile(r"^```bash\n(.*?)^```", re.DOTALL | re.MULTILINE)


def test_the_readme_opens_with_the_two_setup_commands() -> None:
    head = "".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines(True)[:30])
    blocks = [block.strip() for block in _COMMAND_BLOCK.findall(head)]
    assert blocks[:2] == list(SETUP_COMMANDS)


def test_demo_records_replays_and_reports_a_divergence() -> None:
    # The demo's own pytest runs need none of the test extra's other plugins (a user who ran
    # the README's first command has none of them installed).
    unused = " ".join(UNUSED_PLUGINS)
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTEST_ADDOPTS": unused},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "3 golden(s) written (3 created, 0 updated), 0 unchanged" in out
    assert "3 golden(s) compared" in out
    assert "this run left its golden at step 1: tool_call_mismatch (attributed to the agent)" in out
    assert 'data.arguments.city: "Paris" -> "paris"' in out


def test_committed_example_goldens_replay() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *UNUSED_PLUGINS],
        cwd=ROOT / "examples" / "weather",
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 golden(s) compared" in result.stdout
