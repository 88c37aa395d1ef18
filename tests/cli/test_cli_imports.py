"""Each ``rollout`` subcommand imports what it runs, and no more.

A small command's whole process is mostly Python starting and importing: ``rollout show`` of a
ten-event file must not pay for the comparison, the receipts, the viewer or DeepDiff. Each
command runs here in a fresh process that then lists the modules it loaded. The timing
itself is measured by ``benchmarks/bench_cli.py``; this pins what is imported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_diff import write_trip

from pytest_rollout.cli.parser import FORK_FORMATS
from pytest_rollout.replay.fork import ForkFormat

pytestmark = pytest.mark.slow  # a process of its own per command

#: Runs the command given as arguments, then prints the modules loaded.
PROBE = """
import io, sys
from pytest_rollout.cli import main
status = main(sys.argv[1:], out=io.StringIO())
print(status, " ".join(sorted(sys.modules)))
"""

#: What no command but those that need it loads.
COMPARISON = ("pytest_rollout.diff.drift", "pytest_rollout.diff.report", "deepdiff")
#: What the comparison stands on: one run shown or checked needs none of the step comparison
#: and the id renaming, and a timeline none of the canonical form either.
STEPS = ("pytest_rollout.diff.compare", "pytest_rollout.format.ids")
CANONICAL = ("pytest_rollout.diff.canonical",)
#: What writing a file needs, and reading one does not.
WRITING = ("tempfile", "secrets")
RECEIPTS = ("pytest_rollout.store",)
VIEWER = ("pytest_rollout.view",)
OTHERS = (
    "pytest_rollout.replay",
    "pytest_rollout.otel",
    "pytest_rollout.sdk",
    "pytest_rollout.session",
    "pytest_rollout.analysis",
    "pytest_rollout.format.recorder",
)


def _loaded(*argv: str | Path) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *map(str, argv)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    status, _, modules = done.stdout.partition(" ")
    return int(status), set(modules.split())


def _among(loaded: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == p or m.startswith(p + ".") for p in prefixes))


@pytest.fixture(scope="module")
def trip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_trip(tmp_path_factory.mktemp("imports") / "trip.jsonl")


def test_show_imports_neither_the_comparison_nor_receipts_nor_the_viewer(trip: Path) -> None:
    status, loaded = _loaded("show", trip)
    assert status == 0
    assert _among(loaded, (*COMPARISON, *STEPS, *CANONICAL, *RECEIPTS, *VIEWER, *OTHERS)) == []
    assert _among(loaded, WRITING) == []
    assert "pytest_rollout.diff.integrity" not in loaded
    assert "pytest_rollout.format.pair" not in loaded


def test_check_imports_the_integrity_check_and_receipts_only(trip: Path) -> None:
    status, loaded = _loaded("check", trip)
    assert status == 0
    assert "pytest_rollout.diff.integrity" in loaded
    assert "pytest_rollout.store.receipt" in loaded
    assert (
        _among(loaded, (*COMPARISON, *STEPS, *VIEWER, *OTHERS, "pytest_rollout.store.audit")) == []
    )


def test_fork_imports_the_fork_only(trip: Path) -> None:
    status, loaded = _loaded("fork", trip, "--step", "1")
    assert status == 0
    assert "pytest_rollout.replay.fork" in loaded
    assert _among(loaded, (*COMPARISON, *RECEIPTS, *VIEWER, "pytest_rollout.diff")) == []


def test_view_of_one_run_imports_neither_the_comparison_nor_the_server(
    trip: Path, tmp_path: Path
) -> None:
    status, loaded = _loaded("view", "--out", tmp_path / "page.html", trip)
    assert status == 0
    assert "pytest_rollout.view.page" in loaded
    assert _among(loaded, (*COMPARISON, *STEPS, *CANONICAL, *RECEIPTS, *OTHERS)) == []
    assert "pytest_rollout.view.server" not in loaded


def test_diff_imports_the_comparison_but_not_the_viewer(trip: Path, tmp_path: Path) -> None:
    """The other side of the tests above: the probe sees the comparison when it is used."""
    other = write_trip(tmp_path / "other.jsonl", "Oslo")
    status, loaded = _loaded("diff", trip, other)
    assert status == 1
    assert "pytest_rollout.diff.drift" in loaded
    assert "pytest_rollout.diff.report" in loaded
    assert _among(loaded, (*RECEIPTS, *VIEWER, *OTHERS)) == []


def test_the_fork_formats_the_parser_offers_are_the_forks() -> None:
    # The parser writes them out so that building it does not load the fork.
    assert tuple(f.value for f in ForkFormat) == FORK_FORMATS
