"""Tests of ``rollout check``: pinned output, JSON, exit codes, refusals, sanitized printing."""

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

ROOT = Path(__file__).resolve().parents[2]
# 2026-06-28T12:34:56Z
T0 = 1_782_650_096_000_000_000
Line = tuple[str, dict[str, Any]]


def record(path: Path, events: list[Line]) -> Path:
    """Write ``events`` through the recorder (steps assigned by it) with a fake clock."""
    ticks = itertools.count()
    recorder = Recorder(clock=lambda: T0 + next(ticks) * 250_000_000)
    for kind, data in events:
        recorder.emit(kind, data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(recorder.getvalue())
    return path


def trip(*, broken: bool = False) -> list[Line]:
    """Weather in Oslo in Fahrenheit: two tool steps and an answer. ``broken`` makes the agent
    call with other arguments, call a tool nobody asked for, and leave a call open."""
    oslo = {"city": "Oslo", "units": "metric"} if broken else {"city": "Oslo"}
    return [
        ("run.started", {"model": "gpt-x", "tools": ["get_weather", "convert"], "meta": {}}),
        ("llm.turn.started", {"messages": [{"role": "user", "content": "Oslo in F?"}]}),
        (
            "llm.turn.completed",
            {
                "content": "",
                "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}}],
                "usage": {"input_tokens": 40, "output_tokens": 12},
                "cost_usd": 0.001,
            },
        ),
        ("tool.call.started", {"call_id": "c1", "name": "get_weather", "arguments": oslo}),
        ("tool.call.completed", {"call_id": "c1", "name": "get_weather", "output": {"temp_c": 4}}),
        ("llm.turn.started", {"messages": [{"role": "tool", "content": '{"temp_c": 4}'}]}),
        (
            "llm.turn.completed",
            {
                "content": "",
                "tool_calls": [
                    {"id": "c2", "name": "convert", "arguments": {"celsius": 4, "to": "F"}}
                ],
                "usage": {"input_tokens": 60, "output_tokens": 10},
                "cost_usd": 0.002,
            },
        ),
        (
            "tool.call.started",
            {"call_id": "c2", "name": "convert", "arguments": {"celsius": 4, "to": "F"}},
        ),
        *(
            [("tool.call.started", {"call_id": None, "name": "log", "arguments": {}})]
            if broken
            else [("tool.call.completed", {"call_id": "c2", "name": "convert", "output": 39.2})]
        ),
        ("llm.turn.started", {"messages": [{"role": "tool", "content": "39.2"}]}),
        ("llm.turn.completed", {"content": "39.2F in Oslo.", "cost_usd": 0.003}),
        ("run.completed", {"outcome": "completed", "output": "39.2F in Oslo."}),
    ]


def check(*args: str | Path) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["check", *map(str, args)], out=out)
    return code, out.getvalue()


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return record(tmp_path / "good.jsonl", trip())


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    return record(tmp_path / "broken.jsonl", trip(broken=True))


# -- output and exit codes -----------------------------------------------------------------


def test_a_consistent_run(good: Path) -> None:
    assert check(good) == (
        0,
        f"{good}: matched\n  events replayed: 12, steps: 3\n  receipt: none\n",
    )


def test_a_broken_run(broken: Path) -> None:
    assert check(broken) == (
        1,
        f"{broken}: 4 mismatches\n"
        "  events replayed: 12, steps: 3\n"
        '  step 1, call c1 (line 4): arguments {"city":"Oslo","units":"metric"} differ from '
        'the announced {"city":"Oslo"} (line 3)\n'
        "  step 2, call c2 (line 8): started but never completed: no tool.call.completed "
        "with this call_id follows\n"
        "  step 2, call (no id) (line 9): not announced: the call has no call_id (it is null)\n"
        "  step 2, call (no id) (line 9): started but never completed: no tool.call.completed "
        "with this call_id follows\n"
        "  receipt: none\n",
    )


def test_one_mismatch_is_singular(tmp_path: Path) -> None:
    events = trip()
    del events[4]  # c1 never completes
    path = record(tmp_path / "one.jsonl", events)
    code, out = check(path)
    assert code == 1
    assert out.splitlines()[0] == f"{path}: 1 mismatch"


def test_several_files_one_block_each(good: Path, broken: Path) -> None:
    code, out = check(good, broken, good)
    assert code == 1
    lines = out.splitlines()
    assert [line for line in lines if not line.startswith("  ")] == [
        f"{good}: matched",
        f"{broken}: 4 mismatches",
        f"{good}: matched",
    ]
    assert len(lines) == 3 + 7 + 3


