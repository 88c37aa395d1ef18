"""The causal graph of a run, built from hand-made runs whose edges are known."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import orjson
import pytest

from pytest_rollout.diff.causal_graph import (
    MAX_FLOW_EDGES,
    MIN_SHARED_CHARS,
    CausalGraph,
    Edge,
    Node,
    build_graph,
    fed_by,
    feeding_text,
    graph_of_run,
    render_graph,
)
from pytest_rollout.format.events import Event

Stream = Sequence[tuple[str, dict[str, Any]]]


def run(stream: Stream) -> list[Event]:
    """Events with the steps the recorder would give them (``data.step``, else the last)."""
    found: list[Event] = []
    step = 0
    for seq, (kind, data) in enumerate(stream):
        step = data.get("step", step)
        found.append(Event(seq, "", kind, {**data, "step": step}, step))
    return found


def turn(step: int, messages: Any = (), agent: str | None = None) -> tuple[str, dict[str, Any]]:
    data: dict[str, Any] = {"step": step, "messages": list(messages)}
    if agent is not None:
        data["agent"] = agent
    return "llm.turn.started", data


def call(
    step: int, call_id: str | None, name: str, arguments: Any, agent: str | None = None
) -> tuple[str, dict[str, Any]]:
    data = {"step": step, "call_id": call_id, "name": name, "arguments": arguments}
    if agent is not None:
        data["agent"] = agent
    return "tool.call.started", data


def done(step: int, call_id: str | None, name: str, output: Any) -> tuple[str, dict[str, Any]]:
    data = {"step": step, "call_id": call_id, "name": name, "output": output}
    return "tool.call.completed", data


def failed(step: int, call_id: str, name: str) -> tuple[str, dict[str, Any]]:
    error = {"class": "LookupError", "message": "ORD-1234 not found"}
    return "tool.call.completed", {"step": step, "call_id": call_id, "name": name, "error": error}


START = ("run.started", {"step": 0, "model": "gpt-4o"})
END = ("run.completed", {"outcome": "completed"})
ORDER = {"order_id": "ORD-1234", "status": "shipped", "qty": 1, "room": "B12"}


def refund_run() -> list[Event]:
    """Triage looks an order up; billing refunds it and mails the customer."""
    return run(
        [
            START,
            turn(1, [{"role": "user", "content": "Refund my last order"}], agent="triage"),
            call(1, "c1", "lookup_order", {"email": "ann@example.com"}, agent="triage"),
            done(1, "c1", "lookup_order", ORDER),
            turn(
                2,
                [
                    {"role": "assistant", "tool_calls": [{"id": "c1", "name": "lookup_order"}]},
                    {"role": "tool", "tool_call_id": "c1", "content": orjson.dumps(ORDER).decode()},
                ],
                agent="billing",
            ),
            # the order id as a whole argument, and inside a longer one; "1" and "B12" by chance
            call(2, "c2", "refund_order", {"order_id": "ORD-1234", "qty": 1, "why": "room B12"}),
            done(2, "c2", "refund_order", "Refund R-77 issued"),
            call(2, "c3", "send_email", {"body": "Your refund for ORD-1234 is on its way"}),
            done(2, "c3", "send_email", "sent"),
            turn(3, [{"role": "tool", "content": "Refund R-77 issued"}, {"role": "tool"}]),
            END,
        ]
    )


def edges(graph: CausalGraph) -> list[tuple[str, str, str, str | None]]:
    return [(e.source, e.target, e.kind, e.value) for e in graph.edges]


def test_a_run_with_known_edges() -> None:
    graph = build_graph(refund_run())
    assert [(n.id, n.kind, n.step, n.name, n.agent) for n in graph.nodes] == [
        ("turn:1", "turn", 1, None, "triage"),
        ("call:c1", "tool_call", 1, "lookup_order", "triage"),
        ("turn:2", "turn", 2, None, "billing"),
        ("call:c2", "tool_call", 2, "refund_order", None),
        ("call:c3", "tool_call", 2, "send_email", None),
        ("turn:3", "turn", 3, None, None),
    ]
    assert edges(graph) == [
        ("call:c1", "turn:2", "context", None),  # by its id
        ("call:c1", "call:c2", "data_flow", "ORD-1234"),  # a whole argument
        ("call:c1", "call:c3", "data_flow", "ORD-1234"),  # inside an argument
        ("call:c2", "turn:3", "context", None),  # by its content: no id in the message
    ]


def test_the_snapshot_shape() -> None:
    data = build_graph(refund_run()).to_data()
    assert data["nodes"][1] == {
        "id": "call:c1",
        "kind": "tool_call",
        "step": 1,
        "name": "lookup_order",
        "agent": "triage",
    }
    assert data["edges"][1] == {
        "from": "call:c1",
        "to": "call:c2",
        "kind": "data_flow",
        "value": "ORD-1234",
    }
    assert orjson.loads(orjson.dumps(data)) == data
    assert CausalGraph.from_data(data) == build_graph(refund_run())


def chance(value: str) -> list[Event]:
    """A lookup returns ``value``; an unrelated note later happens to hold it in its text."""
    return run(
        [
            START,
            turn(1),
            call(1, "w1", "get_weather", {"city": "Paris"}),
            done(1, "w1", "get_weather", {"sky": "sunny", "code": value}),
            turn(2),
            call(2, "n1", "write_note", {"text": f"Meeting in room {value} at noon"}),
            done(2, "n1", "write_note", "ok"),
            END,
        ]
    )


@pytest.mark.parametrize("value", ["B12", "AB-12", "12345", "yes"])
def test_a_value_shorter_than_the_minimum_is_no_edge(value: str) -> None:
    assert len(value) < MIN_SHARED_CHARS
    assert edges(build_graph(chance(value))) == []


@pytest.mark.parametrize("value", ["AB-123", "TCK-998877", "2f9c1a7e-44d1-4b8e-9a51-6b1c0c6d5e10"])
def test_a_value_of_the_minimum_or_longer_is_an_edge(value: str) -> None:
    assert len(value) >= MIN_SHARED_CHARS
    assert edges(build_graph(chance(value))) == [("call:w1", "call:n1", "data_flow", value)]


def test_numbers_count_by_their_text() -> None:
    events = run(
        [
            START,
            turn(1),
            call(1, "q", "quote", {"sku": "A"}),
            done(1, "q", "quote", {"price": 129.99, "count": 12345, "ok": True}),
            call(1, "p", "pay", {"amount": 129.99, "items": 12345, "confirm": True}),
            END,
        ]
    )
    assert edges(build_graph(events)) == [("call:q", "call:p", "data_flow", "129.99")]


def test_only_outputs_feed_later_calls_never_arguments_or_errors() -> None:
    events = run(
        [
            START,
            turn(1),
            call(1, "a", "lookup_order", {"order_id": "ORD-1234"}),
            failed(1, "a", "lookup_order"),
            call(1, "b", "cancel_order", {"order_id": "ORD-1234"}),
            done(1, "b", "cancel_order", None),
            END,
        ]
    )
    assert edges(build_graph(events)) == []


def test_a_value_returned_twice_comes_from_the_latest_call() -> None:
    events = run(
        [
            START,
            turn(1),
            call(1, "a", "search", {"q": "x"}),
            done(1, "a", "search", ["ORD-1234"]),
            call(1, "b", "search", {"q": "y"}),
            done(1, "b", "search", ["ORD-1234", "ORD-1234-B"]),
            call(1, "c", "refund", {"ids": "ORD-1234-B and ORD-1234"}),
            END,
        ]
    )
    # one edge between two calls, with the longest value they share
    assert edges(build_graph(events)) == [("call:b", "call:c", "data_flow", "ORD-1234-B")]


def test_json_held_in_a_string_is_read_for_its_values() -> None:
    events = run(
        [
            START,
            turn(1),
            call(1, "u", "find_user", {"name": "Ann"}),
            done(1, "u", "find_user", '{"user": {"id": "USR-42424", "plan": "pro"}}'),
            call(1, "v", "upgrade", '{"user_id": "USR-42424"}'),
            END,
        ]
    )
    assert edges(build_graph(events)) == [("call:u", "call:v", "data_flow", "USR-42424")]


MCP_OUTPUT = {"content": [{"type": "text", "text": "Order ORD-5555 shipped."}], "isError": False}


def test_a_word_of_a_text_output_counts_as_a_whole_argument_only() -> None:
    events = run(
        [
            START,
            turn(1),
            call(1, "m", "order_status", {"q": "last order"}),
            done(1, "m", "order_status", MCP_OUTPUT),
            call(1, "r", "refund", {"order_id": "ORD-5555"}),
            call(1, "s", "note", {"text": "asked about ORD-5555 today"}),
            END,
        ]
    )
    assert edges(build_graph(events)) == [("call:m", "call:r", "data_flow", "ORD-5555")]


OUTPUT = {"city": "Lyon", "temp_c": 21.0}
GEMINI = {"functionResponse": {"name": "x", "response": {"output": OUTPUT}}}
BEDROCK = {"toolResult": {"toolUseId": "?", "content": [{"json": OUTPUT}]}}


@pytest.mark.parametrize(
    "messages",
    [
        # OpenAI Chat Completions
        [{"role": "tool", "tool_call_id": "toolu_1", "content": "{}"}],
        # OpenAI Responses
        [{"type": "function_call_output", "call_id": "toolu_1", "output": "{}"}],
        # Anthropic Messages
        [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}],
        # Bedrock Converse
        [{"role": "user", "content": [{"toolResult": {"toolUseId": "toolu_1", "content": []}}]}],
        # Gemini, with an id
        [{"role": "user", "parts": [{"functionResponse": {"id": "toolu_1", "name": "x"}}]}],
    ],
    ids=["openai", "responses", "anthropic", "bedrock", "gemini"],
)
def test_a_result_is_found_by_its_call_id_in_each_api_shape(messages: Any) -> None:
    events = run(
        [
            START,
            turn(1),
            call(1, "toolu_1", "get_weather", {"city": "Lyon"}),
            done(1, "toolu_1", "get_weather", OUTPUT),
            turn(2, messages),
            END,
        ]
    )
    assert edges(build_graph(events)) == [("call:toolu_1", "turn:2", "context", None)]


@pytest.mark.parametrize(
    "result",
    [
        {"role": "tool", "content": '{"temp_c": 21.0, "city": "Lyon"}'},  # JSON text, reordered
        {"role": "tool", "content": [{"type": "text", "text": '{"city":"Lyon","temp_c":21.0}'}]},
        {"role": "function", "name": "get_weather", "content": OUTPUT},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "x", "response": {"output": OUTPUT}}}],
        },
        {"role": "user", "parts": [{"function_response": {"response": {"result": OUTPUT}}}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "?", "content": [{"json": OUTPUT}]}}],
        },
    ],
    ids=["json-text", "text-blocks", "function-role", "gemini", "gemini-snake", "bedrock-json"],
)
def test_a_result_without_a_known_id_is_found_by_its_content(result: Any) -> None:
    events = run(
        [
            START,
            turn(1),
            call(1, None, "get_weather", {"city": "Lyon"}),
            done(1, None, "get_weather", OUTPUT),
            turn(2, [result]),
            END,
        ]
    )
    assert edges(build_graph(events)) == [("call:#1", "turn:2", "context", None)]


def test_equal_outputs_go_to_the_call_of_that_name_no_turn_saw_yet() -> None:
    events = run(
        [
            START,
            turn(1),
            call(1, None, "ping", {}),
            done(1, None, "ping", "pong-ok"),
            call(1, None, "check", {}),
            done(1, None, "check", "pong-ok"),
            call(1, None, "check", {}),
            done(1, None, "check", "pong-ok"),
            turn(2, [{"role": "tool", "name": "check", "content": "pong-ok"}]),
            turn(3, [{"role": "tool", "name": "check", "content": "pong-ok"}]),
        ]
    )
    assert edges(build_graph(events)) == [
        ("call:#2", "turn:2", "context", None),
        ("call:#3", "turn:3", "context", None),
    ]


def test_an_empty_result_matches_no_call() -> None:
    events = run(
        [
            START,
            turn(1),
            call(1, None, "reset", {}),
            done(1, None, "reset", None),
            call(1, None, "clear", {}),
            done(1, None, "clear", ""),
            turn(2, [{"role": "tool"}, {"role": "tool", "content": " "}, {"role": "tool"}]),
        ]
    )
    assert edges(build_graph(events)) == []


def test_calls_without_an_id_or_with_a_reused_one_get_ids_of_their_own() -> None:
    events = run(
        [
            START,
            turn(1),
            call(1, None, "a", {}),
            call(1, "x", "b", {}),
            call(1, "x", "c", {}),
            done(1, "x", "b", "first-result"),
            done(1, "x", "c", "second-result"),
            done(1, None, "a", "third-result"),
            call(1, "y", "d", {"v": ["first-result", "second-result", "third-result"]}),
        ]
    )
    graph = build_graph(events)
    assert [n.id for n in graph.nodes] == ["turn:1", "call:#1", "call:x", "call:x#3", "call:y"]
    assert edges(graph) == [
        ("call:#1", "call:y", "data_flow", "third-result"),
        ("call:x", "call:y", "data_flow", "first-result"),
        ("call:x#3", "call:y", "data_flow", "second-result"),
    ]


def test_fed_by_and_feeding_text() -> None:
    graph = build_graph(refund_run())
    assert fed_by(graph, "c2") == (Edge("call:c1", "call:c2", "data_flow", "ORD-1234"),)
    assert fed_by(graph, "c1") == ()
    assert feeding_text(graph, "c2") == "call c1 (lookup_order) at step 1 via data_flow 'ORD-1234'"
    # no value reached c1's arguments, and the turn that asked for it saw no result
    assert feeding_text(graph, "c1") is None
    assert feeding_text(graph, "nope") is None


def test_feeding_text_falls_back_on_what_the_asking_turn_saw() -> None:
    events = run(
        [
            START,
            turn(1),
            call(1, "c1", "get_weather", {"city": "Lyon"}),
            done(1, "c1", "get_weather", OUTPUT),
            turn(2, [{"role": "tool", "tool_call_id": "c1", "content": "{}"}]),
            call(2, "c2", "convert", {"celsius": 21.0}),
        ]
    )
    graph = build_graph(events)
    assert fed_by(graph, "c2") == ()
    assert feeding_text(graph, "c2") == "call c1 (get_weather) at step 1 via context"


def test_feeding_text_is_safe_to_print() -> None:
    graph = CausalGraph(
        (Node("call:\x1b[2J", "tool_call", 1, "evil\nname"), Node("call:b", "tool_call", 2)),
        (Edge("call:\x1b[2J", "call:b", "data_flow", "it's \u202e" + "x" * 100),),
    )
    text = feeding_text(graph, "b")
    assert text == (
        "call \\x1b[2J (evil\\nname) at step 1 via data_flow "
        "'it\\'s \\u202e" + "x" * 53 + "… (+47 chars)'"
    )


def test_the_text_rendering() -> None:
    assert render_graph(build_graph(refund_run())) == [
        "6 nodes, 4 edges",
        "nodes:",
        "  step 1  turn:1  [triage]",
        "  step 1  call:c1  lookup_order  [triage]",
        "  step 2  turn:2  [billing]",
        "  step 2  call:c2  refund_order",
        "  step 2  call:c3  send_email",
        "  step 3  turn:3",
        "edges:",
        "  call:c1 (lookup_order, step 1) -> turn:2  context",
        "  call:c1 (lookup_order, step 1) -> call:c2 (refund_order, step 2)  data_flow 'ORD-1234'",
        "  call:c1 (lookup_order, step 1) -> call:c3 (send_email, step 2)  data_flow 'ORD-1234'",
        "  call:c2 (refund_order, step 2) -> turn:3  context",
    ]
    assert render_graph(CausalGraph()) == ["0 nodes, 0 edges", "nodes:", "edges: none"]


def test_the_snapshot_in_the_run_is_preferred() -> None:
    events = refund_run()
    assert graph_of_run(events) == (build_graph(events), False)
    snapshot = {"nodes": [{"id": "turn:1", "kind": "turn", "step": 1}], "edges": []}
    recorded = [*events[:-1], Event(99, "", "causal.graph.snapshot", snapshot, 3), events[-1]]
    graph, from_snapshot = graph_of_run(recorded)
    assert from_snapshot
    assert graph == CausalGraph((Node("turn:1", "turn", 1),))


@pytest.mark.parametrize(
    "data",
    [
        None,
        "graph",
        {"nodes": "x", "edges": 3},
        {
            "nodes": [
                {"id": "turn:1", "kind": "turn", "step": 1},
                {"id": "turn:1", "kind": "turn", "step": 9},  # a duplicate: the first is kept
                {"id": 5, "kind": "turn", "step": 1},
                {"id": "x", "kind": "planet", "step": 1},
                {"id": "y", "kind": "turn", "step": True},
                {"id": "z", "kind": "turn", "step": -1},
                {"id": "w", "kind": "turn", "step": 1, "agent": 7},
                "node",
            ],
            "edges": [
                {"from": "turn:1", "to": "nowhere", "kind": "context"},
                {"from": "turn:1", "to": "turn:1", "kind": "magic"},
                {"from": "turn:1", "to": "turn:1", "kind": "data_flow", "value": 5},
                [],
            ],
        },
    ],
)
def test_a_snapshot_that_does_not_read_is_left_out_piece_by_piece(data: Any) -> None:
    graph = CausalGraph.from_data(data)
    assert graph.edges == ()
    assert graph.nodes in ((), (Node("turn:1", "turn", 1),))


ODD: list[Any] = [object(), {1, 2}, b"x", 10**5000, float("nan"), "\ud800" * 8, [[[[]]]], None]


@pytest.mark.parametrize("odd", ODD, ids=lambda v: type(v).__name__)
def test_odd_values_never_raise(odd: Any) -> None:
    tool = {"role": "tool", "tool_call_id": odd, "content": odd}
    stream: list[tuple[str, Any]] = [
        ("llm.turn.started", {"messages": odd, "agent": odd}),
        ("llm.turn.started", {"messages": [odd, tool, {"content": [odd], "parts": odd}]}),
        ("llm.turn.completed", odd),
        ("tool.call.started", {"call_id": odd, "name": odd, "arguments": odd, "agent": odd}),
        ("tool.call.completed", {"call_id": odd, "name": odd, "output": odd}),
        ("tool.call.completed", {"call_id": "nope", "output": odd}),
        ("tool.call.started", {"call_id": "k", "name": "k", "arguments": {"a": [odd, odd]}}),
        ("tool.call.started", odd),
    ]
    graph = build_graph(Event(i, "", t, d, 1) for i, (t, d) in enumerate(stream))
    assert CausalGraph.from_data(graph.to_data()) == graph


def test_edges_into_one_call_are_capped() -> None:
    stream: list[tuple[str, dict[str, Any]]] = [START, turn(1)]
    for i in range(MAX_FLOW_EDGES + 4):
        stream += [call(1, f"s{i}", "source", {}), done(1, f"s{i}", "source", f"VALUE-{i:04d}")]
    wanted = {"ids": [f"VALUE-{i:04d}" for i in range(MAX_FLOW_EDGES + 4)]}
    stream.append(call(1, "sink", "sink", wanted))
    graph = build_graph(run(stream))
    assert len(fed_by(graph, "sink")) == MAX_FLOW_EDGES


@pytest.mark.slow  # seconds
def test_a_large_run_is_built_in_about_one_pass() -> None:
    """1,000 calls, each returning 50 values (and five of them a 1 MiB text too), each given
    4 KiB of text to search."""
    stream: list[tuple[str, dict[str, Any]]] = [START]
    big = "lorem ipsum " * 90_000
    note = "Lorem ipsum dolor sit amet, ORD-12 consectetur. " * 85
    for i in range(1_000):
        step = i // 10 + 1
        if i % 10 == 0:
            stream.append(turn(step))
        output = {"rows": [f"ROW-{i}-{j:04d}" for j in range(50)], "text": big if i < 5 else ""}
        stream += [
            call(step, f"c{i}", "query", {"q": f"{note} ROW-{i - 1}-0007"}),
            done(step, f"c{i}", "query", output),
        ]
    events = run(stream)
    t0 = time.perf_counter()
    graph = build_graph(events)
    elapsed = time.perf_counter() - t0
    assert len(graph.nodes) == 1_100
    assert len(graph.edges) == 999  # each call fed by the one before it
    # about 5 s on a busy shared core; comparing values pair by pair would take hours
    assert elapsed < 60
