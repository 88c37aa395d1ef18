"""Safe writes (docs/secrets.md): whole files, in their directory, never half-written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_rollout import RolloutError
from pytest_rollout.format.files import (
    FILE_MODE,
    SecretInFileError,
    atomic_write,
    contained,
    read_regular,
)
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.store.golden import WriteResult, write_golden_and_receipt


def write_golden(root: Path, path: Path, data: bytes) -> WriteResult:
    return write_golden_and_receipt(root, path, data, redaction_mode="redacted", rules_sha256="")


def rollout_bytes(note: str = "a") -> bytes:
    rec = Recorder()
    rec.emit("run.started", {})
    rec.emit("hook.note", {"note": note})
    rec.emit("run.completed", {"outcome": "completed"})
    return rec.getvalue()


def test_a_file_is_replaced_whole_with_normal_permissions(tmp_path: Path) -> None:
    target = tmp_path / "g.jsonl"
    target.write_bytes(b"old")
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == FILE_MODE
    assert [p.name for p in tmp_path.iterdir()] == ["g.jsonl"]


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, OSError])
def test_an_interrupted_write_leaves_the_previous_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interrupt: type[BaseException]
) -> None:
    target = tmp_path / "g.jsonl"
    target.write_bytes(b"the golden")

    def fail(fd: int) -> None:
        raise interrupt()

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(interrupt):
        atomic_write(target, b"half of the new golden")
    assert target.read_bytes() == b"the golden"
    assert [p.name for p in tmp_path.iterdir()] == ["g.jsonl"]


def test_a_scan_that_finds_a_secret_stops_the_write(tmp_path: Path) -> None:
    target = tmp_path / "g.jsonl"
    target.write_bytes(b"the golden")
    with pytest.raises(SecretInFileError) as raised:
        atomic_write(target, b"sk-secret", scan=lambda data: "openai-key")
    assert str(raised.value) == (
        f"refusing to write {target}: its bytes hold a secret (openai-key) that redaction did "
        f"not replace. The file was left as it was. Add a redaction rule or key that covers it "
        f"(rollout_redact_patterns, rollout_redact_keys), or keep the secret out of the run."
    )
    assert raised.value.label == "openai-key"
    assert target.read_bytes() == b"the golden"
    assert [p.name for p in tmp_path.iterdir()] == ["g.jsonl"]


def test_paths_outside_the_root_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "golden"
    root.mkdir()
    assert contained(root, root / "a" / "b.jsonl") == root.resolve() / "a" / "b.jsonl"
    for escaping in (root / ".." / "x.jsonl", root / "a" / ".." / ".." / "x.jsonl", root / ".."):
        with pytest.raises(RolloutError, match="refusing to write"):
            contained(root, escaping)


def test_a_symlinked_directory_cannot_lead_a_golden_out(tmp_path: Path) -> None:
    root = tmp_path / "golden"
    outside = tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (root / "tests").symlink_to(outside, target_is_directory=True)
    path = root / "tests" / "sub" / "test_a.jsonl"
    with pytest.raises(RolloutError, match="outside"):
        write_golden(root, path, rollout_bytes())
    assert list(outside.iterdir()) == []  # not even a directory was made there


def test_a_symlinked_golden_is_replaced_not_written_through(tmp_path: Path) -> None:
    root = tmp_path / "golden"
    root.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    (root / "test_a.jsonl").symlink_to(victim)
    assert write_golden(root, root / "test_a.jsonl", rollout_bytes()) is WriteResult.UPDATED
    assert victim.read_bytes() == b"keep me"
    assert not (root / "test_a.jsonl").is_symlink()


def test_write_golden_rewrites_an_unchanged_golden_its_receipt_no_longer_vouches_for(
    tmp_path: Path,
) -> None:
    root = tmp_path / "golden"
    path = root / "test_a.jsonl"
    assert write_golden(root, path, rollout_bytes()) is WriteResult.CREATED
    again = rollout_bytes()
    assert write_golden(root, path, again) is WriteResult.UNCHANGED
    path.write_bytes(path.read_bytes() + b"\n")  # edited by hand: the receipt no longer holds
    assert write_golden(root, path, again) is WriteResult.UPDATED
    assert path.read_bytes() == again


def called(call_id: str) -> bytes:
    rec = Recorder()
    rec.emit("run.started", {})
    calls = [{"id": call_id, "name": "weather", "arguments": {}}]
    rec.emit("llm.turn.completed", {"content": None, "tool_calls": calls})
    rec.emit("tool.call.completed", {"call_id": call_id, "name": "weather", "output": "18C"})
    rec.emit("run.completed", {"outcome": "completed"})
    return rec.getvalue()


def test_write_golden_keeps_a_golden_that_differs_only_in_call_ids(tmp_path: Path) -> None:
    root = tmp_path / "golden"
    path = root / "test_a.jsonl"
    first = called("call_8fK2")
    write_golden(root, path, first)
    assert write_golden(root, path, called("toolu_01Zq")) is WriteResult.UNCHANGED
    assert path.read_bytes() == first


def _fstat_reporting(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    """Make ``os.fstat`` report ``size`` bytes, as for a file that grew after it was asked."""
    real = os.fstat

    def reported(fd: int) -> os.stat_result:
        info = tuple(real(fd))
        return os.stat_result((*info[:6], size, *info[7:]))

    monkeypatch.setattr(os, "fstat", reported)


@pytest.mark.parametrize(
    ("limit", "read"),
    [(8000, 5000), (100, 101)],  # the whole file; one byte past the limit, which shows
    ids=["within-the-limit", "past-the-limit"],
)
def test_read_regular_reads_on_when_a_file_grew_since_its_size_was_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int, read: int
) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"x" * 5000)
    _fstat_reporting(monkeypatch, 10)
    assert read_regular(str(path), limit, "rollout file") == b"x" * read


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
def test_read_regular_reads_a_file_that_reports_no_size() -> None:
    assert os.stat("/proc/self/status").st_size == 0
    assert b"Pid:" in read_regular("/proc/self/status", 1 << 20, "file")
