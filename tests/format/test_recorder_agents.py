"""The recorder names the acting agent on every event and records each handoff."""

from __future__ import annotations

import orjson
import pytest

from pytest_rollout.errors import RolloutFormatError
from pytest_rollout.format.agents import MAX_AGENT_NAME
from pytest_rollout.format.loader import loads
from pytest_rollout.format.recorder import Recorder


def _acted(recorder: Recorder) -> list[tuple[str, str | None]]:
    return [(e.type, e.data.get("agent")) for e in recorder.rollout().events]


def test_nobody_named_writes_the_run_as_before() -> None:
    recorder = Recorder()
    recorder.agent_of = lambda: None
    recorder.emit("run.started", {})
    recorder.emit_payload("tool.call.started", b'{"call_id":"c"}')
    recorder.emit("run.completed", {"outcome": "completed"})
    assert b'"agent"' not in recorder.getvalue()


def test_each_event_names_its_agent_and_a_change_is_a_handoff() -> None:
    recorder = Recorder()
    who: list[str | None] = ["triage"]
    recorder.agent_of = lambda: who[0]
    recorder.emit("run.started", {})
    recorder.emit("llm.turn.started", {"messages": []})
    recorder.emit_payload("tool.call.started", b"{}")
    who[0] = "billing"
    recorder.emit_payload("tool.call.started", b'{"call_id":"c"}')
    who[0] = None  # nobody named: not a handoff, and the next agent is handed over from billing
    recorder.emit("usage.delta", {})
    who[0] = "triage"
    recorder.emit("run.completed", {"outcome": "completed"})
    assert _acted(recorder) == [
        ("run.started", None),
        ("llm.turn.started", "triage"),
        ("tool.call.started", "triage"),
        ("handoff", "triage"),
        ("tool.call.started", "billing"),
        ("usage.delta", None),
        ("handoff", "billing"),
        ("run.completed", "triage"),
    ]
    handoffs = [e.data for e in recorder.rollout().events if e.type == "handoff"]
    assert [(h["from"], h["to"], h["step"]) for h in handoffs] == [
        ("triage", "billing", 1),
        ("billing", "triage", 1),
    ]


def test_a_handoff_recorded_by_the_caller_is_not_doubled() -> None:
    recorder = Recorder()
    who = ["triage"]
    recorder.agent_of = lambda: who[0]
    recorder.emit("run.started", {})
    recorder.emit("llm.turn.started", {})
    recorder.emit("handoff", {"from": "triage", "to": "billing"})
    who[0] = "billing"
    recorder.emit("llm.turn.started", {})
    recorder.emit("run.completed", {})
    assert [t for t, _ in _acted(recorder)].count("handoff") == 1


def test_a_failing_or_odd_answer_names_nobody_and_a_long_name_is_cut() -> None:
    recorder = Recorder()
    answers: list[object] = [RuntimeError("boom"), 42, "", "x" * 1000]

    def agent_of() -> str | None:
        answer = answers.pop(0) if answers else None
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    recorder.agent_of = agent_of
    recorder.emit("run.started", {})  # the run's start is nobody's, whatever the answer
    recorder.emit("llm.turn.started", {})
    recorder.emit("usage.delta", {})
    recorder.emit_payload("tool.call.started", b"{}")
    recorder.emit("run.completed", {})
    assert [a for _, a in _acted(recorder)] == [None, None, None, "x" * MAX_AGENT_NAME, None]


def test_the_loader_refuses_an_agent_that_is_not_a_string() -> None:
    lines = [
        {"ts": "t", "seq": 0, "type": "run.started", "data": {"step": 0}},
        {"ts": "t", "seq": 1, "type": "usage.delta", "data": {"step": 0, "agent": ["x"]}},
        {"ts": "t", "seq": 2, "type": "run.completed", "data": {"step": 0}},
    ]
    text = b"\n".join(orjson.dumps(line) for line in lines)
    with pytest.raises(RolloutFormatError) as refused:
        loads(text, path="run.jsonl")
    assert str(refused.value) == "run.jsonl:2: data.agent must be a string or null, got an array"
