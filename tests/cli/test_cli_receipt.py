"""Tests of receipts on the command line: ``rollout check``'s receipt line and ``rollout seal``.

A receipt for another file (its ``file`` field names someone else) is reported as corrupt,
not as a mismatch: the digests may well agree, the receipt just does not describe this file.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from command import python_m
from hostile import EVIL, assert_printable

from pytest_rollout.cli import main
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.store.receipt import make_receipt, receipt_path, verify, write_receipt

# 2026-06-28T12:34:56Z
T0 = 1_782_650_096_000_000_000
RULES = "cd" * 32


def record(path: Path, *, broken: bool = False) -> Path:
    """A short run (one tool call, then an answer) written by the recorder with a fake clock.
    ``broken`` starts the call with other arguments than the turn announced."""
    ticks = itertools.count()
    recorder = Recorder(clock=lambda: T0 + next(ticks) * 250_000_000)
    announced = {"city": "Oslo"}
    events: list[tuple[str, dict[str, Any]]] = [
        ("run.started", {"model": "gpt-x", "tools": ["get_weather"], "meta": {}}),
        ("llm.turn.started", {"messages": [{"role": "user", "content": "Oslo?"}]}),
        (
            "llm.turn.completed",
            {
                "content": "",
                "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": announced}],
            },
        ),
        (
            "tool.call.started",
            {
                "call_id": "c1",
                "name": "get_weather",
                "arguments": {"city": "Bergen"} if broken else announced,
            },
        ),
        ("tool.call.completed", {"call_id": "c1", "name": "get_weather", "output": {"c": 4}}),
        ("llm.turn.started", {"messages": [{"role": "tool", "content": '{"c": 4}'}]}),
        ("llm.turn.completed", {"content": "4C in Oslo."}),
        ("run.completed", {"outcome": "completed", "output": "4C in Oslo."}),
    ]
    for kind, data in events:
        recorder.emit(kind, data)
    path.write_bytes(recorder.getvalue())
    return path


def run(*args: str | Path) -> tuple[int, str]:
    out = io.StringIO()
    code = main([*map(str, args)], out=out)
    return code, out.getvalue()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    return record(tmp_path / "test_trip.jsonl")


def block(path: Path, *receipt_lines: str) -> str:
    """``rollout check``'s output for a consistent run of :func:`record`."""
    return "\n".join([f"{path}: matched", "  events replayed: 8, steps: 2", *receipt_lines]) + "\n"


# -- check -----------------------------------------------------------------------------------


def test_check_without_receipt(golden: Path) -> None:
    assert run("check", golden) == (0, block(golden, "  receipt: none"))


def test_seal_then_check(golden: Path) -> None:
    digest = sha(golden)
    assert run("seal", golden) == (0, f"sealed {golden} (sha256 {digest[:12]}…, 8 events)\n")
    assert run("check", golden) == (
        0,
        block(golden, f"  receipt: ok (sha256 {digest[:12]}…, 8 events)"),
    )


def test_check_a_hand_edited_golden(golden: Path) -> None:
    run("seal", golden)
    before = sha(golden)
    data = golden.read_bytes()
    golden.write_bytes(data.replace(b"4C in Oslo.", b"5C in Oslo.", 1))  # one byte
    after = sha(golden)
    assert run("check", golden) == (
        1,
        block(
            golden,
            f"  receipt: MISMATCH — expected sha256 {before[:12]}…, got {after[:12]}… "
            f"(edited in place: same size ({len(data)} bytes), other content)",
            f"  to accept the file as it is now: rollout seal {golden}",
        ),
    )


def test_check_a_truncated_golden(golden: Path) -> None:
    run("seal", golden)
    before = sha(golden)
    size = golden.stat().st_size
    golden.write_bytes(golden.read_bytes()[:-1])  # the last newline is lost: still loads
    assert run("check", golden) == (
        1,
        block(
            golden,
            f"  receipt: MISMATCH — expected sha256 {before[:12]}…, got {sha(golden)[:12]}… "
            f"(shrank from {size} to {size - 1} bytes)",
            f"  to accept the file as it is now: rollout seal {golden}",
        ),
    )


