"""Tool results put in the order their calls were announced, on each API's shapes."""

from __future__ import annotations

import copy
from typing import Any

from pytest_rollout.diff.call_order import results_in_call_order
from pytest_rollout.diff.canonical import canonicalize
from pytest_rollout.format.events import LLM_TURN_STARTED, Event
from pytest_rollout.replay.history import RequestHistory


def chat(*completed: str) -> list[dict[str, Any]]:
    """A Chat Completions history: calls a, b, c announced, results in ``completed`` order."""
    calls = [{"id": f"call_{n}", "type": "function"} for n in "abc"]
    results = [{"role": "tool", "tool_call_id": f"call_{n}", "content": n} for n in completed]
    return [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": calls}, *results]


def test_chat_results_follow_the_announced_calls_and_the_input_is_left_alone() -> None:
    messages = chat("c", "a", "b")
    before = copy.deepcopy(messages)
    ordered = results_in_call_order(messages)
    assert ordered == chat("a", "b", "c")
    assert messages == before
    assert results_in_call_order(chat("a", "b", "c")) is None


def test_responses_items_are_ordered_within_each_run_of_outputs() -> None:
    def call(n: str) -> dict[str, Any]:
        return {"type": "function_call", "call_id": n, "name": "f", "arguments": "{}"}

    def output(n: str) -> dict[str, Any]:
        return {"type": "function_call_output", "call_id": n, "output": n}

    items = [call("x"), call("y"), output("y"), output("x"), call("z"), output("z")]
    assert results_in_call_order(items) == [
        call("x"),
        call("y"),
        output("x"),
        output("y"),
        call("z"),
        output("z"),
    ]
    # Interleaved (each output right after its call): nothing to order.
    assert results_in_call_order([call("x"), output("x"), call("y"), output("y")]) is None


def test_anthropic_tool_result_blocks_are_ordered_inside_their_message() -> None:
    uses = [{"type": "tool_use", "id": f"toolu_{n}", "name": "f", "input": {}} for n in "ab"]
    results = [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": n} for n in "ba"]
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": uses},
        {"role": "user", "content": [*results, {"type": "text", "text": "and?"}]},
    ]
    ordered = results_in_call_order(messages)
    assert ordered is not None
    assert [b.get("tool_use_id") for b in ordered[1]["content"]] == ["toolu_a", "toolu_b", None]
    assert messages[1]["content"][0]["tool_use_id"] == "toolu_b"


def test_results_of_calls_not_in_the_list_keep_their_order() -> None:
    # A Responses request continuing previous_response_id: the outputs come without calls.
    outputs = [{"type": "function_call_output", "call_id": n, "output": ""} for n in "ba"]
    assert results_in_call_order(outputs) is None
    assert results_in_call_order("not a list") is None


def test_the_comparison_and_the_request_key_do_not_see_completion_order() -> None:
    def compared(*completed: str) -> list[bytes]:
        event = Event(1, "", LLM_TURN_STARTED, {"messages": chat(*completed), "step": 2}, 2)
        return [c.key for c in canonicalize([event])]

    assert compared("b", "a", "c") == compared("a", "b", "c")
    assert compared("a", "b") != compared("a", "b", "c")

    def key(messages: list[dict[str, Any]]) -> str:
        return RequestHistory().request(0, messages, messages, None, {}).messages_hash

    assert key(chat("c", "b", "a")) == key(chat("a", "b", "c"))
    assert key(chat("c", "b")) != key(chat("b", "c", "a"))
