"""Receipts (tamper evidence for goldens): the file format, verification and atomic writes."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from fifo import beside_fifo
from hostile import EVIL, assert_printable
from hypothesis import given
from hypothesis import strategies as st

import pytest_rollout.store.receipt as receipt_module
from pytest_rollout import RolloutError, RolloutFormatError, loads
from pytest_rollout.format.loader import read_rollout_bytes
from pytest_rollout.store.receipt import (
    MAX_RECEIPT_BYTES,
    RECEIPT_SUFFIX,
    ROLLOUT_FORMAT,
    Receipt,
    ReceiptError,
    ReceiptStatus,
    Verification,
    count_events,
    make_receipt,
    receipt_path,
    verify,
    write_receipt,
)

TS = "2026-06-28T12:34:56.000000Z"
RULES = "ab" * 32
LINES = [
    ("run.started", {"model": "m", "step": 0}),
    ("llm.turn.started", {"step": 1, "messages": [{"role": "user", "content": "hi"}]}),
    ("llm.turn.completed", {"step": 1, "content": "hello"}),
    ("run.completed", {"step": 1, "outcome": "completed", "output": "hello"}),
]
RUN = b"".join(
    orjson.dumps({"ts": TS, "seq": i, "type": t, "data": d}) + b"\n"
    for i, (t, d) in enumerate(LINES)
)
RUN_SHA = hashlib.sha256(RUN).hexdigest()


def sealed(tmp_path: Path, data: bytes = RUN, name: str = "test_a.jsonl") -> Path:
    """A golden with ``data`` and a receipt that vouches for it."""
    golden = tmp_path / name
    golden.write_bytes(data)
    write_receipt(golden, make_receipt(data, redaction_mode="redacted", rules_sha256=RULES))
    return golden


def receipt_obj(**changes: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "receipt": 1,
        "file": "test_a.jsonl",
        "sha256": RUN_SHA,
        "bytes": len(RUN),
        "events": 4,
        "format": 1,
        "redaction": {"mode": "redacted", "rules_sha256": RULES},
    }
    obj.update(changes)
    return obj


# -- the receipt itself -------------------------------------------------------------------


def test_the_run_is_a_valid_rollout() -> None:
    assert len(loads(RUN).events) == 4


def test_make_receipt() -> None:
    receipt = make_receipt(RUN, redaction_mode="redacted", rules_sha256=RULES)
    assert receipt == Receipt(
        sha256=RUN_SHA,
        bytes=len(RUN),
        events=4,
        format=ROLLOUT_FORMAT,
        redaction_mode="redacted",
        rules_sha256=RULES,
    )
    assert ROLLOUT_FORMAT == 1


@pytest.mark.parametrize(
    ("data", "events"),
    [(b"", 0), (b"\n", 1), (b"a", 1), (b"a\n", 1), (b"a\nb", 2), (b"a\nb\n", 2), (b"\n\n", 2)],
)
def test_events_are_lines(data: bytes, events: int) -> None:
    assert count_events(data) == events
    assert make_receipt(data, redaction_mode="full", rules_sha256="").events == events


def test_to_bytes_is_pinned() -> None:
    receipt = make_receipt(RUN, redaction_mode="hashed", rules_sha256="")
    body = {
        "bytes": len(RUN),
        "events": 4,
        "file": "test_a.jsonl",
        "format": 1,
        "receipt": 1,
        "redaction": {"mode": "hashed", "rules_sha256": ""},
        "sha256": RUN_SHA,
    }
    compact = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    assert (
        receipt.to_bytes("test_a.jsonl")
        == (
            "{\n"
            f'  "body_sha256": "{hashlib.sha256(compact).hexdigest()}",\n'
            f'  "bytes": {len(RUN)},\n'
            '  "events": 4,\n'
            '  "file": "test_a.jsonl",\n'
            '  "format": 1,\n'
            '  "receipt": 1,\n'
            '  "redaction": {\n'
            '    "mode": "hashed",\n'
            '    "rules_sha256": ""\n'
            "  },\n"
            f'  "sha256": "{RUN_SHA}"\n'
            "}\n"
        ).encode()
    )


def test_deterministic() -> None:
    one = make_receipt(RUN, redaction_mode="redacted", rules_sha256=RULES).to_bytes("a.jsonl")
    two = make_receipt(RUN, redaction_mode="redacted", rules_sha256=RULES).to_bytes("a.jsonl")
    assert one == two
    assert one.endswith(b"}\n")


def test_round_trip() -> None:
    receipt = make_receipt(RUN, redaction_mode="redacted", rules_sha256=RULES)
    data = receipt.to_bytes("test_a.jsonl")
    assert Receipt.parse(data, "x.receipt") == receipt
    assert Receipt.parse(data, "x.receipt", file="test_a.jsonl") == receipt


@given(
    data=st.binary(max_size=2000),
    mode=st.text(min_size=1, max_size=20),
    rules=st.one_of(
        st.just(""), st.binary(max_size=10).map(lambda b: hashlib.sha256(b).hexdigest())
    ),
    name=st.text(min_size=1, max_size=30).filter(
        lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)
    ),
)
def test_round_trip_any(data: bytes, mode: str, rules: str, name: str) -> None:
    receipt = make_receipt(data, redaction_mode=mode, rules_sha256=rules)
    encoded = receipt.to_bytes(name)
    assert encoded == receipt.to_bytes(name)
    assert Receipt.parse(encoded, "r", file=name) == receipt


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"sha256": "ab"}, "sha256 must be 64 lowercase hex digits"),
        ({"sha256": "AB" * 32}, "sha256 must be 64 lowercase hex digits"),
        ({"bytes": -1}, "bytes must be an integer of 0 or more, not -1"),
        ({"events": 10, "bytes": 3}, "10 events cannot fit in 3 bytes"),
        ({"format": 0}, "format must be an integer of 1 or more, not 0"),
        ({"format": 2}, r"format 2 is newer than this reader knows \(1\)"),
        ({"redaction_mode": ""}, "redaction.mode must be a non-empty string"),
        ({"rules_sha256": "xyz"}, "redaction.rules_sha256 must be 64 lowercase hex digits"),
    ],
)
def test_invalid_receipt_values(changes: dict[str, Any], problem: str) -> None:
    fields: dict[str, Any] = {
        "sha256": RUN_SHA,
        "bytes": 10,
        "events": 1,
        "format": 1,
        "redaction_mode": "redacted",
        "rules_sha256": "",
    }
    with pytest.raises(ValueError, match="^" + problem):
        Receipt(**(fields | changes))


def test_values_of_the_wrong_type() -> None:
    with pytest.raises(ValueError, match=r"^bytes must be an integer of 0 or more, not 1.5$"):
        Receipt(RUN_SHA, 1.5, 0, 1, "full", "")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^events must be an integer of 0 or more, not <obj"):
        Receipt(RUN_SHA, 1, object(), 1, "full", "")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^format must be an integer of 1 or more, not true$"):
        Receipt(RUN_SHA, 1, 1, True, "full", "")


def test_a_file_name_that_is_not_unicode() -> None:
    receipt = make_receipt(RUN, redaction_mode="full", rules_sha256="")
    with pytest.raises(ReceiptError, match="cannot write a receipt for this file name"):
        receipt.to_bytes("bad\udcff.jsonl")


# -- parse: every refusal names the path and the reason -----------------------------------


def refusal(data: bytes, file: str | None = "test_a.jsonl") -> str:
    with pytest.raises(ReceiptError) as info:
        Receipt.parse(data, "golden/test_a.jsonl.receipt", file=file)
    err = info.value
    assert err.path == "golden/test_a.jsonl.receipt"
    assert str(err) == f"golden/test_a.jsonl.receipt: {err.reason}"
    return err.reason


def encode(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2) + b"\n"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not valid JSON: Expecting value (line 1)"),
        (b"{", "not valid JSON: Expecting property name enclosed in double quotes (line 1)"),
        (b'{"receipt": 1,}', "not valid JSON: "),
        (b"[1]", "not a JSON object"),
        (b'"receipt"', "not a JSON object"),
        (b"\xff{}", "not UTF-8 text (invalid start byte at byte 0)"),
        (b"\xef\xbb\xbf{}", "not valid JSON: Unexpected UTF-8 BOM"),
        (b'{"receipt": NaN}', "not valid JSON: NaN is not JSON"),
        (b'{"receipt": 1, "receipt": 1}', 'field "receipt" appears twice'),
        (b"[" * 100_00 + b"]" * 100_00, "not valid JSON"),
        (b'{"receipt": ' + b"1" * 5000 + b"}", "not valid JSON: Exceeds the limit"),
        (encode({}), "field 'receipt' must be an integer, not null"),
        (encode(receipt_obj(receipt="1")), "field 'receipt' must be an integer, not a string"),
        (encode(receipt_obj(receipt=True)), "field 'receipt' must be an integer, not a boolean"),
        (
            encode(receipt_obj(receipt=2)),
            "unknown receipt version 2 (this pytest-rollout reads version 1; upgrade it, "
            "or re-seal the golden)",
        ),
        (encode({"receipt": 1}), "missing field 'bytes'"),
        (encode(receipt_obj(signature="x")), 'unexpected field "signature"'),
        (encode(receipt_obj(file=3)), "field 'file' must be a non-empty string, not an integer"),
        (encode(receipt_obj(file="")), "field 'file' must be a non-empty string, not a string"),
        (
            encode(receipt_obj(file="test_b.jsonl")),
            'it is the receipt of "test_b.jsonl", not of "test_a.jsonl"',
        ),
        (encode(receipt_obj(redaction="redacted")), "field 'redaction' must be an object"),
        (encode(receipt_obj(redaction={"mode": "full"})), "missing field 'redaction.rules_sha256'"),
        (
            encode(receipt_obj(redaction={"mode": "full", "rules_sha256": "", "x": 1})),
            'unexpected field "redaction.x"',
        ),
        (
            encode(receipt_obj(redaction={"mode": None, "rules_sha256": ""})),
            "field 'redaction.mode' must be a string, not null",
        ),
        (encode(receipt_obj(sha256=7)), "field 'sha256' must be a string, not an integer"),
        (encode(receipt_obj(sha256="abc")), "sha256 must be 64 lowercase hex digits"),
        (encode(receipt_obj(bytes="12")), "field 'bytes' must be an integer, not a string"),
        (encode(receipt_obj(events=1.0)), "field 'events' must be an integer, not a number"),
        (encode(receipt_obj(format=False)), "field 'format' must be an integer, not a boolean"),
        (encode(receipt_obj(events=-1)), "events must be an integer of 0 or more, not -1"),
        (encode(receipt_obj(events=10**6)), "1000000 events cannot fit in"),
    ],
)
def test_parse_refuses(data: bytes, reason: str) -> None:
    assert refusal(data).startswith(reason)


EDITED: Final = (
    "the receipt was edited: its body_sha256 is not the digest of its other fields (re-seal "
    "the golden with rollout seal once you trust it)"
)


@pytest.mark.parametrize(
    "edit",
    [
        {"redaction": {"mode": "full", "rules_sha256": RULES}},
        {"redaction": {"mode": "redacted", "rules_sha256": ""}},
        {"events": 5},
        {"format": 1},
        {"file": "test_b.jsonl"},
        {"body_sha256": "0" * 64},
        {"body_sha256": None},
        {"bytes": 10**30},
    ],
    ids=["mode", "rules", "events", "format", "file", "digest", "null-digest", "huge"],
)
def test_a_receipt_edited_in_any_field_is_refused(edit: dict[str, Any]) -> None:
    """A receipt digests its own body: an edit of any field (the redaction mode included,
    which no digest of the golden covers) is found, unless the digest is made again too."""
    written = orjson.loads(
        make_receipt(RUN, redaction_mode="full", rules_sha256=RULES).to_bytes("test_a.jsonl")
    )
    edited = {**written, **edit}
    if edited == written:
        edited["events"] = 3
    assert refusal(json.dumps(edited).encode(), file=None) == EDITED


def test_a_receipt_written_before_its_body_digest_is_still_read() -> None:
    data = encode(receipt_obj())
    assert b"body_sha256" not in data
    assert Receipt.parse(data, "r").sha256 == RUN_SHA


def test_parse_refuses_an_oversized_receipt() -> None:
    padded = encode(receipt_obj()) + b" " * MAX_RECEIPT_BYTES
    assert refusal(padded) == (
        f"receipt is {len(padded)} bytes, over the {MAX_RECEIPT_BYTES}-byte limit"
    )


def test_parse_without_a_file_name_accepts_any() -> None:
    data = encode(receipt_obj(file="other.jsonl"))
    assert Receipt.parse(data, "r").sha256 == RUN_SHA


def test_hostile_field_names_are_quoted_safely() -> None:
    reason = refusal(encode(receipt_obj(**{"##[group]" + EVIL: 1})))
    assert_printable(reason)
    assert reason.startswith('unexpected field "#\\x23[group]')
    reason = refusal(encode(receipt_obj(file="::error::" + EVIL)))
    assert_printable(reason)


def test_receipt_error_is_a_rollout_error_and_pickles() -> None:
    err = ReceiptError("a/b.receipt", "why")
    assert isinstance(err, RolloutError)
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is ReceiptError
    assert (copy.path, copy.reason, str(copy)) == ("a/b.receipt", "why", "a/b.receipt: why")


# -- verify -------------------------------------------------------------------------------


def test_receipt_path() -> None:
    assert receipt_path(Path("g/t/test_a.jsonl")) == Path("g/t/test_a.jsonl.receipt")
    assert RECEIPT_SUFFIX == ".receipt"


def test_verify_ok(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    result = verify(golden)
    assert result == Verification(
        status=ReceiptStatus.OK,
        golden=str(golden),
        expected_sha256=RUN_SHA,
        actual_sha256=RUN_SHA,
        expected_events=4,
        actual_events=4,
        reason=None,
        receipt=make_receipt(RUN, redaction_mode="redacted", rules_sha256=RULES),
        actual_bytes=len(RUN),
    )
    assert verify(golden, RUN) == result
    assert result.summary() == f"ok (sha256 {RUN_SHA[:12]}…, 4 events)"
    assert (
        result.message()
        == f"golden {golden} matches its receipt (sha256 {RUN_SHA[:12]}…, 4 events)"
    )


def test_verify_uses_the_bytes_it_is_given(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    assert verify(golden, RUN + b"\n").status is ReceiptStatus.MISMATCH
    golden.write_bytes(b"changed on disk")
    assert verify(golden, RUN).status is ReceiptStatus.OK


def edited(data: bytes) -> bytes:
    """``data`` with one byte changed: the model's answer says "hellp"."""
    assert data.count(b'"hello"') == 2
    return data.replace(b'"hello"', b'"hellp"', 1)


