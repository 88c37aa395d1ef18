"""The recording endpoint (``rollout.endpoint()``): agents in other processes, a Python one on
the OpenAI SDK and a Node one on bare ``fetch``, recorded through it from a fake service on
127.0.0.1 (fresh ids, timestamps and uneven latency on every call), re-recorded to the same
golden, and replayed with the service stopped."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx2
import pytest
from endpoint_agents import (
    ANSWER,
    EXTRA,
    FIRST_ANSWER,
    FOLLOW_UP,
    QUESTION,
    SECOND_ANSWER,
    agent_command,
    run_agent,
)
from fake_models import OPENAI_CHAT, FakeModel, Say
from fake_service import FakeService
from sessions import new_session

from pytest_rollout import RolloutError
from pytest_rollout.diff.divergence import DivergenceKind
from pytest_rollout.format.events import ERROR_CONTEXT, LLM_TURN_COMPLETED, LLM_TURN_STARTED
from pytest_rollout.format.loader import Rollout
from pytest_rollout.safety.redact import Redactor
from pytest_rollout.sdk.endpoint import PLACEHOLDER_KEY
from pytest_rollout.session import Mode, RolloutSession
from pytest_rollout.store.golden_store import GoldenStore, Kept

pytestmark = pytest.mark.slow  # each test starts servers and agent processes

#: The key of the test's own environment: what the service must get, and the golden never hold.
REAL_KEY = "sk-endpoint-test-0123456789abcdefghijklmnop"
AGENTS = ["python", "node"]


def _model(**answers: str) -> FakeModel:
    """The fake OpenAI model, answering each question by its text (any number of times)."""
    keyed = {QUESTION: Say(FIRST_ANSWER), FOLLOW_UP: Say(SECOND_ANSWER), EXTRA: Say("Dry.")}
    keyed.update({k: Say(v) for k, v in answers.items()})
    return FakeModel(OPENAI_CHAT, answers=keyed)


def _run(session: RolloutSession, command: list[str], upstream: str | None, **extra: str) -> Any:
    endpoint = session.endpoint(upstream=upstream)
    with session.run(prompt=QUESTION) as run:
        done = run_agent(command, endpoint.env(), **extra)
        run.output = done.stdout.strip()
    session.close()
    assert endpoint.stopped
    return done


def _recording(command: list[str], service: FakeService) -> RolloutSession:
    session = new_session(Mode.RECORD)
    done = _run(session, command, service.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER
    return session


def _record(command: list[str], service: FakeService) -> Rollout:
    return _recording(command, service).recorder.rollout()


@pytest.fixture
def real_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
    return REAL_KEY


@pytest.mark.parametrize("kind", AGENTS)
def test_an_agent_in_another_process_records_rerecords_and_replays_offline(
    kind: str, tmp_path: Path, real_key: str
) -> None:
    command = agent_command(kind, tmp_path)
    with FakeService(_model()) as service:
        first, second = _recording(command, service), _recording(command, service)
        hits = service.hits
    # The service got the test's key; the agent only ever held the placeholder.
    assert hits == 4
    assert {h.get("authorization") for h in service.headers} == {f"Bearer {real_key}"}
    events = first.recorder.rollout().events
    turns = [e for e in events if e.type == LLM_TURN_COMPLETED]
    assert [t.data["content"] for t in turns] == [FIRST_ANSWER, SECOND_ANSWER]
    assert "frames" in turns[1].data["raw"]  # the follow-up was streamed, and kept as a stream
    started = [e.data["messages"] for e in events if e.type == LLM_TURN_STARTED]
    assert started[1][-1] == {"role": "user", "content": FOLLOW_UP}
    # The golden holds no key, and a re-record of the same run leaves it byte for byte.
    golden_dir = tmp_path / "golden"
    golden_dir.mkdir()
    path = golden_dir / "agent.jsonl"
    store = GoldenStore(golden_dir)
    redactor = Redactor()
    assert store.keep(path, first.recorder.getvalue(), redactor) is Kept.CREATED
    written = path.read_bytes()
    assert real_key.encode() not in written
    assert PLACEHOLDER_KEY.encode() not in written
    assert store.keep(path, second.recorder.getvalue(), redactor) is Kept.UNCHANGED
    assert path.read_bytes() == written
    # Replayed with the service stopped: the same answers, and the run matches.
    replay = new_session(Mode.DRY, first.recorder.rollout())
    done = _run(replay, command, None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER
    verdict = replay.verdict()
    assert verdict.matched, verdict.report
    assert service.hits == hits


def test_replay_reaches_no_service_even_one_that_is_up(tmp_path: Path) -> None:
    command = agent_command("python", tmp_path)
    with FakeService(_model()) as service:
        golden = _record(command, service)
        hits = service.hits
        replay = new_session(Mode.DRY, golden)
        done = _run(replay, command, service.url)  # upstream= is for recording only
        assert done.returncode == 0, done.stderr
        assert service.hits == hits
    assert replay.verdict().matched


def test_two_agents_at_once_are_both_recorded_and_replayed(tmp_path: Path) -> None:
    command = agent_command("python", tmp_path)
    oslo = "What is the weather in Oslo?"
    model = _model(**{oslo: "Cold in Oslo."})

    def both(session: RolloutSession, upstream: str | None) -> list[Any]:
        endpoint = session.endpoint(upstream=upstream)
        results: list[Any] = [None, None]

        def agent(index: int, question: str) -> None:
            results[index] = run_agent(command, endpoint.env(), question)

        with session.run(prompt="two cities"):
            threads = [
                threading.Thread(target=agent, args=(i, q)) for i, q in enumerate((QUESTION, oslo))
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        session.close()
        return results

    with FakeService(model) as service:
        recording = new_session(Mode.RECORD)
        done = both(recording, service.url)
    assert [d.returncode for d in done] == [0, 0], [d.stderr for d in done]
    assert done[1].stdout.strip() == f"Cold in Oslo. | {SECOND_ANSWER}"
    golden = recording.recorder.rollout()
    assert len([e for e in golden.events if e.type == LLM_TURN_COMPLETED]) == 4
    replay = new_session(Mode.DRY, golden)
    done = both(replay, None)
    assert [d.stdout.strip() for d in done] == [ANSWER, f"Cold in Oslo. | {SECOND_ANSWER}"]
    assert replay.engine.divergences() == []


def test_a_request_past_the_golden_is_an_unrecorded_turn_the_agent_sees(tmp_path: Path) -> None:
    command = agent_command("python", tmp_path)
    with FakeService(_model()) as service:
        golden = _record(command, service)
    replay = new_session(Mode.DRY, golden)
    done = _run(replay, command, None, AGENT_EXTRA="1")
    assert done.returncode == 3
    assert done.stderr.startswith("HTTP 400: ")
    assert '"code":"rollout_unrecorded_turn"' in done.stderr
    [divergence] = replay.engine.divergences()
    assert divergence.kind is DivergenceKind.UNRECORDED_TURN
    assert divergence.step == 3
    assert not replay.verdict().matched


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/v1/chat/completions", id="no-token"),
        pytest.param("/not-the-token/v1/chat/completions", id="another-token"),
        pytest.param("{token}x/v1/chat/completions", id="a-longer-token"),
    ],
)
def test_a_request_without_the_token_is_refused_and_nothing_is_recorded(path: str) -> None:
    session = new_session(Mode.RECORD)
    with FakeService(_model()) as service:
        endpoint = session.endpoint(upstream=service.url)
        url = f"http://127.0.0.1:{endpoint.port}" + path.format(token="/" + endpoint.token)
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": QUESTION}]}
        response = httpx2.post(url, json=body)
        session.close()
    assert response.status_code == 403
    assert "token" in response.json()["error"]["message"]
    assert service.hits == 0
    assert not session.engine.used


def test_a_client_gone_mid_stream_leaves_the_endpoint_serving(tmp_path: Path) -> None:
    session = new_session(Mode.RECORD)
    long_answer = "It is sunny in Paris, 21 degrees, with a light breeze from the west."
    asked = "Describe the weather in Paris at length."
    model = _model(**{asked: long_answer})
    body = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": asked}],
        "stream": True,
    }
    with FakeService(model, frame_gap=0.2) as service:
        endpoint = session.endpoint(upstream=service.url)
        url = f"{endpoint.base_url}/chat/completions"
        with session.run(prompt=QUESTION):
            with httpx2.stream("POST", url, json=body) as response:
                assert response.status_code == 200
                next(response.iter_raw())  # the first event, then the client is gone
            done = run_agent(agent_command("python", tmp_path), endpoint.env())
        session.close()
    assert done.returncode == 0, done.stderr  # the endpoint carries on
    events = session.recorder.rollout().events
    turns = [e.data["content"] for e in events if e.type == LLM_TURN_COMPLETED]
    assert len(turns) == 3
    # The turn cut short keeps what was passed on before the client went away.
    cut = turns[0] or ""
    assert long_answer.startswith(cut)
    assert cut != long_answer
    assert turns[1:] == [FIRST_ANSWER, SECOND_ANSWER]


def test_a_request_replay_cannot_answer_that_is_no_model_call_is_in_the_run() -> None:
    with FakeService(_model()) as service:
        session = new_session(Mode.RECORD)
        endpoint = session.endpoint(upstream=service.url)
        with session.run(prompt=QUESTION):
            httpx2.post(
                f"{endpoint.base_url}/chat/completions",
                json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": QUESTION}]},
            )
        session.close()
    replay = new_session(Mode.DRY, session.recorder.rollout())
    endpoint = replay.endpoint()
    with replay.run(prompt=QUESTION):
        listed = httpx2.get(f"{endpoint.base_url}/models")
    replay.close()
    assert listed.status_code == 400
    assert listed.json()["error"]["code"] == "rollout_replay_refused"
    [context] = [e for e in replay.events() if e.type == ERROR_CONTEXT]
    assert context.data["request"] == "GET /v1/models"
    assert not replay.verdict().matched


def test_the_endpoint_listens_on_loopback_only_and_names_its_urls() -> None:
    session = new_session(Mode.RECORD)
    endpoint = session.endpoint()
    try:
        assert endpoint.base_url == f"http://127.0.0.1:{endpoint.port}/{endpoint.token}/v1"
        assert str(endpoint) == endpoint.base_url
        assert endpoint.anthropic_base_url == endpoint.url == endpoint.base_url[: -len("/v1")]
        env = endpoint.env(EXTRA="1")
        assert env["OPENAI_BASE_URL"] == endpoint.base_url
        assert env["ANTHROPIC_BASE_URL"] == endpoint.url
        assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == PLACEHOLDER_KEY
        assert env["EXTRA"] == "1"
        assert endpoint._server.server_address[0] == "127.0.0.1"
    finally:
        session.close()
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(endpoint.base_url)


def test_a_bad_upstream_is_refused_with_the_reason() -> None:
    session = new_session(Mode.RECORD)
    with pytest.raises(RolloutError, match=r"upstream= must be an http:// or https:// URL"):
        session.endpoint(upstream="127.0.0.1:8000")
    session.close()
