"""A golden and its receipt are one unit (docs/secrets.md): after any crash, once the folder
is settled, both are the old pair or both the new, and no temporary file is left.

A crash is simulated by a child process that ends with ``os._exit`` (no ``finally`` runs,
as under SIGKILL) before or after each rename and each flush to disk of the write, then the
parent checks what is on disk.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_rollout import RolloutError
from pytest_rollout.diff.compare import compare
from pytest_rollout.format.files import SecretInFileError
from pytest_rollout.format.loader import loads as load_bytes
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.store.golden import (
    WriteResult,
    recover_pair,
    settle,
    write_golden_and_receipt,
)
from pytest_rollout.store.pending import PendingFile
from pytest_rollout.store.receipt import ReceiptStatus, make_receipt, receipt_path, verify

RULES = "cd" * 32


def rollout_bytes(note: str) -> bytes:
    rec = Recorder()
    rec.emit("run.started", {})
    rec.emit("hook.note", {"note": note})
    rec.emit("run.completed", {"outcome": "completed"})
    return rec.getvalue()


def write(root: Path, path: Path, data: bytes) -> WriteResult:
    return write_golden_and_receipt(root, path, data, redaction_mode="redacted", rules_sha256=RULES)


def receipt_bytes(path: Path, data: bytes) -> bytes:
    receipt = make_receipt(data, redaction_mode="redacted", rules_sha256=RULES)
    return receipt.to_bytes(path.name)


def pair(path: Path) -> tuple[bytes | None, bytes | None]:
    receipt = receipt_path(path)
    return (
        path.read_bytes() if path.exists() else None,
        receipt.read_bytes() if receipt.exists() else None,
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


OLD = rollout_bytes("old")
NEW = rollout_bytes("new")


def test_the_golden_and_its_receipt_are_written_together(tmp_path: Path) -> None:
    path = tmp_path / "golden" / "t" / "test_a.jsonl"
    assert write(tmp_path / "golden", path, OLD) is WriteResult.CREATED
    assert pair(path) == (OLD, receipt_bytes(path, OLD))
    assert verify(path).status is ReceiptStatus.OK
    assert leftovers(path.parent) == []


def test_an_unchanged_sealed_golden_is_left_byte_identical(tmp_path: Path) -> None:
    root = tmp_path / "golden"
    path = root / "test_a.jsonl"
    write(root, path, OLD)
    before = [(p.read_bytes(), p.stat().st_mtime_ns) for p in (path, receipt_path(path))]
    assert write(root, path, rollout_bytes("old")) is WriteResult.UNCHANGED
    assert [(p.read_bytes(), p.stat().st_mtime_ns) for p in (path, receipt_path(path))] == before


def agent_bytes(call_id: str, *, created: int, city: str = "Paris") -> bytes:
    """A run with one tool call named ``call_id`` and raw provider bytes stamped ``created``,
    as a live service answers: both change on every call."""
    rec = Recorder()
    rec.emit("run.started", {})
    calls = [{"id": call_id, "name": "weather", "arguments": {"city": city}}]
    raw = {"status": 200, "body": {"id": f"chatcmpl-{created}", "created": created}}
    rec.emit("llm.turn.started", {"messages": [{"role": "user", "content": "?"}]})
    rec.emit("llm.turn.completed", {"content": None, "tool_calls": calls, "raw": raw})
    rec.emit("tool.call.started", {"call_id": call_id, "name": "weather", "arguments": {}})
    rec.emit("tool.call.completed", {"call_id": call_id, "name": "weather", "output": "18C"})
    answer = [{"role": "assistant", "tool_calls": calls}, {"role": "tool", "tool_call_id": call_id}]
    rec.emit("llm.turn.started", {"messages": answer})
    rec.emit("llm.turn.completed", {"content": "18C", "tool_calls": [], "raw": raw})
    rec.emit("run.completed", {"outcome": "completed"})
    return rec.getvalue()


def test_a_run_that_compares_equal_leaves_the_pair_alone(tmp_path: Path) -> None:
    """Fresh call ids and provider timestamps are not a change: the golden is kept when
    the comparison says the runs are identical, whatever their bytes."""
    root = tmp_path / "golden"
    path = root / "test_a.jsonl"
    old = agent_bytes("call_8fK2", created=1_700_000_000)
    write(root, path, old)
    before = pair(path)
    new = agent_bytes("call_Zq91", created=1_700_000_042)
    assert load_bytes(old).events != load_bytes(new).events
    assert compare(load_bytes(old).events, load_bytes(new).events).identical

    assert write(root, path, new) is WriteResult.UNCHANGED
    assert pair(path) == before

    changed = agent_bytes("call_Zq91", created=1_700_000_042, city="Lyon")
    assert write(root, path, changed) is WriteResult.UPDATED
    assert pair(path) == (changed, receipt_bytes(path, changed))


def test_a_golden_its_receipt_no_longer_vouches_for_is_rewritten(tmp_path: Path) -> None:
    root = tmp_path / "golden"
    path = root / "test_a.jsonl"
    write(root, path, OLD)
    receipt_path(path).unlink()
    assert write(root, path, OLD) is WriteResult.UPDATED
    assert verify(path).status is ReceiptStatus.OK


def test_a_secret_found_by_the_scan_stops_both_writes(tmp_path: Path) -> None:
    root = tmp_path / "golden"
    path = root / "test_a.jsonl"
    write(root, path, OLD)
    with pytest.raises(SecretInFileError):
        write_golden_and_receipt(
            root, path, NEW, redaction_mode="redacted", rules_sha256=RULES, scan=lambda _: "jwt"
        )
    assert pair(path) == (OLD, receipt_bytes(path, OLD))
    assert leftovers(root) == []


def test_a_path_outside_the_golden_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RolloutError, match="outside"):
        write(tmp_path / "golden", tmp_path / "golden" / ".." / "x.jsonl", OLD)


# -- crashes ------------------------------------------------------------------------------

#: Writes ``argv[3]`` as the golden ``t/test_a.jsonl`` under ``argv[1]``, and ends the process
#: with ``os._exit(70)`` before (or after) the ``argv[2]``-th rename or flush to disk. Prints
#: how many there were when it was not stopped.
CRASH = r"""
import os, sys
from pathlib import Path
from pytest_rollout.store.golden import write_golden_and_receipt

