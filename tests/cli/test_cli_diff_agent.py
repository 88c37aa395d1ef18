"""``rollout diff A B --agent NAME``: one agent's part of two runs, compared on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from command import diff, write_lines


def _turn(step: int, agent: str, content: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("llm.turn.started", {"step": step, "messages": [], "agent": agent}),
        ("llm.turn.completed", {"step": step, "content": content, "agent": agent}),
    ]


def _run(path: Path, *turns: tuple[str, str]) -> Path:
    events: list[tuple[str, dict[str, Any]]] = [("run.started", {"step": 0})]
    previous = None
    for step, (agent, content) in enumerate(turns, 1):
        if previous is not None and previous != agent:
            events.append(("handoff", {"step": step - 1, "from": previous, "to": agent}))
        events.extend(_turn(step, agent, content))
        previous = agent
    events.append(("run.completed", {"step": len(turns), "outcome": "completed"}))
    return write_lines(path, *events)


def test_one_agents_part_is_compared_without_the_others_extra_turns(tmp_path: Path) -> None:
    a = _run(tmp_path / "a.jsonl", ("triage", "route"), ("billing", "refunded"))
    b = _run(tmp_path / "b.jsonl", ("triage", "route"), ("triage", "hmm"), ("billing", "refunded"))
    assert diff(a, b)[0] == 1
    code, out = diff(a, b, "--agent", "billing")
    assert code == 0
    assert out.splitlines()[:2] == [
        "B matches A",
        "Agent: billing only (its turns numbered from 1)",
    ]


def test_a_change_in_the_agents_part_names_its_own_turn(tmp_path: Path) -> None:
    a = _run(tmp_path / "a.jsonl", ("triage", "route"), ("billing", "refunded 20"))
    b = _run(
        tmp_path / "b.jsonl", ("triage", "route"), ("triage", "hmm"), ("billing", "refunded 200")
    )
    code, out = diff(a, b, "--agent", "billing")
    assert code == 1
    assert out.splitlines()[:2] == [
        "B left A at step 1: response_mismatch (attributed to the agent)",
        "Agent: billing only (its turns numbered from 1)",
    ]


def test_an_agent_that_acts_in_neither_run_is_a_usage_error(tmp_path: Path, capsys: Any) -> None:
    a = _run(tmp_path / "a.jsonl", ("triage", "route"), ("billing", "refunded"))
    code, _ = diff(a, a, "--agent", "sales")
    assert code == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("--agent 'sales' acts in neither run (agents: 'triage', 'billing')")
    )


def _refund(path: Path, amount: int) -> Path:
    lookup = {"order": "ORD-7731"}
    refund = {"order": "ORD-7731", "amount": amount}
    return write_lines(
        path,
        ("run.started", {"step": 0}),
        ("llm.turn.started", {"step": 1, "messages": []}),
        (
            "llm.turn.completed",
            {"step": 1, "tool_calls": [{"id": "c1", "name": "lookup", "arguments": lookup}]},
        ),
        ("tool.call.started", {"step": 1, "call_id": "c1", "name": "lookup", "arguments": lookup}),
        (
            "tool.call.completed",
            {"step": 1, "call_id": "c1", "name": "lookup", "output": {"id": "ORD-7731"}},
        ),
        ("llm.turn.started", {"step": 2, "messages": []}),
        (
            "llm.turn.completed",
            {"step": 2, "tool_calls": [{"id": "c2", "name": "refund", "arguments": refund}]},
        ),
        ("tool.call.started", {"step": 2, "call_id": "c2", "name": "refund", "arguments": refund}),
        ("tool.call.completed", {"step": 2, "call_id": "c2", "name": "refund", "output": "ok"}),
        ("run.completed", {"step": 2, "outcome": "completed"}),
    )


def test_the_report_says_which_earlier_result_fed_the_diverged_call(tmp_path: Path) -> None:
    code, out = diff(_refund(tmp_path / "a.jsonl", 20), _refund(tmp_path / "b.jsonl", 200))
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "B left A at step 2: tool_call_mismatch (attributed to the agent)"
    assert "Fed by: call c1 (lookup) at step 1 via data_flow 'ORD-7731'" in lines
