"""Tests of ``rollout diff``: output, exit codes, refusals and sanitized printing."""

from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from command import diff, python_m, run_command, write_lines
from hostile import EVIL, assert_printable

from pytest_rollout.cli import main
from pytest_rollout.cli.commands import _diff_limits
from pytest_rollout.format.loader import DEFAULT_LIMITS
from pytest_rollout.format.recorder import Recorder

# 2026-06-28T12:34:56Z
T0 = 1_782_650_096_000_000_000


def write_trip(path: Path, city: str = "Rome", *, fail: bool = False) -> Path:
    """A realistic two-turn run, recorded with a fake clock so its bytes are fixed."""
    ticks = itertools.count()
    rec = Recorder(path, clock=lambda: T0 + next(ticks) * 250_000_000)
    rec.emit(
        "run.started",
        {
            "run_id": "r1",
            "test_id": "tests/test_trip.py::test_weather",
            "model": "gpt-x",
            "provider": "openai",
            "tools": ["weather"],
            "prompt": "Weather in the capital?",
            "meta": {},
        },
    )
    rec.emit(
        "llm.turn.started",
        {"messages": [{"role": "user", "content": "Weather in the capital?"}], "params": {}},
    )
    rec.emit(
        "llm.turn.completed",
        {
            "content": "",
            "tool_calls": [{"id": "c1", "name": "weather", "arguments": {"city": city}}],
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "cost_usd": 0.0125,
            "latency_ms": 300,
        },
    )
    rec.emit("tool.call.started", {"call_id": "c1", "name": "weather", "arguments": {"city": city}})
    rec.emit(
        "tool.call.completed",
        {"call_id": "c1", "name": "weather", "output": {"temp": 21}, "duration_ms": 4},
    )
    rec.emit("usage.delta", {"cumulative_cost_usd": 0.0125})
    rec.emit("llm.turn.started", {"messages": [{"role": "tool", "content": '{"temp": 21}'}]})
    rec.emit("llm.turn.completed", {"content": f"Sunny, 21C in {city}.", "cost_usd": 0.02})
    rec.emit("usage.delta", {"cumulative_cost_usd": 0.04 if fail else 0.0325})
    if fail:
        rec.emit("run.failed", {"error": {"class": "ValueError", "message": "wrong city"}})
    else:
        rec.emit(
            "run.completed",
            {
                "outcome": "completed",
                "output": f"Sunny, 21C in {city}.",
                "cost_totals": {"total_cost_usd": 0.0325},
                "total_duration_ms": 2250,
            },
        )
    rec.close()
    assert rec.stats.write_errors == 0
    return path


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    return write_trip(tmp_path / "golden.jsonl")


@pytest.fixture
def regressed(tmp_path: Path) -> Path:
    return write_trip(tmp_path / "run.jsonl", "Paris", fail=True)


SCORE_LINES = (
    "Score: A wins 5-0: outcome (B failed where A completed), errors (A 0 vs B 1), "
    "cost (A $0.0325 vs B\n    $0.04)\n"
)
#: The report of a regression, A and B being the golden's and the run's paths.
EXPECTED_REGRESSION = (
    """\
B left A at step 1: tool_call_mismatch (attributed to the agent)
A: {a}
B: {b}
Divergence: first difference in data.tool_calls[0].arguments.city
First divergence at step 1 (diverged)
  A did:
    llm.turn.started  1 new message, last user: "Weather in the capital?"
  > llm.turn.completed  -> weather(city="Rome")
    tool.call.started  weather(city="Rome")
    tool.call.completed  weather -> {{"temp":21}}
    usage.delta  {{"cumulative_cost_usd":0.0125}}
  B did:
    llm.turn.started  1 new message, last user: "Weather in the capital?"
  > llm.turn.completed  -> weather(city="Paris")
    tool.call.started  weather(city="Paris")
    tool.call.completed  weather -> {{"temp":21}}
    usage.delta  {{"cumulative_cost_usd":0.0125}}
  Difference (event 2 of the step):
    data.tool_calls[0].arguments.city: "Rome" -> "Paris"
  After it: 1 more step differs (1 diverged)
Steps 0-2: 1 identical, 2 diverged, 0 only in A, 0 only in B
"""
    + SCORE_LINES
    + """\
Cost: A $0.0325, B $0.04 (+$0.0075)
Fork the conversation from the last good step (0):
  rollout fork {a} --step 0
"""
)

