"""Running the ``rollout`` command as a user would, in a subprocess (UTF-8 in and out)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_command(
    *argv: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="strict",
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})},
        check=False,
        timeout=120,
    )


def python_m(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    """``python -m pytest_rollout ARGV...``."""
    return run_command(sys.executable, "-m", "pytest_rollout", *argv)