def test_the_goldens_check_clean() -> None:
    goldens = sorted(
        str(p.relative_to(ROOT))
        for p in [*ROOT.glob("examples/weather/golden/**/*.jsonl"), *ROOT.glob("golden/**/*.jsonl")]
    )
    assert len(goldens) >= 7
    out = io.StringIO()
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        code = main(["check", *goldens], out=out)
    finally:
        os.chdir(cwd)
    assert code == 0
    assert [line for line in out.getvalue().splitlines() if not line.startswith("  ")] == [
        f"{name}: matched" for name in goldens
    ]


# -- JSON ----------------------------------------------------------------------------------


def no_receipt(path: Path) -> dict[str, Any]:
    """The ``receipt`` entry of a file that has none (see test_cli_receipt.py for the rest)."""
    return {
        "status": "missing",
        "expected_sha256": None,
        "actual_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "expected_events": None,
        "actual_events": 12,
        "reason": None,
    }


def test_json_output(good: Path, broken: Path) -> None:
    code, out = check("--json", good, broken)
    assert code == 1
    assert json.loads(out) == {
        "files": [
            {
                "path": str(good),
                "events": 12,
                "steps": 3,
                "matched": True,
                "mismatches": [],
                "text_calls": [],
                "receipt": no_receipt(good),
            },
            {
                "path": str(broken),
                "events": 12,
                "steps": 3,
                "matched": False,
                "mismatches": [
                    {
                        "step": 1,
                        "call_id": "c1",
                        "line": 4,
                        "reason": 'arguments {"city":"Oslo","units":"metric"} differ from '
                        'the announced {"city":"Oslo"} (line 3)',
                    },
                    {
                        "step": 2,
                        "call_id": "c2",
                        "line": 8,
                        "reason": "started but never completed: no tool.call.completed with "
                        "this call_id follows",
                    },
                    {
                        "step": 2,
                        "call_id": None,
                        "line": 9,
                        "reason": "not announced: the call has no call_id (it is null)",
                    },
                    {
                        "step": 2,
                        "call_id": None,
                        "line": 9,
                        "reason": "started but never completed: no tool.call.completed with "
                        "this call_id follows",
                    },
                ],
                "text_calls": [],
                "receipt": no_receipt(broken),
            },
        ]
    }
    assert out.endswith("}\n")


def test_json_of_a_matched_file(good: Path) -> None:
    code, out = check(good, "--json")
    assert code == 0
    assert json.loads(out)["files"] == [
        {
            "path": str(good),
            "events": 12,
            "steps": 3,
            "matched": True,
            "mismatches": [],
            "text_calls": [],
            "receipt": no_receipt(good),
        }
    ]


# -- refusals: exit 2, one line each, the other files still checked --------------------------


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    assert check(missing) == (2, "")
    assert capsys.readouterr().err == (
        f"rollout: error: {missing}: cannot open: No such file or directory\n"
    )


