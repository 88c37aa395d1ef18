"""The comparison of runs with several agents: the agent is part of the canonical form, a
run that names nobody is compared agent-blind, and one agent's part can be compared alone."""

from __future__ import annotations

from typing import Any

from pytest_rollout.diff.agents import agent_turns, only_agent
from pytest_rollout.diff.compare import compare
from pytest_rollout.diff.divergence import DivergenceKind, classify
from pytest_rollout.diff.drift import drift_report
from pytest_rollout.format.recorder import Recorder


def _run(*acts: tuple[str | None, str, dict[str, Any]], named: bool = True) -> Any:
    recorder = Recorder()
    who: list[str | None] = [None]
    recorder.agent_of = lambda: who[0] if named else None
    recorder.emit("run.started", {"run_id": "r"})
    for agent, event_type, data in acts:
        who[0] = agent
        recorder.emit(event_type, data)
    who[0] = None
    recorder.emit("run.completed", {"outcome": "completed", "output": "done"})
    return recorder.rollout().events


def _turn(agent: str, content: str = "") -> list[tuple[str | None, str, dict[str, Any]]]:
    return [
        (agent, "llm.turn.started", {"messages": []}),
        (agent, "llm.turn.completed", {"content": content, "tool_calls": []}),
    ]


def _desk(specialist: str, named: bool = True) -> Any:
    return _run(*_turn("triage", "route"), *_turn(specialist, "refunded"), named=named)


def test_the_same_run_by_the_same_agents_is_identical() -> None:
    assert compare(_desk("billing"), _desk("billing")).identical


def test_another_agent_is_an_agent_mismatch_of_the_router() -> None:
    divergence = classify(compare(_desk("billing"), _desk("sales")))
    assert divergence is not None
    assert divergence.kind is DivergenceKind.AGENT_MISMATCH
    assert divergence.agent == "triage"
    assert divergence.headline() == (
        "agent_mismatch at step 1 (triage) (attributed to the agent that routed)"
    )
    assert divergence.detail == "the recording has agent 'billing' here, this run agent 'sales'"


def test_a_run_that_names_nobody_is_compared_agent_blind() -> None:
    assert compare(_desk("billing", named=False), _desk("billing")).identical
    assert compare(_desk("billing"), _desk("sales", named=False)).identical


def test_a_divergence_names_the_agent_that_acted() -> None:
    a = _run(*_turn("triage"), *_turn("billing", "refunded 20"))
    b = _run(*_turn("triage"), *_turn("billing", "refunded 200"))
    report = drift_report(a, b)
    assert report.headline is not None
    assert report.headline.headline() == (
        "response_mismatch at step 2 (billing) (attributed to the agent)"
    )
    assert report.agent_turns == (("triage", 1, 1), ("billing", 1, 1))


def test_one_agents_part_is_compared_with_its_own_turns_numbered() -> None:
    a = _run(*_turn("triage"), *_turn("billing", "refunded"))
    b = _run(*_turn("triage"), *_turn("triage", "thinking more"), *_turn("billing", "refunded"))
    assert not compare(a, b).identical
    billing_a, billing_b = only_agent(a, "billing"), only_agent(b, "billing")
    assert [e.step for e in billing_b] == [0, 1, 1, 1]
    assert compare(billing_a, billing_b).identical
    assert not compare(only_agent(a, "triage"), only_agent(b, "triage")).identical


def test_turns_by_agent_only_when_several_agents_act() -> None:
    one = _run(*_turn("billing"))
    assert agent_turns(one, one) == ()


def _refund_run(amount: int) -> Any:
    lookup = {"call_id": "call_1", "name": "lookup_order", "arguments": {"order": "ORD-7731"}}
    refund = {"call_id": "call_2", "name": "refund", "arguments": {"order": "ORD-7731"}}
    refund["arguments"] = {"order": "ORD-7731", "amount": amount}
    announce = [
        {"id": c["call_id"], "name": c["name"], "arguments": c["arguments"]}
        for c in (lookup, refund)
    ]
    return _run(
        ("billing", "llm.turn.started", {"messages": []}),
        ("billing", "llm.turn.completed", {"content": "", "tool_calls": announce[:1]}),
        ("billing", "tool.call.started", lookup),
        (
            "billing",
            "tool.call.completed",
            {
                "call_id": "call_1",
                "name": "lookup_order",
                "output": {"id": "ORD-7731", "total": 20},
            },
        ),
        ("billing", "llm.turn.started", {"messages": []}),
        ("billing", "llm.turn.completed", {"content": "", "tool_calls": announce[1:]}),
        ("billing", "tool.call.started", refund),
        (
            "billing",
            "tool.call.completed",
            {"call_id": "call_2", "name": "refund", "output": "done"},
        ),
    )


def test_the_report_says_which_earlier_result_fed_the_diverged_call() -> None:
    report = drift_report(_refund_run(20), _refund_run(200))
    assert report.headline is not None
    assert report.headline.kind is DivergenceKind.TOOL_CALL_MISMATCH
    assert report.fed_by == "call call_1 (lookup_order) at step 1 via data_flow 'ORD-7731'"
