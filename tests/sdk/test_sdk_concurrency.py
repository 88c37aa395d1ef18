"""Model calls sent side by side: recorded in an order that does not depend on which answer
came first, and replayed green with the service gone."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fake_models import OPENAI_BASE_URL, OPENAI_CHAT, FakeModel, Say, Slow, offline_transport
from sessions import new_session

from pytest_rollout.diff.compare import compare
from pytest_rollout.format.events import LLM_TURN_COMPLETED, LLM_TURN_STARTED
from pytest_rollout.format.loader import Rollout
from pytest_rollout.session import Mode, RolloutSession

QUESTIONS = ("Paris?", "Oslo?", "Lima?")
ANSWERS = {"Paris?": "Sunny.", "Oslo?": "Cold.", "Lima?": "Grey."}


def _fake(latencies: Mapping[str, float]) -> FakeModel:
    answers = {q: Slow(Say(ANSWERS[q]), latencies.get(q, 0.0)) for q in QUESTIONS}
    return FakeModel(OPENAI_CHAT, answers=answers)


def _request(question: str) -> dict[str, Any]:
    return {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Answer in one word."},
            {"role": "user", "content": question},
        ],
    }


async def _fan_out(client: Any) -> list[str]:
    replies = await asyncio.gather(
        *(client.chat.completions.create(**_request(q)) for q in QUESTIONS)
    )
    return [r.choices[0].message.content for r in replies]


def _run_async(session: RolloutSession, transport: Any) -> list[str]:
    client = session.async_openai(transport=transport, api_key="sk-test", base_url=OPENAI_BASE_URL)
    with session.run(prompt="fan out") as run:
        run.output = asyncio.run(_fan_out(client))
    session.close()
    return list(run.output)


def _run_threads(session: RolloutSession, transport: Any) -> list[str]:
    client = session.openai(transport=transport, api_key="sk-test", base_url=OPENAI_BASE_URL)
    with session.run(prompt="fan out") as run, ThreadPoolExecutor(3) as pool:
        replies = list(pool.map(lambda q: client.chat.completions.create(**_request(q)), QUESTIONS))
        run.output = [r.choices[0].message.content for r in replies]
    session.close()
    return list(run.output)


def _turn_questions(golden: Rollout) -> list[str]:
    started = [e for e in golden.events if e.type == LLM_TURN_STARTED]
    return [e.data["messages"][-1]["content"] for e in started]


def _paired(events: Sequence[Any]) -> list[str]:
    return [e.type for e in events if e.type in (LLM_TURN_STARTED, LLM_TURN_COMPLETED)]


@pytest.mark.parametrize("runner", [_run_async, _run_threads], ids=["gather", "threads"])
def test_overlapping_calls_record_the_same_whatever_answers_first(
    runner: Any,
) -> None:
    recordings = []
    # every answer takes a while, as a real service's does, so the three calls overlap
    for latencies in (
        {"Paris?": 0.15, "Oslo?": 0.05, "Lima?": 0.01},
        {"Oslo?": 0.15, "Lima?": 0.05, "Paris?": 0.01},
    ):
        session = new_session(Mode.RECORD)
        assert runner(session, _fake(latencies).transport()) == [ANSWERS[q] for q in QUESTIONS]
        recordings.append(session.recorder.rollout())
    first, second = recordings
    # started, completed pairs, in the order of their request keys, not of their answers
    assert _paired(first.events) == [LLM_TURN_STARTED, LLM_TURN_COMPLETED] * 3
    assert _turn_questions(first) == _turn_questions(second)
    hashes = [e.data["messages_hash"] for e in first.events if e.type == LLM_TURN_STARTED]
    assert hashes == sorted(hashes)
    assert compare(first.events, second.events).identical

    replay = new_session(Mode.DRY, first)
    assert runner(replay, offline_transport()) == [ANSWERS[q] for q in QUESTIONS]
    verdict = replay.verdict()
    assert verdict.matched, verdict.divergences
    assert compare(first.events, replay.recorder.rollout().events).identical


def test_each_of_several_siblings_records_only_its_own_new_message() -> None:
    session = new_session(Mode.RECORD)
    _run_async(session, _fake({"Paris?": 0.1, "Oslo?": 0.01}).transport())
    started = [e for e in session.recorder.rollout().events if e.type == LLM_TURN_STARTED]
    # no sibling extends another: each request is recorded whole, whichever came first
    assert [len(e.data["messages"]) for e in started] == [2, 2, 2]


def test_a_sequential_call_after_a_fan_out_counts_from_the_request_it_extends() -> None:
    session = new_session(Mode.RECORD)
    fake = FakeModel(OPENAI_CHAT, answers={**ANSWERS, "And Rome?": "Warm."})
    client = session.async_openai(
        transport=fake.transport(), api_key="sk-test", base_url=OPENAI_BASE_URL
    )

    async def agent() -> str:
        await _fan_out(client)
        follow = _request("Paris?")
        follow["messages"] += [
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "And Rome?"},
        ]
        reply = await client.chat.completions.create(**follow)
        return str(reply.choices[0].message.content)

    with session.run():
        asyncio.run(agent())
    session.close()
    last = [e for e in session.recorder.rollout().events if e.type == LLM_TURN_STARTED][-1]
    assert [m["content"] for m in last.data["messages"]] == ["Sunny.", "And Rome?"]
