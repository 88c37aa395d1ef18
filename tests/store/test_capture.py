"""The capture directory: root, run ids, layout, limits, usage, retention and budget."""

from __future__ import annotations

import ast
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_rollout.store import capture
from pytest_rollout.store.capture import (
    ENV_VAR,
    MB,
    Budget,
    CaptureLimits,
    Pruned,
    capture_path,
    enforce_retention,
    is_run_id,
    new_run_id,
    resolve_root,
    usage,
)

# 2026-06-28T12:34:56Z, in nanoseconds since the epoch.
T0 = 1_782_650_096 * 1_000_000_000
TODAY = date(2026, 11, 30)
NO_LIMITS = CaptureLimits(max_file_bytes=None, max_total_bytes=None, retention_days=None)


def rid(micros: int) -> str:
    """A run id that started ``micros`` microseconds after T0."""
    return new_run_id(T0 + micros * 1000)


def put(root: Path, day: str, name: str, size: int) -> Path:
    path = root / day / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


def run_file(root: Path, day: str, run_id: str, size: int) -> Path:
    return put(root, day, f"{run_id}.jsonl", size)


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_the_module_never_imports_pytest() -> None:
    tree = ast.parse(Path(capture.__file__).read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] in {"pytest", "_pytest"}}


# -- resolve_root -----------------------------------------------------------------------


def test_capture_is_off_when_nothing_is_set(tmp_path: Path) -> None:
    assert resolve_root({}, None, "", tmp_path) is None
    assert resolve_root({ENV_VAR: ""}, "", "  ", tmp_path) is None


def test_environment_wins_over_flag_and_ini(tmp_path: Path) -> None:
    got = resolve_root({ENV_VAR: "/env"}, "/flag", "/ini", tmp_path)
    assert got == Path("/env")


def test_empty_environment_value_falls_through_to_the_flag(tmp_path: Path) -> None:
    assert resolve_root({ENV_VAR: ""}, "/flag", "/ini", tmp_path) == Path("/flag")
    assert resolve_root({ENV_VAR: "   "}, "/flag", "/ini", tmp_path) == Path("/flag")
    assert resolve_root({ENV_VAR: " /env\n"}, "/flag", "/ini", tmp_path) == Path("/env")


def test_flag_wins_over_ini_and_ini_is_last(tmp_path: Path) -> None:
    assert resolve_root({}, "/flag", "/ini", tmp_path) == Path("/flag")
    assert resolve_root({}, None, "/ini", tmp_path) == Path("/ini")
    assert resolve_root({"OTHER": "/x"}, "", "/ini", tmp_path) == Path("/ini")


def test_relative_paths_are_relative_to_the_invocation_dir(tmp_path: Path) -> None:
    assert resolve_root({ENV_VAR: "runs"}, None, "", tmp_path) == tmp_path / "runs"
    assert resolve_root({}, "a/b", "", tmp_path) == tmp_path / "a" / "b"
    assert resolve_root({}, None, "../up", tmp_path) == tmp_path / ".." / "up"


def test_home_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    assert resolve_root({ENV_VAR: "~/runs"}, None, "", tmp_path / "cwd") == home / "runs"
    assert resolve_root({}, None, "~", tmp_path / "cwd") == home


def test_an_unexpandable_home_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^ROLLOUT_DIR='~no-such-user-zq7/x': cannot expand '~'"):
        resolve_root({ENV_VAR: "~no-such-user-zq7/x"}, None, "", tmp_path)


# -- run ids --------------------------------------------------------------------------


def test_run_id_shape_is_utc_time_then_random_hex() -> None:
    run_id = new_run_id(T0 + 123_456_789)
    assert re.fullmatch(r"20260628T123456123456Z-[0-9a-f]{12}", run_id)
    assert is_run_id(run_id)


def test_run_id_before_the_epoch() -> None:
    assert new_run_id(-1).startswith("19691231T235959999999Z-")


def test_run_id_defaults_to_now() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    run_id = new_run_id()
    after = datetime.now(UTC)
    started = datetime.strptime(run_id[:22], "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)
    assert before <= started <= after


def test_run_id_out_of_range_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="out of range"):
        new_run_id(10**30)


def test_ten_thousand_run_ids_in_one_microsecond_are_unique() -> None:
    ids = {new_run_id(T0) for _ in range(10_000)}
    assert len(ids) == 10_000


