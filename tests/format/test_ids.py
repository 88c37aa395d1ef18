"""Provider call ids are renamed by position before runs are compared."""

from __future__ import annotations

from typing import Any

from pytest_rollout import Recorder
from pytest_rollout.format.events import Event
from pytest_rollout.format.ids import align_call_ids, announced_ids, echoed_ids


def run(ids: list[str], *, city: str = "Paris") -> tuple[Event, ...]:
    r = Recorder()
    r.emit("run.started", {})
    history: list[dict[str, Any]] = [{"role": "user", "content": "?"}]
    r.emit("llm.turn.started", {"messages": history})
    calls = [{"id": i, "name": "weather", "arguments": {"city": city}} for i in ids]
    r.emit("llm.turn.completed", {"content": None, "tool_calls": calls})
    for i in ids:
        r.emit("tool.call.started", {"call_id": i, "name": "weather", "arguments": {"city": city}})
        r.emit("tool.call.completed", {"call_id": i, "name": "weather", "output": "18C"})
    results = [{"role": "tool", "tool_call_id": i, "content": "18C"} for i in ids]
    r.emit("llm.turn.started", {"messages": [{"role": "assistant", "tool_calls": calls}, *results]})
    r.emit("llm.turn.completed", {"content": "18C", "tool_calls": []})
    r.emit("run.completed", {"outcome": "completed"})
    return r.rollout().events


def test_announced_ids_in_order() -> None:
    assert announced_ids(run(["x", "y"])) == ["x", "y"]


def test_same_ids_are_returned_untouched() -> None:
    a, b = run(["c1", "c2"]), run(["c1", "c2"])
    assert align_call_ids(a, b) is b


def test_fresh_ids_are_renamed_everywhere_they_appear() -> None:
    a = run(["call_A1", "call_A2"])
    b = run(["call_zz9", "call_qq7"])
    aligned = align_call_ids(a, b)
    assert [e.data for e in aligned] == [e.data for e in a]


def test_a_different_call_still_differs_after_renaming() -> None:
    a = run(["call_A1"], city="Paris")
    b = run(["call_B1"], city="Lyon")
    aligned = align_call_ids(a, b)
    started = [e for e in aligned if e.type == "tool.call.started"]
    assert started[0].data == {
        "call_id": "call_A1",
        "name": "weather",
        "arguments": {"city": "Lyon"},
        "step": 1,
    }


def test_extra_calls_keep_their_names() -> None:
    aligned = align_call_ids(run(["a1"]), run(["b1", "b2"]))
    assert announced_ids(aligned) == ["a1", "b2"]


def test_renaming_is_simultaneous() -> None:
    # b1 -> x and x -> y at once: a permutation, no two calls merge.
    aligned = align_call_ids(run(["x", "y"]), run(["b1", "x"]))
    assert announced_ids(aligned) == ["x", "y"]


def test_renaming_onto_a_name_b_keeps_is_refused() -> None:
    # b's extra call keeps the name x, so renaming b1 -> x would merge two calls.
    b = run(["b1", "x"])
    assert align_call_ids(run(["x"]), b) is b


def responses_run(item: str, message: str, response: str) -> tuple[Event, ...]:
    """A Responses-API conversation: the agent sends the output items back, ids and all."""
    r = Recorder()
    r.emit("run.started", {})
    r.emit("llm.turn.started", {"messages": [{"role": "user", "content": "?"}], "params": {}})
    call = {"id": "call_1", "name": "weather", "arguments": {"city": "Paris"}}
    r.emit("llm.turn.completed", {"content": None, "tool_calls": [call]})
    echoed = [
        {"type": "message", "id": message, "role": "assistant", "content": "Checking."},
        {"type": "function_call", "id": item, "call_id": "call_1", "name": "weather"},
        {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
    ]
    r.emit("llm.turn.started", {"messages": echoed, "params": {"previous_response_id": response}})
    r.emit("llm.turn.completed", {"content": "18C", "tool_calls": []})
    r.emit("run.completed", {"outcome": "completed"})
    return r.rollout().events


def test_item_ids_a_request_sends_back_are_renamed_in_order() -> None:
    a = responses_run("fc_01", "msg_01", "resp_01")
    b = responses_run("fc_9x", "msg_7q", "resp_5z")
    assert [e.data for e in align_call_ids(a, b)] == [e.data for e in a]


def test_an_item_id_that_moved_is_still_a_difference() -> None:
    a = responses_run("fc_01", "msg_01", "resp_01")
    b = responses_run("fc_01", "fc_01", "resp_01")  # two items under one name
    assert [e.data for e in align_call_ids(a, b)] != [e.data for e in a]


def test_echoed_item_ids_are_found_among_chat_messages_and_plain_items() -> None:
    item = {"type": "function_call", "id": "fc_01", "call_id": "c", "name": "weather"}
    r = Recorder()
    r.emit("run.started", {})
    r.emit("llm.turn.started", {"messages": [{"role": "user", "content": "?"}, "text", item]})
    r.emit(
        "llm.turn.started",
        {"messages": [{"role": "user", "content": "?"}, {**item, "id": "fc_02"}]},
    )
    r.emit("run.completed", {"outcome": "completed"})
    assert echoed_ids(r.rollout().events) == ["fc_01", "fc_02"]
