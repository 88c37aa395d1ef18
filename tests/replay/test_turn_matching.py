"""Replay answers what the agent asks, in the order it asks (docs/replay.md).

Tool calls of a step are answered by name and arguments, whatever order parallel calls are
made in; model requests that overlap are matched to the next few recorded turns by their
request hash; a model error the agent handled was recorded as a failed turn and is served
again like any other turn.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_rollout import ReplayDivergenceError
from pytest_rollout.diff.divergence import DivergenceKind
from pytest_rollout.format.events import Event
from pytest_rollout.replay.history import TurnRequest, request_hash
from pytest_rollout.replay.recorded import Recording, Replay


class _Events:
    """Events written by hand, each at the step it is given."""

    def __init__(self) -> None:
        self.events: list[Event] = [Event(0, "", "run.started", {}, 0)]

    def add(self, kind: str, step: int, **data: Any) -> _Events:
        self.events.append(Event(len(self.events), "", kind, data, step))
        return self

    def turn(self, step: int, prompt: str, calls: Sequence[tuple[str, str, Any]] = ()) -> _Events:
        self.add("llm.turn.started", step, messages=[prompt], messages_hash=_hash(prompt))
        announced = [{"id": i, "name": n, "arguments": a} for i, n, a in calls]
        return self.add("llm.turn.completed", step, content=prompt, tool_calls=announced)

    def call(self, step: int, call_id: str, name: str, arguments: Any) -> _Events:
        return self.add("tool.call.started", step, call_id=call_id, name=name, arguments=arguments)

    def done(self, step: int, call_id: str, name: str, **result: Any) -> _Events:
        return self.add("tool.call.completed", step, call_id=call_id, name=name, **result)

    def replay(self) -> Replay:
        return Replay(Recording.from_events(self.events))


def _hash(prompt: str) -> str:
    return request_hash([prompt], None, {})


def _ask(prompt: str) -> TurnRequest:
    return TurnRequest([prompt], None, {}, _hash(prompt))


CALLS = [("c1", "weather", {"city": "Paris"}), ("c2", "weather", {"city": "Rome"})]


def _parallel() -> _Events:
    """Two weather calls announced Paris then Rome, which finished Rome first."""
    run = _Events().turn(1, "go", CALLS)
    run.call(1, "c1", "weather", {"city": "Paris"}).call(1, "c2", "weather", {"city": "Rome"})
    run.done(1, "c2", "weather", output="sun").done(1, "c1", "weather", output="rain")
    return run.turn(2, "then")


# -- tool calls ------------------------------------------------------------------------


def test_calls_are_answered_by_name_and_arguments_in_any_order() -> None:
    replay = _parallel().replay()
    replay.next_turn(_ask("go"))
    assert replay.answer_call(1, "weather", {"city": "Rome"}).output == "sun"
    assert replay.answer_call(1, "weather", {"city": "Paris"}).output == "rain"
    replay.next_turn(_ask("then"))
    assert replay.leftovers() == []
    assert replay.divergences == []


def test_recorded_calls_take_the_order_their_turn_announced() -> None:
    run = _Events().turn(1, "go", CALLS)
    run.call(1, "c2", "weather", {"city": "Rome"}).call(1, "c1", "weather", {"city": "Paris"})
    run.done(1, "c2", "weather", output="sun").done(1, "c1", "weather", output="rain")
    calls = Recording.from_events(run.events).calls[1]
    assert [(c.position, c.arguments, c.output) for c in calls] == [
        (0, {"city": "Paris"}, "rain"),
        (1, {"city": "Rome"}, "sun"),
    ]


def test_calls_made_on_threads_in_any_order_replay_green() -> None:
    replay = _parallel().replay()
    answers: dict[str, Any] = {}

    def call(city: str) -> None:
        answers[city] = replay.answer_call(1, "weather", {"city": city}).output

    threads = [threading.Thread(target=call, args=(city,)) for city in ("Rome", "Paris")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {"Paris": "rain", "Rome": "sun"}
    assert replay.divergences == []


def test_calls_gathered_by_asyncio_replay_green() -> None:
    replay = _parallel().replay()

    async def call(city: str, delay: float) -> Any:
        await asyncio.sleep(delay)
        return replay.answer_call(1, "weather", {"city": city}).output

    async def main() -> list[Any]:
        return list(await asyncio.gather(call("Paris", 0.01), call("Rome", 0)))

    assert asyncio.run(main()) == ["rain", "sun"]
    assert replay.divergences == []


def test_other_arguments_for_a_recorded_tool_are_a_mismatch_naming_both() -> None:
    replay = _parallel().replay()
    replay.answer_call(1, "weather", {"city": "Paris"})
    with pytest.raises(ReplayDivergenceError) as info:
        replay.answer_call(1, "weather", {"city": "Oslo"})
    divergence = info.value.divergence
    assert divergence.kind is DivergenceKind.TOOL_CALL_MISMATCH
    assert divergence.detail == (
        'call #2 of step 1: recorded weather(city="Rome"), got weather(city="Oslo")'
    )


def test_a_tool_the_step_never_called_is_unrecorded() -> None:
    replay = _parallel().replay()
    with pytest.raises(ReplayDivergenceError) as info:
        replay.answer_call(1, "time", {"city": "Paris"})
    divergence = info.value.divergence
    assert divergence.kind is DivergenceKind.UNRECORDED_CALL
    assert divergence.detail == (
        'call #1 of step 1, time(city="Paris"), is not in the recording '
        "(it holds 2 call(s) at this step)"
    )


def test_a_call_made_twice_is_unrecorded_the_second_time() -> None:
    replay = _parallel().replay()
    replay.answer_call(1, "weather", {"city": "Rome"})
    replay.answer_call(1, "weather", {"city": "Paris"})
    with pytest.raises(ReplayDivergenceError) as info:
        replay.answer_call(1, "weather", {"city": "Rome"})
    assert info.value.divergence.kind is DivergenceKind.UNRECORDED_CALL
    assert info.value.divergence.detail.startswith("call #3 of step 1,")


def test_a_call_never_made_is_missing_whichever_one_it_is() -> None:
    replay = _parallel().replay()
    replay.next_turn(_ask("go"))
    replay.answer_call(1, "weather", {"city": "Rome"})
    with pytest.raises(ReplayDivergenceError) as info:
        replay.next_turn(_ask("then"))
    divergence = info.value.divergence
    assert divergence.kind is DivergenceKind.MISSING_CALL
    assert divergence.detail == (
        'the recording has call #1 of step 1, weather(city="Paris"), but the agent moved on '
        "to the next turn without making it"
    )
    untouched = _parallel().replay()
    untouched.answer_call(1, "weather", {"city": "Paris"})
    missing = [d for d in untouched.leftovers() if d.kind is DivergenceKind.MISSING_CALL]
    assert [d.detail for d in missing] == [
        'the recording has call #2 of step 1, weather(city="Rome"), which was never made'
    ]


def test_a_refused_call_is_not_reported_missing_as_well() -> None:
    replay = _parallel().replay()
    with pytest.raises(ReplayDivergenceError):
        replay.answer_call(1, "weather", {"city": "Oslo"})
    replay.answer_call(1, "weather", {"city": "Rome"})
    assert not [d for d in replay.leftovers() if d.kind is DivergenceKind.MISSING_CALL]


def test_a_recorded_result_type_is_read_from_its_completion() -> None:
    run = _Events().turn(1, "go", [("c1", "forecast", {})]).call(1, "c1", "forecast", {})
    run.done(1, "c1", "forecast", output={"sky": "sun"}, output_type="weather.models:Forecast")
    run.turn(2, "then", [("c2", "forecast", {})]).call(2, "c2", "forecast", {})
    run.done(2, "c2", "forecast", output="plain")
    calls = Recording.from_events(run.events).calls
    assert calls[1][0].output_type == "weather.models:Forecast"
    assert calls[2][0].output_type is None


# -- model turns -----------------------------------------------------------------------


def _three_turns() -> Replay:
    return _Events().turn(1, "a").turn(2, "b").turn(3, "c").replay()


def test_without_lookahead_turns_are_served_strictly_in_order() -> None:
    replay = _three_turns()
    with pytest.raises(ReplayDivergenceError) as info:
        replay.next_turn(_ask("b"))
    assert info.value.divergence.kind is DivergenceKind.PROMPT_MISMATCH
    assert info.value.divergence.step == 1


def test_overlapping_requests_are_matched_among_the_next_turns() -> None:
    replay = _three_turns()
    assert replay.next_turn(_ask("b"), lookahead=1)["content"] == "b"
    assert replay.next_turn(_ask("a"), lookahead=1)["content"] == "a"
    assert replay.next_turn(_ask("c"))["content"] == "c"
    assert replay.leftovers() == []
    with pytest.raises(ReplayDivergenceError) as info:
        replay.next_turn(_ask("d"))
    assert info.value.divergence.kind is DivergenceKind.UNRECORDED_TURN
    assert info.value.divergence.step == 4
    assert "asked for turn 4 but the recording holds only 3 turn(s)" in str(info.value)


def test_a_request_beyond_the_window_is_a_prompt_mismatch_of_the_first_open_turn() -> None:
    replay = _three_turns()
    with pytest.raises(ReplayDivergenceError) as info:
        replay.next_turn(_ask("c"), lookahead=1)
    assert info.value.divergence.kind is DivergenceKind.PROMPT_MISMATCH
    assert info.value.divergence.step == 1
    assert replay.next_turn(_ask("a"), lookahead=1)["content"] == "a"


def test_turns_left_unserved_after_an_out_of_order_one_are_reported() -> None:
    replay = _three_turns()
    replay.next_turn(_ask("b"), lookahead=2)
    unconsumed = [d for d in replay.leftovers() if d.kind is DivergenceKind.UNCONSUMED]
    assert [(d.step, d.detail) for d in unconsumed] == [
        (1, "2 recorded turn(s) from step 1 on were never asked for: the run stopped early")
    ]


def test_a_live_turn_passes_the_recorded_one_by() -> None:
    replay = _three_turns()
    replay.live_turn(1)
    replay.live_turn(2)
    assert replay.next_turn(_ask("c"))["content"] == "c"
    assert replay.leftovers() == []


# -- handled model errors --------------------------------------------------------------

RATE_LIMITED = {
    "status": 429,
    "content_type": "application/json",
    "body": {"error": {"message": "slow down", "type": "rate_limit_exceeded"}},
}


def test_a_handled_error_response_is_a_recorded_turn_served_in_its_place() -> None:
    run = _Events()
    run.add("llm.turn.started", 1, messages=["a"], messages_hash=_hash("a"))
    run.add("llm.turn.failed", 1, error={"class": "RateLimitError"}, response=RATE_LIMITED)
    run.turn(2, "a")
    recording = Recording.from_events(run.events)
    assert [(t.step, t.failed) for t in recording.turns] == [(1, True), (2, False)]
    replay = Replay(recording)
    first = replay.next_recorded_turn(_ask("a"))
    assert first.failed
    assert first.turn["response"] == RATE_LIMITED
    assert replay.next_turn(_ask("a"))["content"] == "a"
    assert replay.leftovers() == []


def test_a_failed_turn_without_a_response_is_not_served() -> None:
    run = _Events()
    run.add("llm.turn.started", 1, messages=["a"], messages_hash=_hash("a"))
    run.add("llm.turn.failed", 1, error={"class": "APIConnectionError"})
    run.turn(2, "a")
    recording = Recording.from_events(run.events)
    assert [(t.step, t.failed) for t in recording.turns] == [(2, False)]