def test_a_golden_truncated_mid_run_is_refused_by_the_loader(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run("seal", golden)
    golden.write_bytes(b"".join(golden.read_bytes().splitlines(keepends=True)[:3]))
    assert run("check", golden) == (2, "")
    assert capsys.readouterr().err == (
        f"rollout: error: {golden}:3: the run has no terminal event "
        "(run.completed or run.failed); the file is truncated or the run never ended\n"
    )


def test_check_a_golden_that_grew(golden: Path) -> None:
    run("seal", golden)
    before = sha(golden)
    size = golden.stat().st_size
    golden.write_bytes(golden.read_bytes() + b"\n")  # a blank line: still loads
    code, out = run("check", golden)
    assert code == 1
    assert out.splitlines()[2] == (
        f"  receipt: MISMATCH — expected sha256 {before[:12]}…, got {sha(golden)[:12]}… "
        f"(grew from {size} to {size + 1} bytes, 8 to 9 events)"
    )


def test_check_a_corrupt_receipt(golden: Path) -> None:
    receipt_path(golden).write_bytes(b"{not json")
    assert run("check", golden) == (
        1,
        block(
            golden,
            "  receipt: corrupt — not valid JSON: Expecting property name enclosed in double "
            "quotes (line 1)",
            f"  to accept the file as it is now: rollout seal {golden}",
        ),
    )


def test_check_a_receipt_of_another_file(golden: Path, tmp_path: Path) -> None:
    other = record(tmp_path / "test_other.jsonl")
    run("seal", other)
    # The other run has the same bytes, so only the name gives the swap away.
    receipt_path(golden).write_bytes(receipt_path(other).read_bytes())
    assert run("check", golden) == (
        1,
        block(
            golden,
            '  receipt: corrupt — it is the receipt of "test_other.jsonl", not of '
            '"test_trip.jsonl"',
            f"  to accept the file as it is now: rollout seal {golden}",
        ),
    )


def test_receipt_and_integrity_verdicts_are_separate(tmp_path: Path) -> None:
    broken = record(tmp_path / "broken.jsonl", broken=True)
    run("seal", broken)
    code, out = run("check", broken)
    assert code == 1  # the integrity mismatch
    lines = out.splitlines()
    assert lines[0] == f"{broken}: 1 mismatch"
    assert lines[-1] == f"  receipt: ok (sha256 {sha(broken)[:12]}…, 8 events)"


def test_several_files_and_exit_status(golden: Path, tmp_path: Path) -> None:
    plain = record(tmp_path / "plain.jsonl")
    run("seal", golden)
    assert run("check", golden, plain)[0] == 0  # a missing receipt is no failure
    golden.write_bytes(golden.read_bytes().replace(b"Oslo?", b"Oslo!"))
    code, out = run("check", plain, golden)
    assert code == 1
    receipt_lines = [line for line in out.splitlines() if "receipt:" in line]
    assert receipt_lines[0] == "  receipt: none"
    assert receipt_lines[1].startswith("  receipt: MISMATCH — ")


def test_check_json(golden: Path) -> None:
    code, out = run("check", "--json", golden)
    assert code == 0
    assert json.loads(out)["files"][0]["receipt"] == {
        "status": "missing",
        "expected_sha256": None,
        "actual_sha256": sha(golden),
        "expected_events": None,
        "actual_events": 8,
        "reason": None,
    }
    run("seal", golden)
    sealed = sha(golden)
    golden.write_bytes(golden.read_bytes()[:-1])
    code, out = run("check", "--json", golden)
    assert code == 1
    size = golden.stat().st_size
    assert json.loads(out)["files"][0]["receipt"] == {
        "status": "mismatch",
        "expected_sha256": sealed,
        "actual_sha256": sha(golden),
        "expected_events": 8,
        "actual_events": 8,
        "reason": f"shrank from {size + 1} to {size} bytes",
    }
    receipt_path(golden).write_bytes(b"[]")
    code, out = run("check", "--json", golden)
    assert code == 1
    entry = json.loads(out)["files"][0]["receipt"]
    assert (entry["status"], entry["reason"]) == ("corrupt", "not a JSON object")


def test_hostile_receipt_prints_safely(golden: Path) -> None:
    obj = json.loads(make_receipt(b"x", redaction_mode="full", rules_sha256="").to_bytes("x"))
    obj["::error::" + EVIL] = EVIL
    receipt_path(golden).write_bytes(json.dumps(obj).encode())
    code, out = run("check", golden)
    assert code == 1
    assert_printable(out)
    assert "  receipt: corrupt — unexpected field " in out
    code, out = run("check", "--json", golden)
    assert_printable(out)
    assert out.isascii()


# -- seal ------------------------------------------------------------------------------------


def test_seal_writes_a_pinned_receipt(golden: Path) -> None:
    run("seal", golden)
    body = {
        "bytes": golden.stat().st_size,
        "events": 8,
        "file": "test_trip.jsonl",
        "format": 1,
        "receipt": 1,
        "redaction": {"mode": "unknown", "rules_sha256": ""},
        "sha256": sha(golden),
    }
    digest = hashlib.sha256(
        json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    ).hexdigest()
    assert (
        receipt_path(golden).read_bytes()
        == (
            "{\n"
            f'  "body_sha256": "{digest}",\n'
            f'  "bytes": {golden.stat().st_size},\n'
            '  "events": 8,\n'
            '  "file": "test_trip.jsonl",\n'
            '  "format": 1,\n'
            '  "receipt": 1,\n'
            '  "redaction": {\n'
            '    "mode": "unknown",\n'
            '    "rules_sha256": ""\n'
            "  },\n"
            f'  "sha256": "{sha(golden)}"\n'
            "}\n"
        ).encode()
    )


def test_seal_is_byte_stable(golden: Path) -> None:
    run("seal", golden)
    first = receipt_path(golden).read_bytes()
    assert run("seal", golden)[0] == 0
    assert receipt_path(golden).read_bytes() == first


def test_seal_keeps_the_redaction_settings_of_the_old_receipt(golden: Path) -> None:
    write_receipt(
        golden, make_receipt(golden.read_bytes(), redaction_mode="hashed", rules_sha256=RULES)
    )
    golden.write_bytes(golden.read_bytes().replace(b"Oslo?", b"Oslo!"))  # a deliberate edit
    assert run("seal", golden)[0] == 0
    result = verify(golden)
    assert result.receipt is not None
    assert (result.status, result.receipt.redaction_mode, result.receipt.rules_sha256) == (
        "ok",
        "hashed",
        RULES,
    )


def test_seal_options_override(golden: Path) -> None:
    run("seal", golden)
    assert run("seal", "--redaction-mode", "redacted", "--rules-sha256", RULES, golden)[0] == 0
    receipt = verify(golden).receipt
    assert receipt is not None
    assert (receipt.redaction_mode, receipt.rules_sha256) == ("redacted", RULES)
    assert run("seal", "--rules-sha256", "", golden)[0] == 0
    receipt = verify(golden).receipt
    assert receipt is not None
    assert (receipt.redaction_mode, receipt.rules_sha256) == ("redacted", "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--rules-sha256", "abc"],
            "--rules-sha256 must be 64 lowercase hex digits (or empty: unknown)",
        ),
        (["--rules-sha256", "AB" * 32], "--rules-sha256 must be 64 lowercase hex digits"),
        (["--redaction-mode", ""], "--redaction-mode must not be empty"),
    ],
)
def test_seal_bad_options(
    golden: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("seal", *args, golden) == (2, "")
    assert capsys.readouterr().err.startswith(f"rollout seal: error: {message}")
    assert not receipt_path(golden).exists()


def test_seal_refuses_what_the_loader_refuses(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(golden.read_bytes().splitlines(keepends=True)[:2]))
    assert run("seal", golden, bad) == (2, "")
    assert capsys.readouterr().err == (
        f"rollout: error: {bad}:2: the run has no terminal event (run.completed or "
        "run.failed); the file is truncated or the run never ended\n"
        "rollout seal: nothing was sealed\n"
    )
    # All or nothing: the good file was not sealed either.
    assert not receipt_path(golden).exists()
    assert not receipt_path(bad).exists()


def test_seal_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    assert run("seal", missing) == (2, "")
    assert capsys.readouterr().err == (
        f"rollout: error: {missing}: cannot open: No such file or directory\n"
        "rollout seal: nothing was sealed\n"
    )


def test_seal_a_write_failure(
    golden: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(src: Any, dst: Any) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(os, "replace", fail)
    assert run("seal", golden) == (2, "")
    assert capsys.readouterr().err == (
        f"rollout: error: cannot write {golden}.receipt: Read-only file system\n"
    )
    monkeypatch.undo()
    assert sorted(p.name for p in golden.parent.iterdir()) == ["test_trip.jsonl"]


def test_seal_hostile_name(golden: Path, tmp_path: Path) -> None:
    name = tmp_path / ("\x1b[2J::error::x\u202e\n##[group]" + "\u2066.jsonl")
    name.write_bytes(golden.read_bytes())
    code, out = run("seal", name)
    assert code == 0
    assert_printable(out)
    assert out.endswith(f"(sha256 {sha(golden)[:12]}…, 8 events)\n")
    code, out = run("check", name)
    assert code == 0
    assert_printable(out)
    name.write_bytes(name.read_bytes()[:-1])
    code, out = run("check", name)
    assert code == 1
    assert_printable(out)
    assert "  to accept the file as it is now: rollout seal '" in out


def test_seal_needs_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc_info:
        main(["seal"], out=io.StringIO())
    assert exc_info.value.code == 2
    assert "the following arguments are required: FILE.jsonl" in capsys.readouterr().err


def test_seal_python_dash_m(golden: Path) -> None:
    done = python_m("seal", str(golden))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"sealed {golden} (sha256 {sha(golden)[:12]}…, 8 events)\n"
    assert orjson.loads(receipt_path(golden).read_bytes())["sha256"] == sha(golden)
