"""Runs found by their id: in the capture directory and the runs cache, by a whole id or a
unique prefix, and never through a symbolic link or a file that is not a run."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import orjson
import pytest

from pytest_rollout.errors import RolloutError
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.store.project import find_project
from pytest_rollout.store.run_lookup import (
    FIRST_LINE_BYTES,
    MIN_PREFIX,
    AmbiguousRunError,
    FoundRun,
    Place,
    RunFinder,
    RunLookupError,
    RunNotFoundError,
    RunPlaces,
    RunPrefixTooShortError,
    find_run,
    looks_like_run_id,
)

posix_only = pytest.mark.skipif(os.name != "posix", reason="symbolic links as POSIX has them")

A = "20261129T225800123456Z-3f9a0c1b2d4e"
B = "20261129T225801000001Z-0123456789ab"
C = "20261130T080000000000Z-aaaaaaaaaaaa"


def record(path: Path, run_id: str, *, prompt: str = "hi", whole: bool = True) -> Path:
    """A small run as the recorder writes it, whose ``run.started`` carries ``run_id``."""
    rec = Recorder()
    rec.emit("run.started", {"run_id": run_id, "test_id": "t", "prompt": prompt, "meta": {}})
    rec.emit("llm.turn.started", {"messages": [{"role": "user", "content": prompt}]})
    rec.emit("llm.turn.completed", {"content": "ok"})
    if whole:
        rec.emit("run.completed", {"outcome": "completed", "output": "ok"})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(rec.getvalue())
    return path


@pytest.fixture
def places(tmp_path: Path) -> RunPlaces:
    return RunPlaces(capture_dir=tmp_path / "runs", runs_cache=tmp_path / "cache")


def captured(places: RunPlaces, run_id: str, day: str = "2026-11-29") -> Path:
    assert places.capture_dir is not None
    return record(places.capture_dir / day / f"{run_id}.jsonl", run_id)


def cached(places: RunPlaces, name: str, run_id: str) -> Path:
    return record(places.runs_cache / name, run_id)


# -- what looks like a run id -------------------------------------------------------------


@pytest.mark.parametrize("text", [A, A[:8], A[:23], "2", "20261129T"])
def test_a_run_id_and_its_starts_look_like_one(text: str) -> None:
    assert looks_like_run_id(text)


@pytest.mark.parametrize(
    "text",
    ["", "golden/a.jsonl", "a.jsonl", "2026-11-29", "20261129t2258", A + "0", A.upper(), "r1"],
)
def test_other_texts_do_not(text: str) -> None:
    assert not looks_like_run_id(text)


# -- found --------------------------------------------------------------------------------


def test_a_captured_run_is_found_by_its_id_and_by_a_prefix(places: RunPlaces) -> None:
    path = captured(places, A)
    captured(places, C, day="2026-11-30")
    expected = FoundRun(run_id=A, path=path, place=Place.CAPTURE, partial=False)
    assert find_run(A, places) == expected
    assert find_run(A[:MIN_PREFIX], places) == expected


def test_a_run_in_the_runs_cache_is_found_by_its_first_line(places: RunPlaces) -> None:
    path = cached(places, "tests/test_trip/test_weather[paris].jsonl", B)
    cached(places, "tests/test_trip/test_other.jsonl", C)
    found = find_run(B[:15], places)
    assert found == FoundRun(run_id=B, path=path, place=Place.RUNS_CACHE, partial=False)


def test_a_crashed_run_is_found_by_its_partial_file(places: RunPlaces) -> None:
    assert places.capture_dir is not None
    partial = record(places.capture_dir / "2026-11-29" / f".{A}.jsonl.partial", A, whole=False)
    cache_partial = record(places.runs_cache / "t" / ".test_x.jsonl.partial", B, whole=False)
    assert find_run(A, places) == FoundRun(A, partial, Place.CAPTURE, partial=True)
    assert find_run(B, places) == FoundRun(B, cache_partial, Place.RUNS_CACHE, partial=True)


def test_a_whole_file_wins_over_a_partial_one_and_the_capture_over_the_cache(
    places: RunPlaces,
) -> None:
    assert places.capture_dir is not None
    record(places.capture_dir / "2026-11-29" / f".{A}.jsonl.partial", A, whole=False)
    cached(places, "test_a.jsonl", A)
    whole = captured(places, A)
    assert find_run(A[:10], places) == FoundRun(A, whole, Place.CAPTURE, partial=False)


def test_no_capture_directory_searches_the_runs_cache_alone(tmp_path: Path) -> None:
    places = RunPlaces(capture_dir=None, runs_cache=tmp_path / "cache")
    path = record(places.runs_cache / "test_a.jsonl", A)
    assert find_run(A, places).path == path


# -- not found, or not only one ---------------------------------------------------------------


def test_an_ambiguous_prefix_names_the_runs(places: RunPlaces) -> None:
    captured(places, A)
    cached(places, "test_b.jsonl", B)
    with pytest.raises(AmbiguousRunError) as info:
        find_run("20261129T2258", places)
    assert str(info.value) == (
        f"run id prefix 20261129T2258 matches 2 runs: {A}, {B} (give more characters)"
    )
    assert info.value.matches == (A, B)


def test_a_prefix_matching_many_runs_names_five_and_counts_the_rest(places: RunPlaces) -> None:
    ids = [f"20261129T2258{n:02d}000000Z-{n:012x}" for n in range(7)]
    for run_id in ids:
        captured(places, run_id)
    with pytest.raises(AmbiguousRunError) as info:
        find_run("20261129", places)
    assert str(info.value) == (
        f"run id prefix 20261129 matches 7 runs: {', '.join(ids[:5])}, and 2 more "
        "(give more characters)"
    )


def test_a_missing_id_names_both_places(places: RunPlaces, tmp_path: Path) -> None:
    captured(places, C)
    with pytest.raises(RunNotFoundError) as info:
        find_run(A, places, shown=tmp_path)
    assert str(info.value) == (
        f"no run with id {A} in runs (the capture directory) or cache (the runs cache)"
    )
    with pytest.raises(RunNotFoundError) as info:
        find_run("20261128", places)
    assert str(info.value) == (
        f"no run whose id starts with 20261128 in {tmp_path / 'runs'} (the capture directory) "
        f"or {tmp_path / 'cache'} (the runs cache)"
    )


def test_a_missing_id_without_a_capture_directory_says_none_is_set(tmp_path: Path) -> None:
    places = RunPlaces(capture_dir=None, runs_cache=tmp_path / "cache")
    with pytest.raises(RunNotFoundError) as info:
        find_run(A, places, shown=tmp_path)
    assert str(info.value) == (
        f"no run with id {A} in cache (the runs cache); "
        "no capture directory is set (ROLLOUT_DIR, rollout_dir)"
    )


def test_a_prefix_too_short_is_refused_before_anything_is_read(places: RunPlaces) -> None:
    captured(places, A)
    with pytest.raises(RunPrefixTooShortError) as info:
        find_run(A[: MIN_PREFIX - 1], places)
    assert str(info.value) == (
        "2026112: no such file, and too short to name a run by its id "
        "(give at least 8 characters of the id)"
    )


def test_a_text_that_is_no_run_id_is_refused(places: RunPlaces) -> None:
    with pytest.raises(RunLookupError, match=r"^golden/a\.jsonl is not a run id"):
        find_run("golden/a.jsonl", places)


def test_the_errors_are_rollout_errors_that_pickle() -> None:
    errors: list[RunLookupError] = [
        RunPrefixTooShortError("2026"),
        RunNotFoundError(A, "somewhere"),
        AmbiguousRunError("20261129", (A, B)),
    ]
    for error in errors:
        assert isinstance(error, RolloutError)
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error)
        assert str(again) == str(error)


# -- what is not a run, and what is not followed ----------------------------------------------


def test_files_that_are_not_runs_are_passed_over(places: RunPlaces) -> None:
    cache = places.runs_cache
    cache.mkdir(parents=True)
    (cache / "notes.txt").write_text(f'{{"type":"run.started","data":{{"run_id":"{A}"}}}}\n')
    (cache / "no_start.jsonl").write_bytes(
        orjson.dumps({"ts": "x", "seq": 0, "type": "llm.turn.started", "data": {"run_id": A}})
        + b"\n"
    )
    (cache / "not_json.jsonl").write_text(f"{A}\n")
    (cache / "other_id.jsonl").write_bytes(
        orjson.dumps({"type": "run.started", "data": {"run_id": A + "-copy"}}) + b"\n"
    )
    (cache / "empty.jsonl").write_bytes(b"")
    (cache / "a.jsonl.receipt").write_text(A)
    assert places.capture_dir is not None
    day = places.capture_dir / "2026-11-29"
    day.mkdir(parents=True)
    (day / f"{A}.json").write_text("x")
    (day / "audit.jsonl").write_text("x")
    (places.capture_dir / "not-a-day").mkdir()
    (places.capture_dir / "not-a-day" / f"{A}.jsonl").write_text("x")
    with pytest.raises(RunNotFoundError):
        find_run(A[:8], places)


def test_a_long_first_line_is_read_only_as_far_as_the_bound(
    places: RunPlaces, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first line longer than the bound is not read whole: the recorder puts the run id at
    the start of it, and that is where it is read."""
    path = record(places.runs_cache / "test_big.jsonl", A, prompt="x" * (4 * FIRST_LINE_BYTES))
    small = record(places.runs_cache / "test_c.jsonl", C)
    read = 0
    real_read = os.read

    def counted(fd: int, size: int) -> bytes:
        nonlocal read
        data = real_read(fd, size)
        read += len(data)
        return data

    monkeypatch.setattr(os, "read", counted)
    assert find_run(A[:8], places).path == path
    assert read <= FIRST_LINE_BYTES + small.stat().st_size


