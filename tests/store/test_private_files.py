"""Private by default: capture files and audit trails are ``0600`` in ``0700`` folders;
goldens and the runs cache are created like any other file (docs/secrets.md)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pytest_rollout.format.files import FILE_MODE, WriteRoot, atomic_write
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.store.audit_append import append_entry
from pytest_rollout.store.capture import capture_path, capture_root

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")

RUN_ID = "20260628T123456000007Z-0123456789ab"
STARTED = datetime(2026, 6, 28, 12, 34, 56, tzinfo=UTC)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The common umask, which leaves files readable by everyone."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_capture_file_and_its_folders_are_private(tmp_path: Path) -> None:
    root = tmp_path / "captures"
    path = capture_path(root, RUN_ID, STARTED)
    rec = Recorder(path, root=capture_root(root))
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", {})
    assert mode(path.parent / f".{path.name}.partial") == 0o600  # from its first byte
    rec.emit("run.completed", {})
    rec.close()
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert mode(root) == 0o700


def test_a_taken_over_partial_file_is_made_private(tmp_path: Path) -> None:
    root = tmp_path / "captures"
    path = capture_path(root, RUN_ID, STARTED)
    path.parent.mkdir(parents=True)
    partial = path.parent / f".{path.name}.partial"
    partial.write_bytes(b"stale\n")
    partial.chmod(0o644)
    rec = Recorder(path, root=capture_root(root))
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", {})
    assert mode(partial) == 0o600
    rec.close()
    assert mode(path) == 0o600


def test_an_audit_trail_and_its_folders_are_private(tmp_path: Path) -> None:
    root = tmp_path / "captures"
    path = root / "2026-06-28" / "audit.jsonl"
    append_entry(path, "r", "run.started", {}, root=root)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert mode(root) == 0o700


def test_an_audit_trail_without_a_root_is_private_too(tmp_path: Path) -> None:
    path = tmp_path / "2026-06-28" / "audit.jsonl"
    append_entry(path, "r", "run.started", {})
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700


def test_the_runs_cache_and_goldens_are_created_like_any_other_file(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    path = runs / "test_agent" / "test_x.jsonl"
    with Recorder(path, root=WriteRoot(runs)) as rec:
        rec.emit("run.started", {})
        rec.emit("run.completed", {})
    assert mode(path) == FILE_MODE  # the umask's, as pytest's own cache files
    assert mode(path.parent) == 0o755
    golden = tmp_path / "golden" / "test_agent" / "test_x.jsonl"
    atomic_write(golden, b"{}\n", root=WriteRoot(tmp_path / "golden"))
    assert mode(golden) == FILE_MODE  # goldens are committed: everyone may read them
    assert mode(golden.parent) == 0o755
