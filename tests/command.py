"""Running the ``rollout`` command as a user would: in a subprocess (UTF-8 in and out), or in
process for the commands' own tests; and rollout files written by hand for them."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from pytest_rollout.cli import main


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


def write_lines(path: Path, *events: tuple[str, dict[str, Any]]) -> Path:
    """A rollout file written by hand: (type, data) per line, with fixed ts and seq."""
    lines = [
        orjson.dumps({"ts": "2026-06-28T12:34:56.000000Z", "seq": i, "type": t, "data": d})
        for i, (t, d) in enumerate(events)
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def diff(*args: str | Path) -> tuple[int, str]:
    """``rollout diff ARGS...`` in process: its exit code and what it printed."""
    out = io.StringIO()
    code = main(["diff", *map(str, args)], out=out)
    return code, out.getvalue()
