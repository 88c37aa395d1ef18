"""The plugin never writes a run through a symbolic link below the capture directory or the
runs cache: the test still passes and the summary says the run was not saved, and why; a
captured run is private (docs/secrets.md)."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from plugin_agent import WEATHER_TEST, record, write_project

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symbolic links and modes of POSIX")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("ROLLOUT_DIR", raising=False)
    write_project(pytester, test_weather=WEATHER_TEST)
    return pytester


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("outside")


def test_a_symlinked_day_folder_of_the_capture_directory_is_not_written_through(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, outside: Path
) -> None:
    root = project.path / "runs"
    root.mkdir()
    day = root / datetime.now(UTC).date().isoformat()
    day.symlink_to(outside, target_is_directory=True)
    monkeypatch.setenv("ROLLOUT_DIR", str(root))
    result = record(project)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            f"*test_weather.py::test_weather: its run was not saved: {day} is a symbolic link, "
            f"and none is followed under {root}"
        ]
    )
    assert list(outside.iterdir()) == []
    assert (project.path / "golden/test_weather/test_weather.jsonl").is_file()


def test_a_symlinked_folder_of_the_runs_cache_is_not_written_through(
    project: pytest.Pytester, outside: Path
) -> None:
    runs = project.path / ".pytest_cache/d/rollout/runs"
    runs.mkdir(parents=True)
    (runs / "test_weather").symlink_to(outside, target_is_directory=True)
    result = record(project)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_weather: its run was not saved: *is a symbolic link*"])
    assert list(outside.iterdir()) == []


def test_a_captured_run_is_private(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project.path / "runs"
    monkeypatch.setenv("ROLLOUT_DIR", str(root))
    record(project).assert_outcomes(passed=1)
    (path,) = root.rglob("*.jsonl")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_golden_that_cannot_be_written_is_said_in_the_summary_never_a_teardown_error(
    project: pytest.Pytester, outside: Path
) -> None:
    golden = project.path / "golden"
    golden.mkdir()
    (golden / "test_weather").symlink_to(outside, target_is_directory=True)
    result = record(project)
    result.assert_outcomes(passed=1)  # no error at teardown, no raw traceback
    result.stdout.fnmatch_lines(
        [
            "test_weather.py::test_weather: its golden was not written: refusing to write "
            "*/golden/test_weather/test_weather.jsonl: it is outside */golden"
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert list(outside.iterdir()) == []
