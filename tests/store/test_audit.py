"""The audit trail: the entry format, the hash chain, what verification finds, concurrent
appends, and which tool calls are actions."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import stat
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

from pytest_rollout import RolloutError
from pytest_rollout.format.files import PRIVATE_FILE_MODE
from pytest_rollout.store.audit import (
    AUDIT_EVENT_TYPES,
    GENESIS,
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    STATE_MODIFYING_KEYWORDS,
    STATE_MODIFYING_TOOLS,
    AuditCheck,
    AuditError,
    AuditTrailSink,
    append_entry,
    audit_path,
    entry_hash,
    is_state_modifying,
    verify_audit,
)

T0 = datetime(2026, 6, 28, 12, 34, 56, tzinfo=UTC)
EDITED = "its entry_hash does not match its content (the entry was edited)"
RELINKED = (
    "its prev_hash does not match the entry before it (an entry was deleted, inserted or moved)"
)
NOT_FIRST = (
    "it is the first entry but its prev_hash is not the genesis hash "
    "(the entries before it were deleted)"
)
PARTIAL = "it has no newline at the end (a partial write)"
TYPES = ["run.started", "audit.action", "audit.action", "audit.action", "run.completed"]


def chain(path: Path, count: int = 5) -> list[str]:
    """Append ``count`` entries a second apart; their hashes."""
    return [
        append_entry(
            path,
            "run-1",
            TYPES[i % len(TYPES)],
            {"i": i, "tool": "write_file", "args": {"path": f"/tmp/{i}", "text": "héllo"}},
            now=T0 + timedelta(seconds=i),
        )
        for i in range(count)
    ]


def entries(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def put(path: Path, lines: list[bytes | dict[str, Any]]) -> None:
    path.write_bytes(
        b"".join(
            (line if isinstance(line, bytes) else orjson.dumps(line)) + b"\n" for line in lines
        )
    )


def resealed(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with its entry_hash recomputed, as a forger would."""
    return {**entry, "entry_hash": entry_hash(entry)}


def broken(path: Path, line: int, reason: str) -> AuditCheck:
    return AuditCheck(str(path), line - 1, None, line, reason)


@pytest.fixture
def trail(tmp_path: Path) -> Path:
    path = tmp_path / "audit.jsonl"
    chain(path)
    return path


# -- the format --------------------------------------------------------------------------


def test_constants() -> None:
    assert frozenset({"run.started", "audit.action", "run.completed", "run.failed"}) == (
        AUDIT_EVENT_TYPES
    )
    assert GENESIS == "0" * 64
    assert MAX_LINE_BYTES == 1024 * 1024
    assert MAX_FILE_BYTES == 1024**3


def test_the_path_is_the_utc_day(tmp_path: Path) -> None:
    late_in_brazil = datetime(2026, 6, 28, 23, 30, tzinfo=timezone(timedelta(hours=-3)))
    assert audit_path(tmp_path, late_in_brazil) == tmp_path / "2026-06-29" / "audit.jsonl"
    assert audit_path(tmp_path, datetime(2026, 6, 28, 23, 30)) == (
        tmp_path / "2026-06-28" / "audit.jsonl"
    )


