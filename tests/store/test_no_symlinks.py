"""No symbolic link is followed below the golden folder, the runs cache or the capture
directory: a linked folder or file is refused, never written through, and a refusal while
recording never breaks the run (docs/secrets.md)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pytest_rollout.format.files import UnsafePathError, WriteRoot, atomic_write
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.store.audit import AuditError
from pytest_rollout.store.audit_append import append_entry
from pytest_rollout.store.capture import capture_path, capture_root

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symbolic links as POSIX has them")

RUN_ID = "20260628T123456000007Z-0123456789ab"
STARTED = datetime(2026, 6, 28, 12, 34, 56, tzinfo=UTC)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder no write may reach through a link."""
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def record(rec: Recorder) -> Recorder:
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", {})
    rec.emit("run.completed", {})
    rec.close()
    return rec


# -- the golden folder -------------------------------------------------------------------


def test_a_symlinked_subfolder_of_the_golden_folder_is_refused(
    tmp_path: Path, outside: Path
) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "test_a").symlink_to(outside, target_is_directory=True)
    target = golden / "test_a" / "test_x.jsonl"
    with pytest.raises(UnsafePathError) as info:
        atomic_write(target, b"{}\n", root=WriteRoot(golden))
    assert info.value.reason == (
        f"{golden / 'test_a'} is a symbolic link, and none is followed under {golden}"
    )
    assert list(outside.iterdir()) == []


def test_a_symlinked_golden_file_is_replaced_not_written_through(
    tmp_path: Path, outside: Path
) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    victim = outside / "elsewhere.jsonl"
    victim.write_bytes(b"keep\n")
    link = golden / "test_x.jsonl"
    link.symlink_to(victim)
    atomic_write(link, b"{}\n", root=WriteRoot(golden))
    assert not link.is_symlink()
    assert link.read_bytes() == b"{}\n"
    assert victim.read_bytes() == b"keep\n"
    assert [p.name for p in golden.iterdir()] == ["test_x.jsonl"]  # no temporary file left


def test_a_path_that_climbs_out_of_its_root_is_refused(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    with pytest.raises(UnsafePathError, match="it is outside"):
        atomic_write(golden / ".." / "escaped.jsonl", b"{}\n", root=WriteRoot(golden))
    assert not (tmp_path / "escaped.jsonl").exists()


def test_folders_under_a_root_are_created_and_written_into(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    target = golden / "a" / "b" / "test_x.jsonl"
    atomic_write(target, b"{}\n", root=WriteRoot(golden))
    atomic_write(target, b"[]\n", root=WriteRoot(golden))
    assert target.read_bytes() == b"[]\n"
    assert [p.name for p in target.parent.iterdir()] == ["test_x.jsonl"]


# -- the runs cache ------------------------------------------------------------------------


def test_a_symlinked_subfolder_of_the_runs_cache_is_refused_and_the_run_goes_on(
    tmp_path: Path, outside: Path
) -> None:
    runs = tmp_path / ".pytest_cache" / "d" / "rollout" / "runs"
    runs.mkdir(parents=True)
    (runs / "test_agent").symlink_to(outside, target_is_directory=True)
    rec = record(Recorder(runs / "test_agent" / "test_x.jsonl", root=WriteRoot(runs)))
    assert rec.stats.refused == (
        f"{runs / 'test_agent'} is a symbolic link, and none is followed under {runs}"
    )
    assert rec.stats.write_errors == 0
    assert len(rec.rollout().events) == 3  # the run in memory is whole
    assert list(outside.iterdir()) == []


# -- the capture directory -----------------------------------------------------------------


def test_a_symlinked_day_folder_of_the_capture_directory_is_refused(
    tmp_path: Path, outside: Path
) -> None:
    root = tmp_path / "captures"
    root.mkdir()
    day = root / "2026-06-28"
    day.symlink_to(outside, target_is_directory=True)
    rec = record(Recorder(capture_path(root, RUN_ID, STARTED), root=capture_root(root)))
    assert rec.stats.refused == f"{day} is a symbolic link, and none is followed under {root}"
    assert list(outside.iterdir()) == []


def test_a_symlinked_capture_file_is_refused_and_left_alone(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "captures"
    path = capture_path(root, RUN_ID, STARTED)
    path.parent.mkdir(parents=True)
    victim = outside / "victim"
    victim.write_bytes(b"keep\n")
    path.symlink_to(victim)
    rec = record(Recorder(path, root=capture_root(root)))
    assert rec.stats.refused == f"{path} is a symbolic link, and none is followed under {root}"
    assert path.is_symlink()
    assert victim.read_bytes() == b"keep\n"
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_symlinked_partial_file_is_refused(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "captures"
    path = capture_path(root, RUN_ID, STARTED)
    path.parent.mkdir(parents=True)
    victim = outside / "victim"
    victim.write_bytes(b"keep\n")
    partial = path.parent / f".{path.name}.partial"
    partial.symlink_to(victim)
    rec = record(Recorder(path, root=capture_root(root)))
    assert rec.stats.refused == (f"{partial} is a symbolic link, and none is followed under {root}")
    assert victim.read_bytes() == b"keep\n"
    assert not path.exists()


def test_a_folder_swapped_for_a_link_mid_run_is_not_written_through(
    tmp_path: Path, outside: Path
) -> None:
    root = tmp_path / "captures"
    path = capture_path(root, RUN_ID, STARTED)
    rec = Recorder(path, root=capture_root(root))
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", {})  # the partial file is open in the real day folder
    moved = root / "moved"
    path.parent.rename(moved)
    path.parent.symlink_to(outside, target_is_directory=True)
    rec.emit("run.completed", {})
    rec.close()
    assert list(outside.iterdir()) == []
    assert (moved / path.name).read_bytes() == rec.getvalue()  # where the folder went


def test_the_capture_root_itself_may_be_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    path = capture_path(link, RUN_ID, STARTED)
    rec = record(Recorder(path, root=capture_root(link)))
    assert rec.stats.refused is None
    assert (real / "2026-06-28" / path.name).read_bytes() == rec.getvalue()


# -- the audit trail ------------------------------------------------------------------------


def test_a_symlinked_day_folder_of_the_audit_trail_is_refused(
    tmp_path: Path, outside: Path
) -> None:
    day = tmp_path / "2026-06-28"
    day.symlink_to(outside, target_is_directory=True)
    path = day / "audit.jsonl"
    with pytest.raises(AuditError) as info:
        append_entry(path, "r", "run.started", {}, root=tmp_path)
    assert info.value.reason == (
        f"cannot append: {day} is a symbolic link, and none is followed under {tmp_path}"
    )
    assert list(outside.iterdir()) == []
