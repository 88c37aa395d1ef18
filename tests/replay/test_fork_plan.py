"""Cutting a golden's recording for a fork inside a test (:mod:`pytest_rollout.replay.fork_plan`):
what the fork replays up to its step, with the replacements put in."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_rollout import ToolCall, Turn
from pytest_rollout.diff.canonical import arguments_hash
from pytest_rollout.replay.fork import ForkError
from pytest_rollout.replay.fork_plan import ForkPlan, Replacement, cut
from pytest_rollout.replay.recorded import RecordedCall, RecordedTurn, Recording


def _as_is(value: Any) -> Any:
    return value


def _call(step: int, position: int, name: str) -> RecordedCall:
    arguments = {"n": position}
    call_id = f"c{step}_{position}"
    return RecordedCall(step, position, call_id, name, arguments, arguments_hash(arguments), "old")


def _recording(steps: int, calls_per_step: int = 1) -> Recording:
    return Recording(
        turns=[
            RecordedTurn(step, {"messages_hash": f"h{step}"}, {"content": None})
            for step in range(1, steps + 1)
        ],
        calls={
            step: [_call(step, i, f"tool{i}") for i in range(calls_per_step)]
            for step in range(1, steps + 1)
        },
    )


def test_the_cut_keeps_the_golden_up_to_the_step_with_the_replacements_put_in() -> None:
    golden = _recording(3, calls_per_step=2)
    golden.turns[0].consumed = True  # the cut serves every kept turn afresh
    plan = ForkPlan(2, {"c2_1": Replacement(output="new"), "tool0": Replacement(error={"x": 1})})
    kept, by_name = cut(golden, plan, _as_is)
    assert [turn.step for turn in kept.turns] == [1, 2]
    assert not any(turn.consumed for turn in kept.turns)
    assert sorted(kept.calls) == [1, 2]
    assert [(c.output, c.error) for c in kept.calls[1]] == [("old", None), ("old", None)]
    assert [(c.output, c.error) for c in kept.calls[2]] == [(None, {"x": 1}), ("new", None)]
    assert by_name == {}
    assert golden.calls[2][1].output == "old"  # the golden's recording is left as it was


def test_a_replaced_turn_brings_its_own_calls() -> None:
    turn = Turn("new", [ToolCall("n1", "tool5", {"a": 1}), ToolCall("n2", "tool6", {})])
    plan = ForkPlan(2, {"tool5": Replacement(output="five")}, turn)
    kept, by_name = cut(_recording(3), plan, _as_is)
    assert kept.turns[1].turn["content"] == "new"
    assert kept.turns[1].request == {"messages_hash": "h2"}  # still checked against the golden's
    ((call),) = kept.calls[2]
    assert (call.call_id, call.name, call.arguments, call.output) == (
        "n1",
        "tool5",
        {"a": 1},
        "five",
    )
    assert call.args_hash == arguments_hash({"a": 1})
    assert list(by_name) == ["tool5"]


def test_a_golden_without_model_turns_cannot_be_forked() -> None:
    with pytest.raises(
        ForkError, match="a fork goes on from one of its model turns, and it has none"
    ):
        cut(Recording(), ForkPlan(1), _as_is)


def test_a_step_with_many_calls_is_listed_in_part() -> None:
    plan = ForkPlan(1, {"nothing": Replacement()}, source="g.jsonl")
    with pytest.raises(ForkError) as raised:
        cut(_recording(1, calls_per_step=10), plan, _as_is)
    assert str(raised.value) == (
        "rollout.fork(1, override=...) replaces 'nothing', which names no tool call of step 1 "
        "in g.jsonl: its calls at step 1 are tool0 (c1_0), tool1 (c1_1), tool2 (c1_2), "
        "tool3 (c1_3), tool4 (c1_4), tool5 (c1_5), tool6 (c1_6), tool7 (c1_7) and 2 more. "
        'Name a call by its id or its tool\'s name, or the model turn itself by "turn"'
    )