def test_verify_edited(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    changed = edited(RUN)
    golden.write_bytes(changed)
    result = verify(golden)
    actual = hashlib.sha256(changed).hexdigest()
    assert (result.status, result.expected_sha256, result.actual_sha256) == (
        ReceiptStatus.MISMATCH,
        RUN_SHA,
        actual,
    )
    assert (result.expected_events, result.actual_events) == (4, 4)
    assert result.reason == f"edited in place: same size ({len(RUN)} bytes), other content"
    assert not result.truncated
    assert result.receipt is not None
    assert result.summary() == (
        f"MISMATCH — expected sha256 {RUN_SHA[:12]}…, got {actual[:12]}… "
        f"(edited in place: same size ({len(RUN)} bytes), other content)"
    )
    assert result.message("tests/test_a.py::test_a") == (
        f"golden {golden} does not match its receipt (test_a.jsonl.receipt): it changed after "
        "it was recorded or sealed.\n"
        f"  expected sha256: {RUN_SHA}\n"
        f"  actual sha256:   {actual}\n"
        "To accept the golden as it is: re-record it with "
        "`pytest --rollout-record tests/test_a.py::test_a`,\n"
        "or accept a deliberate edit with `pytest --rollout-accept-edits` or "
        f"`rollout seal {golden}`."
    )


def test_verify_truncated(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    cut = RUN[: RUN.index(b"\n") + 1]  # only run.started is left
    golden.write_bytes(cut)
    result = verify(golden)
    actual = hashlib.sha256(cut).hexdigest()
    assert result.status is ReceiptStatus.MISMATCH
    assert (result.expected_events, result.actual_events) == (4, 1)
    assert result.truncated
    assert result.reason == f"shrank from {len(RUN)} to {len(cut)} bytes, 4 to 1 events"
    assert result.message() == (
        f"golden {golden} does not match its receipt (test_a.jsonl.receipt): it changed after "
        "it was recorded or sealed.\n"
        f"  expected sha256: {RUN_SHA}\n"
        f"  actual sha256:   {actual}\n"
        "  events: 1 in the file, 4 in the receipt\n"
        f"  bytes: {len(cut)} in the file, {len(RUN)} in the receipt (shorter)\n"
        "To accept the golden as it is: re-record it with `pytest --rollout-record <test>`,\n"
        "or accept a deliberate edit with `pytest --rollout-accept-edits` or "
        f"`rollout seal {golden}`."
    )


def test_verify_lost_final_newline_is_truncated(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    golden.write_bytes(RUN[:-1])
    result = verify(golden)
    assert (result.status, result.actual_events, result.truncated) == (
        ReceiptStatus.MISMATCH,
        4,
        True,
    )
    assert result.reason == f"shrank from {len(RUN)} to {len(RUN) - 1} bytes"
    assert "  events:" not in result.message()


def test_verify_appended(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    longer = RUN + RUN.splitlines(keepends=True)[-1]
    golden.write_bytes(longer)
    result = verify(golden)
    assert result.status is ReceiptStatus.MISMATCH
    assert not result.truncated
    assert result.reason == f"grew from {len(RUN)} to {len(longer)} bytes, 4 to 5 events"
    message = result.message()
    assert "  events: 5 in the file, 4 in the receipt\n" in message
    assert f"  bytes: {len(longer)} in the file, {len(RUN)} in the receipt\n" in message


def test_verify_missing(tmp_path: Path) -> None:
    golden = tmp_path / "test_a.jsonl"
    golden.write_bytes(RUN)
    result = verify(golden)
    assert result == Verification(
        status=ReceiptStatus.MISSING,
        golden=str(golden),
        expected_sha256=None,
        actual_sha256=RUN_SHA,
        expected_events=None,
        actual_events=4,
        reason=None,
        receipt=None,
        actual_bytes=len(RUN),
    )
    assert result.summary() == "none"
    assert result.message("tests/test a.py::test_a[x y]") == (
        f"golden {golden} has no receipt (test_a.jsonl.receipt not found), so nothing shows "
        "that it is the file that was recorded.\n"
        "To accept the golden as it is: re-record it with "
        "`pytest --rollout-record 'tests/test a.py::test_a[x y]'`,\n"
        "or accept a deliberate edit with `pytest --rollout-accept-edits` or "
        f"`rollout seal {golden}`."
    )


def test_verify_dangling_symlink_is_missing(tmp_path: Path) -> None:
    golden = tmp_path / "test_a.jsonl"
    golden.write_bytes(RUN)
    receipt_path(golden).symlink_to(tmp_path / "gone")
    assert verify(golden).status is ReceiptStatus.MISSING


def test_verify_follows_a_symlinked_receipt(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    real = tmp_path / "elsewhere"
    receipt_path(golden).rename(real)
    receipt_path(golden).symlink_to(real)
    assert verify(golden).status is ReceiptStatus.OK


def corrupt(tmp_path: Path, content: bytes) -> Verification:
    golden = sealed(tmp_path)
    receipt_path(golden).write_bytes(content)
    result = verify(golden)
    assert result.status is ReceiptStatus.CORRUPT
    assert (result.expected_sha256, result.expected_events, result.receipt) == (None, None, None)
    assert (result.actual_sha256, result.actual_events) == (RUN_SHA, 4)
    assert result.reason is not None
    return result


def test_verify_corrupt_json(tmp_path: Path) -> None:
    result = corrupt(tmp_path, b'{"receipt": 1')
    assert result.reason == "not valid JSON: Expecting ',' delimiter (line 1)"
    assert result.summary() == "corrupt — not valid JSON: Expecting ',' delimiter (line 1)"
    golden = tmp_path / "test_a.jsonl"
    assert result.message() == (
        f"golden {golden} has an unusable receipt (test_a.jsonl.receipt): "
        "not valid JSON: Expecting ',' delimiter (line 1)\n"
        "To accept the golden as it is: re-record it with `pytest --rollout-record <test>`,\n"
        "or accept a deliberate edit with `pytest --rollout-accept-edits` or "
        f"`rollout seal {golden}`."
    )


def test_verify_corrupt_types(tmp_path: Path) -> None:
    result = corrupt(tmp_path, encode(receipt_obj(events="4")))
    assert result.reason == "field 'events' must be an integer, not a string"


def test_verify_a_receipt_of_a_newer_format_is_corrupt_never_ok(tmp_path: Path) -> None:
    result = corrupt(tmp_path, encode(receipt_obj(format=2)))
    assert result.reason == "format 2 is newer than this reader knows (1)"


def test_verify_receipt_of_another_file_is_corrupt(tmp_path: Path) -> None:
    result = corrupt(tmp_path, encode(receipt_obj(file="test_b.jsonl")))
    assert result.reason == 'it is the receipt of "test_b.jsonl", not of "test_a.jsonl"'


def test_verify_counts_that_disagree_with_the_digest(tmp_path: Path) -> None:
    result = corrupt(tmp_path, encode(receipt_obj(events=3)))
    assert result.reason == (
        f"its digest matches the file but it says {len(RUN)} bytes and 3 events, "
        f"where the file has {len(RUN)} and 4"
    )


def test_verify_huge_receipt(tmp_path: Path) -> None:
    result = corrupt(tmp_path, b" " * (MAX_RECEIPT_BYTES + 1))
    assert result.reason == (
        f"file is {MAX_RECEIPT_BYTES + 1} bytes, over the {MAX_RECEIPT_BYTES}-byte limit"
    )


def test_verify_directory_at_receipt_path(tmp_path: Path) -> None:
    golden = tmp_path / "test_a.jsonl"
    golden.write_bytes(RUN)
    receipt_path(golden).mkdir()
    result = verify(golden)
    assert result.status is ReceiptStatus.CORRUPT
    assert result.reason is not None
    assert result.reason.startswith("is a directory")


def test_verify_unreadable_receipt(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    receipt_path(golden).chmod(0)
    try:
        if os.access(receipt_path(golden), os.R_OK):
            pytest.skip("running as a user who can read anything")
        result = verify(golden)
    finally:
        receipt_path(golden).chmod(0o644)
    assert (result.status, result.reason) == (
        ReceiptStatus.CORRUPT,
        "cannot open: Permission denied",
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_verify_fifo_at_receipt_path_does_not_block(tmp_path: Path) -> None:
    golden = tmp_path / "test_a.jsonl"
    golden.write_bytes(RUN)
    fifo = receipt_path(golden)
    os.mkfifo(fifo)
    found = beside_fifo(fifo, lambda: verify(golden))
    assert isinstance(found, Verification)
    assert (found.status, found.reason) == (
        ReceiptStatus.CORRUPT,
        "is a FIFO, not a regular file",
    )


def test_verify_of_a_missing_golden_raises_like_the_loader(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(RolloutFormatError) as info:
        verify(missing)
    assert str(info.value) == f"{missing}: cannot open: No such file or directory"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_read_golden_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(RolloutFormatError) as info:
        read_rollout_bytes(fifo)
    assert info.value.reason == "is a FIFO, not a regular file"
    assert read_rollout_bytes(sealed(tmp_path)) == RUN


def test_hostile_golden_name_in_messages(tmp_path: Path) -> None:
    name = "\x1b[2J::error::x\u202e" + "\u2066.jsonl"
    golden = tmp_path / name
    golden.write_bytes(RUN)
    assert_printable(verify(golden).message(test="::error::" + EVIL))
    write_receipt(golden, make_receipt(RUN, redaction_mode="full", rules_sha256=""))
    golden.write_bytes(edited(RUN))
    result = verify(golden)
    assert result.status is ReceiptStatus.MISMATCH
    assert_printable(result.message())
    receipt_path(golden).write_bytes(encode(receipt_obj(file="##[group]" + EVIL)))
    result = verify(golden)
    assert result.status is ReceiptStatus.CORRUPT
    assert_printable(result.message())
    assert_printable(result.summary())


def test_to_json_obj(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    assert verify(golden).to_json_obj() == {
        "status": "ok",
        "expected_sha256": RUN_SHA,
        "actual_sha256": RUN_SHA,
        "expected_events": 4,
        "actual_events": 4,
        "reason": None,
    }
    receipt_path(golden).unlink()
    assert json.loads(json.dumps(verify(golden).to_json_obj()))["status"] == "missing"


# -- write_receipt ------------------------------------------------------------------------


def test_write_receipt(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    receipt = make_receipt(RUN, redaction_mode="redacted", rules_sha256=RULES)
    assert receipt_path(golden).read_bytes() == receipt.to_bytes("test_a.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test_a.jsonl", "test_a.jsonl.receipt"]


def test_an_unchanged_receipt_is_not_rewritten(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    before = receipt_path(golden).stat()
    write_receipt(golden, make_receipt(RUN, redaction_mode="redacted", rules_sha256=RULES))
    after = receipt_path(golden).stat()
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)


def test_write_receipt_replaces_a_stale_one(tmp_path: Path) -> None:
    golden = sealed(tmp_path)
    golden.write_bytes(edited(RUN))
    assert verify(golden).status is ReceiptStatus.MISMATCH
    write_receipt(golden, make_receipt(edited(RUN), redaction_mode="full", rules_sha256=""))
    assert verify(golden).status is ReceiptStatus.OK


def test_a_failed_write_leaves_the_old_receipt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden = sealed(tmp_path)
    old = receipt_path(golden).read_bytes()

    def fail(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="No space left"):
        write_receipt(golden, make_receipt(b"other\n", redaction_mode="full", rules_sha256=""))
    monkeypatch.undo()
    assert receipt_path(golden).read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test_a.jsonl", "test_a.jsonl.receipt"]


# -- no pytest in the library -------------------------------------------------------------


def test_receipt_never_imports_pytest() -> None:
    tree = ast.parse(Path(receipt_module.__file__).read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0
    }
    assert not imported & {"pytest", "_pytest"}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, pytest_rollout.store.receipt; "
            "sys.exit(bool({'pytest', '_pytest'} & set(sys.modules)))",
        ],
        check=False,
        timeout=120,
    )
    assert done.returncode == 0