EXPECTED_IDENTICAL = """\
B matches A
A: {a}
B: {b}
Steps 0-2: 3 identical, 0 diverged, 0 only in A, 0 only in B
Score: tie 0-0
Cost: A $0.0325, B $0.0325 (+$0.00)
"""


# -- output and exit codes ----------------------------------------------------------------


def test_the_recorded_file_is_pinned(golden: Path) -> None:
    first = golden.read_bytes().split(b"\n")[0]
    assert first.startswith(b'{"ts":"2026-06-28T12:34:56.000000Z","seq":0,"type":"run.started"')


def test_diff_of_a_regression(golden: Path, regressed: Path) -> None:
    assert diff(golden, regressed) == (1, EXPECTED_REGRESSION.format(a=golden, b=regressed))


def test_diff_of_identical_runs(golden: Path, tmp_path: Path) -> None:
    assert diff(golden, golden) == (0, EXPECTED_IDENTICAL.format(a=golden, b=golden))
    # A re-record at another time with another run id is still identical.
    other = tmp_path / "again.jsonl"
    other.write_bytes(
        golden.read_bytes().replace(b"2026-06-28T12:34", b"2027-01-01T00:00").replace(b"r1", b"r9")
    )
    assert diff(golden, other) == (0, EXPECTED_IDENTICAL.format(a=golden, b=other))


def test_diff_the_other_way_round(golden: Path, regressed: Path) -> None:
    code, out = diff(regressed, golden)
    assert code == 1
    assert out.splitlines()[:3] == [
        "B left A at step 1: tool_call_mismatch (attributed to the agent)",
        f"A: {regressed}",
        f"B: {golden}",
    ]
    assert out.splitlines()[-6:-3] == [
        "Steps 0-2: 1 identical, 2 diverged, 0 only in A, 0 only in B",
        "Score: B wins 5-0: outcome (A failed where B completed), errors (A 1 vs B 0), "
        "cost (A $0.04 vs B",
        "    $0.0325)",
    ]
    assert '    data.tool_calls[0].arguments.city: "Paris" -> "Rome"' in out.splitlines()


def test_diff_when_only_content_differs(tmp_path: Path) -> None:
    a = write_lines(
        tmp_path / "a.jsonl",
        ("run.started", {"prompt": "hi"}),
        ("llm.turn.started", {"step": 1, "messages": []}),
        ("llm.turn.completed", {"step": 1, "content": "Hello there!", "cost_usd": 0.001}),
        ("run.completed", {"step": 1, "outcome": "completed"}),
    )
    b = write_lines(
        tmp_path / "b.jsonl",
        ("run.started", {"prompt": "hi"}),
        ("llm.turn.started", {"step": 1, "messages": []}),
        ("llm.turn.completed", {"step": 1, "content": "Hi!", "cost_usd": 0.003}),
        ("run.completed", {"step": 1, "outcome": "completed"}),
    )
    assert diff(a, b) == (
        1,
        "B left A at step 1: response_mismatch (attributed to the agent)\n"
        f"A: {a}\n"
        f"B: {b}\n"
        "Divergence: first difference in data.content\n"
        "First divergence at step 1 (diverged)\n"
        "  A did:\n"
        "    llm.turn.started  0 new messages\n"
        '  > llm.turn.completed  "Hello there!"\n'
        '    run.completed  outcome="completed"\n'
        "  B did:\n"
        "    llm.turn.started  0 new messages\n"
        '  > llm.turn.completed  "Hi!"\n'
        '    run.completed  outcome="completed"\n'
        "  Difference (event 2 of the step):\n"
        '    data.content: "Hello there!" -> "Hi!"\n'
        "Steps 0-1: 1 identical, 1 diverged, 0 only in A, 0 only in B\n"
        "Score: A wins 1-0: cost (A $0.001 vs B $0.003)\n"
        "Cost: A $0.001, B $0.003 (+$0.002)\n"
        "Fork the conversation from the last good step (0):\n"
        f"  rollout fork {a} --step 0\n",
    )


