"""Naming a run by its id: each ``rollout`` command that reads rollouts takes a run id, or a
unique prefix of one, found in the capture directory or the runs cache (docs/cli.md)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hostile import EVIL, assert_printable
from test_cli_diff import EXPECTED_REGRESSION, write_trip

from pytest_rollout.cli import main

GOLDEN_ID = "20260628T123456000001Z-0123456789ab"
RUN_ID = "20260628T123501000002Z-fedcba987654"
#: Where each run is, relative to the project (the current folder).
GOLDEN = f"runs/2026-06-28/{GOLDEN_ID}.jsonl"
RUN = ".pytest_cache/d/rollout/runs/tests/test_trip/test_weather.jsonl"
PLACES = "runs (the capture directory) or .pytest_cache/d/rollout/runs (the runs cache)"


def with_id(path: Path, run_id: str) -> Path:
    """The run in ``path``, its ``run.started`` given ``run_id``."""
    path.write_bytes(path.read_bytes().replace(b'"run_id":"r1"', f'"run_id":"{run_id}"'.encode()))
    return path


def put(project: Path, where: str, run_id: str, city: str = "Rome", *, fail: bool = False) -> Path:
    path = project / where
    path.parent.mkdir(parents=True, exist_ok=True)
    return with_id(write_trip(path, city, fail=fail), run_id)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a golden-like run captured under ``runs/`` and a regressed run in the
    runs cache; the current folder is its root."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    put(tmp_path, GOLDEN, GOLDEN_ID)
    put(tmp_path, RUN, RUN_ID, "Paris", fail=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ROLLOUT_DIR", "runs")
    return tmp_path


def rollout(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """``rollout ARGV...`` in process: its exit code, what it printed and its stderr."""
    out = io.StringIO()
    code = main([str(a) for a in argv], out=out)
    return code, out.getvalue(), capsys.readouterr().err


# -- each command takes an id -------------------------------------------------------------


def test_diff_takes_two_ids(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = rollout(capsys, "diff", GOLDEN_ID[:17], RUN_ID)
    assert (code, err) == (1, "")
    assert out == EXPECTED_REGRESSION.format(a=GOLDEN, b=RUN)
    assert rollout(capsys, "diff", GOLDEN, RUN) == (code, out, err)


def test_diff_takes_an_id_beside_a_path(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = put(project, "elsewhere/b.jsonl", "r1", "Paris", fail=True)
    code, out, _ = rollout(capsys, "diff", GOLDEN_ID, other)
    assert code == 1
    assert out == EXPECTED_REGRESSION.format(a=GOLDEN, b=other)


@pytest.mark.parametrize(
    "argv",
    [
        ("show", "{run}"),
        ("show", "{run}", "--type", "tool."),
        ("check", "{run}"),
        ("check", "{golden}", "{run}", "--json"),
        ("fork", "{run}", "--step", "1"),
    ],
)
def test_a_command_given_an_id_does_what_it_does_given_the_file(
    argv: tuple[str, ...], project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_id = rollout(capsys, *(a.format(run=RUN_ID[:15], golden=GOLDEN_ID) for a in argv))
    by_path = rollout(capsys, *(a.format(run=RUN, golden=GOLDEN) for a in argv))
    assert by_id == by_path
    assert by_id[0] in (0, 1)
    assert by_id[2] == ""


def test_export_otel_takes_ids(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = rollout(capsys, "export", "otel", GOLDEN_ID, RUN_ID[:15], "-o", "by_id.jsonl")
    assert (code, out) == (0, "exported 2 traces to by_id.jsonl\n")
    rollout(capsys, "export", "otel", GOLDEN, RUN, "-o", "by_path.jsonl")
    assert (project / "by_id.jsonl").read_bytes() == (project / "by_path.jsonl").read_bytes()


def test_view_takes_an_id(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = rollout(capsys, "view", RUN_ID, "--out", "page.html")
    assert (code, err) == (0, "")
    assert RUN_ID in (project / "page.html").read_text(encoding="utf-8")


def test_a_crashed_runs_partial_file_is_found_and_shown_cut_short(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crashed = "20260628T130000000000Z-0000000000aa"
    partial = put(project, f"runs/2026-06-28/.{crashed}.jsonl.partial", crashed)
    partial.write_bytes(b"".join(partial.read_bytes().splitlines(keepends=True)[:3]))
    code, out, _ = rollout(capsys, "show", crashed)
    assert code == 0
    assert out.startswith("cut short after event 3: the file ends before the run did\n")
    # A command that needs a whole run refuses it, naming the file.
    code, _, err = rollout(capsys, "check", crashed)
    assert code == 2
    assert err.startswith(f"rollout: error: runs/2026-06-28/.{crashed}.jsonl.partial")


# -- a path wins, and what is no id stays a missing file --------------------------------------


def test_an_existing_file_wins_over_a_run_id(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    named_like_an_id = RUN_ID[:15]
    put(project, named_like_an_id, "r1", "Oslo")
    _, out, _ = rollout(capsys, "show", named_like_an_id)
    assert "Oslo" in out
    assert "Paris" not in out


def test_a_text_that_is_no_id_keeps_the_missing_file_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert rollout(capsys, "show", "nope.jsonl") == (
        2,
        "",
        "rollout: error: nope.jsonl: cannot open: No such file or directory\n",
    )


def test_seal_takes_files_only(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A receipt is written beside its file; the runs found by id are in the plugin's own
    folders, so ``seal`` writes nothing there."""
    code, _, err = rollout(capsys, "seal", GOLDEN_ID)
    assert code == 2
    assert err == (
        f"rollout: error: {GOLDEN_ID}: cannot open: No such file or directory\n"
        "rollout seal: nothing was sealed\n"
    )
    assert sorted(p.name for p in (project / "runs/2026-06-28").iterdir()) == [f"{GOLDEN_ID}.jsonl"]