def test_sorting_run_ids_sorts_by_start_time() -> None:
    times = [
        T0,
        T0 + 1_000,  # one microsecond later
        T0 + 999_999_000,
        T0 + 1_000_000_000,
        T0 + 86_400 * 10**9 * 200,  # into the next year
        -(10**9),  # before 1970
        10**9,
    ]
    for _ in range(20):
        ids = [new_run_id(t) for t in times]
        assert sorted(ids) == [ids[i] for i in sorted(range(len(times)), key=times.__getitem__)]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "../x",
        "a/b",
        "20260628T123456123456Z-3f9a0c1b2d4",  # 11 hex
        "20260628T123456123456Z-3F9A0C1B2D4E",  # upper case
        "20260628T123456123456Z-3f9a0c1b2d4e/",
        "20260628T123456123456Z-3f9a0c1b2d4e\n",
        "../20260628T123456123456Z-3f9a0c1b2d4e",
        "2026062\uff18T123456123456Z-3f9a0c1b2d4e",  # a full-width digit
        "20260628T12345612345Z-3f9a0c1b2d4e",
    ],
)
def test_is_run_id_refuses_anything_else(text: str) -> None:
    assert not is_run_id(text)


# -- capture_path ---------------------------------------------------------------------


def test_capture_path_layout(tmp_path: Path) -> None:
    run_id = rid(0)
    started = datetime(2026, 6, 28, 12, 34, 56, tzinfo=UTC)
    assert capture_path(tmp_path, run_id, started) == tmp_path / "2026-06-28" / f"{run_id}.jsonl"


def test_capture_path_day_is_the_utc_date(tmp_path: Path) -> None:
    run_id = rid(0)
    east = timezone(timedelta(hours=5))
    started = datetime(2026, 6, 29, 2, 0, tzinfo=east)  # 2026-06-28T21:00Z
    assert capture_path(tmp_path, run_id, started).parent.name == "2026-06-28"
    naive = datetime(2026, 6, 29, 2, 0)  # taken as UTC
    assert capture_path(tmp_path, run_id, naive).parent.name == "2026-06-29"


@pytest.mark.parametrize("bad", ["../x", "a/b", "", "/etc/passwd", f"{'0' * 8}T..", "."])
def test_capture_path_refuses_bad_run_ids(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match=r"^refusing capture file name .*: it is not a run id$"):
        capture_path(tmp_path, bad, datetime(2026, 6, 28, tzinfo=UTC))


# -- CaptureLimits --------------------------------------------------------------------


def test_limits_defaults() -> None:
    limits = CaptureLimits()
    assert limits == CaptureLimits(50 * 1024 * 1024, 2048 * 1024 * 1024, 30)
    assert CaptureLimits.from_ini("", "", "") == limits
    assert CaptureLimits.from_ini("  ", "\t", " ") == limits


def test_limits_zero_or_none_means_no_limit() -> None:
    assert CaptureLimits.from_ini("0", "none", "0") == NO_LIMITS
    assert CaptureLimits.from_ini("None", " NONE ", "none") == NO_LIMITS
    assert CaptureLimits.from_ini("0.0", "0", "0").max_file_bytes is None