def test_diff_with_an_extra_step(tmp_path: Path) -> None:
    a = write_lines(
        tmp_path / "a.jsonl",
        ("run.started", {}),
        ("llm.turn.completed", {"step": 1, "content": "done"}),
        ("run.completed", {"step": 1, "outcome": "completed"}),
    )
    b = write_lines(
        tmp_path / "b.jsonl",
        ("run.started", {}),
        ("llm.turn.completed", {"step": 1, "content": "done"}),
        ("llm.turn.completed", {"step": 2, "content": "really done"}),
        ("run.completed", {"step": 2, "outcome": "completed"}),
    )
    code, out = diff(a, b)
    assert code == 1
    lines = out.splitlines()
    assert lines[3:5] == [
        "Divergence: only the recording has run.completed here",
        "First divergence at step 1 (diverged)",
    ]
    assert lines[-6:-2] == [
        "  After it: 1 more step differs (1 only in B)",
        "Steps 0-2: 1 identical, 1 diverged, 0 only in A, 1 only in B",
        "Score: A wins 1-0: steps (A 1 vs B 2)",
        "Cost: A cost unknown, B cost unknown",
    ]


def test_ignore_and_drop_key_options(tmp_path: Path) -> None:
    def write(path: Path, fetched: str, request: str) -> Path:
        return write_lines(
            path,
            ("run.started", {}),
            ("llm.turn.started", {"step": 1}),
            (
                "tool.call.completed",
                {"step": 1, "name": "clock", "output": {"at": fetched, "v": 1}, "req": request},
            ),
            ("run.completed", {"step": 1}),
        )

    a = write(tmp_path / "a.jsonl", "12:00", "r1")
    b = write(tmp_path / "b.jsonl", "13:00", "r2")
    assert diff(a, b)[0] == 1
    assert diff("--ignore", "tool.call.completed:output.at", a, b)[0] == 1
    assert diff("--drop-key", "req", a, b)[0] == 1
    code, out = diff(
        "--ignore", "tool.call.completed:output.at", "--drop-key", "req", str(a), str(b)
    )
    assert code == 0
    assert "Steps 0-1: 2 identical, 0 diverged" in out
    # A path scoped to another type does not apply.
    assert diff("--ignore", "llm.turn.completed:output.at", "--drop-key", "req", a, b)[0] == 1
    assert diff("--ignore", "**.at", "--ignore", "**.req", a, b)[0] == 0


# -- refusals: exit 2, one line, no traceback ------------------------------------------------


