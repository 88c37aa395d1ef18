"""Where a report forks a run that left its golden: the last good event.

A run whose model turn at step N matched the golden's and whose tool result at step N did not
is forked at N, keeping that turn; a run whose turn at step N already differed is forked at
N-1. Every place that prints a fork command (the failure report and ``rollout diff``, the CI
finding with its annotation and Markdown, the viewer) says the same.
"""

from __future__ import annotations

import io
import itertools
from pathlib import Path
from typing import Any, Final

import pytest
from command import diff

from pytest_rollout.cli import main
from pytest_rollout.diff.annotations import annotation_lines
from pytest_rollout.diff.compare import compare
from pytest_rollout.diff.drift import Verdict, drift_report
from pytest_rollout.diff.finding import finding_of
from pytest_rollout.diff.fork_point import ForkPoint, fork_point
from pytest_rollout.diff.markdown import markdown_pair, markdown_report
from pytest_rollout.diff.report import CLI_LABELS, render_verdict
from pytest_rollout.format.events import LLM_TURN_COMPLETED
from pytest_rollout.format.loader import load
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.replay.fork import fork
from pytest_rollout.view.entries import diff_entry

# 2026-06-28T12:34:56Z
T0: Final = 1_782_650_096_000_000_000
BOOKING: Final = {"city": "Rome", "nights": 3}


def write_trip(
    path: Path, *, booked: Any = True, second_turn: str = "Booking three nights."
) -> Path:
    """Weather in Rome, then a booking, then the answer: three steps. ``booked`` is what the
    booking tool returned at step 2; ``second_turn`` what the model said when it asked for
    the booking."""
    ticks = itertools.count()
    rec = Recorder(path, clock=lambda: T0 + next(ticks) * 250_000_000)
    rec.emit("run.started", {"run_id": "r1", "model": "gpt-x", "tools": ["weather", "book"]})
    rec.emit("llm.turn.started", {"messages": [{"role": "user", "content": "Rome, 3 nights?"}]})
    weather = {"id": "c1", "name": "weather", "arguments": {"city": "Rome"}}
    rec.emit("llm.turn.completed", {"content": "Checking.", "tool_calls": [weather]})
    rec.emit(
        "tool.call.started", {"call_id": "c1", "name": "weather", "arguments": {"city": "Rome"}}
    )
    rec.emit("tool.call.completed", {"call_id": "c1", "name": "weather", "output": {"temp": 21}})
    rec.emit("llm.turn.started", {"messages": [{"role": "tool", "content": '{"temp": 21}'}]})
    book = {"id": "c2", "name": "book", "arguments": BOOKING}
    rec.emit("llm.turn.completed", {"content": second_turn, "tool_calls": [book]})
    rec.emit("tool.call.started", {"call_id": "c2", "name": "book", "arguments": BOOKING})
    rec.emit("tool.call.completed", {"call_id": "c2", "name": "book", "output": {"ok": booked}})
    rec.emit("llm.turn.started", {"messages": [{"role": "tool", "content": str(booked)}]})
    answer = "Booked: 21C in Rome." if booked is True else "Could not book."
    rec.emit("llm.turn.completed", {"content": answer, "tool_calls": []})
    rec.emit("run.completed", {"outcome": "completed", "output": answer})
    rec.close()
    return path


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    return write_trip(tmp_path / "golden.jsonl")


@pytest.fixture
def result_changed(tmp_path: Path) -> Path:
    """The same turn at step 2; the booking tool answered otherwise."""
    return write_trip(tmp_path / "result.jsonl", booked=False)


@pytest.fixture
def turn_changed(tmp_path: Path) -> Path:
    """The model said something else at step 2."""
    return write_trip(tmp_path / "turn.jsonl", second_turn="Booking 3 nights.")


def verdict_of(a: Path, b: Path) -> Verdict:
    return Verdict(str(a), str(b), drift_report(load(a).events, load(b).events))


