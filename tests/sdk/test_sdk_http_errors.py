"""Error responses the agent handles itself: recorded as failed turns, replayed as the same
HTTP error so that the agent's recovery path replays too; the SDK's own retries stay out."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
from fake_models import (
    ANTHROPIC_BASE_URL,
    ANTHROPIC_MESSAGES,
    OPENAI_BASE_URL,
    OPENAI_CHAT,
    Fail,
    FakeModel,
    Say,
    offline_transport,
)
from sessions import new_session

from pytest_rollout.format.events import LLM_TURN_COMPLETED, LLM_TURN_FAILED, LLM_TURN_STARTED
from pytest_rollout.format.loader import Rollout
from pytest_rollout.session import Mode, RolloutSession

LONG = "Summarise this: " + "very long text " * 20
SHORT = "Summarise this briefly."


def _ask(client: Any, prompt: str) -> str:
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
    )
    return str(reply.choices[0].message.content)


def shortening_agent(client: Any) -> str:
    """Asks with the long prompt; on a 400 asks again with a shorter one."""
    try:
        return _ask(client, LONG)
    except openai.BadRequestError:
        return "short: " + _ask(client, SHORT)


def _run(session: RolloutSession, transport: Any, **options: Any) -> str:
    client = session.openai(
        transport=transport, api_key="sk-test", base_url=OPENAI_BASE_URL, **options
    )
    client._sleep_for_retry = lambda **_: None  # no back-off wait in the test
    with session.run(prompt="summarise") as run:
        run.output = shortening_agent(client)
    session.close()
    return str(run.output)


def _types(golden: Rollout) -> list[str]:
    kinds = (LLM_TURN_STARTED, LLM_TURN_COMPLETED, LLM_TURN_FAILED)
    return [e.type for e in golden.events if e.type in kinds]


def test_a_handled_400_is_a_failed_turn_and_its_recovery_replays_offline() -> None:
    session = new_session(Mode.RECORD)
    fake = FakeModel(OPENAI_CHAT, (Fail(400, "The prompt is too long."), Say("Done.")))
    assert _run(session, fake.transport()) == "short: Done."
    golden = session.recorder.rollout()
    assert _types(golden) == [
        LLM_TURN_STARTED,
        LLM_TURN_FAILED,
        LLM_TURN_STARTED,
        LLM_TURN_COMPLETED,
    ]
    [failed] = [e for e in golden.events if e.type == LLM_TURN_FAILED]
    assert failed.step == 1
    assert failed.data["error"] == {
        "class": "BadRequestError",
        "message": "Error code: 400 - The prompt is too long.",
    }
    response = failed.data["response"]
    assert response["status"] == 400
    assert response["content_type"] == "application/json"
    assert response["body"]["error"]["message"] == "The prompt is too long."

    replay = new_session(Mode.DRY, golden)
    offline = FakeModel.offline()
    assert _run(replay, offline.transport()) == "short: Done."
    assert offline.requests == []
    verdict = replay.verdict()
    assert verdict.matched, verdict.divergences
    assert _types(replay.recorder.rollout()) == _types(golden)


def test_a_429_the_service_says_not_to_retry_is_a_failed_turn_the_agent_backs_off_from() -> None:
    def backing_off_agent(client: Any) -> str:
        try:
            return _ask(client, SHORT)
        except openai.RateLimitError:
            return "later: " + _ask(client, SHORT)  # the same request, after its own wait

    fake = FakeModel(OPENAI_CHAT, (Fail(429, "Slow down.", retry=False), Say("Done.")))
    session = new_session(Mode.RECORD)
    client = session.openai(transport=fake.transport(), api_key="sk-test", base_url=OPENAI_BASE_URL)
    with session.run() as run:
        run.output = backing_off_agent(client)
    session.close()
    golden = session.recorder.rollout()
    assert _types(golden) == [
        LLM_TURN_STARTED,
        LLM_TURN_FAILED,
        LLM_TURN_STARTED,
        LLM_TURN_COMPLETED,
    ]
    [failed] = [e for e in golden.events if e.type == LLM_TURN_FAILED]
    assert failed.data["error"]["class"] == "RateLimitError"

    replay = new_session(Mode.DRY, golden)
    client = replay.openai(transport=offline_transport(), base_url=OPENAI_BASE_URL, max_retries=3)
    with replay.run() as run:
        run.output = backing_off_agent(client)  # the served 429 is not retried by the SDK
    assert run.output == "later: Done."
    assert replay.verdict().matched, replay.verdict().divergences


def test_only_the_attempt_the_sdk_gives_up_on_is_a_turn() -> None:
    fake = FakeModel(
        OPENAI_CHAT,
        (Fail(429, "Busy."), Fail(500, "Oops."), Fail(429, "Still busy."), Say("Done.")),
    )
    session = new_session(Mode.RECORD)
    client = session.openai(
        transport=fake.transport(), api_key="sk-test", base_url=OPENAI_BASE_URL, max_retries=2
    )
    client._sleep_for_retry = lambda **_: None
    with session.run() as run:
        try:
            _ask(client, SHORT)  # three attempts, all failed
        except openai.RateLimitError:
            run.output = _ask(client, SHORT)
    session.close()
    golden = session.recorder.rollout()
    assert _types(golden) == [
        LLM_TURN_STARTED,
        LLM_TURN_FAILED,
        LLM_TURN_STARTED,
        LLM_TURN_COMPLETED,
    ]
    [failed] = [e for e in golden.events if e.type == LLM_TURN_FAILED]
    assert failed.data["error"]["message"] == "Error code: 429 - Still busy."


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_an_anthropic_error_the_agent_handles_replays_as_the_same_exception(stream: bool) -> None:
    def agent(client: Any) -> str:
        request = {
            "model": "claude-haiku-4-5",
            "max_tokens": 50,
            "messages": [{"role": "user", "content": LONG}],
        }
        try:
            if stream:
                with client.messages.stream(**request) as events:
                    return str(events.get_final_message().content[0].text)
            return str(client.messages.create(**request).content[0].text)
        except anthropic.BadRequestError as exc:
            return type(exc).__name__

    fake = FakeModel(ANTHROPIC_MESSAGES, (Fail(400, "Too long."),))
    session = new_session(Mode.RECORD)
    client = session.anthropic(
        transport=fake.transport(), api_key="sk-test", base_url=ANTHROPIC_BASE_URL
    )
    with session.run() as run:
        run.output = agent(client)
    session.close()
    assert run.output == "BadRequestError"
    golden = session.recorder.rollout()
    replay = new_session(Mode.DRY, golden)
    client = replay.anthropic(transport=offline_transport(), base_url=ANTHROPIC_BASE_URL)
    with replay.run() as run:
        run.output = agent(client)
    assert run.output == "BadRequestError"
    assert replay.verdict().matched, replay.verdict().divergences
