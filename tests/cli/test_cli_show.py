"""Tests of ``rollout show``: the pinned timeline, filters, exit codes and sanitized printing."""

from __future__ import annotations

import io
import itertools
from pathlib import Path
from typing import Any

import pytest
from command import python_m
from hostile import EVIL, assert_printable

from pytest_rollout.cli import main
from pytest_rollout.format.recorder import Recorder

# 2026-06-28T12:34:56Z
T0 = 1_782_650_096_000_000_000


def record(path: Path, events: list[tuple[str, dict[str, Any]]]) -> Path:
    """Write ``events`` through the recorder (steps assigned by it) with a fake clock."""
    ticks = itertools.count()
    recorder = Recorder(clock=lambda: T0 + next(ticks) * 250_000_000)
    for kind, data in events:
        recorder.emit(kind, data)
    path.write_bytes(recorder.getvalue())
    return path


def turn(content: str, *calls: tuple[str, str, dict[str, Any]], cost: float) -> dict[str, Any]:
    return {
        "content": content,
        "tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in calls],
        "usage": {"input_tokens": 50, "output_tokens": 12},
        "cost_usd": cost,
        "latency_ms": 300,
    }


@pytest.fixture
def trip(tmp_path: Path) -> Path:
    """Two cities' weather in parallel, one lookup failing, then the answer."""
    paris = {"city": "Paris"}
    atlantis = {"city": "Atlantis"}
    return record(
        tmp_path / "trip.jsonl",
        [
            ("run.started", {"model": "gpt-x", "prompt": "Paris or Atlantis?", "meta": {}}),
            ("llm.turn.started", {"messages": [{"role": "user", "content": "Paris or Atlantis?"}]}),
            (
                "llm.turn.completed",
                turn(
                    "Checking both.",
                    ("c1", "get_weather", paris),
                    ("c2", "get_weather", atlantis),
                    cost=0.001,
                ),
            ),
            ("usage.delta", {"cumulative_cost_usd": 0.001}),
            ("tool.call.started", {"call_id": "c1", "name": "get_weather", "arguments": paris}),
            ("tool.call.started", {"call_id": "c2", "name": "get_weather", "arguments": atlantis}),
            ("tool.call.completed", {"call_id": "c1", "name": "get_weather", "output": {"t": 18}}),
            (
                "tool.call.completed",
                {
                    "call_id": "c2",
                    "name": "get_weather",
                    "error": {"class": "LookupError", "message": "no station for 'Atlantis'"},
                },
            ),
            ("llm.turn.started", {"messages": [{"role": "tool", "content": "18"}]}),
            (
                "llm.turn.completed",
                turn("", ("c3", "convert", {"celsius": 18, "to": "F"}), cost=0.002),
            ),
            ("usage.delta", {"cumulative_cost_usd": 0.003}),
            (
                "tool.call.started",
                {"call_id": "c3", "name": "convert", "arguments": {"celsius": 18, "to": "F"}},
            ),
            ("tool.call.completed", {"call_id": "c3", "name": "convert", "output": 64.4}),
            ("llm.turn.started", {"messages": [{"role": "tool", "content": "64.4"}]}),
            ("llm.turn.completed", turn("Paris: 64.4F. Atlantis: no station.", cost=0.0025)),
            ("usage.delta", {"cumulative_cost_usd": 0.0055}),
            (
                "run.completed",
                {
                    "outcome": "completed",
                    "output": "Paris: 64.4F. Atlantis: no station.",
                    "cost_totals": {"total_cost_usd": 0.0055},
                },
            ),
        ],
    )


def show(*args: str | Path) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["show", *map(str, args)], out=out)
    return code, out.getvalue()


TOTALS = """\
Totals (whole run):
  steps: 0-3, turns: 3
  tool calls: get_weather x2, convert x1
  errors: 0
  tokens: 150 in, 36 out
  output speed: 40.0 tokens/s
  cost: $0.0055
  outcome: completed
"""