def refusal(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    code, out = diff(*args)
    captured = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert captured.out == ""
    assert captured.err.endswith("\n")
    assert captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err
    return captured.err


def test_missing_file(golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    err = refusal(capsys, golden, missing)
    assert err == f"rollout: error: {missing}: cannot open: No such file or directory\n"
    assert refusal(capsys, missing, golden).startswith(f"rollout: error: {missing}: ")


def test_refused_file_names_file_and_line(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = golden.read_bytes().split(b"\n")
    lines[2] = b'{"ts": "x", "seq": 2, "type": "llm.turn.completed", "data": {'
    bad.write_bytes(b"\n".join(lines))
    err = refusal(capsys, golden, bad)
    assert err.startswith(f"rollout: error: {bad}:3: invalid JSON at column ")


def test_truncated_file_is_refused(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_bytes(b"\n".join(golden.read_bytes().split(b"\n")[:4]) + b"\n")
    err = refusal(capsys, truncated, golden)
    assert err.startswith(f"rollout: error: {truncated}:4: the run has no terminal event")


def test_directory_is_refused(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refusal(capsys, golden, tmp_path)
    assert err.startswith(f"rollout: error: {tmp_path}: ")
    assert "directory" in err


@pytest.mark.parametrize("ignore", ["", "tool.call.completed:"])
def test_bad_ignore_path(golden: Path, ignore: str, capsys: pytest.CaptureFixture[str]) -> None:
    err = refusal(capsys, "--ignore", ignore, golden, golden)
    assert err.startswith("rollout diff: error: empty ignore path")


# -- the loader's limits, for files the user trusts -----------------------------------------


def notes(path: Path, count: int) -> Path:
    """A whole run of ``count`` events: its start, notes, its end (about 50 bytes a line)."""
    lines = [b'{"ts":"t","seq":0,"type":"run.started","data":{}}']
    lines += [b'{"ts":"t","seq":%d,"type":"note","data":{}}' % seq for seq in range(1, count - 1)]
    lines.append(b'{"ts":"t","seq":%d,"type":"run.completed","data":{}}' % (count - 1))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_more_events_than_max_events_is_refused_with_the_flag_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    twenty = notes(tmp_path / "twenty.jsonl", 20)
    err = refusal(capsys, "--max-events", "10", twenty, twenty)
    assert err == (
        f"rollout: error: {twenty}:11: more than 10 events "
        "(for a file you trust, --max-events N raises the limit)\n"
    )
    assert diff("--max-events", "100", twenty, twenty) == (0, IDENTICAL_NOTES.format(p=twenty))
    assert diff("--max-events", "20", twenty, twenty)[0] == 0  # the limit is inclusive


def test_the_second_file_is_held_to_the_same_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small, big = notes(tmp_path / "small.jsonl", 5), notes(tmp_path / "big.jsonl", 20)
    err = refusal(capsys, "--max-events", "10", small, big)
    assert err.startswith(f"rollout: error: {big}:11: more than 10 events (for a file you trust")


@pytest.mark.slow  # a hundred thousand events, read twice
def test_a_file_over_the_default_event_limit_needs_max_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    many = notes(tmp_path / "many.jsonl", 100_001)
    err = refusal(capsys, many, many)
    assert err == (
        f"rollout: error: {many}:100001: more than 100000 events "
        "(for a file you trust, --max-events N raises the limit)\n"
    )
    code, out = diff("--max-events", "100001", many, many)
    assert (code, out.splitlines()[0]) == (0, "B matches A")


def test_more_bytes_than_max_bytes_is_refused_with_the_flag_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forty = notes(tmp_path / "forty.jsonl", 40)
    size = forty.stat().st_size
    assert 1024 < size <= 2048
    err = refusal(capsys, "--max-bytes", "1K", forty, forty)
    assert err == (
        f"rollout: error: {forty}: file is {size} bytes, over the 1024-byte limit "
        "(for a file you trust, --max-bytes SIZE raises the limit)\n"
    )
    assert diff("--max-bytes", "2k", forty, forty)[0] == 0
    assert diff("--max-bytes", str(size), forty, forty)[0] == 0
    refusal(capsys, "--max-bytes", str(size - 1), forty, forty)


def test_a_file_over_the_default_size_needs_max_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as handle:  # sparse: refused on its size, never read
        handle.truncate(256 * 1024 * 1024 + 1)
    err = refusal(capsys, huge, huge)
    assert err == (
        f"rollout: error: {huge}: file is 268435457 bytes, over the 268435456-byte limit "
        "(for a file you trust, --max-bytes SIZE raises the limit)\n"
    )


def test_other_refusals_name_no_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"not json\n")
    err = refusal(capsys, "--max-events", "5", "--max-bytes", "1M", bad, bad)
    assert err.startswith(f"rollout: error: {bad}:1: invalid JSON")
    assert "--max" not in err


IDENTICAL_NOTES = """\
B matches A
A: {p}
B: {p}
Step 0: 1 identical, 0 diverged, 0 only in A, 0 only in B
Score: tie 0-0
Cost: A cost unknown, B cost unknown
"""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--max-events", "1K"],
            "--max-events takes a whole number of events, e.g. 1000000; got '1K'",
        ),
        (["--max-events", "-5"], "--max-events takes a whole number of events, e.g. 1000000"),
        (["--max-events", "1.5"], "--max-events takes a whole number of events, e.g. 1000000"),
        (["--max-events", ""], "--max-events takes a whole number of events, e.g. 1000000"),
        (["--max-events", "0"], "--max-events must be from 1 to 2**62; got '0'"),
        (
            ["--max-bytes", "600MB"],
            "--max-bytes takes a whole number of bytes, or of K, M, G or T (powers of 1024), "
            "e.g. 600M or 2G; got '600MB'",
        ),
        (["--max-bytes", "2 G"], "--max-bytes takes a whole number of bytes"),
        (["--max-bytes", "G"], "--max-bytes takes a whole number of bytes"),
        (["--max-bytes", "1.5G"], "--max-bytes takes a whole number of bytes"),
        (["--max-bytes", "0M"], "--max-bytes must be from 1 to 2**62; got '0M'"),
        (["--max-bytes", "9999999T"], "--max-bytes must be from 1 to 2**62; got '9999999T'"),
    ],
)
def test_a_limit_that_is_no_number_is_refused_in_one_line(
    golden: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refusal(capsys, *argv, golden, golden)
    assert err.startswith(f"rollout diff: error: {message}")


@pytest.mark.parametrize(
    ("size", "limit"),
    [("600M", 600 * 2**20), ("2G", 2 * 2**30), ("2g", 2 * 2**30), ("1T", 2**40), ("12", 12)],
)
def test_max_bytes_takes_bytes_and_powers_of_1024(size: str, limit: int) -> None:
    assert _diff_limits(None, size).total_bytes == limit
    assert _diff_limits("7", None).events == 7
    assert _diff_limits(None, None) == DEFAULT_LIMITS


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required"),
        (["diff"], "the following arguments are required: A.jsonl, B.jsonl"),
        (["diff", "a.jsonl"], "the following arguments are required: B.jsonl"),
        (["diff", "--bogus", "a.jsonl", "b.jsonl"], "unrecognized arguments: --bogus"),
        (["diff", "a.jsonl", "b.jsonl", "c.jsonl"], "unrecognized arguments: c.jsonl"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["diff", "--ignore"], "argument --ignore: expected one argument"),
    ],
)
def test_wrong_arguments_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc_info:
        main(argv, out=io.StringIO())
    assert exc_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("usage: rollout")
    assert message in captured.err
    assert "Traceback" not in captured.err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc_info:
        main(["--version"])
    assert exc_info.value.code == 0
    assert capsys.readouterr().out == "rollout 0.1.0\n"