def test_an_entry_line(tmp_path: Path) -> None:
    path = tmp_path / "2026-06-28" / "audit.jsonl"  # the directory is created
    noon_in_oslo = datetime(2026, 6, 28, 14, 0, 0, 7, tzinfo=timezone(timedelta(hours=2)))
    digest = append_entry(path, "run-1", "run.started", {"test": "t::a", "n": 1}, now=noon_in_oslo)
    line = path.read_bytes()
    assert line.endswith(b"}\n")
    assert line.count(b"\n") == 1
    entry = json.loads(line)
    assert list(entry) == [
        "timestamp",
        "run_id",
        "event_type",
        "payload",
        "prev_hash",
        "entry_hash",
    ]
    assert entry == {
        "timestamp": "2026-06-28T12:00:00.000007Z",
        "run_id": "run-1",
        "event_type": "run.started",
        "payload": {"test": "t::a", "n": 1},
        "prev_hash": GENESIS,
        "entry_hash": digest,
    }
    # The canonical form, independently: compact JSON, keys sorted, UTF-8.
    hashed = {k: v for k, v in entry.items() if k != "entry_hash"}
    canonical = json.dumps(hashed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert digest == hashlib.sha256(canonical.encode()).hexdigest()
    assert stat.S_IMODE(path.stat().st_mode) == PRIVATE_FILE_MODE  # the trail is private


def test_a_naive_time_is_utc(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    append_entry(path, "r", "run.failed", {}, now=datetime(2026, 6, 28, 1, 2, 3, 456789))
    assert entries(path)[0]["timestamp"] == "2026-06-28T01:02:03.456789Z"


def test_the_hash_ignores_key_order() -> None:
    entry = {
        "timestamp": "2026-06-28T12:34:56.000000Z",
        "run_id": "r",
        "event_type": "audit.action",
        "payload": {"b": 1, "a": {"y": 2, "x": 3}},
        "prev_hash": GENESIS,
    }
    reordered = {
        "prev_hash": GENESIS,
        "payload": {"a": {"x": 3, "y": 2}, "b": 1},
        "event_type": "audit.action",
        "run_id": "r",
        "timestamp": "2026-06-28T12:34:56.000000Z",
        "entry_hash": "ignored",
    }
    assert entry_hash(entry) == entry_hash(reordered)
    assert entry_hash(entry) != entry_hash({**entry, "payload": {"b": 1}})


def test_a_line_with_its_keys_in_another_order_still_verifies(trail: Path) -> None:
    rows = entries(trail)
    head = rows[-1]["entry_hash"]
    rows[2] = dict(reversed(rows[2].items()))
    rows[2]["payload"] = dict(reversed(rows[2]["payload"].items()))
    put(trail, list(rows))
    assert verify_audit(trail) == AuditCheck(str(trail), 5, head, None, None)


def test_odd_payload_values_are_written_as_text(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    when = datetime(2026, 1, 2, tzinfo=UTC)
    append_entry(path, "r", "audit.action", {"when": when, "ids": {7}, "by_id": {3: "a"}})
    assert entries(path)[0]["payload"] == {
        "when": "2026-01-02T00:00:00+00:00",
        "ids": "{7}",
        "by_id": {"3": "a"},
    }
    assert verify_audit(path).ok


# -- an intact chain -----------------------------------------------------------------------


def test_a_chain_verifies(trail: Path) -> None:
    rows = entries(trail)
    assert [row["prev_hash"] for row in rows] == [GENESIS] + [r["entry_hash"] for r in rows[:-1]]
    check = verify_audit(trail)
    assert check == AuditCheck(str(trail), 5, rows[-1]["entry_hash"], None, None)
    assert check.ok


def test_append_returns_the_entry_hash(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    hashes = chain(path, 3)
    assert [row["entry_hash"] for row in entries(path)] == hashes
    assert verify_audit(path).head == hashes[-1]


def test_an_empty_file_is_intact(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b"")
    check = verify_audit(path)
    assert check == AuditCheck(str(path), 0, None, None, None)
    assert check.ok


def test_a_long_last_entry_is_read_back_from_the_end(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    first = append_entry(path, "r", "run.started", {"blob": "x" * 300_000})
    second = append_entry(path, "r", "run.completed", {})
    assert entries(path)[1]["prev_hash"] == first
    assert verify_audit(path).head == second


# -- tampering -----------------------------------------------------------------------------


def test_an_edited_payload(trail: Path) -> None:
    rows = entries(trail)
    rows[2]["payload"]["tool"] = "read_file"
    put(trail, list(rows))
    assert verify_audit(trail) == broken(trail, 3, EDITED)


def test_an_edited_prev_hash(trail: Path) -> None:
    rows = entries(trail)
    rows[3]["prev_hash"] = "f" * 64
    put(trail, list(rows))
    assert verify_audit(trail) == broken(trail, 4, EDITED)


def test_an_edit_with_a_recomputed_hash_breaks_the_next_link(trail: Path) -> None:
    rows = entries(trail)
    rows[1]["payload"]["tool"] = "read_file"
    rows[1] = resealed(rows[1])
    put(trail, list(rows))
    assert verify_audit(trail) == broken(trail, 3, RELINKED)


def test_a_deleted_middle_entry(trail: Path) -> None:
    rows = entries(trail)
    del rows[2]
    put(trail, list(rows))
    assert verify_audit(trail) == broken(trail, 3, RELINKED)


def test_a_deleted_first_entry(trail: Path) -> None:
    rows = entries(trail)
    put(trail, list(rows[1:]))
    assert verify_audit(trail) == broken(trail, 1, NOT_FIRST)


def test_swapped_entries(trail: Path) -> None:
    rows = entries(trail)
    rows[1], rows[2] = rows[2], rows[1]
    put(trail, list(rows))
    assert verify_audit(trail) == broken(trail, 2, RELINKED)


def test_an_inserted_forged_entry(trail: Path) -> None:
    rows = entries(trail)
    forged = resealed({**rows[2], "payload": {"tool": "nothing to see"}})
    put(trail, [*rows[:2], forged, *rows[2:]])
    # The forged entry links onto entry 2 and hashes right; entry 3 no longer links onto it.
    assert verify_audit(trail) == broken(trail, 4, RELINKED)


def test_an_inserted_entry_with_a_made_up_hash(trail: Path) -> None:
    rows = entries(trail)
    forged = {**rows[2], "payload": {"tool": "nothing to see"}, "entry_hash": "a" * 64}
    put(trail, [*rows[:2], forged, *rows[2:]])
    assert verify_audit(trail) == broken(trail, 3, EDITED)


def test_a_truncated_last_line(trail: Path) -> None:
    data = trail.read_bytes()
    trail.write_bytes(data[:-20])
    assert verify_audit(trail) == broken(trail, 5, PARTIAL)
    trail.write_bytes(data[:-1])  # only the newline is missing
    assert verify_audit(trail) == broken(trail, 5, PARTIAL)


def test_a_file_cut_at_a_newline_still_verifies(trail: Path) -> None:
    """Deleting entries from the end is not detected without a kept head hash."""
    rows = entries(trail)
    put(trail, list(rows[:3]))
    assert verify_audit(trail) == AuditCheck(str(trail), 3, rows[2]["entry_hash"], None, None)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"not json", "it is not valid JSON"),
        (b'{"timestamp": ', "it is not valid JSON"),
        (b"", "it is blank"),
        (b"  \t", "it is blank"),
        (b'"\xff\xfe"', "it is not valid UTF-8"),
        (b"[1, 2]", "it is not a JSON object"),
        (b"null", "it is not a JSON object"),
        (b"\xef\xbb\xbf{}", "it starts with a byte order mark (BOM)"),
    ],
)
def test_a_line_that_is_not_an_entry(trail: Path, line: bytes, reason: str) -> None:
    rows: list[bytes | dict[str, Any]] = list(entries(trail))
    rows.insert(2, line)
    put(trail, rows)
    assert verify_audit(trail) == broken(trail, 3, reason)


def test_a_bom_at_the_start_of_the_file(trail: Path) -> None:
    trail.write_bytes(b"\xef\xbb\xbf" + trail.read_bytes())
    assert verify_audit(trail) == broken(trail, 1, "it starts with a byte order mark (BOM)")


def _drop(name: str) -> Callable[[dict[str, Any]], None]:
    return lambda entry: entry.pop(name) and None


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (_drop("run_id"), 'it lacks the field "run_id"'),
        (
            lambda e: e.clear(),
            "it lacks the fields "
            + ", ".join(
                f'"{n}"' for n in ["timestamp", "run_id", "event_type", "payload", "prev_hash"]
            )
            + " and 1 more",
        ),
        (lambda e: e.update(note="x"), 'it has the unexpected field "note"'),
        (lambda e: e.update({"n" * 60: 1}), f'it has the unexpected field "{"n" * 40}…"'),
        (
            lambda e: e.update(timestamp="2026-06-28 12:34:56"),
            "its timestamp is not an RFC 3339 UTC time with microseconds "
            "(YYYY-MM-DDTHH:MM:SS.ffffffZ)",
        ),
        (
            lambda e: e.update(timestamp=1782650096),
            "its timestamp is not an RFC 3339 UTC time with microseconds "
            "(YYYY-MM-DDTHH:MM:SS.ffffffZ)",
        ),
        (lambda e: e.update(run_id=7), "its run_id is not a string"),
        (
            lambda e: e.update(event_type="tool.call.started"),
            "its event_type is not one of the audit event types "
            "(audit.action, run.completed, run.failed, run.started)",
        ),
        (
            lambda e: e.update(event_type=["audit.action"]),
            "its event_type is not one of the audit event types "
            "(audit.action, run.completed, run.failed, run.started)",
        ),
        (lambda e: e.update(payload=[1]), "its payload is not a JSON object"),
        (
            lambda e: e.update(prev_hash=e["prev_hash"].upper()),
            "its prev_hash is not 64 lowercase hex digits",
        ),
        (lambda e: e.update(entry_hash=None), "its entry_hash is not 64 lowercase hex digits"),
    ],
)
def test_a_malformed_entry(
    trail: Path, edit: Callable[[dict[str, Any]], None], reason: str
) -> None:
    rows = entries(trail)
    edit(rows[1])
    put(trail, list(rows))
    assert verify_audit(trail) == broken(trail, 2, reason)