# -- missing, ambiguous, too short: one line, exit status 2 ---------------------------------------


def test_a_missing_id_is_one_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = "20260628T123456000001Z-000000000000"
    assert rollout(capsys, "diff", missing, RUN_ID) == (
        2,
        "",
        f"rollout diff: error: no run with id {missing} in {PLACES}\n",
    )
    assert rollout(capsys, "fork", "20250101", "--step", "0") == (
        2,
        "",
        f"rollout fork: error: no run whose id starts with 20250101 in {PLACES}\n",
    )


def test_a_missing_id_without_a_capture_directory(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROLLOUT_DIR")
    code, _, err = rollout(capsys, "show", GOLDEN_ID)
    assert code == 2
    assert err == (
        f"rollout show: error: no run with id {GOLDEN_ID} in .pytest_cache/d/rollout/runs "
        "(the runs cache); no capture directory is set (ROLLOUT_DIR, rollout_dir)\n"
    )


def test_the_ini_key_names_the_capture_directory(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROLLOUT_DIR")
    (project / "pytest.ini").write_text("[pytest]\nrollout_dir = runs\n")
    monkeypatch.chdir(project / "runs")  # the project is found from a folder inside it
    code, out, _ = rollout(capsys, "show", GOLDEN_ID, "--type", "run.")
    assert code == 0
    assert "Rome" in out


def test_an_ambiguous_prefix_is_one_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert rollout(capsys, "check", "20260628T123") == (
        2,
        "",
        f"rollout check: error: run id prefix 20260628T123 matches 2 runs: {GOLDEN_ID}, "
        f"{RUN_ID} (give more characters)\n",
    )


def test_a_prefix_too_short_is_one_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert rollout(capsys, "show", "2026062") == (
        2,
        "",
        "rollout show: error: 2026062: no such file, and too short to name a run by its id "
        "(give at least 8 characters of the id)\n",
    )


def test_a_hostile_capture_directory_is_printed_safely(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROLLOUT_DIR", str(project / EVIL.replace("\x00", "").replace("/", "")))
    code, _, err = rollout(capsys, "show", "20250101")
    assert code == 2
    assert err.count("\n") == 1
    assert_printable(err)
