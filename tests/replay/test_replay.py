"""The replay engine on its own: turns in order, tool calls by name and arguments within their
step."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_rollout import RecordedProvider, Recorder, ReplayDivergenceError
from pytest_rollout.diff.divergence import Divergence, DivergenceKind
from pytest_rollout.replay.history import TurnRequest, new_messages, request_hash
from pytest_rollout.replay.recorded import Replay
from pytest_rollout.replay.tool_errors import RecordedToolError, rebuild_error
from pytest_rollout.safety.redact import Redactor


def _recording(*, calls: list[tuple[Any, Any, Any]]) -> Replay:
    """One turn (whose request is the message list ['hi']) that makes ``calls``."""
    r = Recorder()
    r.emit("run.started", {})
    request: dict[str, Any] = {"messages": ["hi"], "tools": None, "params": {}}
    r.emit("llm.turn.started", {**request, "messages_hash": request_hash(["hi"], None, {})})
    r.emit("llm.turn.completed", {"content": "ok", "tool_calls": []})
    for call_id, arguments, output in calls:
        r.emit("tool.call.started", {"call_id": call_id, "name": "t", "arguments": arguments})
        r.emit("tool.call.completed", {"call_id": call_id, "name": "t", **output})
    r.emit("run.completed", {"outcome": "completed"})
    return Replay.from_rollout(r.rollout())


def test_calls_sharing_an_id_each_replay_their_own_result() -> None:
    replay = _recording(calls=[(None, {"i": i}, {"output": i * 10}) for i in range(3)])
    assert [replay.answer_call(1, "t", {"i": i}).output for i in range(3)] == [0, 10, 20]
    assert not [d for d in replay.leftovers() if d.kind is DivergenceKind.MISSING_CALL]


def test_other_arguments_for_a_recorded_tool_are_a_tool_call_mismatch() -> None:
    replay = _recording(calls=[("a", {"i": 0}, {"output": 0}), ("b", {"i": 1}, {"output": 1})])
    assert replay.answer_call(1, "t", {"i": 1}).output == 1  # any order: matched by arguments
    with pytest.raises(ReplayDivergenceError) as info:
        replay.answer_call(1, "t", {"i": 5})
    assert info.value.divergence.kind is DivergenceKind.TOOL_CALL_MISMATCH
    assert "recorded t(i=0), got t(i=5)" in str(info.value)


def test_arguments_compare_exactly_one_is_not_one_point_zero() -> None:
    replay = _recording(calls=[("a", {"n": 1}, {"output": 0})])
    with pytest.raises(ReplayDivergenceError):
        replay.answer_call(1, "t", {"n": 1.0})


def test_calls_past_the_recorded_ones_are_unrecorded() -> None:
    replay = _recording(calls=[])
    with pytest.raises(ReplayDivergenceError) as info:
        replay.answer_call(1, "t", {})
    assert info.value.divergence.kind is DivergenceKind.UNRECORDED_CALL


def test_recorded_provider_serves_turns_then_refuses() -> None:
    provider = RecordedProvider(_recording(calls=[]))
    assert provider.complete(["hi"]).content == "ok"
    assert provider.remaining == 0
    with pytest.raises(ReplayDivergenceError) as info:
        provider.complete(["hi", "again"])
    assert info.value.divergence.kind is DivergenceKind.UNRECORDED_TURN
    assert info.value.divergence.attribution == "harness"


def test_recorded_provider_checks_the_request() -> None:
    provider = RecordedProvider(_recording(calls=[]))
    with pytest.raises(ReplayDivergenceError) as info:
        provider.complete(["hello"])
    assert info.value.divergence.kind is DivergenceKind.PROMPT_MISMATCH
    assert 'messages[0]: recorded "hi", got "hello"' in info.value.divergence.detail


def test_missing_calls_are_found_at_the_next_turn_and_at_the_end() -> None:
    replay = _recording(calls=[("a", {}, {"output": 1})])
    with pytest.raises(ReplayDivergenceError) as info:
        replay.begin_turn(2)
    assert info.value.divergence.kind is DivergenceKind.MISSING_CALL
    untouched = _recording(calls=[("a", {}, {"output": 1})])
    assert [d.kind for d in untouched.leftovers()] == [
        DivergenceKind.MISSING_CALL,
        DivergenceKind.UNCONSUMED,
    ]


def test_recorded_errors_are_rebuilt_as_builtins_or_a_named_error() -> None:
    error = rebuild_error({"class": "KeyError", "message": "city"})
    assert type(error) is KeyError
    custom = rebuild_error({"class": "StationDown", "message": "offline"})
    assert isinstance(custom, RecordedToolError)
    assert type(custom).__name__ == "StationDown"
    assert str(custom) == "offline"
    assert isinstance(rebuild_error({"class": "SystemExit", "message": "0"}), RecordedToolError)


@pytest.mark.parametrize(
    ("previous", "current", "fresh"),
    [
        ([], ["a"], ["a"]),
        (["a"], ["a", "b"], ["b"]),
        (["a", "b"], ["x", "b", "c"], ["x", "b", "c"]),
    ],
    ids=["first", "appended", "rewritten"],
)
def test_new_messages(previous: list[str], current: list[str], fresh: list[str]) -> None:
    assert new_messages(previous, current) == fresh


def _raise_wrapped(divergence: ReplayDivergenceError, *, explicit: bool) -> None:
    try:
        raise divergence
    except ReplayDivergenceError as exc:
        if explicit:
            raise ConnectionError("Connection error.") from exc  # as an SDK wraps it
        raise RuntimeError("agent gave up")  # noqa: B904 (an implicit context, on purpose)


@pytest.mark.parametrize("explicit", [True, False])
def test_a_divergence_is_found_behind_the_errors_that_wrap_it(explicit: bool) -> None:
    from pytest_rollout.diff.divergence import caused_by_divergence

    divergence = ReplayDivergenceError(Divergence(DivergenceKind.PROMPT_MISMATCH, 1, "x"))
    with pytest.raises((ConnectionError, RuntimeError)) as raised:
        _raise_wrapped(divergence, explicit=explicit)
    assert caused_by_divergence(raised.value)


def test_other_errors_are_not_divergences() -> None:
    from pytest_rollout.diff.divergence import caused_by_divergence

    loop = ValueError("a")
    loop.__context__ = loop  # a cycle ends the walk
    assert not caused_by_divergence(loop)
    assert not caused_by_divergence(KeyError("b"))


def test_a_turn_is_matched_on_the_hash_its_caller_computed_once() -> None:
    """Replay takes the request's hash as the session computed it (it never hashes the whole
    request again), and redacts only what it shows when the request does not match."""
    redactor = Redactor(environ={})
    r = Recorder()
    r.emit("run.started", {})
    r.emit(
        "llm.turn.started",
        {"messages": ["hi"], "tools": None, "params": {}, "messages_hash": "0" * 64},
    )
    r.emit("llm.turn.completed", {"content": "ok", "tool_calls": []})
    r.emit("run.completed", {"outcome": "completed"})
    replay = Replay.from_rollout(r.rollout(), redact=redactor.redact)
    secret = "sk-proj-" + "Q7abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
    with pytest.raises(ReplayDivergenceError) as info:
        replay.next_turn(TurnRequest([f"hi {secret}"], None, {}, "1" * 64))
    assert info.value.divergence.kind is DivergenceKind.PROMPT_MISMATCH
    assert "[REDACTED:openai-key]" in str(info.value)
    assert secret not in str(info.value)
    assert replay.next_turn(TurnRequest(["hi"], None, {}, "0" * 64))["content"] == "ok"