def test_a_line_over_the_limit(trail: Path) -> None:
    rows: list[bytes | dict[str, Any]] = list(entries(trail))
    rows.insert(1, b"x" * (MAX_LINE_BYTES + 1))
    put(trail, rows)
    long = f"it is longer than the {MAX_LINE_BYTES}-byte line limit"
    assert verify_audit(trail) == broken(trail, 2, long)
    trail.write_bytes(b"x" * (MAX_LINE_BYTES + 10))  # and no newline at all
    assert verify_audit(trail) == broken(trail, 1, long)


def test_a_file_over_the_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(AuditError) as info:
        verify_audit(path)
    assert info.value.reason == (
        f"file is {MAX_FILE_BYTES + 1} bytes, over the {MAX_FILE_BYTES}-byte limit"
    )


# -- what cannot be read -------------------------------------------------------------------


def test_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(AuditError) as info:
        verify_audit(path)
    assert str(info.value) == f"{path}: cannot open: No such file or directory"
    assert info.value.path == str(path)


def test_a_directory(tmp_path: Path) -> None:
    with pytest.raises(AuditError) as info:
        verify_audit(tmp_path)
    assert info.value.reason == "is a directory, not a regular file"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "audit.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(AuditError) as info:
        verify_audit(fifo)
    assert info.value.reason == "is a FIFO, not a regular file"
    with pytest.raises(AuditError) as info:
        append_entry(fifo, "r", "run.started", {})
    assert info.value.reason == "cannot append: it is not a regular file"


