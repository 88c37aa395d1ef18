"""A model request's key renames its volatile values: a dated prompt recorded yesterday is the
same request today, a prompt that now holds two dates is not, and a golden keyed before the
renaming is replayed the way it was keyed."""

from __future__ import annotations

from typing import Any

import orjson

from pytest_rollout import Recorder, ToolCall, Turn
from pytest_rollout.diff.volatile import Volatile
from pytest_rollout.format.events import LLM_TURN_STARTED
from pytest_rollout.format.loader import Rollout, loads
from pytest_rollout.replay.history import RequestHistory, request_hash
from pytest_rollout.session import Mode, RolloutSession
from pytest_rollout.session.setup import RunSetup
from pytest_rollout.store.golden_store import LoadedGolden

GOLDEN = "golden/t/test_agent.jsonl"


class _Agent:
    """A provider that asks for one lookup, then answers."""

    def complete(self, messages: Any, tools: Any = None, **params: Any) -> Turn:
        if len(messages) == 1:
            return Turn(None, [ToolCall("c1", "lookup", {"q": "x"})])
        return Turn("done")


def _run(session: RolloutSession, prompt: str) -> None:
    provider = session.provider(_Agent())
    messages: list[Any] = [{"role": "system", "content": prompt}]
    with session.run():
        turn = provider.complete(messages, [], temperature=0)
        messages.append({"role": "assistant", "content": turn.content})
        messages.append({"role": "tool", "content": "found"})
        provider.complete(messages, [], temperature=0)
    session.close()


def _recorded(prompt: str) -> Rollout:
    session = RolloutSession(RunSetup(test_id="t.py::test_agent"), Recorder())
    _run(session, prompt)
    return session.recorder.rollout()


def _replayed(golden: Rollout, prompt: str) -> RolloutSession:
    replay = RolloutSession(
        RunSetup(test_id="t.py::test_agent", mode=Mode.DRY),
        Recorder(),
        LoadedGolden.of(golden, GOLDEN),
    )
    try:
        _run(replay, prompt)
    except Exception:  # the divergence, raised to the agent; the engine keeps it
        replay.close()
    return replay


def _without_key_form(rollout: Rollout) -> Rollout:
    """The golden as it was recorded before request keys renamed volatile values."""
    lines = []
    conversation: list[Any] = []
    for event in rollout.events:
        data = dict(event.data)
        if event.type == LLM_TURN_STARTED:
            del data["key_volatile"]
            conversation += data["messages"]
            data["messages_hash"] = request_hash(conversation, data["tools"], data["params"])
        envelope = {"ts": event.ts, "seq": event.seq, "type": event.type, "data": data}
        lines.append(orjson.dumps(envelope))
    return loads(b"\n".join(lines) + b"\n", path=GOLDEN)


def test_a_prompt_dated_yesterday_is_todays_request() -> None:
    golden = _recorded("You are a helper. Today is 2026-12-01.")
    started = [e.data for e in golden.events if e.type == LLM_TURN_STARTED]
    assert {s["key_volatile"] for s in started} == {"builtin-1"}
    replay = _replayed(golden, "You are a helper. Today is 2026-12-02.")
    assert replay.engine.divergences() == []


def test_a_prompt_with_two_dates_where_it_had_one_is_another_request() -> None:
    golden = _recorded("Today is 2026-12-01.")
    replay = _replayed(golden, "Today is 2026-12-02. Yesterday was 2026-12-01.")
    divergence = replay.engine.divergences()[0]
    assert divergence.kind.value == "prompt_mismatch"
    assert (
        "messages[0].content: recorded "
        '"Today is <date#1>.", got "Today is <date#1>. Yesterday was <date#2>."'
    ) in divergence.detail
    assert "re-record" not in divergence.detail


def test_a_golden_keyed_before_the_renaming_replays_as_it_was_keyed() -> None:
    old = _without_key_form(_recorded("Today is 2026-12-01."))
    assert _replayed(old, "Today is 2026-12-01.").engine.divergences() == []
    divergence = _replayed(old, "Today is 2026-12-02.").engine.divergences()[0]
    assert divergence.kind.value == "prompt_mismatch"
    assert 'recorded "Today is 2026-12-01.", got "Today is 2026-12-02."' in divergence.detail


def test_a_golden_keyed_with_other_rules_says_to_record_it_again() -> None:
    session = RolloutSession(
        RunSetup(
            test_id="t.py::test_agent",
            options=RunSetup().options.extended(
                volatile=Volatile().with_declared([("ticket", "T-[0-9]+")])
            ),
        ),
        Recorder(),
    )
    _run(session, "Ticket T-1 on 2026-12-01.")
    divergence = _replayed(
        session.recorder.rollout(), "Ticket T-2 on 2026-12-02."
    ).engine.divergences()[0]
    assert divergence.kind.value == "prompt_mismatch"
    assert (
        "the golden's request keys were taken with volatile rules builtin-1+" in divergence.detail
    )
    assert "this run's with volatile rules builtin-1: re-record the golden" in divergence.detail


def test_the_running_key_is_the_whole_requests_renamed_key() -> None:
    volatile = Volatile()
    history = RequestHistory(volatile=volatile)
    first = [
        {
            "role": "system",
            "content": "Today is 2026-12-01, id 4f0c1e2a-1b2c-4d3e-8f90-0123456789ab",
        }
    ]
    second = [
        *first,
        {"role": "tool", "content": "4f0c1e2a-1b2c-4d3e-8f90-0123456789ab on 2026-12-01"},
    ]
    params = {"date": "2026-12-01"}
    history.request(0, first, first, [], params)
    key = history.request(1, second[1:], second[1:], [], params)
    assert key.messages_hash == request_hash(second, [], params, volatile)
    assert key.key_volatile == "builtin-1"
    fresh = [
        {
            "role": "system",
            "content": "Today is 2026-12-02, id 9f0c1e2a-1b2c-4d3e-8f90-0123456789ab",
        },
        {"role": "tool", "content": "9f0c1e2a-1b2c-4d3e-8f90-0123456789ab on 2026-12-02"},
    ]
    assert request_hash(fresh, [], {"date": "2026-12-02"}, volatile) == key.messages_hash
    # The tool result now names yesterday: the relation changed, and so does the key.
    stale = [
        fresh[0],
        {"role": "tool", "content": "9f0c1e2a-1b2c-4d3e-8f90-0123456789ab on 2026-12-01"},
    ]
    assert request_hash(stale, [], {"date": "2026-12-02"}, volatile) != key.messages_hash
