"""Unit tests for run totals and the 6-point regression score (docs/replay.md)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from pytest_rollout.diff.score import POINTS, Criterion, RunSummary, score, summarize
from pytest_rollout.format.events import ERROR_FAMILIES, Event


def run(*events: tuple[str, int, dict[str, Any]]) -> tuple[Event, ...]:
    """Events from (type, step, data) triples, framed by run.started."""
    body = [("run.started", 0, {}), *events]
    return tuple(
        Event(seq=i, ts="", type=kind, data={"step": step, **data}, step=step)
        for i, (kind, step, data) in enumerate(body)
    )


def summary(**changes: Any) -> RunSummary:
    base = RunSummary(
        steps=2,
        turns=2,
        tool_calls=Counter(),
        errors=0,
        cost_usd=0.5,
        input_tokens=0,
        output_tokens=0,
        outcome="completed",
    )
    return replace(base, **changes)


def winners(a: RunSummary, b: RunSummary) -> dict[str, str]:
    return {c.name: c.winner for c in score(a, b).criteria}


# -- summarize ----------------------------------------------------------------------------


def test_summarize_a_full_run() -> None:
    events = run(
        ("llm.turn.started", 1, {}),
        (
            "llm.turn.completed",
            1,
            {"usage": {"input_tokens": 10, "output_tokens": 4}, "cost_usd": 0.25},
        ),
        ("tool.call.started", 1, {"name": "search"}),
        ("tool.call.completed", 1, {"name": "search", "error": "boom"}),
        ("tool.call.started", 1, {"name": "search"}),
        ("tool.call.started", 1, {"name": "book"}),
        ("hook.failed", 1, {}),
        ("llm.turn.started", 2, {}),
        ("llm.turn.completed", 2, {"usage": {"input_tokens": 20, "output_tokens": 1}}),
        ("run.completed", 2, {"outcome": "completed"}),
    )
    s = summarize(events)
    assert s == RunSummary(
        steps=2,
        turns=2,
        tool_calls=Counter({"search": 2, "book": 1}),
        errors=1,
        cost_usd=0.25,
        input_tokens=30,
        output_tokens=5,
        outcome="completed",
    )
    assert s.completed


def test_summarize_outcomes() -> None:
    assert summarize(run(("run.failed", 0, {"error": {}}))).outcome == "failed"
    assert summarize(run(("run.completed", 0, {}))).outcome == "completed"
    assert summarize(run(("llm.turn.completed", 1, {}))).outcome == "incomplete"
    failed = summarize(run(("run.failed", 0, {})))
    assert not failed.completed
    assert failed.errors == 1  # run.failed is an error family of its own


def test_summarize_nothing() -> None:
    s = summarize(())
    assert (s.steps, s.turns, s.errors, s.cost_usd, s.outcome) == (0, 0, 0, None, "incomplete")


@pytest.mark.parametrize("family", sorted(ERROR_FAMILIES))
def test_every_error_family_is_counted(family: str) -> None:
    events = run((family, 0, {}), (family, 0, {}), ("run.completed", 0, {}))
    assert summarize(events).errors == 2


def test_error_families_are_the_design_list() -> None:
    assert {
        "run.failed",
        "replay.divergence",
        "hook.failed",
        "tool_hook.failed",
        "memory.observe.failed",
        "skill.fork.failed",
        "error.context",
    } == ERROR_FAMILIES


def test_other_types_are_not_errors() -> None:
    events = run(
        ("tool.call.completed", 1, {"error": {"class": "E"}}),
        ("hook.failed.retry", 1, {}),
        ("recorder.drop_detected", 1, {"dropped": 3}),
        ("run.completed", 1, {}),
    )
    assert summarize(events).errors == 0


# -- cost sources -----------------------------------------------------------------------------


def test_cost_prefers_the_last_usage_delta() -> None:
    events = run(
        ("llm.turn.completed", 1, {"cost_usd": 0.1}),
        ("usage.delta", 1, {"cumulative_cost_usd": 0.2}),
        ("usage.delta", 1, {"cumulative_cost_usd": 0.3}),
        ("run.completed", 1, {"cost_totals": {"total_cost_usd": 0.9}}),
    )
    assert summarize(events).cost_usd == 0.3


def test_cost_skips_usage_deltas_without_a_number() -> None:
    events = run(
        ("usage.delta", 1, {"cumulative_cost_usd": 0.2}),
        ("usage.delta", 1, {"cumulative_cost_usd": True}),
        ("usage.delta", 1, {"cumulative_cost_usd": "0.5"}),
        ("usage.delta", 1, {}),
        ("run.completed", 1, {"cost_totals": {"total_cost_usd": 0.9}}),
    )
    assert summarize(events).cost_usd == 0.2


def test_cost_falls_back_to_the_run_totals() -> None:
    events = run(
        ("llm.turn.completed", 1, {"cost_usd": 0.1}),
        ("run.completed", 1, {"cost_totals": {"total_cost_usd": 0.9}}),
    )
    assert summarize(events).cost_usd == 0.9


def test_cost_falls_back_to_the_sum_of_turns() -> None:
    events = run(
        ("llm.turn.completed", 1, {"cost_usd": 0.25}),
        ("llm.turn.completed", 2, {"cost_usd": 0.5}),
        ("llm.turn.completed", 3, {"cost_usd": None}),
        ("run.completed", 3, {"cost_totals": {"total_cost_usd": "n/a"}}),
    )
    assert summarize(events).cost_usd == 0.75


def test_cost_zero_is_a_cost() -> None:
    events = run(("usage.delta", 1, {"cumulative_cost_usd": 0}), ("run.completed", 1, {}))
    assert summarize(events).cost_usd == 0.0


def test_cost_unknown() -> None:
    assert summarize(run(("llm.turn.completed", 1, {}), ("run.completed", 1, {}))).cost_usd is None


# -- the score ----------------------------------------------------------------------------------


def test_points_add_up_to_six() -> None:
    assert POINTS == {"outcome": 3, "errors": 1, "cost": 1, "steps": 1}
    assert sum(POINTS.values()) == 6


def test_equal_runs_give_nobody_points() -> None:
    result = score(summary(), summary())
    assert (result.a_points, result.b_points, result.winner) == (0, 0, "tie")
    assert result.deciding == ()
    assert [c.name for c in result.criteria] == ["outcome", "errors", "cost", "steps"]


@pytest.mark.parametrize(
    ("better", "worse", "criterion", "points"),
    [
        ({"outcome": "completed"}, {"outcome": "failed"}, "outcome", 3),
        ({"outcome": "completed"}, {"outcome": "incomplete"}, "outcome", 3),
        ({"errors": 0}, {"errors": 2}, "errors", 1),
        ({"cost_usd": 0.1}, {"cost_usd": 0.2}, "cost", 1),
        ({"steps": 3}, {"steps": 4}, "steps", 1),
    ],
)
def test_each_criterion_goes_to_the_better_run(
    better: dict[str, Any], worse: dict[str, Any], criterion: str, points: int
) -> None:
    good, bad = summary(**better), summary(**worse)
    forward = score(good, bad)
    assert (forward.a_points, forward.b_points, forward.winner) == (points, 0, "a")
    assert [c.name for c in forward.deciding] == [criterion]
    backward = score(bad, good)
    assert (backward.a_points, backward.b_points, backward.winner) == (0, points, "b")


def test_regression_reads_golden_wins() -> None:
    golden = summary()
    this_run = summary(outcome="failed", errors=1, cost_usd=0.7, steps=5)
    result = score(golden, this_run)
    assert (result.a_points, result.b_points, result.winner) == (6, 0, "a")
    assert result.criteria[0] == Criterion("outcome", 3, "a", "completed", "failed")
    assert result.criteria[2] == Criterion("cost", 1, "a", 0.5, 0.7)


def test_split_points_can_tie() -> None:
    result = score(summary(cost_usd=0.1, steps=3), summary(cost_usd=0.2, steps=2))
    assert (result.a_points, result.b_points, result.winner) == (1, 1, "tie")
    assert winners(summary(cost_usd=0.1, steps=3), summary(cost_usd=0.2, steps=2)) == {
        "outcome": "tie",
        "errors": "tie",
        "cost": "a",
        "steps": "b",
    }


def test_outcome_outweighs_everything_else() -> None:
    completed = summary(errors=1, cost_usd=0.9, steps=9)
    failed = summary(outcome="failed", errors=1, cost_usd=0.1, steps=1)
    result = score(completed, failed)
    # Cheaper and shorter (2 points) does not beat completing (3 points).
    assert (result.a_points, result.b_points, result.winner) == (3, 2, "a")


def test_both_failed_is_an_outcome_tie() -> None:
    assert winners(summary(outcome="failed"), summary(outcome="failed"))["outcome"] == "tie"


def test_cost_float_noise_is_a_tie() -> None:
    assert winners(summary(cost_usd=0.1 + 0.2), summary(cost_usd=0.3))["cost"] == "tie"
    assert winners(summary(cost_usd=0.3), summary(cost_usd=0.300001))["cost"] == "a"


def test_unknown_cost_is_a_tie() -> None:
    assert winners(summary(cost_usd=None), summary(cost_usd=0.3))["cost"] == "tie"
    assert winners(summary(cost_usd=0.3), summary(cost_usd=None))["cost"] == "tie"


def test_score_of_real_event_runs() -> None:
    golden = run(
        ("llm.turn.completed", 1, {}),
        ("usage.delta", 1, {"cumulative_cost_usd": 0.1 + 0.2}),
        ("run.completed", 1, {"outcome": "completed"}),
    )
    this_run = run(
        ("llm.turn.completed", 1, {}),
        ("tool_hook.failed", 1, {}),
        ("llm.turn.completed", 2, {"cost_usd": 0.3}),
        ("run.failed", 2, {"error": {"class": "E", "message": "m"}}),
    )
    result = score(summarize(golden), summarize(this_run))
    assert winners(summarize(golden), summarize(this_run)) == {
        "outcome": "a",
        "errors": "a",
        "cost": "tie",  # 0.1 + 0.2 against a turn cost of 0.3
        "steps": "a",
    }
    assert (result.a_points, result.b_points, result.winner) == (5, 0, "a")
    assert result.criteria[1] == Criterion("errors", 1, "a", 0, 2)


def test_a_run_that_swallowed_a_divergence_never_wins() -> None:
    """The agent caught replay's divergence and answered anyway, cheaper and shorter than
    its golden: it has not completed as the score counts it, and it loses."""
    golden = run(
        ("llm.turn.completed", 1, {"cost_usd": 0.02}),
        ("llm.turn.completed", 2, {"cost_usd": 0.02}),
        ("run.completed", 2, {"outcome": "completed"}),
    )
    swallowed = run(
        ("replay.divergence", 1, {"kind": "tool_call_mismatch", "detail": "..."}),
        ("llm.turn.completed", 1, {"cost_usd": 0.001}),
        ("run.completed", 1, {"outcome": "completed"}),
    )
    a, b = summarize(golden), summarize(swallowed)
    assert (b.completed, b.clean, b.diverged, b.errors) == (True, False, 1, 1)
    result = score(a, b)
    assert winners(a, b) == {"outcome": "a", "errors": "a", "cost": "b", "steps": "b"}
    assert (result.winner, result.a_points, result.b_points) == ("a", 4, 2)
    assert result.criteria[0] == Criterion("outcome", 3, "a", "completed", "diverged")
    # Both diverged: the outcome is no one's point.
    assert winners(b, b)["outcome"] == "tie"
