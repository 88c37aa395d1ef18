"""Tool events compare in the order their turn announced the calls (docs/replay.md).

Parallel tool calls finish in whatever order their latencies give; the comparison, the
canonical form, the golden's unchanged check and the drift report all read each step's tool
events in the order the step's turn listed the calls, so that order never fails a run, while
a genuinely different set of calls still does, with the right kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rollout.diff.canonical import CanonicalOptions, canonicalize, in_announced_order
from pytest_rollout.diff.compare import StepStatus, compare
from pytest_rollout.diff.divergence import DivergenceKind, classify
from pytest_rollout.diff.drift import drift_report
from pytest_rollout.format.events import Event

#: One call: its name and arguments.
Call = tuple[str, dict[str, Any]]
#: A tool event in a step's script: ("s" or "c", index of the call in the announcement).
Move = tuple[str, int]


def _run(
    steps: Sequence[tuple[Sequence[Call], Sequence[Move]]],
    *,
    prefix: str = "call",
    changed: tuple[int, int] | None = None,
) -> list[Event]:
    """A run: at each step a turn announcing its calls, then the tool events in the order
    ``moves`` gives (``changed``: the (step, call) whose start carries other arguments)."""
    events: list[Event] = []

    def add(kind: str, data: dict[str, Any], step: int) -> None:
        events.append(Event(len(events), "2026-01-01T00:00:00Z", kind, data, step))

    add("run.started", {"run_id": prefix}, 0)
    for step, (calls, moves) in enumerate(steps, start=1):
        ids = [f"{prefix}_{step}_{n}" for n in range(len(calls))]
        add("llm.turn.started", {"messages": [f"turn {step}"]}, step)
        announced = [
            {"id": i, "name": name, "arguments": args}
            for i, (name, args) in zip(ids, calls, strict=True)
        ]
        add("llm.turn.completed", {"content": "", "tool_calls": announced}, step)
        add("usage.delta", {"cumulative_cost_usd": 0.001 * step}, step)
        for kind, n in moves:
            name, args = calls[n]
            if kind == "s":
                if changed == (step, n):
                    args = {"changed": True}
                add("tool.call.started", {"call_id": ids[n], "name": name, "arguments": args}, step)
            else:
                add(
                    "tool.call.completed",
                    {"call_id": ids[n], "name": name, "output": f"{name} done"},
                    step,
                )
    last = len(steps) + 1
    add("llm.turn.started", {"messages": ["last"]}, last)
    add("llm.turn.completed", {"content": "done", "tool_calls": []}, last)
    add("run.completed", {"outcome": "completed", "output": "done"}, last)
    return events


def _in_order(count: int) -> list[Move]:
    return [move for n in range(count) for move in (("s", n), ("c", n))]


WEATHER: list[Call] = [("weather", {"city": "Paris"}), ("time", {"city": "Paris"})]


def test_parallel_calls_finishing_in_another_order_compare_equal() -> None:
    recorded = _run([(WEATHER, [("s", 0), ("s", 1), ("c", 1), ("c", 0)])])
    replayed = _run([(WEATHER, _in_order(2))], prefix="fresh")
    comparison = compare(recorded, replayed)
    assert comparison.identical
    assert comparison.steps[1].status is StepStatus.IDENTICAL


def test_the_canonical_form_puts_tool_events_in_announcement_order() -> None:
    started_late = _run([(WEATHER, [("s", 1), ("s", 0), ("c", 0), ("c", 1)])])
    in_order = _run([(WEATHER, _in_order(2))])
    assert [e.key for e in canonicalize(started_late)] == [e.key for e in canonicalize(in_order)]
    # Each event keeps its own data: only the tool events of the step moved.
    moved = in_announced_order(started_late)
    assert [e.type for e in moved] == [e.type for e in in_order]
    assert in_announced_order(in_order) is in_order


def test_announcement_order_holds_when_the_turns_are_left_out() -> None:
    options = CanonicalOptions().extended(ignore_types=["llm.turn.completed"])
    recorded = _run([(WEATHER, [("s", 0), ("s", 1), ("c", 1), ("c", 0)])])
    replayed = _run([(WEATHER, _in_order(2))], prefix="fresh")
    assert compare(recorded, replayed, options).identical


def test_a_changed_argument_in_a_reordered_step_is_a_tool_call_mismatch() -> None:
    recorded = _run([(WEATHER, [("s", 0), ("s", 1), ("c", 1), ("c", 0)])])
    replayed = _run([(WEATHER, _in_order(2))], prefix="fresh", changed=(1, 1))
    comparison = compare(recorded, replayed)
    assert comparison.first is not None
    assert comparison.first.step == 1
    assert comparison.first.b_event is not None
    assert comparison.first.b_event.data["arguments"] == {"changed": True}
    divergence = classify(comparison)
    assert divergence is not None
    assert divergence.kind is DivergenceKind.TOOL_CALL_MISMATCH
    report = drift_report(recorded, replayed)
    assert [(d.step, d.position, d.a_arguments, d.b_arguments) for d in report.tool_calls] == [
        (1, 2, {"city": "Paris"}, {"changed": True})
    ]


def test_a_dropped_call_is_missing_and_an_extra_one_unrecorded() -> None:
    recorded = _run([(WEATHER, [("s", 0), ("s", 1), ("c", 1), ("c", 0)])])
    dropped = _run([(WEATHER, [("s", 0), ("c", 0)])], prefix="fresh")
    missing = classify(compare(recorded, dropped))
    assert missing is not None
    assert (missing.kind, missing.step) == (DivergenceKind.MISSING_CALL, 1)
    extra = _run([(WEATHER, [("s", 1), ("s", 0), ("c", 0), ("c", 1)])])
    extra.insert(
        -3,
        Event(99, "", "tool.call.started", {"call_id": "x", "name": "time", "arguments": {}}, 1),
    )
    unrecorded = classify(compare(recorded, extra))
    assert unrecorded is not None
    assert (unrecorded.kind, unrecorded.step) == (DivergenceKind.UNRECORDED_CALL, 1)


def test_the_drift_report_pairs_calls_in_announcement_order() -> None:
    recorded = _run([(WEATHER, [("s", 1), ("c", 1), ("s", 0), ("c", 0)])])
    replayed = _run([(WEATHER, _in_order(2))], prefix="fresh")
    report = drift_report(recorded, replayed)
    assert report.matched
    assert report.tool_calls == ()


# -- the property ----------------------------------------------------------------------


@st.composite
def _steps(draw: st.DrawFn) -> list[tuple[list[Call], list[Move], list[Move]]]:
    """Steps of announced calls, each with two orders of its tool events (any order in
    which a call starts before it completes)."""
    steps: list[tuple[list[Call], list[Move], list[Move]]] = []
    for _ in range(draw(st.integers(1, 3))):
        calls: list[Call] = [
            (draw(st.sampled_from(["search", "fetch", "sum"])), {"n": draw(st.integers(0, 3))})
            for _ in range(draw(st.integers(0, 4)))
        ]
        orders: list[list[Move]] = []
        for _ in range(2):
            tokens = draw(st.permutations([n for n in range(len(calls)) for _ in range(2)]))
            seen: set[int] = set()
            moves: list[Move] = []
            for n in tokens:
                moves.append(("c" if n in seen else "s", n))
                seen.add(n)
            orders.append(moves)
        steps.append((calls, orders[0], orders[1]))
    return steps


@settings(max_examples=80, deadline=None)
@given(steps=_steps(), data=st.data())
def test_any_order_of_tool_events_compares_identical_and_a_changed_call_is_found(
    steps: list[tuple[list[Call], list[Move], list[Move]]], data: st.DataObject
) -> None:
    recorded = _run([(calls, a) for calls, a, _ in steps])
    replayed = _run([(calls, b) for calls, _, b in steps], prefix="fresh")
    assert compare(recorded, replayed).identical
    assert drift_report(recorded, replayed).tool_calls == ()
    with_calls = [(step, len(c)) for step, (c, _, _) in enumerate(steps, start=1) if c]
    if not with_calls:
        return
    step, count = data.draw(st.sampled_from(with_calls))
    call = data.draw(st.integers(0, count - 1))
    changed = _run([(calls, b) for calls, _, b in steps], prefix="fresh", changed=(step, call))
    comparison = compare(recorded, changed)
    assert comparison.first is not None
    assert comparison.first.step == step
    divergence = classify(comparison)
    assert divergence is not None
    assert divergence.kind is DivergenceKind.TOOL_CALL_MISMATCH