# -- sanitized printing ---------------------------------------------------------------------


def write_hostile(path: Path, variant: str) -> Path:
    return write_lines(
        path,
        ("run.started", {"model": EVIL, "prompt": "::error::" + EVIL}),
        (
            "llm.turn.started",
            {"step": 1, "messages": [{"role": "::warning::" + EVIL, "content": EVIL}]},
        ),
        (
            "llm.turn.completed",
            {
                "step": 1,
                "content": "::set-output name=x::" + EVIL + variant,
                "tool_calls": [
                    {
                        "id": "c1",
                        "name": "::error::" + EVIL,
                        "arguments": {"::k" + EVIL: "##[group]" + variant + EVIL},
                    }
                ],
            },
        ),
        ("tool.call.started", {"step": 1, "name": "##[group]" + EVIL, "arguments": {EVIL: EVIL}}),
        (
            "tool.call.completed",
            {"step": 1, "name": EVIL, "error": {"class": EVIL, "message": EVIL + variant}},
        ),
        ("tool.call.completed", {"step": 1, "name": EVIL, "output": {EVIL: [EVIL]}}),
        ("::set-output name=x::" + EVIL, {"step": 1, EVIL: EVIL}),
        ("run.completed", {"step": 1, "outcome": "::error::" + EVIL + variant, "output": EVIL}),
    )


#: How each line of the report begins.
OURS: tuple[str, ...] = ("B left A ", "A: ", "B: ", "Divergence: ", "Likely cause: ")
OURS += ("First divergence", "Steps ", "Score: ", "Cost: ", "Fork the conversation", "  ")


def test_hostile_rollouts_print_safely(tmp_path: Path) -> None:
    a = write_hostile(tmp_path / "a.jsonl", "A")
    b = write_hostile(tmp_path / "b.jsonl", "B")
    code, out = diff(a, b)
    assert code == 1
    assert_printable(out)
    lines = out.splitlines()
    assert "First divergence at step 1 (diverged)" in lines
    # The hostile text is still shown, escaped, not dropped.
    assert "\\x1b[31mred" in out
    assert "\\u202e" in out
    assert "\\x3a:set-output" in out
    assert "#\\x23[group]" in out
    # Every line is one of ours: nothing from the files started a line of its own.
    assert all(line.startswith(OURS) for line in lines)