EXPECTED = (
    """\
step  seq  type                 detail
   0    0  run.started          model="gpt-x" prompt="Paris or Atlantis?"
   1    1  llm.turn.started     1 new message, last user: "Paris or Atlantis?"
   1    2  llm.turn.completed   "Checking both." -> get_weather(city="Paris"), \
get_weather(city="Atlantis")  (12 tokens out in 300 ms, 40.0 tokens/s)
   1    3  usage.delta          {"cumulative_cost_usd":0.001}
   1    4  tool.call.started    get_weather(city="Paris")
   1    5  tool.call.started    get_weather(city="Atlantis")
   1    6  tool.call.completed  get_weather -> {"t":18}
   1    7  tool.call.completed  get_weather raised LookupError: no station for 'Atlantis'
   2    8  llm.turn.started     1 new message, last tool: "18"
   2    9  llm.turn.completed   -> convert(celsius=18, to="F")  \
(12 tokens out in 300 ms, 40.0 tokens/s)
   2   10  usage.delta          {"cumulative_cost_usd":0.003}
   2   11  tool.call.started    convert(celsius=18, to="F")
   2   12  tool.call.completed  convert -> 64.4
   3   13  llm.turn.started     1 new message, last tool: "64.4"
   3   14  llm.turn.completed   "Paris: 64.4F. Atlantis: no station."  \
(12 tokens out in 300 ms, 40.0 tokens/s)
   3   15  usage.delta          {"cumulative_cost_usd":0.0055}
   3   16  run.completed        outcome="completed" output="Paris: 64.4F. Atlantis: no station."

"""
    + TOTALS
)


# -- output --------------------------------------------------------------------------------


def test_the_whole_run(trip: Path) -> None:
    assert show(trip) == (0, EXPECTED)


def test_type_filter(trip: Path) -> None:
    assert show(trip, "--type", "tool.call.completed", "--type", "run.") == (
        0,
        """\
step  seq  type                 detail
   0    0  run.started          model="gpt-x" prompt="Paris or Atlantis?"
   1    6  tool.call.completed  get_weather -> {"t":18}
   1    7  tool.call.completed  get_weather raised LookupError: no station for 'Atlantis'
   2   12  tool.call.completed  convert -> 64.4
   3   16  run.completed        outcome="completed" output="Paris: 64.4F. Atlantis: no station."
Shown: 5 of 17 events

"""
        + TOTALS,
    )


def test_step_filter(trip: Path) -> None:
    code, out = show(trip, "--step", "2")
    assert code == 0
    assert out.splitlines()[:7] == [
        "step  seq  type                 detail",
        '   2    8  llm.turn.started     1 new message, last tool: "18"',
        '   2    9  llm.turn.completed   -> convert(celsius=18, to="F")'
        "  (12 tokens out in 300 ms, 40.0 tokens/s)",
        '   2   10  usage.delta          {"cumulative_cost_usd":0.003}',
        '   2   11  tool.call.started    convert(celsius=18, to="F")',
        "   2   12  tool.call.completed  convert -> 64.4",
        "Shown: 5 of 17 events",
    ]
    assert out.endswith("\n\n" + TOTALS)
    code, out = show(trip, "--step", "0-1")
    assert [line.split()[0] for line in out.splitlines()[1:9]] == ["0"] + ["1"] * 7
    assert out.splitlines()[9] == "Shown: 8 of 17 events"


def test_grep_and_filters_together(trip: Path) -> None:
    code, out = show(trip, "--grep", "ATLANTIS", "--type", "tool.", "--step", "1-3")
    assert code == 0
    assert out.splitlines()[:4] == [
        "step  seq  type                 detail",
        '   1    5  tool.call.started    get_weather(city="Atlantis")',
        "   1    7  tool.call.completed  get_weather raised LookupError: no station for 'Atlantis'",
        "Shown: 2 of 17 events",
    ]


def test_nothing_matches(trip: Path) -> None:
    assert show(trip, "--grep", "Rome") == (
        0,
        "step  seq  type  detail\n(no events match the filters)\nShown: 0 of 17 events\n\n"
        + TOTALS,
    )


# -- refusals and bad arguments: exit 2, one line ------------------------------------------