def test_a_tool_result_that_changed_forks_at_its_step_keeping_the_turn(
    golden: Path, result_changed: Path
) -> None:
    comparison = compare(load(golden).events, load(result_changed).events)
    assert comparison.first is not None
    assert comparison.first.step == 2
    assert comparison.last_identical_step == 1  # what reports forked at before
    assert fork_point(comparison) == ForkPoint(2, keeps_turn=True)

    code, text = diff(golden, result_changed)

    assert code == 1
    lines = text.splitlines()
    at = lines.index("Fork the conversation from the last good event (step 2's model turn):")
    assert lines[at + 1] == f"  rollout fork {golden} --step 2"


def test_the_fork_at_that_step_keeps_the_turn(
    golden: Path, result_changed: Path, tmp_path: Path
) -> None:
    point = fork_point(compare(load(golden).events, load(result_changed).events))
    assert point is not None
    conversation = fork(
        load(golden).events, point.step, include_tool_calls=True, include_tool_results=True
    ).messages
    assert conversation[-2] == {
        "role": "assistant",
        "content": "Booking three nights.",
        "tool_calls": [{"id": "c2", "name": "book", "arguments": BOOKING}],
    }
    # As a run of its own, too: the fork holds the golden's step-2 turn.
    new = tmp_path / "fork.jsonl"
    assert (
        main(["fork", str(golden), "--step", str(point.step), "--out", str(new)], out=io.StringIO())
        == 0
    )
    turns = [e for e in load(new).events if e.type == LLM_TURN_COMPLETED]
    assert [(t.step, t.data["content"]) for t in turns] == [
        (1, "Checking."),
        (2, "Booking three nights."),
    ]


def test_a_turn_that_changed_forks_at_the_step_before(golden: Path, turn_changed: Path) -> None:
    comparison = compare(load(golden).events, load(turn_changed).events)
    assert comparison.first is not None
    assert comparison.first.step == 2
    assert fork_point(comparison) == ForkPoint(1)

    code, text = diff(golden, turn_changed)

    assert code == 1
    lines = text.splitlines()
    at = lines.index("Fork the conversation from the last good step (1):")
    assert lines[at + 1] == f"  rollout fork {golden} --step 1"
    conversation = fork(load(golden).events, 1).messages
    assert conversation[-1] == {"role": "assistant", "content": "Checking."}


def test_runs_that_match_or_part_at_the_start_have_no_fork_point(
    golden: Path, tmp_path: Path
) -> None:
    assert fork_point(compare(load(golden).events, load(golden).events)) is None
    other = tmp_path / "other.jsonl"
    other.write_bytes(golden.read_bytes().replace(b'"gpt-x"', b'"gpt-y"'))
    comparison = compare(load(golden).events, load(other).events)
    assert comparison.first is not None
    assert comparison.first.step == 0
    assert fork_point(comparison) is None


@pytest.mark.parametrize(
    ("run", "step", "where"),
    [
        ("result_changed", 2, "last good event (step 2's model turn)"),
        ("turn_changed", 1, "last good step (1)"),
    ],
)
def test_every_report_forks_at_the_same_point(
    golden: Path, run: str, step: int, where: str, request: pytest.FixtureRequest
) -> None:
    other: Path = request.getfixturevalue(run)
    verdict = verdict_of(golden, other)
    command = f"rollout fork {golden} --step {step}"

    report = render_verdict(verdict, labels=CLI_LABELS, files=True)
    assert report[-2:] == [f"Fork the conversation from the {where}:", f"  {command}"]

    finding = finding_of(verdict, "test_trip", "test_trip.py", 3, labels=CLI_LABELS)
    assert (finding.fork, finding.fork_from) == (command, where)
    escaped = where.replace("(", "\\(").replace(")", "\\)")
    assert f"Fork from the {escaped}: ` {command} `" in markdown_pair(
        str(golden), str(other), "B left A", finding
    )
    assert f"- test\\_trip, {escaped}: ` {command} `" in markdown_report([], [finding])
    (annotation,) = annotation_lines([finding])
    assert annotation.endswith(f"%0Afork from the {where}: {command}")

    entry = diff_entry(str(golden), str(other), name="trip")
    assert entry["fork"] == {
        "step": step,
        "text": f"Fork the conversation from the {where}:",
        "command": command,
    }