root, stop, data = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]).read_bytes()
when, _, number = stop.partition(":")
count = 0

def stepped(real):
    def step(*args, **kwargs):
        global count
        count += 1
        if count == int(number) and when == "before":
            os._exit(70)
        result = real(*args, **kwargs)
        if count == int(number) and when == "after":
            os._exit(70)
        return result
    return step

os.replace = stepped(os.replace)
os.fsync = stepped(os.fsync)
write_golden_and_receipt(
    root, root / "t" / "test_a.jsonl", data, redaction_mode="redacted", rules_sha256="cd" * 32
)
print(count)
"""


def run_write(root: Path, data: bytes, stop: str) -> subprocess.CompletedProcess[str]:
    root.parent.mkdir(parents=True, exist_ok=True)
    source = root.parent / "new.bin"
    source.write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-c", CRASH, str(root), stop, str(source)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode in (0, 70), done.stderr
    return done


def crash(root: Path, data: bytes, stop: str) -> bool:
    """Run the write in a child stopped at ``stop``; whether it was stopped."""
    return run_write(root, data, stop).returncode == 70


def crash_points(tmp_path: Path) -> list[str]:
    """Every place a write can stop: before and after each rename and flush."""
    root = tmp_path / "count" / "golden"
    root.mkdir(parents=True)
    steps = int(run_write(root, NEW, "before:0").stdout)
    return [f"{when}:{n}" for n in range(1, steps + 1) for when in ("before", "after")]


def check_settled(path: Path, old: tuple[bytes | None, bytes | None]) -> None:
    """Both files are the old pair or both the new, and no pending file is left."""
    new = (NEW, receipt_bytes(path, NEW))
    assert pair(path) in (old, new)
    if pair(path) != (None, None):
        assert verify(path).status is ReceiptStatus.OK
    assert leftovers(path.parent) == []


@pytest.mark.slow  # writers in processes of their own, killed
@pytest.mark.parametrize("first", [True, False], ids=["first write", "rewrite"])
def test_a_write_killed_at_any_point_leaves_one_whole_pair(tmp_path: Path, first: bool) -> None:
    points = crash_points(tmp_path)
    assert len(points) >= 8  # two pending files flushed, two renames, the folder flushed
    finished = 0
    for index, stop in enumerate(points):
        root = tmp_path / str(index) / "golden"
        path = root / "t" / "test_a.jsonl"
        if not first:
            write(root, path, OLD)
        old = pair(path)
        assert crash(root, NEW, stop), stop
        # Before it is settled: the old pair, the new pair, or the new receipt with the
        # new golden waiting beside the old one (the commit point was passed).
        state = pair(path)
        if state not in (old, (NEW, receipt_bytes(path, NEW))):
            assert state == (old[0], receipt_bytes(path, NEW)), stop
            waiting = [p.read_bytes() for p in path.parent.glob(".test_a.jsonl.*.tmp")]
            assert NEW in waiting, stop
        finished += recover_pair(root, path)
        check_settled(path, old)
    assert finished  # some crash came after the commit point


def test_the_next_write_into_the_folder_settles_an_interrupted_one(tmp_path: Path) -> None:
    root = tmp_path / "golden"
    path = root / "t" / "test_a.jsonl"
    write(root, path, OLD)
    # Killed after the receipt's rename (the commit point), then killed before any rename.
    assert crash(root, NEW, "after:3")
    assert pair(path) == (OLD, receipt_bytes(path, NEW))
    other = root / "t" / "test_b.jsonl"
    write(root, other, OLD)
    check_settled(path, (OLD, receipt_bytes(path, OLD)))
    assert pair(path)[0] == NEW
    assert crash(root, rollout_bytes("newer"), "before:1")
    assert leftovers(path.parent) != []
    write(root, other, NEW)
    assert leftovers(path.parent) == []
    assert pair(path) == (NEW, receipt_bytes(path, NEW))


def test_the_pending_file_of_a_live_writer_is_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "golden"
    path = root / "test_a.jsonl"
    write(root, path, OLD)
    with PendingFile(root / "test_b.jsonl", NEW) as live:
        write(root, path, NEW)
        assert settle(root) == []
        assert live.path.exists()
        live.commit()
    assert (root / "test_b.jsonl").read_bytes() == NEW
    assert leftovers(root) == []


def test_a_pending_file_removed_before_it_was_locked_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_rollout.store import pending

    real = pending._leads_to
    calls: list[Path] = []

    def once_gone(path: Path, fd: int) -> bool:
        calls.append(path)
        return len(calls) > 1 and real(path, fd)

    monkeypatch.setattr(pending, "_leads_to", once_gone)
    with PendingFile(tmp_path / "g.jsonl", NEW) as made:
        made.commit()
    assert len(calls) == 2
    assert calls[0] != calls[1]
    assert (tmp_path / "g.jsonl").read_bytes() == NEW


@pytest.mark.parametrize("failing", [1, 2], ids=["receipt rename", "golden rename"])
@pytest.mark.parametrize("error", [OSError, KeyboardInterrupt])
def test_a_failed_rename_leaves_a_pair_the_folder_settles(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failing: int,
    error: type[BaseException],
) -> None:
    root = tmp_path / "golden"
    path = root / "test_a.jsonl"
    write(root, path, OLD)
    real = os.replace
    calls = 0

    def replace(*args: str) -> None:
        nonlocal calls
        calls += 1
        # An OSError stays (the disk is gone); an interrupt happens once.
        if calls == failing or (calls > failing and error is OSError):
            raise error()
        real(*args)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(error):
        write(root, path, NEW)
    monkeypatch.undo()
    settle(root)
    check_settled(path, (OLD, receipt_bytes(path, OLD)))


def test_a_symlinked_golden_is_replaced_with_its_receipt_not_written_through(
    tmp_path: Path,
) -> None:
    root = tmp_path / "golden"
    root.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    (root / "test_a.jsonl").symlink_to(victim)
    assert write(root, root / "test_a.jsonl", NEW) is WriteResult.UPDATED
    assert victim.read_bytes() == b"keep me"
    assert pair(root / "test_a.jsonl") == (NEW, receipt_bytes(root / "test_a.jsonl", NEW))


def test_settling_never_follows_a_link_named_like_a_pending_file(tmp_path: Path) -> None:
    root = tmp_path / "golden"
    path = root / "test_a.jsonl"
    write(root, path, OLD)
    victim = tmp_path / "victim.jsonl"
    victim.write_bytes(NEW)
    link = root / ".test_a.jsonl.0123abcd.tmp"
    link.symlink_to(victim)
    receipt_path(path).write_bytes(receipt_bytes(path, NEW))  # as if it vouched for it
    assert settle(root) == []
    assert victim.read_bytes() == NEW
    assert link.is_symlink()
    assert path.read_bytes() == OLD


def keyed_bytes(prompt: str, key_volatile: str | None) -> bytes:
    """A run of one model request whose key was taken with ``key_volatile`` (``None``: by a
    release that took keys with volatile values as they were)."""
    request: dict[str, object] = {
        "messages": [{"role": "system", "content": prompt}],
        "messages_hash": "ab" * 32,
    }
    if key_volatile is not None:
        request["key_volatile"] = key_volatile
    rec = Recorder()
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", request)
    rec.emit("llm.turn.completed", {"content": "hi"})
    rec.emit("run.completed", {"outcome": "completed"})
    return rec.getvalue()


def test_a_golden_keyed_before_volatile_values_were_renamed_is_rewritten_once(
    tmp_path: Path,
) -> None:
    """Its next replay must key requests the way this run did, or a dated prompt recorded
    today still fails tomorrow."""
    root = tmp_path / "golden"
    path = root / "test_a.jsonl"
    write(root, path, keyed_bytes("Today is 2026-12-01.", None))
    renamed = keyed_bytes("Today is 2026-12-02.", "builtin-1")
    assert write(root, path, renamed) is WriteResult.UPDATED
    assert write(root, path, keyed_bytes("Today is 2026-12-03.", "builtin-1")) is (
        WriteResult.UNCHANGED
    )
    assert pair(path) == (renamed, receipt_bytes(path, renamed))