def test_a_directory_is_every_rollout_under_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = tmp_path / "golden"
    good = record(golden / "test_b" / "good.jsonl", trip())
    broken = record(golden / "test_a" / "broken.jsonl", trip(broken=True))
    (golden / "test_a" / "notes.txt").write_text("not a rollout", encoding="utf-8")
    code, out = check(golden)
    assert code == 1
    assert [line for line in out.splitlines() if not line.startswith("  ")] == [
        f"{broken}: 4 mismatches",
        f"{good}: matched",
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert check(empty) == (2, "")
    assert capsys.readouterr().err == f"rollout: error: no rollout (*.jsonl) under {empty}\n"


def test_a_refused_file_among_good_ones(
    good: Path, broken: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_bytes(b"\n".join(good.read_bytes().split(b"\n")[:4]) + b"\n")
    code, out = check(good, truncated, broken)
    assert code == 2  # a refusal outranks a mismatch
    assert [line for line in out.splitlines() if not line.startswith("  ")] == [
        f"{good}: matched",
        f"{broken}: 4 mismatches",
    ]
    err = capsys.readouterr().err
    assert err.startswith(f"rollout: error: {truncated}:4: the run has no terminal event")
    assert err.count("\n") == 1
    assert "Traceback" not in err
    # Only good files and a refusal: still 2.
    assert check(good, truncated)[0] == 2
    code, out = check("--json", truncated, good)
    assert code == 2
    assert [f["path"] for f in json.loads(out)["files"]] == [str(good)]


def test_no_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc_info:
        main(["check"], out=io.StringIO())
    assert exc_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: rollout check")
    assert "the following arguments are required: FILE.jsonl" in err


# -- sanitized printing --------------------------------------------------------------------


def hostile_run(path: Path) -> Path:
    calls = [
        {"id": "::error::" + EVIL, "name": "##[group]" + EVIL, "arguments": {EVIL: EVIL}},
        {"id": "c2", "name": EVIL, "arguments": {"q": EVIL}},
    ]
    return record(
        path,
        [
            ("run.started", {"model": EVIL}),
            ("llm.turn.started", {"messages": [{"role": "user", "content": EVIL}]}),
            ("llm.turn.completed", {"content": EVIL, "tool_calls": calls}),
            (
                "tool.call.started",
                {"call_id": "::error::" + EVIL, "name": "##vso[" + EVIL, "arguments": {"k": EVIL}},
            ),
            ("tool.call.started", {"call_id": "\n::error::" + EVIL, "name": EVIL, "arguments": {}}),
            (
                "tool.call.completed",
                {"call_id": "##[group]" + EVIL, "name": EVIL, "error": {"message": EVIL}},
            ),
            ("tool.call.completed", {"call_id": "c2", "name": "::" + EVIL, "output": EVIL}),
            ("run.failed", {"error": {"class": EVIL, "message": EVIL}}),
        ],
    )


def test_hostile_content_prints_safely(tmp_path: Path) -> None:
    path = hostile_run(tmp_path / "hostile.jsonl")
    code, out = check(path)
    assert code == 1
    assert_printable(out)
    lines = out.splitlines()
    assert lines[0] == f"{path}: 7 mismatches"
    assert all(line.startswith("  ") for line in lines[1:])
    # Shown escaped, not dropped.
    assert "call \\x3a:error::\\x1b[31mred" in out
    assert "#\\x23vso[" in out
    assert "\\u202e" in out


def test_hostile_content_in_json_prints_safely(tmp_path: Path) -> None:
    path = hostile_run(tmp_path / "hostile.jsonl")
    code, out = check("--json", path)
    assert code == 1
    assert_printable(out)
    assert out.isascii()
    mismatches = json.loads(out)["files"][0]["mismatches"]
    # The JSON holds the ids as recorded; only the terminal text is escaped.
    assert mismatches[0]["call_id"] == "::error::" + EVIL


def test_hostile_file_name_prints_safely(
    good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = tmp_path / ("\x1b[2J::error::x\u202e\n##[group]" + "\u2066.jsonl")
    name.write_bytes(good.read_bytes())
    code, out = check(name)
    assert code == 0
    assert_printable(out)
    assert out.endswith(": matched\n  events replayed: 12, steps: 3\n  receipt: none\n")
    code, out = check("--json", name)
    assert_printable(out)
    assert json.loads(out)["files"][0]["path"] == str(name)
    missing = tmp_path / ("missing" + name.name)
    assert check(missing, good)[0] == 2
    err = capsys.readouterr().err
    assert_printable(err)
    assert err.count("\n") == 1


def test_hostile_refusal_reason_prints_safely(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(orjson.dumps({"ts": "", "seq": 0, "type": "::error::" + EVIL, "data": {}}))
    assert check(path) == (2, "")
    err = capsys.readouterr().err
    assert_printable(err)
    assert ":1: the first event must be run.started" in err


# -- the real command ------------------------------------------------------------------------


def test_python_dash_m(good: Path, broken: Path) -> None:
    done = python_m("check", str(good), str(broken))
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout == check(good, broken)[1]


def test_a_run_whose_calls_are_announced_in_text_matches_with_a_note(tmp_path: Path) -> None:
    recorder = Recorder()
    recorder.emit("run.started", {})
    recorder.emit("llm.turn.started", {"messages": [{"role": "user", "content": "Weather?"}]})
    recorder.emit("llm.turn.completed", {"content": 'Action: get_weather({"city": "Paris"})'})
    recorder.emit("tool.call.started", {"call_id": None, "name": "get_weather", "arguments": {}})
    recorder.emit("tool.call.completed", {"call_id": None, "name": "get_weather", "output": 1})
    recorder.emit("run.completed", {"outcome": "completed"})
    path = tmp_path / "react.jsonl"
    path.write_bytes(recorder.getvalue())
    assert check(path) == (
        0,
        f"{path}: matched\n"
        "  events replayed: 6, steps: 1\n"
        "  note: step 1, call (no id) (line 4): announced in the text of the step 1 turn "
        "(line 3), which has no structured calls: replay matches it by tool and arguments\n"
        "  receipt: none\n",
    )