def error_line(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    assert show(*args) == (2, "")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err
    return captured.err


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("3-1", "rollout show: error: --step range 3-1 goes backwards; write 1-3\n"),
        ("two", "rollout show: error: --step takes N or A-B (e.g. 2 or 1-3), got 'two'\n"),
        ("-1", "rollout show: error: --step takes N or A-B (e.g. 2 or 1-3), got '-1'\n"),
    ],
)
def test_bad_step(trip: Path, step: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert error_line(capsys, trip, f"--step={step}") == message


def test_bad_step_is_refused_before_the_file_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = error_line(capsys, tmp_path / "missing.jsonl", "--step", "3-1")
    assert err.startswith("rollout show: error: --step range")


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    assert error_line(capsys, missing) == (
        f"rollout: error: {missing}: cannot open: No such file or directory\n"
    )


def test_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = error_line(capsys, tmp_path)
    assert err.startswith(f"rollout: error: {tmp_path}: is a directory")


def test_refused_file(trip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = trip.read_bytes().split(b"\n")
    lines[5] = lines[5].replace(b'"step":1', b'"step":-1')
    bad.write_bytes(b"\n".join(lines))
    err = error_line(capsys, bad)
    assert err.startswith(f"rollout: error: {bad}:6: step must be an integer from 0 to ")


def test_a_run_cut_short_is_shown_as_far_as_it_got(trip: Path, tmp_path: Path) -> None:
    # What a crash leaves of a flight recorder's file: no terminal event, a cut last line.
    lines = trip.read_bytes().splitlines(keepends=True)
    partial = tmp_path / "trip.jsonl.partial"
    partial.write_bytes(b"".join(lines[:8]) + lines[8][:30])
    code, text = show(partial)
    assert code == 0
    assert text.startswith(
        "cut short after event 8: the file ends before the run did\n"
        "step  seq  type                 detail\n"
    )
    assert "   1    7  tool.call.completed  get_weather raised LookupError" in text
    assert "  outcome: incomplete" in text


def test_other_commands_still_refuse_a_run_cut_short(
    trip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = trip.read_bytes().splitlines(keepends=True)
    partial = tmp_path / "trip.jsonl.partial"
    partial.write_bytes(b"".join(lines[:8]))
    assert main(["diff", str(trip), str(partial)], out=io.StringIO()) == 2
    assert "no terminal event" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show"], "the following arguments are required: FILE.jsonl"),
        (["show", "a.jsonl", "b.jsonl"], "unrecognized arguments: b.jsonl"),
        (["show", "a.jsonl", "--step"], "argument --step: expected one argument"),
    ],
)
def test_wrong_arguments(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc_info:
        main(argv, out=io.StringIO())
    assert exc_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: rollout")
    assert message in err


# -- sanitized printing --------------------------------------------------------------------


def test_hostile_content_prints_safely(tmp_path: Path) -> None:
    call = {"id": EVIL, "name": "##[group]" + EVIL, "arguments": {EVIL: "::error::" + EVIL}}
    path = record(
        tmp_path / "hostile.jsonl",
        [
            ("run.started", {"model": "::error::" + EVIL, "prompt": EVIL}),
            ("llm.turn.started", {"messages": [{"role": "::warning::" + EVIL, "content": EVIL}]}),
            ("llm.turn.completed", {"content": "\n::error::" + EVIL, "tool_calls": [call]}),
            (
                "tool.call.started",
                {"call_id": EVIL, "name": "##vso[" + EVIL, "arguments": {"k": EVIL}},
            ),
            (
                "tool.call.completed",
                {"call_id": EVIL, "name": EVIL, "error": {"class": EVIL, "message": EVIL}},
            ),
            ("::set-output name=x::" + EVIL, {EVIL: EVIL}),
            ("run.failed", {"error": {"class": "::error::" + EVIL, "message": EVIL}}),
        ],
    )
    for args in ([], ["--grep", "red"], ["--type", "::set-output name=x::" + EVIL]):
        code, out = show(path, *args)
        assert code == 0
        assert_printable(out)
        lines = out.splitlines()
        # Every line is one of ours: nothing from the file started a line of its own.
        assert all(
            line == "" or line.startswith(("step ", "   ", "Shown: ", "Totals ", "  "))
            for line in lines
        ), lines
        assert "\\x1b[31mred" in out
        assert "\\u202e" in out
    assert "  outcome: failed" in out
    assert "   1    5  \\x3a:set-output name=x::\\x1b[31mred" in out


# -- the real command ------------------------------------------------------------------------


def test_python_dash_m(trip: Path) -> None:
    done = python_m("show", str(trip))
    assert (done.returncode, done.stdout, done.stderr) == (0, EXPECTED, "")