def test_the_error_names_the_file_and_the_reason() -> None:
    error = AuditError("/x/audit.jsonl", "cannot open: Permission denied")
    assert isinstance(error, RolloutError)
    assert AuditError.__module__ == "pytest_rollout"
    assert (error.path, error.reason) == ("/x/audit.jsonl", "cannot open: Permission denied")
    assert str(error) == "/x/audit.jsonl: cannot open: Permission denied"


# -- appending -----------------------------------------------------------------------------


def test_an_unknown_event_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with pytest.raises(ValueError, match=r"'tool\.call\.started' is not an audit event type"):
        append_entry(path, "r", "tool.call.started", {})
    assert not path.exists()


def test_an_unencodable_payload_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with pytest.raises(ValueError, match="cannot be encoded as JSON"):
        append_entry(path, "r", "audit.action", {"n": 2**70})
    with pytest.raises(ValueError, match="over the 1048576-byte line limit"):
        append_entry(path, "r", "audit.action", {"blob": "x" * MAX_LINE_BYTES})
    assert not path.exists()


@pytest.mark.parametrize(
    ("tail", "reason"),
    [
        (b'{"timestamp": "2026', PARTIAL),
        (b"garbage\n", "it is not valid JSON"),
        (b"\n", "it is blank"),
        (b"x" * (MAX_LINE_BYTES + 1) + b"\n", "it is longer than the 1048576-byte line limit"),
    ],
    ids=["partial", "not-json", "blank", "too-long"],
)
def test_appending_after_a_corrupt_tail_is_refused(trail: Path, tail: bytes, reason: str) -> None:
    with trail.open("ab") as handle:
        handle.write(tail)
    before = trail.read_bytes()
    with pytest.raises(AuditError) as info:
        append_entry(trail, "r", "run.completed", {})
    assert info.value.reason.startswith(
        f"cannot append: the last line is not a whole, valid entry: {reason}. "
    )
    assert "rollout audit verify" in info.value.reason
    assert trail.read_bytes() == before


def test_appending_after_an_edited_last_entry_is_refused(trail: Path) -> None:
    rows = entries(trail)
    rows[-1]["payload"] = {}
    put(trail, list(rows))
    with pytest.raises(AuditError, match="the entry was edited"):
        append_entry(trail, "r", "run.completed", {})


def test_appending_never_follows_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_bytes(b"keep\n")
    link = tmp_path / "audit.jsonl"
    link.symlink_to(target)
    with pytest.raises(AuditError) as info:
        append_entry(link, "r", "run.started", {})
    assert info.value.reason == "cannot append: it is a symbolic link"
    assert target.read_bytes() == b"keep\n"


def _append_many(path: str, worker: int, count: int, go: Any) -> None:
    go.wait(30)
    for i in range(count):
        append_entry(Path(path), f"worker-{worker}", "audit.action", {"i": i})


