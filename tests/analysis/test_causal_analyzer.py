"""The ``causal_graph`` analyzer: one ``causal.graph.snapshot`` just before the terminal event,
on hand-built streams and live inside a recorded (and replayed) run."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from sessions import new_session

from pytest_rollout import AnalyzerOptions, ToolCall, Turn
from pytest_rollout.analysis.analyzers import ANALYZERS, Analysis, analyze, parse_analyzers
from pytest_rollout.diff.causal_graph import build_graph
from pytest_rollout.format.events import Event
from pytest_rollout.session import Mode, RolloutSession

CAUSAL = AnalyzerOptions(enabled=frozenset({"causal_graph"}))
ORDER = {"order_id": "ORD-1234", "status": "shipped"}


def stream(terminal: str) -> list[Event]:
    items: list[tuple[str, dict[str, Any], int]] = [
        ("run.started", {"model": "gpt-4o"}, 0),
        ("llm.turn.started", {"messages": [{"role": "user", "content": "refund"}]}, 1),
        ("tool.call.started", {"call_id": "c1", "name": "lookup_order", "arguments": {}}, 1),
        ("tool.call.completed", {"call_id": "c1", "name": "lookup_order", "output": ORDER}, 1),
        ("llm.turn.started", {"messages": [{"role": "tool", "tool_call_id": "c1"}]}, 2),
        (
            "tool.call.started",
            {"call_id": "c2", "name": "refund", "arguments": {"order_id": "ORD-1234"}},
            2,
        ),
        ("tool.call.completed", {"call_id": "c2", "name": "refund", "output": "done"}, 2),
        (terminal, {"outcome": "completed"} if terminal == "run.completed" else {"error": {}}, 2),
    ]
    return [Event(i, "", t, {**d, "step": s}, s) for i, (t, d, s) in enumerate(items)]


def live(events: list[Event]) -> list[tuple[int, str, dict[str, Any]]]:
    analysis = Analysis(CAUSAL)
    found: list[tuple[int, str, dict[str, Any]]] = []
    for index, event in enumerate(events):
        found += [(index, t, d) for t, d in analysis.before(event.type, event.data, event.step)]
        found += [(index + 1, t, d) for t, d in analysis.after(event.type, event.data, event.step)]
    return found


@pytest.mark.parametrize("terminal", ["run.completed", "run.failed"])
def test_one_snapshot_just_before_the_terminal_event(terminal: str) -> None:
    events = stream(terminal)
    found = analyze(events, CAUSAL)
    assert found == live(events)
    [(index, kind, data)] = found
    assert kind == "causal.graph.snapshot"
    assert index == len(events) - 1  # it goes before the terminal event
    assert data == build_graph(events).to_data()
    assert data["edges"] == [
        {"from": "call:c1", "to": "turn:2", "kind": "context", "value": None},
        {"from": "call:c1", "to": "call:c2", "kind": "data_flow", "value": "ORD-1234"},
    ]
    assert orjson.loads(orjson.dumps(data)) == data


def test_it_is_an_analyzer_like_the_others() -> None:
    assert "causal_graph" in ANALYZERS
    assert parse_analyzers("causal_graph") == frozenset({"causal_graph"})
    assert "causal_graph" in parse_analyzers(["all"])
    assert analyze(stream("run.completed"), AnalyzerOptions()) == []


# -- live, in a session ------------------------------------------------------------------


class Script:
    model = "gpt-4o-mini"

    def __init__(self) -> None:
        self.turns = [
            Turn(None, [ToolCall("c1", "lookup_order", {"email": "ann@example.com"})]),
            Turn(None, [ToolCall("c2", "refund_order", {"order_id": "ORD-1234"})]),
            Turn("Refunded.", []),
        ]

    def complete(self, messages: Any, tools: Any = None, **params: Any) -> Turn:
        return self.turns.pop(0)


def agent(session: RolloutSession, live: Any = None) -> None:
    llm = session.provider(live)
    tools = session.tools(
        {
            "lookup_order": lambda email: {"order_id": "ORD-1234", "email": email},
            "refund_order": lambda order_id: f"refund for {order_id} issued",
        }
    )
    messages: list[Any] = [{"role": "user", "content": "Refund my order"}]
    with session.run(prompt="Refund my order"):
        while True:
            turn = llm.complete(list(messages))
            if not turn.tool_calls:
                break
            for call in turn.tool_calls:
                result = tools[call.name](**call.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    session.close()


def test_a_recorded_run_holds_its_graph_and_replays_with_it() -> None:
    session = new_session(Mode.RECORD, analyzers=CAUSAL)
    agent(session, Script())
    golden = session.recorder.rollout()
    types = [e.type for e in golden.events]
    assert types[-2:] == ["causal.graph.snapshot", "run.completed"]
    assert types.count("causal.graph.snapshot") == 1
    snapshot = golden.events[-2].data
    assert [n["id"] for n in snapshot["nodes"]] == [
        "turn:1",
        "call:c1",
        "turn:2",
        "call:c2",
        "turn:3",
    ]
    assert [(e["from"], e["to"], e["kind"], e["value"]) for e in snapshot["edges"]] == [
        ("call:c1", "turn:2", "context", None),
        ("call:c1", "call:c2", "data_flow", "ORD-1234"),
        ("call:c2", "turn:3", "context", None),
    ]
    # the same graph as the file alone gives
    assert {**snapshot, "step": None} == {**build_graph(golden.events).to_data(), "step": None}
    replay = new_session(Mode.DRY, golden, analyzers=CAUSAL)
    agent(replay)
    assert replay.verdict().matched, replay.verdict().divergences
