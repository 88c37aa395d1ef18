"""Which announced call a wrapped tool's call claims, and what its completion records."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from pytest_rollout.format.recorder import Recorder
from pytest_rollout.replay.mode import Mode
from pytest_rollout.replay.turn import ToolCall, Turn
from pytest_rollout.session.rollout import RolloutSession
from pytest_rollout.session.setup import RunSetup
from pytest_rollout.session.tools import AnnouncedCalls


def test_first_call_with_equal_arguments_is_claimed_even_if_later_bytes_match() -> None:
    calls = AnnouncedCalls()
    calls.announce(
        [
            ToolCall("first", "lookup", {"b": 2, "a": 1}),  # equal as data, other key order
            ToolCall("second", "lookup", {"a": 1, "b": 2}),  # the very same bytes
        ]
    )
    assert calls.started("lookup", {"a": 1, "b": 2})[0]["call_id"] == "first"
    assert calls.started("lookup", {"a": 1, "b": 2})[0]["call_id"] == "second"
    assert calls.started("lookup", {"a": 1, "b": 2})[0]["call_id"] is None


def test_changed_arguments_still_claim_the_call_of_that_name() -> None:
    calls = AnnouncedCalls()
    calls.announce([ToolCall("only", "lookup", {"a": 1})])
    assert calls.started("lookup", {"a": 2})[0]["call_id"] == "only"


def test_a_call_is_encoded_once_with_the_id_of_the_call_it_claims() -> None:
    calls = AnnouncedCalls()
    calls.announce([ToolCall("c1", "lookup", {"q": "x"}), ToolCall("c2", "lookup", {"q": "y"})])
    data, payload = calls.started("lookup", {"q": "y"})
    assert data["call_id"] == "c2"
    assert payload == b'{"call_id":"c2","name":"lookup","arguments":{"q":"y"}}'
    data, payload = calls.started("lookup", {"q": "x"})
    assert payload == b'{"call_id":"c1","name":"lookup","arguments":{"q":"x"}}'


def test_arguments_changed_in_place_since_the_turn_are_recorded_as_they_are_called() -> None:
    calls = AnnouncedCalls()
    announced = ToolCall("only", "lookup", {"q": [1]})
    calls.announce([announced])
    announced.arguments["q"].append(2)  # the agent edits the list the turn gave it
    data, payload = calls.started("lookup", dict(announced.arguments))
    assert data["call_id"] == "only"
    assert payload == b'{"call_id":"only","name":"lookup","arguments":{"q":[1,2]}}'


class _Ambiguous:
    """A value whose ``==`` raises (as an array's does), recorded through ``model_dump``."""

    def model_dump(self, mode: str = "python") -> dict[str, int]:
        return {"a": 1}

    def __eq__(self, other: object) -> bool:
        raise ValueError("the truth value of an array is ambiguous")

    __hash__ = object.__hash__


def test_arguments_whose_equality_raises_are_claimed_by_their_recorded_form() -> None:
    calls = AnnouncedCalls()
    calls.announce(
        [ToolCall("other", "f", {"q": {"a": 2}}), ToolCall("mine", "f", {"q": {"a": 1}})]
    )
    data, payload = calls.started("f", {"q": _Ambiguous()})
    assert data["call_id"] == "mine"
    assert payload is not None
    assert payload.endswith(b'"arguments":{"q":{"a":1}}}')


class _Provider:
    model = "m"

    def complete(self, messages: object, tools: object = None, **params: object) -> Turn:
        return Turn(None, [ToolCall("call_1", "add", {"x": 1, "y": 2})])


def test_completed_call_records_its_duration_in_ms_to_the_microsecond(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    session = RolloutSession(RunSetup(test_id="t::claims", mode=Mode.RECORD), Recorder(path))
    provider = session.provider(_Provider())
    tools = session.tools({"add": lambda x, y: x + y})
    with session.run(prompt="p"):
        provider.complete([{"role": "user", "content": "go"}])
        assert tools["add"](x=1, y=2) == 3
    session.close()
    (done,) = [e for e in session.recorder.rollout().events if e.type == "tool.call.completed"]
    assert done.data["call_id"] == "call_1"
    assert done.data["output"] == 3
    duration = done.data["duration_ms"]
    assert type(duration) is float
    assert duration >= 0
    assert round(duration, 3) == duration


def _claim_on_threads(calls: AnnouncedCalls, arguments: list[dict[str, int]]) -> list[Any]:
    """Each argument object's claimed call id, the calls made at once on threads."""
    barrier = threading.Barrier(len(arguments))
    found: list[Any] = [None] * len(arguments)

    def call(index: int) -> None:
        barrier.wait()
        found[index] = calls.started("lookup", arguments[index])[0]["call_id"]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(arguments))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return found


def test_calls_made_at_once_on_threads_each_claim_their_own_announced_call() -> None:
    for _ in range(20):  # the threads interleave differently from round to round
        calls = AnnouncedCalls()
        calls.announce([ToolCall(f"c{i}", "lookup", {"n": i}) for i in range(8)])
        assert _claim_on_threads(calls, [{"n": i} for i in reversed(range(8))]) == [
            f"c{i}" for i in reversed(range(8))
        ]


def test_identical_calls_made_at_once_never_claim_the_same_announced_call() -> None:
    for _ in range(20):
        calls = AnnouncedCalls()
        calls.announce([ToolCall(f"c{i}", "lookup", {"n": 1}) for i in range(8)])
        found = _claim_on_threads(calls, [{"n": 1} for _ in range(8)])
        assert sorted(found) == [f"c{i}" for i in range(8)]