def test_concurrent_appends_keep_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "2026-06-28" / "audit.jsonl"
    context = multiprocessing.get_context("spawn")
    go = context.Event()
    workers = [context.Process(target=_append_many, args=(str(path), n, 50, go)) for n in range(4)]
    for worker in workers:
        worker.start()
    go.set()
    for worker in workers:
        worker.join(120)
    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    check = verify_audit(path)
    assert check.ok, check
    assert check.entries == 200
    rows = entries(path)
    for n in range(4):
        mine = [row["payload"]["i"] for row in rows if row["run_id"] == f"worker-{n}"]
        assert mine == list(range(50))


# -- the plugin's sink ---------------------------------------------------------------------


def test_the_sink_writes_to_the_day_file(tmp_path: Path) -> None:
    sink = AuditTrailSink(tmp_path, tools=["Frobnicate"], keywords=["zap"], clock=lambda: T0)
    assert sink.is_action("frobnicate")
    assert sink.is_action("zapUser")
    assert sink.is_action("bash")
    assert not sink.is_action("get_weather")
    sink.write("run-1", "run.started", {"test": "t"})
    sink.write("run-1", "run.completed", {"outcome": "completed"})
    path = tmp_path / "2026-06-28" / "audit.jsonl"
    assert [row["event_type"] for row in entries(path)] == ["run.started", "run.completed"]
    assert verify_audit(path).entries == 2


def test_the_sink_reports_a_failure_once(tmp_path: Path) -> None:
    path = tmp_path / "2026-06-28" / "audit.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"partial")
    problems: list[str] = []
    sink = AuditTrailSink(tmp_path, on_error=problems.append, clock=lambda: T0)
    sink.write("run-1", "run.started", {})
    sink.write("run-1", "run.completed", {})
    assert len(problems) == 1
    assert problems[0].startswith(f"audit trail: entry not written: {path}: cannot append: ")
    assert path.read_bytes() == b"partial"
    with pytest.raises(AuditError):
        AuditTrailSink(tmp_path, clock=lambda: T0).write("run-1", "run.started", {})


# -- which tool calls are actions ----------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "bash",
        "sh",
        "shell",
        "exec",
        "run_command",
        "execute_command",
        "terminal",
        "file_write",
        "write_file",
        "file_edit",
        "edit_file",
        "file_delete",
        "delete_file",
        "apply_patch",
        "str_replace_editor",
        "git_commit",
        "git_push",
        "http_post",
        "send_email",
    ],
)
def test_the_known_tools(name: str) -> None:
    assert name in STATE_MODIFYING_TOOLS
    assert is_state_modifying(name)
    assert is_state_modifying(name.upper())
    assert is_state_modifying(f" {name.title()} ")


@pytest.mark.parametrize(
    "name",
    [
        "createTicket",
        "db.delete_row",
        "send-email",
        "update_record",
        "DropTable",
        "HTTPPostJSON",
        "s3Upload",
        "transfer_funds",
        "pay-invoice",
        "user.remove",
        "KILL_PROCESS",
        "git_cherry_pick_and_push",
    ],
)
def test_keywords_in_a_name(name: str) -> None:
    assert is_state_modifying(name)


@pytest.mark.parametrize(
    "name",
    [
        "get_weather",
        "search",
        "read_file",
        "list_files",
        "fetch_page",
        "getUserProfile",
        "web.search",
        "lookup-postcode",  # "post" is a word of its own, not a prefix
        "get_posts",
        "recreated_view",
        "",
        "  ",
        "ŝendi",
    ],
)
def test_read_only_names(name: str) -> None:
    assert not is_state_modifying(name)


def test_the_keywords_include_the_common_verbs() -> None:
    assert {
        "write",
        "delete",
        "remove",
        "create",
        "update",
        "insert",
        "drop",
        "commit",
        "push",
        "send",
        "post",
        "put",
        "patch",
        "exec",
        "execute",
        "run",
        "move",
        "rename",
        "deploy",
        "install",
        "kill",
        "modify",
        "edit",
        "save",
        "upload",
        "transfer",
        "pay",
    } <= STATE_MODIFYING_KEYWORDS
    assert not {"get", "read", "list", "search", "fetch", "file", "files", "page"} & (
        STATE_MODIFYING_KEYWORDS
    )


def test_user_tools_and_keywords() -> None:
    assert not is_state_modifying("frobnicate")
    assert is_state_modifying("frobnicate", tools=["Frobnicate"])
    assert not is_state_modifying("frobnicate_all", tools=["frobnicate"])  # whole names only
    assert is_state_modifying("approveInvoiceDraft")
    assert is_state_modifying("zapInvoice", keywords=["ZAP"])
    assert is_state_modifying("invoice.zap", keywords=["zap"])
    assert not is_state_modifying("zapper", keywords=["zap"])
