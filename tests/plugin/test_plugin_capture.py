"""The capture directory in the plugin: every run kept under ``ROLLOUT_DIR`` (docs/secrets.md).

Opt-in by ``ROLLOUT_DIR`` (first), ``--rollout-dir`` or the ``rollout_dir`` ini key; each
run is ``<dir>/<YYYY-MM-DD>/<run_id>.jsonl`` in record and compare mode alike; caps and
retention never change a test's outcome.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from plugin_agent import IN_PROCESS, WEATHER_TEST, record, run, write_project

from pytest_rollout import load
from pytest_rollout.store.capture import is_run_id


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("ROLLOUT_DIR", raising=False)
    write_project(pytester, test_weather=WEATHER_TEST)
    return pytester


def captured(root: Path) -> list[Path]:
    return sorted(root.rglob("*.jsonl"))


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def test_every_run_is_captured_in_record_and_compare_mode(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project.path / "runs"
    monkeypatch.setenv("ROLLOUT_DIR", str(root))
    record(project).assert_outcomes(passed=1)
    run(project, ()).assert_outcomes(passed=1)
    files = captured(root)
    assert len(files) == 2
    for path in files:
        assert path.parent.name == today()
        assert is_run_id(path.stem)
        started = load(path).events[0]
        assert started.type == "run.started"
        assert started.data["run_id"] == path.stem
    assert not list(root.rglob("*.partial"))
    assert not (project.path / ".pytest_cache/d/rollout").exists()


def test_the_environment_wins_over_the_flag_and_the_ini_key(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makeini("[pytest]\nrollout_dir = from-ini\n")
    record(project, "--rollout-dir=from-flag").assert_outcomes(passed=1)
    assert len(captured(project.path / "from-flag")) == 1
    record(project).assert_outcomes(passed=1)
    assert len(captured(project.path / "from-ini")) == 1
    monkeypatch.setenv("ROLLOUT_DIR", str(project.path / "from-env"))
    record(project, "--rollout-dir=from-flag").assert_outcomes(passed=1)
    assert len(captured(project.path / "from-env")) == 1
    assert len(captured(project.path / "from-flag")) == 1


def test_a_capped_capture_keeps_a_loadable_file_and_the_test_passes(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project.path / "runs"
    monkeypatch.setenv("ROLLOUT_DIR", str(root))
    project.makeini("[pytest]\nrollout_capture_max_file_mb = 0.001\n")  # about 1 KB
    record(project).assert_outcomes(passed=1)
    golden = load(project.path / "golden/test_weather/test_weather.jsonl")
    (path,) = captured(root)
    kept = load(path).events
    assert len(kept) < len(golden.events)
    assert kept[-2].type == "recorder.drop_detected"
    assert kept[-1].type == "run.completed"
    assert path.stat().st_size < 1024 + len(golden.events[-1].data["output"]) + 400
    run(project, ()).assert_outcomes(passed=1)  # the comparison sees the whole run


def test_old_runs_are_removed_at_session_start_and_other_files_kept(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project.path / "runs"
    monkeypatch.setenv("ROLLOUT_DIR", str(root))
    project.makeini("[pytest]\nrollout_capture_retention_days = 7\n")
    old = root / "2020-01-01"
    old.mkdir(parents=True)
    stale = old / "20200101T000000000000Z-0123456789ab.jsonl"
    stale.write_bytes(b"{}\n")
    notes = root / "notes.txt"
    notes.write_text("mine")
    record(project).assert_outcomes(passed=1)
    assert not stale.exists()
    assert notes.read_text() == "mine"
    assert [p.parent.name for p in captured(root)] == [today()]


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ("rollout_capture_max_file_mb = lots", "rollout_capture_max_file_mb must be a number*"),
        ("rollout_capture_retention_days = 1.5", "rollout_capture_retention_days must be a*"),
    ],
)
def test_bad_capture_settings_are_a_usage_error(
    project: pytest.Pytester, ini: str, message: str
) -> None:
    project.makeini(f"[pytest]\n{ini}\n")
    result = project.runpytest_inprocess(*IN_PROCESS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "ROLLOUT_MAX_FILE_MB",
            "lots",
            "ROLLOUT_MAX_FILE_MB must be a number of megabytes, got 'lots'",
        ),
        ("ROLLOUT_MAX_TOTAL_MB", "-1", "ROLLOUT_MAX_TOTAL_MB must not be negative, got '-1'*"),
        ("ROLLOUT_RETENTION_DAYS", "1.5", "ROLLOUT_RETENTION_DAYS must be a whole number of days*"),
    ],
)
def test_a_bad_capture_variable_is_a_usage_error_naming_it(
    project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    message: str,
) -> None:
    project.makeini("[pytest]\nrollout_capture_max_file_mb = 5\n")  # the variable wins
    monkeypatch.setenv(variable, value)
    result = project.runpytest_inprocess(*IN_PROCESS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_the_capture_variables_win_over_the_ini_keys(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project.path / "runs"
    monkeypatch.setenv("ROLLOUT_DIR", str(root))
    project.makeini("[pytest]\nrollout_capture_retention_days = 0\n")  # kept forever
    monkeypatch.setenv("ROLLOUT_RETENTION_DAYS", "7")
    monkeypatch.setenv("ROLLOUT_MAX_FILE_MB", "0.001")  # about 1 KB
    stale = root / "2020-01-01" / "20200101T000000000000Z-0123456789ab.jsonl"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"{}\n")
    record(project).assert_outcomes(passed=1)
    assert not stale.exists()
    (path,) = captured(root)
    assert load(path).events[-2].type == "recorder.drop_detected"


def test_without_a_capture_directory_the_last_run_goes_to_the_cache(
    project: pytest.Pytester,
) -> None:
    record(project).assert_outcomes(passed=1)
    cached = project.path / ".pytest_cache/d/rollout/runs/test_weather/test_weather.jsonl"
    assert load(cached).events[-1].type == "run.completed"