def test_hostile_error_message_prints_safely(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "\x1b[2J::error::x\u202e\n##[group]" + "\u2066.jsonl"
    hostile = tmp_path / name
    hostile.write_bytes(
        orjson.dumps({"ts": "", "seq": 0, "type": "::error::" + EVIL, "data": {}}) + b"\n"
    )
    err = refusal(capsys, hostile, hostile)
    assert_printable(err)
    assert err.startswith("rollout: error: ")
    assert ":1: the first event must be run.started" in err
    # Missing, hostile name: still one sanitized line.
    err = refusal(capsys, tmp_path / ("missing" + name), hostile)
    assert_printable(err)
    assert "cannot open" in err


def test_hostile_argument_in_a_usage_error_prints_safely(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc_info:
        main(["diff", str(golden), str(golden), "\x1b[2J::error::x\u202e\n##[group]"])
    assert exc_info.value.code == 2
    err = capsys.readouterr().err
    assert_printable(err)
    assert "unrecognized arguments: \\x1b[2J::error::x\\u202e\\n#\\x23[group]" in err


# -- the real command -----------------------------------------------------------------------

ROLLOUT = Path(sys.executable).with_name("rollout")


def test_console_script(golden: Path, regressed: Path) -> None:
    assert ROLLOUT.exists()
    done = run_command(ROLLOUT, "diff", golden, regressed)
    expected = EXPECTED_REGRESSION.format(a=golden, b=regressed)
    assert (done.returncode, done.stdout, done.stderr) == (1, expected, "")
    done = run_command(ROLLOUT, "diff", golden, golden)
    expected = EXPECTED_IDENTICAL.format(a=golden, b=golden)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a full disk)")
def test_output_that_cannot_be_written_is_an_error(golden: Path) -> None:
    # Output the command cannot write is an error (status 120, as Python gives it), said in
    # one line, never a silent success.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as users run it
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = subprocess.run(
            [str(ROLLOUT), "diff", str(golden), str(golden)],
            env=env,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=120,
        )
    assert done.returncode == 120
    assert done.stderr.startswith("rollout: error: cannot write the output: ")
    assert done.stderr.count("\n") == 1, done.stderr  # no "Exception ignored" after it
    assert "Traceback" not in done.stderr


def test_a_reader_that_went_away_is_no_error(golden: Path, regressed: Path) -> None:
    # `rollout diff a b | head -1`: what is left of the answer cannot be written, and that
    # is not an error; the status is still the comparison's.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as users run it
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [str(ROLLOUT), "diff", str(golden), str(regressed)],
            env=env,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=120,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (1, "")


def test_console_script_refusal(golden: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    done = run_command(ROLLOUT, "diff", missing, golden)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"rollout: error: {missing}: cannot open: No such file or directory\n"
    done = run_command(ROLLOUT, "diff", golden)
    assert done.returncode == 2
    assert "the following arguments are required: B.jsonl" in done.stderr
    assert "Traceback" not in done.stderr


def test_python_dash_m(golden: Path, regressed: Path) -> None:
    done = python_m("diff", golden, regressed)
    expected = EXPECTED_REGRESSION.format(a=golden, b=regressed)
    assert (done.returncode, done.stdout, done.stderr) == (1, expected, "")


def test_output_that_the_terminal_cannot_encode(golden: Path, tmp_path: Path) -> None:
    # An ASCII stdout (or a cp1252 one meeting CJK text) must not end in a traceback.
    zurich = write_trip(tmp_path / "zurich.jsonl", "Zürich", fail=True)
    done = run_command(ROLLOUT, "diff", golden, zurich, env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 1
    assert done.stderr == ""
    expected = EXPECTED_REGRESSION.format(a=golden, b=zurich).replace("Paris", "Z\\xfcrich")
    assert done.stdout == expected