def test_limits_megabytes_and_days() -> None:
    limits = CaptureLimits.from_ini("1.5", "100", "7")
    assert limits == CaptureLimits(int(1.5 * 1024 * 1024), 100 * 1024 * 1024, 7)
    assert CaptureLimits.from_ini("1e-9", "", "").max_file_bytes == 1  # never a 0-byte cap
    assert MB == 1024 * 1024


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("abc", "", ""),
            "rollout_capture_max_file_mb must be a number of megabytes, got 'abc'",
        ),
        (
            ("", "12MB", ""),
            "rollout_capture_max_total_mb must be a number of megabytes, got '12MB'",
        ),
        (("nan", "", ""), "rollout_capture_max_file_mb must be a number of megabytes, got 'nan'"),
        (("", "inf", ""), "rollout_capture_max_total_mb must be a number of megabytes, got 'inf'"),
        (
            ("-1", "", ""),
            "rollout_capture_max_file_mb must not be negative, got '-1' (use 0 for no limit)",
        ),
        (
            ("", "", "1.5"),
            "rollout_capture_retention_days must be a whole number of days, got '1.5'",
        ),
        (
            ("", "", "week"),
            "rollout_capture_retention_days must be a whole number of days, got 'week'",
        ),
        (
            ("", "", "-3"),
            "rollout_capture_retention_days must not be negative, got '-3' (use 0 for no limit)",
        ),
    ],
)
def test_limits_garbage_is_refused_with_the_key_and_value(
    args: tuple[str, str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        CaptureLimits.from_ini(*args)


def test_limits_refuse_negative_values() -> None:
    with pytest.raises(ValueError, match=r"^max_total_bytes must not be negative, got -1$"):
        CaptureLimits(max_total_bytes=-1)


# -- usage ----------------------------------------------------------------------------


def test_usage_counts_run_files_and_their_temporary_files(tmp_path: Path) -> None:
    run_file(tmp_path, "2026-06-28", rid(0), 10)
    run_file(tmp_path, "2026-06-28", rid(1), 20)
    run_file(tmp_path, "2026-06-29", rid(2), 30)
    put(tmp_path, "2026-06-29", f".{rid(3)}.jsonl.k2j4_x9.partial", 5)
    assert usage(tmp_path) == 65


def test_usage_ignores_other_files_and_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    run_file(root, "2026-06-28", rid(0), 10)
    put(root, "2026-06-28", "audit.jsonl", 1000)
    put(root, "2026-06-28", "notes.txt", 1000)
    put(root, "2026-06-28", f"{rid(1)}.jsonl.bak", 1000)
    put(root, ".", "README", 1000)
    put(root, ".", f"{rid(2)}.jsonl", 1000)  # not in a day directory
    run_file(root, "2026-13-01", rid(3), 1000)  # not a date
    run_file(root, "2026-6-28", rid(4), 1000)
    run_file(root, "runs", rid(5), 1000)
    run_file(root / "2026-06-28", "nested", rid(6), 1000)  # a directory inside a day
    run_file(outside, "2026-01-01", rid(7), 1000)
    (root / "2026-01-01").symlink_to(outside / "2026-01-01", target_is_directory=True)
    target = run_file(outside, "x", rid(8), 1000)
    (root / "2026-06-28" / f"{rid(9)}.jsonl").symlink_to(target)
    assert usage(root) == 10


def test_usage_of_a_missing_or_unreadable_root_is_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert usage(tmp_path / "missing") == 0
    run_file(tmp_path, "2026-06-28", rid(0), 10)

    def denied(path: object) -> object:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "scandir", denied)
    assert usage(tmp_path) == 0


# -- retention by days ----------------------------------------------------------------


def test_retention_boundary_a_dir_exactly_that_old_is_kept(tmp_path: Path) -> None:
    limits = CaptureLimits(max_file_bytes=None, max_total_bytes=None, retention_days=30)
    too_old = run_file(tmp_path, "2026-10-30", rid(0), 7)  # 31 days before TODAY
    boundary = run_file(tmp_path, "2026-10-31", rid(1), 11)  # exactly 30 days
    today = run_file(tmp_path, "2026-11-30", rid(2), 13)
    future = run_file(tmp_path, "2026-12-05", rid(3), 17)  # a skewed clock

    pruned = enforce_retention(tmp_path, limits, TODAY)

    assert pruned == Pruned(removed=(too_old,), freed_bytes=7, errors=0)
    assert not too_old.parent.exists()
    assert boundary.exists()
    assert today.exists()
    assert future.exists()


def test_retention_leaves_user_files_and_kept_runs_in_old_dirs(tmp_path: Path) -> None:
    limits = CaptureLimits(max_total_bytes=None, retention_days=1)
    old = run_file(tmp_path, "2026-01-01", rid(0), 7)
    readme = put(tmp_path, "2026-01-01", "README", 3)
    kept = run_file(tmp_path, "2026-01-02", rid(1), 5)
    kept_alone = run_file(tmp_path, "2026-01-03", rid(2), 5)
    not_a_day = run_file(tmp_path, "old-stuff", rid(3), 5)

    pruned = enforce_retention(tmp_path, limits, TODAY, keep=[kept, kept_alone])

    assert pruned.removed == (old,)
    assert readme.exists()
    assert kept.exists()
    assert kept_alone.exists()
    assert not_a_day.exists()


def test_a_run_removed_takes_its_replay_receipt_along(tmp_path: Path) -> None:
    limits = CaptureLimits(max_total_bytes=None, retention_days=1)
    old = run_file(tmp_path, "2026-01-01", rid(0), 7)
    receipt = put(tmp_path, "2026-01-01", f"{old.name}.receipt", 3)
    stray = put(tmp_path, "2026-01-01", f"{rid(1)}.jsonl.receipt", 3)  # of no run removed

    pruned = enforce_retention(tmp_path, limits, TODAY)

    assert pruned.removed == (old,)
    assert not receipt.exists()
    assert stray.exists()


def test_retention_off_removes_nothing(tmp_path: Path) -> None:
    old = run_file(tmp_path, "1999-01-01", rid(0), 7)
    assert enforce_retention(tmp_path, NO_LIMITS, TODAY) == Pruned((), 0, 0)
    assert old.exists()


def test_retention_of_a_missing_root_or_a_file_does_nothing(tmp_path: Path) -> None:
    assert enforce_retention(tmp_path / "missing", CaptureLimits(0, 0, 0), TODAY) == Pruned(
        (), 0, 0
    )
    a_file = put(tmp_path, ".", "file", 3)
    assert enforce_retention(a_file, CaptureLimits(0, 0, 0), TODAY) == Pruned((), 0, 0)


# -- retention by total size ----------------------------------------------------------


def test_total_cap_removes_the_oldest_runs_first(tmp_path: Path) -> None:
    # Created out of order: the order comes from the day, then the run id.
    c = run_file(tmp_path, "2026-06-29", rid(0), 100)
    b = run_file(tmp_path, "2026-06-28", rid(5), 100)
    a = run_file(tmp_path, "2026-06-28", rid(2), 100)
    d = run_file(tmp_path, "2026-06-29", rid(9), 100)
    limits = CaptureLimits(max_total_bytes=250, retention_days=None)

    pruned = enforce_retention(tmp_path, limits, TODAY)

    assert pruned == Pruned(removed=(a, b), freed_bytes=200, errors=0)
    assert not (tmp_path / "2026-06-28").exists()  # emptied, removed
    assert c.exists()
    assert d.exists()
    assert usage(tmp_path) == 200


def test_total_cap_stops_once_under_it(tmp_path: Path) -> None:
    a = run_file(tmp_path, "2026-06-28", rid(0), 100)
    b = run_file(tmp_path, "2026-06-28", rid(1), 100)
    limits = CaptureLimits(max_total_bytes=200, retention_days=None)
    assert enforce_retention(tmp_path, limits, TODAY) == Pruned((), 0, 0)
    limits = CaptureLimits(max_total_bytes=199, retention_days=None)
    assert enforce_retention(tmp_path, limits, TODAY).removed == (a,)
    assert b.exists()


def test_total_cap_never_removes_kept_runs(tmp_path: Path) -> None:
    a = run_file(tmp_path, "2026-06-28", rid(0), 100)
    b = run_file(tmp_path, "2026-06-28", rid(1), 100)
    c = run_file(tmp_path, "2026-06-29", rid(2), 100)
    limits = CaptureLimits(max_total_bytes=150, retention_days=None)

    # The caller may name a kept file through another spelling of the same path.
    other_spelling = c.parent / ".." / a.parent.name / a.name
    pruned = enforce_retention(tmp_path, limits, TODAY, keep={other_spelling})

    assert pruned.removed == (b, c)
    assert a.exists()
    assert a.parent.exists()


def test_total_cap_leaves_other_files_alone(tmp_path: Path) -> None:
    audit = put(tmp_path, "2026-06-28", "audit.jsonl", 10_000)
    readme = put(tmp_path, ".", "README.md", 10_000)
    a = run_file(tmp_path, "2026-06-28", rid(0), 100)
    b = run_file(tmp_path, "2026-06-29", rid(1), 100)
    limits = CaptureLimits(max_total_bytes=100, retention_days=None)

    pruned = enforce_retention(tmp_path, limits, TODAY)

    assert pruned.removed == (a,)
    assert audit.exists()
    assert audit.parent.exists()  # not empty: stays
    assert readme.exists()
    assert b.exists()


def test_total_cap_keeps_todays_emptied_dir(tmp_path: Path) -> None:
    a = run_file(tmp_path, TODAY.isoformat(), rid(0), 100)
    limits = CaptureLimits(max_total_bytes=0, retention_days=None)
    assert enforce_retention(tmp_path, limits, TODAY).removed == (a,)
    assert a.parent.is_dir()  # a run may be about to write there


def test_symlinked_day_dir_pointing_outside_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    victim = run_file(outside, "2026-01-01", rid(0), 100)
    victim_partial = put(outside, "2026-01-01", f".{rid(1)}.jsonl.abc.partial", 100)
    age(victim_partial, 3 * 86_400)
    root.mkdir()
    link = root / "2026-01-01"
    link.symlink_to(outside / "2026-01-01", target_is_directory=True)
    mine = run_file(root, "2026-01-02", rid(2), 100)

    pruned = enforce_retention(root, CaptureLimits(max_total_bytes=0, retention_days=1), TODAY)

    assert pruned == Pruned(removed=(mine,), freed_bytes=100, errors=0)
    assert victim.read_bytes() == b"x" * 100
    assert victim_partial.exists()
    assert link.is_symlink()


def test_symlinked_run_file_is_neither_followed_nor_deleted(tmp_path: Path) -> None:
    root = tmp_path / "root"
    victim = put(tmp_path, "outside", "precious.jsonl", 100)
    link = root / "2026-01-01" / f"{rid(0)}.jsonl"
    link.parent.mkdir(parents=True)
    link.symlink_to(victim)

    pruned = enforce_retention(root, CaptureLimits(max_total_bytes=0, retention_days=1), TODAY)

    assert pruned == Pruned((), 0, 0)
    assert link.is_symlink()
    assert victim.exists()


def test_root_may_itself_be_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    a = run_file(real, "2026-01-01", rid(0), 100)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert usage(link) == 100
    pruned = enforce_retention(link, CaptureLimits(max_total_bytes=0), TODAY)
    assert pruned.removed == (link / a.relative_to(real),)
    assert not a.exists()


# -- temporary files ------------------------------------------------------------------


def test_temporary_files_go_only_when_a_day_old(tmp_path: Path) -> None:
    day = "2026-06-28"
    in_progress = rid(2)
    fresh = put(tmp_path, day, f".{rid(0)}.jsonl.a1b2c3.partial", 100)
    stale = put(tmp_path, day, f".{rid(1)}.jsonl.d4e5f6.partial", 100)
    kept_stale = put(tmp_path, day, f".{in_progress}.jsonl.g7h8i9.partial", 100)
    other_hidden = put(tmp_path, day, ".hidden.jsonl.x.partial", 100)
    age(stale, 86_400 + 60)
    age(kept_stale, 3 * 86_400)
    age(other_hidden, 3 * 86_400)
    kept = tmp_path / day / f"{in_progress}.jsonl"  # its run is in progress, not yet renamed
    limits = CaptureLimits(max_total_bytes=0, retention_days=None)

    pruned = enforce_retention(tmp_path, limits, TODAY, keep=[kept])

    assert pruned.removed == (stale,)
    assert fresh.exists()
    assert kept_stale.exists()
    assert other_hidden.exists()


def test_a_crashed_runs_partial_file_is_kept_a_day_then_treated_as_a_run_file(
    tmp_path: Path,
) -> None:
    day = "2026-06-28"
    fresh = put(tmp_path, day, f".{rid(0)}.jsonl.partial", 100)  # maybe a run in progress
    stale = put(tmp_path, day, f".{rid(1)}.jsonl.partial", 100)  # a run cut short
    age(stale, 86_400 + 60)
    assert capture.usage(tmp_path) == 200
    limits = CaptureLimits(max_total_bytes=0, retention_days=None)

    pruned = enforce_retention(tmp_path, limits, TODAY)

    assert pruned.removed == (stale,)
    assert fresh.exists()


# -- file system errors ---------------------------------------------------------------


def test_a_failed_deletion_is_counted_and_the_next_oldest_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = run_file(tmp_path, "2026-06-28", rid(0), 100)
    b = run_file(tmp_path, "2026-06-28", rid(1), 100)
    c = run_file(tmp_path, "2026-06-29", rid(2), 100)
    real_unlink = os.unlink

    def unlink(path: str | os.PathLike[str], *args: object, **kwargs: object) -> None:
        if Path(path).name == a.name:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        real_unlink(path)

    monkeypatch.setattr(os, "unlink", unlink)
    pruned = enforce_retention(tmp_path, CaptureLimits(max_total_bytes=150), TODAY)

    assert pruned == Pruned(removed=(b, c), freed_bytes=200, errors=1)
    assert a.exists()


def swap_after_scan(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """Run ``swap`` once the day directories were scanned, before anything is deleted."""
    real = capture._run_files

    def scanned_then_swapped(*args: Any) -> Iterator[Any]:
        files = list(real(*args))
        swap()
        return iter(files)

    monkeypatch.setattr(capture, "_run_files", scanned_then_swapped)


def test_a_day_dir_swapped_for_a_symlink_after_the_scan_is_not_deleted_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    run_id = rid(0)
    mine = run_file(root, "2026-01-01", run_id, 100)
    victim = run_file(tmp_path / "outside", "2026-01-01", run_id, 100)

    def swap() -> None:
        mine.parent.rename(tmp_path / "moved")
        mine.parent.symlink_to(victim.parent, target_is_directory=True)

    swap_after_scan(monkeypatch, swap)
    pruned = enforce_retention(root, CaptureLimits(max_total_bytes=0, retention_days=None), TODAY)

    assert pruned == Pruned((), 0, 1)
    assert victim.exists()
    assert mine.parent.is_symlink()


def test_a_run_file_gone_or_swapped_after_the_scan_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = run_file(tmp_path, "2026-01-01", rid(0), 100)
    swapped = run_file(tmp_path, "2026-01-01", rid(1), 100)
    victim = put(tmp_path, "outside", "precious", 100)

    def swap() -> None:
        gone.unlink()
        swapped.unlink()
        swapped.symlink_to(victim)

    swap_after_scan(monkeypatch, swap)
    pruned = enforce_retention(
        tmp_path, CaptureLimits(max_total_bytes=0, retention_days=None), TODAY
    )

    assert pruned == Pruned((), 0, 0)
    assert swapped.is_symlink()
    assert victim.exists()


def test_an_unreadable_root_is_counted_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_file(tmp_path, "2026-06-28", rid(0), 100)

    def denied(path: object) -> object:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "scandir", denied)
    assert enforce_retention(tmp_path, CaptureLimits(max_total_bytes=0), TODAY) == Pruned((), 0, 1)


# -- Budget ---------------------------------------------------------------------------


def test_budget_is_the_smaller_of_file_cap_and_what_is_left(tmp_path: Path) -> None:
    budget = Budget(tmp_path, CaptureLimits(max_file_bytes=100, max_total_bytes=250), used=0)
    assert budget.for_new_run() == 100
    budget.charge(100)
    assert budget.for_new_run() == 100
    budget.charge(100)
    assert budget.for_new_run() == 50
    budget.charge(100)
    assert budget.used == 300
    assert budget.for_new_run() == 0  # over the cap: clamped, never negative


def test_budget_starts_from_the_measured_usage(tmp_path: Path) -> None:
    limits = CaptureLimits(max_file_bytes=100, max_total_bytes=250)
    assert Budget(tmp_path, limits, used=200).for_new_run() == 50
    assert Budget(tmp_path, limits, used=1000).for_new_run() == 0


def test_budget_without_some_or_all_caps(tmp_path: Path) -> None:
    assert Budget(tmp_path, NO_LIMITS, used=10**12).for_new_run() is None
    only_file = CaptureLimits(max_file_bytes=100, max_total_bytes=None)
    assert Budget(tmp_path, only_file, used=10**12).for_new_run() == 100
    only_total = CaptureLimits(max_file_bytes=None, max_total_bytes=250)
    assert Budget(tmp_path, only_total, used=50).for_new_run() == 200


def test_budget_refuses_negative_amounts(tmp_path: Path) -> None:
    budget = Budget(tmp_path, CaptureLimits(), used=0)
    with pytest.raises(ValueError, match=r"^written must not be negative, got -1$"):
        budget.charge(-1)
    with pytest.raises(ValueError, match=r"^used must not be negative, got -5$"):
        Budget(tmp_path, CaptureLimits(), used=-5)


def test_budget_charges_from_several_threads_add_up(tmp_path: Path) -> None:
    budget = Budget(tmp_path, CaptureLimits(max_file_bytes=None, max_total_bytes=10**9), used=7)
    start = threading.Barrier(8)

    def work() -> None:
        start.wait()
        for _ in range(2_000):
            budget.charge(3)
            budget.for_new_run()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert budget.used == 7 + 8 * 2_000 * 3
    assert budget.for_new_run() == 10**9 - budget.used