def test_a_long_first_line_in_another_layout_is_passed_over(places: RunPlaces) -> None:
    line = {"type": "run.started", "data": {"meta": {"x": "y" * FIRST_LINE_BYTES}, "run_id": A}}
    places.runs_cache.mkdir(parents=True)
    (places.runs_cache / "test_big.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    with pytest.raises(RunNotFoundError):
        find_run(A, places)


@posix_only
def test_no_symbolic_link_below_the_folders_is_followed(places: RunPlaces, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    record(outside / "test_a.jsonl", A)
    record(outside / f"{A}.jsonl", A)
    places.runs_cache.mkdir(parents=True)
    (places.runs_cache / "linked").symlink_to(outside, target_is_directory=True)
    (places.runs_cache / "test_a.jsonl").symlink_to(outside / "test_a.jsonl")
    assert places.capture_dir is not None
    day = places.capture_dir / "2026-11-29"
    day.mkdir(parents=True)
    (day / f"{A}.jsonl").symlink_to(outside / f"{A}.jsonl")
    (places.capture_dir / "2026-11-30").symlink_to(outside, target_is_directory=True)
    with pytest.raises(RunNotFoundError):
        find_run(A, places)


@posix_only
def test_the_folders_themselves_may_be_links(tmp_path: Path) -> None:
    """Where the user chose to put a folder is theirs to choose, as for writing."""
    real = tmp_path / "real"
    record(real / "cache" / "test_a.jsonl", A)
    record(real / "runs" / "2026-11-29" / f"{B}.jsonl", B)
    (tmp_path / "cache").symlink_to(real / "cache", target_is_directory=True)
    (tmp_path / "runs").symlink_to(real / "runs", target_is_directory=True)
    places = RunPlaces(capture_dir=tmp_path / "runs", runs_cache=tmp_path / "cache")
    assert find_run(A, places).path == tmp_path / "cache" / "test_a.jsonl"
    assert find_run(B, places).path == tmp_path / "runs" / "2026-11-29" / f"{B}.jsonl"


@posix_only
def test_a_fifo_in_the_runs_cache_is_not_opened(places: RunPlaces) -> None:
    places.runs_cache.mkdir(parents=True)
    os.mkfifo(places.runs_cache / "test_pipe.jsonl")
    with pytest.raises(RunNotFoundError):
        find_run(A, places)  # a read of the FIFO would block: the test would hang


# -- where the places are, and the finder ------------------------------------------------------


def test_the_places_come_from_rollout_dir_and_the_project_root(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nrollout_dir = captured\n")
    sub = tmp_path / "tests" / "deep"
    sub.mkdir(parents=True)
    assert RunPlaces.around(sub, {}) == RunPlaces(
        capture_dir=tmp_path / "captured", runs_cache=tmp_path / ".pytest_cache/d/rollout/runs"
    )
    # ROLLOUT_DIR wins over the ini key, and is taken relative to the current folder.
    assert RunPlaces.around(sub, {"ROLLOUT_DIR": "mine"}).capture_dir == sub / "mine"


def test_the_places_follow_a_pyproject_and_its_cache_dir(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.pytest.ini_options]\ncache_dir = "build/cache"\n'
    )
    places = RunPlaces.around(tmp_path / "src", {})
    assert places == RunPlaces(capture_dir=None, runs_cache=tmp_path / "build/cache/d/rollout/runs")


def test_the_project_root_is_the_nearest_pytest_configuration(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text("[pytest]\naddopts = -q\n")
    inner = tmp_path / "pkg"
    inner.mkdir()
    (inner / "tox.ini").write_text("[tox]\nenvlist = py311\n")  # no [pytest]: not pytest's
    (inner / "setup.cfg").write_text("[tool:pytest\n")  # broken: pytest would stop here too
    assert find_project(inner).root == inner
    (inner / "setup.cfg").unlink()
    assert find_project(inner).root == tmp_path


def test_the_finder_keeps_a_path_and_a_text_that_is_no_id(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    named_like_an_id = tmp_path / A[:12]
    named_like_an_id.write_text("not even a rollout")
    record(tmp_path / ".pytest_cache/d/rollout/runs/test_a.jsonl", A)
    finder = RunFinder(tmp_path, {})
    assert finder.rollout(str(named_like_an_id)) == str(named_like_an_id)
    assert finder.rollout("missing.jsonl") == "missing.jsonl"


def test_the_finder_gives_the_run_relative_to_the_current_folder(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    record(tmp_path / ".pytest_cache/d/rollout/runs/test_a.jsonl", A)
    finder = RunFinder(tmp_path, {})
    assert finder.rollout(A[:12]) == ".pytest_cache/d/rollout/runs/test_a.jsonl"
    elsewhere = tmp_path / "elsewhere"
    record(elsewhere / "2026-11-29" / f"{B}.jsonl", B)
    finder = RunFinder(tmp_path / "tests", {"ROLLOUT_DIR": str(elsewhere)})
    assert finder.rollout(B) == str(elsewhere / "2026-11-29" / f"{B}.jsonl")
