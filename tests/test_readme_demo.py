"""The README's first command runs examples/demo.py: keep it true."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_demo_records_replays_and_reports_a_divergence() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "3 golden(s) written (3 created, 0 updated), 0 unchanged" in out
    assert "3 golden(s) compared" in out
    assert "this run left its golden at step 1: tool_call_mismatch (attributed to the agent)" in out
    assert 'data.arguments.city: "Paris" -> "paris"' in out


def test_committed_example_goldens_replay() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT / "examples" / "weather",
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 golden(s) compared" in result.stdout
