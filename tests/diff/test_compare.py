"""Unit tests for the step-aligned comparison (docs/replay.md)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from pytest_rollout.diff.canonical import CanonicalOptions, canonicalize
from pytest_rollout.diff.compare import FieldChange, StepStatus, compare, is_missing
from pytest_rollout.format.events import Event
from pytest_rollout.format.recorder import Recorder

SAME, D, A_ONLY, B_ONLY = (
    StepStatus.IDENTICAL,
    StepStatus.DIVERGED,
    StepStatus.ONLY_IN_A,
    StepStatus.ONLY_IN_B,
)


def clock(start: int) -> Callable[[], int]:
    ticks = itertools.count()
    return lambda: start + next(ticks) * 1_000_000


def trip(
    *,
    city: str = "Rome",
    answer: str = "Sunny in Rome",
    arguments: dict[str, Any] | None = None,
    cost: float = 0.01,
    latency: int = 300,
    run_id: str = "run-1",
    start: int = 1_782_650_096_000_000_000,
    fail: bool = False,
    extra_turn: bool = False,
) -> tuple[Event, ...]:
    """A two-turn weather run: step 1 calls a tool, step 2 answers."""
    args = {"city": city} if arguments is None else arguments
    rec = Recorder(clock=clock(start))
    rec.emit(
        "run.started",
        {"run_id": run_id, "test_id": "t", "model": "m", "provider": "p", "prompt": "weather?"},
    )
    rec.emit("llm.turn.started", {"messages": [{"role": "user", "content": "weather?"}]})
    rec.emit(
        "llm.turn.completed",
        {
            "content": "",
            "tool_calls": [{"id": "call_1", "name": "weather", "arguments": args}],
            "usage": {"input_tokens": 10, "output_tokens": 3},
            "cost_usd": cost,
            "latency_ms": latency,
            "ttft_ms": latency // 2,
            "model_version": f"m-{latency}",
        },
    )
    rec.emit("tool.call.started", {"call_id": "call_1", "name": "weather", "arguments": args})
    rec.emit(
        "tool.call.completed",
        {"call_id": "call_1", "name": "weather", "output": "sunny", "duration_ms": latency},
    )
    rec.emit("usage.delta", {"cumulative_cost_usd": cost})
    rec.emit("llm.turn.started", {"messages": [{"role": "tool", "content": "sunny"}]})
    rec.emit("llm.turn.completed", {"content": answer, "tool_calls": [], "cost_usd": cost})
    if extra_turn:
        rec.emit("llm.turn.started", {"messages": []})
        rec.emit("llm.turn.completed", {"content": "anything else?", "tool_calls": []})
    rec.emit("usage.delta", {"cumulative_cost_usd": 2 * cost})
    if fail:
        rec.emit("run.failed", {"error": {"class": "ValueError", "message": "no"}})
    else:
        rec.emit(
            "run.completed",
            {
                "outcome": "completed",
                "output": answer,
                "cost_totals": {"total_cost_usd": 2 * cost},
                "total_duration_ms": 3 * latency,
            },
        )
    return rec.rollout().events


def statuses(a: tuple[Event, ...], b: tuple[Event, ...]) -> list[tuple[int, StepStatus]]:
    return [(s.step, s.status) for s in compare(a, b).steps]


def ev(step: int, kind: str, data: dict[str, Any] | None = None, seq: int = 0) -> Event:
    return Event(seq=seq, ts="", type=kind, data={"step": step, **(data or {})}, step=step)


# -- identical runs -----------------------------------------------------------------------


def test_a_run_equals_itself() -> None:
    run = trip()
    result = compare(run, run)
    assert result.identical
    assert result.first is None
    assert [(s.step, s.status) for s in result.steps] == [(0, SAME), (1, SAME), (2, SAME)]
    assert result.count(SAME) == 3
    assert result.count(D) == result.count(A_ONLY) == result.count(B_ONLY) == 0
    assert result.last_identical_step == 2


def test_time_ids_cost_and_provider_are_not_divergences() -> None:
    golden = trip()
    other = trip(
        cost=0.5, latency=9000, run_id="run-2", start=1_900_000_000_000_000_000
    )  # every ts, run_id, latency, duration, model_version and cost differ
    assert golden[1].ts != other[1].ts
    result = compare(golden, other)
    assert result.identical
    assert result.first is None


def test_empty_runs_are_identical() -> None:
    result = compare((), ())
    assert result.identical
    assert result.steps == ()
    assert result.last_identical_step is None


# -- the first divergence -------------------------------------------------------------------


def test_changed_tool_argument() -> None:
    golden = trip(city="Rome")
    run = trip(city="Paris")
    result = compare(golden, run)
    assert not result.identical
    assert [(s.step, s.status) for s in result.steps] == [(0, SAME), (1, D), (2, SAME)]
    first = result.first
    assert first is not None
    assert first.step == 1
    assert first.status is D
    assert first.index == 1  # llm.turn.started is equal; the turn's answer is not
    assert first.a_event is golden[2]
    assert first.b_event is run[2]
    assert first.a_events == golden[1:6]
    assert first.b_events == run[1:6]
    assert first.changes == (
        FieldChange("data.tool_calls[0].arguments.city", "changed", "Rome", "Paris"),
    )
    assert result.last_identical_step == 0


def test_added_and_removed_fields() -> None:
    golden = trip(arguments={"city": "Rome", "units": "C"})
    run = trip(arguments={"city": "Rome", "days": 3})
    first = compare(golden, run).first
    assert first is not None
    by_kind = {c.kind: c for c in first.changes}
    assert set(by_kind) == {"added", "removed"}
    assert by_kind["added"].path == "data.tool_calls[0].arguments.days"
    assert is_missing(by_kind["added"].a)
    assert by_kind["added"].b == 3
    assert by_kind["removed"].path == "data.tool_calls[0].arguments.units"
    assert by_kind["removed"].a == "C"
    assert is_missing(by_kind["removed"].b)


def test_changed_content_later_in_the_run() -> None:
    result = compare(trip(answer="Sunny"), trip(answer="Rainy"))
    assert [(s.step, s.status) for s in result.steps] == [(0, SAME), (1, SAME), (2, D)]
    first = result.first
    assert first is not None
    assert (first.step, first.index) == (2, 1)
    assert first.changes[0] == FieldChange("data.content", "changed", "Sunny", "Rainy")
    assert result.last_identical_step == 1


def test_different_event_types_report_the_type_first() -> None:
    first = compare(trip(), trip(fail=True)).first
    assert first is not None
    assert first.step == 2
    assert first.a_event is not None
    assert first.b_event is not None
    assert (first.a_event.type, first.b_event.type) == ("run.completed", "run.failed")
    assert first.changes[0] == FieldChange("type", "changed", "run.completed", "run.failed")


def test_first_divergence_at_step_zero() -> None:
    a = (ev(0, "run.started", {"prompt": "x"}), ev(0, "run.completed"))
    b = (ev(0, "run.started", {"prompt": "y"}), ev(0, "run.completed"))
    result = compare(a, b)
    assert result.first is not None
    assert result.first.step == 0
    assert result.last_identical_step is None


def test_extra_event_inside_a_step() -> None:
    a = (ev(0, "run.started"), ev(1, "llm.turn.completed"), ev(1, "run.completed"))
    b = (
        ev(0, "run.started"),
        ev(1, "llm.turn.completed"),
        ev(1, "hook.failed", {"message": "x"}),
        ev(1, "run.completed"),
    )
    first = compare(a, b).first
    assert first is not None
    assert (first.step, first.index) == (1, 1)
    assert first.a_event is a[2]
    assert first.b_event is b[2]


def test_trailing_events_missing_on_one_side() -> None:
    a = (ev(0, "run.started"), ev(1, "llm.turn.completed"))
    b = (*a, ev(1, "tool.call.started", {"name": "x"}))
    first = compare(a, b).first
    assert first is not None
    assert (first.step, first.status, first.index) == (1, D, 1)
    assert first.a_event is None
    assert first.b_event is b[2]
    assert first.changes  # described, whatever the form (see the xfail below)


def test_extra_trailing_step_is_only_in_b() -> None:
    a = (ev(0, "run.started"), ev(1, "llm.turn.completed", {"content": "x"}))
    b = (*a, ev(2, "llm.turn.completed", {"content": "more"}))
    result = compare(a, b)
    assert [(s.step, s.status) for s in result.steps] == [(0, SAME), (1, SAME), (2, B_ONLY)]
    first = result.first
    assert first is not None
    assert (first.step, first.status, first.index) == (2, B_ONLY, 0)
    assert first.a_events == ()
    assert first.b_events == (b[2],)
    assert first.a_event is None
    assert result.last_identical_step == 1
    reverse = compare(b, a)
    assert [(s.step, s.status) for s in reverse.steps] == [(0, SAME), (1, SAME), (2, A_ONLY)]
    assert reverse.first is not None
    assert reverse.first.b_events == ()
    assert reverse.first.a_event is b[2]
    assert reverse.first.b_event is None


def test_event_on_one_side_only_is_added_or_removed() -> None:
    a = (ev(0, "run.started"), ev(1, "llm.turn.completed"))
    b = (*a, ev(1, "tool.call.started", {"name": "x"}))
    first = compare(a, b).first
    assert first is not None
    assert first.changes
    assert all(c.kind == "added" and is_missing(c.a) for c in first.changes)
    reverse = compare(b, a).first
    assert reverse is not None
    assert reverse.changes
    assert all(c.kind == "removed" and is_missing(c.b) for c in reverse.changes)


def test_extra_turn_in_a_full_run() -> None:
    result = compare(trip(), trip(extra_turn=True))
    # The golden ends at step 2; this run's terminal events moved on to step 3.
    assert [(s.step, s.status) for s in result.steps] == [(0, SAME), (1, SAME), (2, D), (3, B_ONLY)]
    assert result.first is not None
    assert result.first.step == 2
    assert result.count(B_ONLY) == 1


def test_steps_missing_in_the_middle() -> None:
    a = (ev(0, "run.started"), ev(1, "x"), ev(3, "x"))
    b = (ev(0, "run.started"), ev(2, "x"), ev(3, "x"))
    assert statuses(a, b) == [(0, SAME), (1, A_ONLY), (2, B_ONLY), (3, SAME)]


def test_options_reach_the_comparison() -> None:
    a = (ev(0, "run.started"), ev(1, "tool.call.completed", {"output": {"at": 1, "v": 2}}))
    b = (ev(0, "run.started"), ev(1, "tool.call.completed", {"output": {"at": 5, "v": 2}}))
    assert not compare(a, b).identical
    options = CanonicalOptions().extended(ignore_paths=["tool.call.completed:output.at"])
    assert compare(a, b, options).identical


@pytest.mark.parametrize("other", [1.0, True])
def test_number_kind_change_inside_a_list_is_described(other: Any) -> None:
    golden = trip(arguments={"ids": [1, 2]})
    run = trip(arguments={"ids": [other, 2]})
    first = compare(golden, run).first
    assert first is not None
    assert first.changes == (
        FieldChange("data.tool_calls[0].arguments.ids[0]", "changed", 1, other),
    )


def _with_call_id(events: tuple[Event, ...], call_id: str) -> tuple[Event, ...]:
    out = []
    for e in events:
        data = dict(e.data)
        if "call_id" in data:
            data["call_id"] = call_id
        if data.get("tool_calls"):
            data["tool_calls"] = [{**c, "id": call_id} for c in data["tool_calls"]]
        out.append(Event(e.seq, e.ts, e.type, data, e.step, e.line))
    return tuple(out)


def test_provider_tool_call_ids_are_not_drift() -> None:
    golden = _with_call_id(trip(), "call_abc")
    run = _with_call_id(trip(), "toolu_xyz")
    assert compare(golden, run).identical


@pytest.mark.parametrize("key", [1, True, 1.0])
def test_a_key_that_is_not_a_string_is_refused_as_canonicalization_refuses_it(key: Any) -> None:
    # 1, True and 1.0 are equal dict keys in Python; no shortcut may call them the same.
    a = (ev(0, "run.started"), ev(1, "hook.note", {"i": 1}))
    b = (ev(0, "run.started"), ev(1, "hook.note", {key: 1}))
    with pytest.raises(TypeError):
        compare(a, b)
    with pytest.raises(TypeError):
        compare(b, b)


@pytest.mark.parametrize("value", [(0.1 + 0.2,), (1, 2)])
def test_a_tuple_is_not_taken_for_the_equal_list(value: tuple[Any, ...]) -> None:
    a = (ev(0, "run.started"), ev(1, "hook.note", {"v": list(value)}))
    b = (ev(0, "run.started"), ev(1, "hook.note", {"v": value}))
    reference = [c.key for c in canonicalize(a)] == [c.key for c in canonicalize(b)]
    assert compare(a, b).identical is reference


def test_a_value_that_cannot_be_canonicalized_after_the_divergence_is_refused() -> None:
    # A step only one run has is decided without comparing its events: still checked.
    a = (ev(0, "run.started"), ev(1, "hook.note", {"i": 1}))
    b = (ev(0, "run.started"), ev(1, "hook.note", {"i": 2}), ev(2, "hook.note", {"v": {1}}))
    with pytest.raises(TypeError):
        compare(a, b)
