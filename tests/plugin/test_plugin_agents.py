"""Runs with several agents (docs/agents.md): a hand-written loop names its agents with
``rollout.agent()``; the golden says who did what, and a failure names the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import orjson
import pytest
from plugin_agent import IN_PROCESS, failure_sections, goldens

DESK_SOURCE: Final = (Path(__file__).parent.parent / "data" / "desk_agent.py.txt").read_text(
    encoding="utf-8"
)

DESK_TEST: Final = """
import os

from desk import TOOLS, DeskLLM, desk, refund_policy


def test_refund(rollout, golden):
    llm = rollout.provider(DeskLLM())
    tools = rollout.tools(TOOLS)
    policy = rollout.hook(refund_policy)
    question = "Please refund order ORD-7731."
    change = os.environ.get("DESK_CHANGE", "")
    with rollout.run(prompt=question) as run:
        run.output = desk(rollout, llm, tools, question, change, policy)
    assert rollout == golden
"""


@pytest.fixture
def desk_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(desk=DESK_SOURCE, test_desk=DESK_TEST)
    return pytester


def _record(pytester: pytest.Pytester) -> bytes:
    pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record").assert_outcomes(passed=1)
    (path,) = goldens(pytester)
    return (pytester.path / "golden" / path).read_bytes()


def _compare(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, change: str, *args: str
) -> pytest.RunResult:
    monkeypatch.setenv("DESK_CHANGE", change)
    return pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-compare=golden/", *args)


def test_the_golden_names_each_agent_and_the_handoff(desk_project: pytest.Pytester) -> None:
    recorded = _record(desk_project)
    lines = [orjson.loads(line) for line in recorded.splitlines()]
    acted = [(e["type"], e["data"].get("agent")) for e in lines if e["type"] != "usage.delta"]
    assert acted == [
        ("run.started", None),
        ("llm.turn.started", "triage"),
        ("llm.turn.completed", "triage"),
        ("handoff", "triage"),
        ("llm.turn.started", "billing"),
        ("llm.turn.completed", "billing"),
        ("tool.call.started", "billing"),
        ("tool.call.completed", "billing"),
        ("llm.turn.started", "billing"),
        ("llm.turn.completed", "billing"),
        ("tool.hook.mutation", "billing"),
        ("tool.call.started", "billing"),
        ("tool.call.completed", "billing"),
        ("llm.turn.started", "billing"),
        ("llm.turn.completed", "billing"),
        ("run.completed", None),
    ]
    (handoff,) = (e["data"] for e in lines if e["type"] == "handoff")
    assert (handoff["from"], handoff["to"], handoff["step"]) == ("triage", "billing", 1)
    (hook,) = (e["data"] for e in lines if e["type"] == "tool.hook.mutation")
    refund = {"order": "ORD-7731", "amount": 20}
    assert hook == {
        "name": "refund_policy",
        "action": "allow",
        "before": refund,
        "after": refund,
        "agent": "billing",
        "step": 3,
    }


def test_a_re_recording_is_byte_identical_and_replays(
    desk_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _record(desk_project)
    assert _record(desk_project) == first
    _compare(desk_project, monkeypatch, "").assert_outcomes(passed=1)


def test_a_broken_call_is_reported_with_its_agent(
    desk_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(desk_project)
    result = _compare(desk_project, monkeypatch, "amount")
    result.assert_outcomes(failed=1)
    report = failure_sections(result)["test_refund"]
    assert report[0] == (
        "this run left its golden at step 3 (billing): tool_call_mismatch (attributed to the agent)"
    )
    assert "Turns by agent: triage golden 1, this run 1; billing golden 3, this run 2" in report


def test_a_wrong_route_is_an_agent_mismatch_of_the_router(
    desk_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(desk_project)
    result = _compare(desk_project, monkeypatch, "route")
    result.assert_outcomes(failed=1)
    report = failure_sections(result)["test_refund"]
    assert report[0] == (
        "this run left its golden at step 1 (triage): agent_mismatch "
        "(attributed to the agent that routed)"
    )
    assert "Divergence: the recording has agent 'billing' here, this run agent 'sales'" in report


def test_a_golden_that_names_nobody_still_matches(
    desk_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESK_CHANGE", "unnamed")
    recorded = _record(desk_project)
    assert b'"agent"' not in recorded
    assert b'"handoff"' not in recorded
    _compare(desk_project, monkeypatch, "").assert_outcomes(passed=1)


def test_a_hook_that_now_blocks_is_served_its_decision_in_a_dry_replay(
    desk_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(desk_project)
    monkeypatch.setenv("DESK_POLICY", "strict")
    _compare(desk_project, monkeypatch, "").assert_outcomes(passed=1)


def test_a_hook_that_now_blocks_is_a_guardrail_mismatch_in_a_full_replay(
    desk_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(desk_project)
    monkeypatch.setenv("DESK_POLICY", "strict")
    result = _compare(desk_project, monkeypatch, "", "--rollout-mode=full")
    result.assert_outcomes(failed=1)
    report = failure_sections(result)["test_refund"]
    assert report[0] == (
        "this run left its golden at step 3 (billing): guardrail_mismatch (attributed to the "
        "harness: the agent's prompt, model or tools)"
    )
    assert "Divergence: hook 'refund_policy' now says block (the recording: allow)" in report
