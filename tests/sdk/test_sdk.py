"""SDK clients recorded and replayed, below pytest: the real OpenAI and Anthropic SDKs, our
transport, and a scripted fake standing in for the live service.

Every API shape (Chat Completions, Responses, Messages) is recorded live from the fake, then
replayed with the live side switched off, sync and async, streamed and not.
"""

from __future__ import annotations

import asyncio
import gzip
from typing import Any, cast

import anthropic
import httpx2
import orjson
import pytest
from fake_models import (
    ANTHROPIC_BASE_URL,
    ANTHROPIC_MESSAGES,
    APIS,
    OPENAI_BASE_URL,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    Call,
    Fail,
    FakeModel,
    Say,
    offline_transport,
)
from sdk_agents import AGENTS, CHAT_TOOLS, SYSTEM, get_weather
from sessions import new_session

from pytest_rollout import ReplayDivergenceError, RolloutError
from pytest_rollout.diff.divergence import DivergenceKind
from pytest_rollout.format.events import LLM_TURN_COMPLETED, LLM_TURN_STARTED
from pytest_rollout.format.loader import Rollout
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.sdk.clients import MissingPackageError
from pytest_rollout.sdk.exchange import UnrecordedRequestError
from pytest_rollout.session import Mode, RolloutSession

PROMPT = "What is the weather in Paris?"
SCRIPT = (Call("get_weather", {"city": "Paris"}), Say("It is sunny in Paris, 21 degrees."))
ANSWER = "It is sunny in Paris, 21 degrees."


def _client(session: RolloutSession, api: str, transport: Any, *, asynchronous: bool) -> Any:
    factory, _, _ = AGENTS[api]
    name = ("async_" if asynchronous else "") + factory
    base_url = ANTHROPIC_BASE_URL if factory == "anthropic" else OPENAI_BASE_URL
    return getattr(session, name)(transport=transport, api_key="sk-test", base_url=base_url)


def _run(
    session: RolloutSession,
    api: str,
    transport: Any,
    *,
    asynchronous: bool,
    stream: bool,
    prompt: str = PROMPT,
) -> str:
    """Run the API's agent through a rollout client, inside ``rollout.run()``."""
    _, agent, async_agent = AGENTS[api]
    client = _client(session, api, transport, asynchronous=asynchronous)
    tools = session.tools({"get_weather": get_weather})
    with session.run(prompt=prompt) as run:
        if asynchronous:
            run.output = asyncio.run(async_agent(client, prompt, tools, stream=stream))
        else:
            run.output = agent(client, prompt, tools, stream=stream)
    session.close()
    return str(run.output)


def _divergence_of(exc: BaseException) -> Any:
    """The replay divergence behind ``exc`` (the Anthropic SDK wraps what its transport
    raised in APIConnectionError)."""
    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, ReplayDivergenceError):
            return current.divergence
        current = current.__cause__
    raise AssertionError(f"not a replay divergence: {exc!r}")


def _record(api: str, *, asynchronous: bool = False, stream: bool = False) -> Rollout:
    session = new_session(Mode.RECORD)
    fake = FakeModel(api, SCRIPT)
    answer = _run(session, api, fake.transport(), asynchronous=asynchronous, stream=stream)
    assert answer == ANSWER
    assert fake.remaining == 0
    return session.recorder.rollout()


SHAPES = [
    pytest.param(api, asynchronous, stream, id=f"{api}-{mode}-{kind}")
    for api in APIS
    for asynchronous, mode in ((False, "sync"), (True, "async"))
    for stream, kind in ((False, "json"), (True, "stream"))
]


@pytest.mark.parametrize(("api", "asynchronous", "stream"), SHAPES)
def test_a_recorded_run_replays_with_the_live_side_off(
    api: str, asynchronous: bool, stream: bool
) -> None:
    golden = _record(api, asynchronous=asynchronous, stream=stream)
    replay = new_session(Mode.DRY, golden)
    answer = _run(replay, api, offline_transport(), asynchronous=asynchronous, stream=stream)
    assert answer == ANSWER
    verdict = replay.verdict()
    assert verdict.matched, verdict.divergences
    assert replay.engine.divergences() == []


@pytest.mark.parametrize(("api", "asynchronous", "stream"), SHAPES)
def test_each_model_call_is_one_turn_in_the_rollout_vocabulary(
    api: str, asynchronous: bool, stream: bool
) -> None:
    events = _record(api, asynchronous=asynchronous, stream=stream).events
    turns = [e for e in events if e.type == LLM_TURN_COMPLETED]
    assert [e.step for e in turns] == [1, 2]
    first, last = turns[0].data, turns[1].data
    assert first["content"] is None
    [call] = first["tool_calls"]
    assert call["name"] == "get_weather"
    assert call["arguments"] == {"city": "Paris"}  # parsed, not a JSON string
    assert last["content"] == ANSWER
    assert last["tool_calls"] == []
    for data in (first, last):
        assert data["usage"]["input_tokens"] > 0
        assert data["usage"]["output_tokens"] > 0
        assert data["cost_usd"] > 0  # the price table knows both models
        assert data["raw"]["status"] == 200
        assert ("frames" if stream else "json") in data["raw"]
    # the tool call the model announced carries the model's call id
    started = [e for e in events if e.type == "tool.call.started"]
    assert [e.data["call_id"] for e in started] == [call["id"]]
    # the whole request is there at step 1, system prompt included
    request = next(e for e in events if e.type == LLM_TURN_STARTED).data
    assert request["messages"][0] == {
        "role": "system",
        "content": request["messages"][0]["content"],
    }
    assert request["messages"][-1]["content"] == PROMPT
    assert request["tools"]
    model = "claude-haiku-4-5" if api == ANTHROPIC_MESSAGES else "gpt-4o-mini"
    assert request["params"]["model"] == model
    assert events[0].data["provider"] == api.partition(".")[0]
    assert events[0].data["model"] == model
    totals = events[-1].data["cost_totals"]["total_cost_usd"]
    assert totals == pytest.approx(first["cost_usd"] + last["cost_usd"])


@pytest.mark.parametrize("api", APIS)
def test_a_changed_prompt_is_a_prompt_mismatch_and_never_a_live_call(api: str) -> None:
    golden = _record(api)
    replay = new_session(Mode.DRY, golden)
    offline = FakeModel.offline(api)
    with pytest.raises((ReplayDivergenceError, anthropic.APIConnectionError)) as raised:
        _run(replay, api, offline.transport(), asynchronous=False, stream=False, prompt="Oslo?")
    divergence = _divergence_of(raised.value)
    assert divergence.kind is DivergenceKind.PROMPT_MISMATCH
    assert divergence.step == 1
    assert divergence.detail == (
        "the request differs from the recorded one at messages[1].content: "
        'recorded "What is the weather in Paris?", got "Oslo?"'
    )
    assert offline.requests == []
    assert replay.engine.replay is not None
    assert [d.kind for d in replay.engine.replay.divergences] == [DivergenceKind.PROMPT_MISMATCH]


def test_a_divergence_through_the_anthropic_sdk_is_raised_unwrapped_and_once() -> None:
    golden = _record(ANTHROPIC_MESSAGES)
    replay = new_session(Mode.DRY, golden)
    client = replay.anthropic(
        transport=offline_transport(), base_url=ANTHROPIC_BASE_URL, max_retries=2
    )
    with replay.run(), pytest.raises(ReplayDivergenceError) as raised:
        client.messages.create(
            model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    # Also the SDK's own error base, so the SDK neither wraps it nor retries it.
    assert isinstance(raised.value, anthropic.AnthropicError)
    assert not isinstance(cast(Any, raised.value), anthropic.APIError)
    assert replay.engine.replay is not None
    assert [d.kind for d in replay.engine.replay.divergences] == [DivergenceKind.PROMPT_MISMATCH]


def _hi(client: Any) -> Any:
    """One chat request, "hi"."""
    return client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )


def _first_chat_turn(client: Any, model: str) -> Any:
    """The chat agent's first request, with ``model`` in place of its own."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
    return client.chat.completions.create(model=model, messages=messages, tools=CHAT_TOOLS)


def test_a_changed_parameter_names_the_parameter() -> None:
    golden = _record(OPENAI_CHAT)
    replay = new_session(Mode.DRY, golden)
    client = _client(replay, OPENAI_CHAT, offline_transport(), asynchronous=False)
    with replay.run(), pytest.raises(ReplayDivergenceError) as raised:
        _first_chat_turn(client, model="gpt-4o")
    assert raised.value.divergence.detail == (
        "the request differs from the recorded one at params.model: "
        'recorded "gpt-4o-mini", got "gpt-4o"'
    )


def test_a_request_past_the_recording_is_an_unrecorded_turn() -> None:
    golden = _record(OPENAI_RESPONSES)
    replay = new_session(Mode.DRY, golden)
    client = _client(replay, OPENAI_RESPONSES, offline_transport(), asynchronous=False)
    _, agent, _ = AGENTS[OPENAI_RESPONSES]
    tools = replay.tools({"get_weather": get_weather})
    with replay.run(prompt=PROMPT) as run:
        run.output = agent(client, PROMPT, tools)
        with pytest.raises(ReplayDivergenceError) as raised:
            client.responses.create(model="gpt-4o-mini", input="and tomorrow?")
    assert raised.value.divergence.kind is DivergenceKind.UNRECORDED_TURN


def test_a_run_that_stops_early_leaves_unconsumed_turns() -> None:
    golden = _record(OPENAI_CHAT)
    replay = new_session(Mode.DRY, golden)
    client = _client(replay, OPENAI_CHAT, offline_transport(), asynchronous=False)
    with replay.run(prompt=PROMPT):
        _first_chat_turn(client, model="gpt-4o-mini")
    kinds = [d.kind for d in replay.engine.divergences()]
    assert DivergenceKind.UNCONSUMED in kinds


def test_volatile_ids_do_not_change_a_request() -> None:
    """Replayed ids are the recorded ones, so this holds in dry replay anyway; in full
    replay (live model) ids change every run and requests must still match their key."""
    golden = _record(OPENAI_CHAT)
    keys = [e.data["messages_hash"] for e in golden.events if e.type == LLM_TURN_STARTED]
    again = _record(OPENAI_CHAT)  # the fake hands out new ids on every call
    assert [e.data["messages_hash"] for e in again.events if e.type == LLM_TURN_STARTED] == keys


def test_full_replay_calls_the_model_and_answers_tools_from_the_golden() -> None:
    golden = _record(ANTHROPIC_MESSAGES)
    replay = new_session(Mode.FULL, golden)
    live = FakeModel(ANTHROPIC_MESSAGES, SCRIPT)
    calls: list[str] = []

    def weather_that_must_not_run(city: str) -> dict[str, Any]:
        calls.append(city)
        return {}

    client = _client(replay, ANTHROPIC_MESSAGES, live.transport(), asynchronous=False)
    tools = replay.tools({"get_weather": weather_that_must_not_run})
    _, agent, _ = AGENTS[ANTHROPIC_MESSAGES]
    with replay.run(prompt=PROMPT) as run:
        run.output = agent(client, PROMPT, tools)
    replay.close()
    assert run.output == ANSWER
    assert len(live.requests) == 2  # the model was live
    assert calls == []  # the tool was answered from the golden
    assert replay.verdict().matched


def test_a_failed_attempt_is_not_a_turn() -> None:
    """An error status the SDK retries is transport noise: only the answer is recorded."""
    session = new_session(Mode.RECORD)
    fake = FakeModel(OPENAI_CHAT, (Fail(429, "Rate limit reached"), Say("hello")))
    client = session.openai(
        transport=fake.transport(), api_key="sk-test", base_url=OPENAI_BASE_URL, max_retries=1
    )
    client._sleep_for_retry = lambda **_: None
    with session.run():
        reply = _hi(client)
    session.close()
    assert reply.choices[0].message.content == "hello"
    types = [e.type for e in session.recorder.rollout().events]
    assert types.count(LLM_TURN_STARTED) == 1
    assert types.count(LLM_TURN_COMPLETED) == 1


def test_other_requests_pass_through_when_recording_and_are_refused_in_replay() -> None:
    def models(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"object": "list", "data": []})

    session = new_session(Mode.RECORD)
    client = session.openai(
        transport=httpx2.MockTransport(models), api_key="sk-test", base_url=OPENAI_BASE_URL
    )
    with session.run():
        assert client.models.list().data == []
    session.close()
    assert [e.type for e in session.recorder.rollout().events] == ["run.started", "run.completed"]

    replay = new_session(Mode.DRY, session.recorder.rollout())
    client = replay.openai(transport=offline_transport(), base_url=OPENAI_BASE_URL)
    with replay.run(), pytest.raises(UnrecordedRequestError, match="GET /v1/models is not a model"):
        client.models.list()


def test_a_compressed_live_response_is_recorded_decoded() -> None:
    fake = FakeModel(OPENAI_CHAT, (Say("hello"),))

    def gzipped(request: httpx2.Request) -> httpx2.Response:
        plain = fake.handler(request)
        return httpx2.Response(
            plain.status_code,
            headers={"content-type": "application/json", "content-encoding": "gzip"},
            content=gzip.compress(plain.read()),
        )

    session = new_session(Mode.RECORD)
    client = session.openai(
        transport=httpx2.MockTransport(gzipped), api_key="sk-test", base_url=OPENAI_BASE_URL
    )
    with session.run():
        reply = _hi(client)
    session.close()
    assert reply.choices[0].message.content == "hello"
    [turn] = [e for e in session.recorder.rollout().events if e.type == LLM_TURN_COMPLETED]
    assert turn.data["content"] == "hello"
    assert turn.data["raw"]["json"]["object"] == "chat.completion"


def test_secrets_in_a_response_are_redacted_and_replay_still_parses() -> None:
    from pytest_rollout.safety.redact import Redactor

    secret = "sk-proj-" + "Q" * 40
    session = new_session(Mode.RECORD, recorder=Recorder(redactor=Redactor()))
    fake = FakeModel(OPENAI_CHAT, (Say(f"your key is {secret}"),))
    client = session.openai(transport=fake.transport(), api_key="sk-test", base_url=OPENAI_BASE_URL)
    with session.run():
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "my key?"}]
        )
    session.close()
    data = session.recorder.getvalue()
    assert secret.encode() not in data
    replay = new_session(
        Mode.DRY, session.recorder.rollout(), recorder=Recorder(redactor=Redactor())
    )
    client = replay.openai(transport=offline_transport(), base_url=OPENAI_BASE_URL)
    with replay.run():
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "my key?"}]
        )
    assert reply.choices[0].message.content == "your key is [REDACTED:openai-key]"


def test_a_golden_recorded_through_a_provider_cannot_feed_an_sdk() -> None:
    from pytest_rollout import Turn

    class Scripted:
        def complete(self, messages: Any, tools: Any = None, **params: Any) -> Turn:
            return Turn(content="hi")

    session = new_session(Mode.RECORD)
    llm = session.provider(Scripted())
    with session.run():
        llm.complete([{"role": "user", "content": "hi"}], None, model="gpt-4o-mini")
    session.close()
    replay = new_session(Mode.DRY, session.recorder.rollout())
    client = replay.openai(transport=offline_transport(), base_url=OPENAI_BASE_URL)
    with replay.run(), pytest.raises(RolloutError, match="no recorded response"):
        _hi(client)


def test_replay_needs_no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    golden = _record(OPENAI_CHAT)
    replay = new_session(Mode.DRY, golden)
    client = replay.openai(transport=offline_transport(), base_url=OPENAI_BASE_URL)
    _, agent, _ = AGENTS[OPENAI_CHAT]
    tools = replay.tools({"get_weather": get_weather})
    with replay.run(prompt=PROMPT) as run:
        run.output = agent(client, PROMPT, tools)
    assert run.output == ANSWER


def test_an_http_client_given_to_the_factory_is_refused() -> None:
    session = new_session(Mode.RECORD)
    with pytest.raises(RolloutError, match=r"pass it as rollout\.openai\(transport=\.\.\.\)"):
        session.openai(http_client=httpx2.Client())


def test_a_missing_sdk_names_the_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "anthropic", None)  # import anthropic now fails
    session = new_session(Mode.RECORD)
    with pytest.raises(MissingPackageError) as raised:
        session.async_anthropic()
    assert str(raised.value) == (
        "rollout.async_anthropic() needs the anthropic package, which is not installed: "
        "pip install anthropic"
    )


def test_the_package_imports_without_the_sdks() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "for name in ('openai', 'anthropic', 'httpx2', 'httpx', 'pydantic_ai'):\n"
        "    sys.modules[name] = None\n"
        "import pytest_rollout, pytest_rollout.plugin, pytest_rollout.sdk.clients\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_http_client_records_what_a_hand_built_sdk_client_sends() -> None:
    import openai

    session = new_session(Mode.RECORD)
    fake = FakeModel(OPENAI_CHAT, (Say("hello"),))
    client = openai.OpenAI(
        api_key="sk-test",
        base_url=OPENAI_BASE_URL,
        http_client=session.http_client(transport=fake.transport()),
    )
    with session.run():
        _hi(client)
    session.close()
    [turn] = [e for e in session.recorder.rollout().events if e.type == LLM_TURN_COMPLETED]
    assert turn.data["content"] == "hello"
    assert orjson.loads(orjson.dumps(turn.data["raw"]))["json"]["object"] == "chat.completion"


def test_a_replayed_stream_is_handed_over_event_by_event() -> None:
    request = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    }
    url = f"{OPENAI_BASE_URL}/chat/completions"
    session = new_session(Mode.RECORD)
    fake = FakeModel(OPENAI_CHAT, (Say("Hello there, how are you?"),))
    with session.run(), session.http_client(transport=fake.transport()) as http:
        recorded = http.post(url, json=request).content
    session.close()
    golden = session.recorder.rollout()
    [turn] = [e for e in golden.events if e.type == LLM_TURN_COMPLETED]
    frames = turn.data["raw"]["frames"]
    assert frames[-1] == {"data": "[DONE]"}
    assert turn.data["content"] == "Hello there, how are you?"

    replay = new_session(Mode.DRY, golden)
    with (
        replay.run(),
        replay.http_client(transport=offline_transport()) as http,
        http.stream("POST", url, json=request) as response,
    ):
        chunks = list(response.iter_raw())
    assert len(chunks) == len(frames)
    assert all(chunk.startswith(b"data: ") and chunk.endswith(b"\n\n") for chunk in chunks)
    assert [orjson.loads(c[6:]) for c in chunks[:-1]] == [
        orjson.loads(line[6:]) for line in recorded.split(b"\n\n") if line.startswith(b"data: {")
    ]


def test_a_turn_that_cannot_be_recorded_leaves_a_gap_and_the_test_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pytest_rollout.sdk.exchange as exchange_module

    def broken(*_: Any) -> dict[str, Any]:
        raise MemoryError("no room for the recording")

    monkeypatch.setattr(exchange_module, "raw_response", broken)
    session = new_session(Mode.RECORD)
    fake = FakeModel(OPENAI_CHAT, (Say("hello"),))
    client = session.openai(transport=fake.transport(), api_key="sk-test", base_url=OPENAI_BASE_URL)
    with session.run():
        reply = _hi(client)
    session.close()
    assert reply.choices[0].message.content == "hello"
    types = [e.type for e in session.recorder.rollout().events]
    assert types == ["run.started", "recorder.drop_detected", "run.completed"]


def _mid_stream_agent(session: RolloutSession, transport: Any) -> str:
    """Runs each tool as soon as the stream has finished its tool_use block, while the
    stream is still open, as streaming agents do."""
    client = session.anthropic(transport=transport, api_key="sk-test", base_url=ANTHROPIC_BASE_URL)
    tools = session.tools({"get_weather": get_weather})
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    with session.run(prompt=PROMPT) as run:
        for _ in range(4):
            request = {"model": "claude-haiku-4-5", "max_tokens": 100, "messages": messages}
            results = []
            with client.messages.stream(**request) as stream:
                for event in stream:
                    if (
                        event.type == "content_block_stop"
                        and event.content_block.type == "tool_use"
                    ):
                        use = event.content_block
                        output = tools[use.name](**use.input)
                        results.append((use, output))
                message = stream.get_final_message()
            if not results:
                run.output = message.content[0].text
                break
            messages.append({"role": "assistant", "content": message.content})
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": u.id, "content": str(o)}
                        for u, o in results
                    ],
                }
            )
    session.close()
    return str(run.output)


def test_a_tool_run_while_the_stream_is_open_records_and_replays() -> None:
    session = new_session(Mode.RECORD)
    assert _mid_stream_agent(session, FakeModel(ANTHROPIC_MESSAGES, SCRIPT).transport()) == ANSWER
    golden = session.recorder.rollout()  # loads: the tool call sits inside its turn's step
    types = [(e.step, e.type) for e in golden.events if e.step == 1]
    assert types[0] == (1, LLM_TURN_STARTED)
    assert (1, "tool.call.started") in types
    assert types.index((1, "tool.call.started")) < types.index((1, LLM_TURN_COMPLETED))
    replay = new_session(Mode.DRY, golden)
    assert _mid_stream_agent(replay, offline_transport()) == ANSWER
    assert replay.verdict().matched, replay.verdict().divergences


def test_a_body_cut_short_is_not_a_turn_and_its_retry_is() -> None:
    fake = FakeModel(OPENAI_CHAT, (Say("hello"), Say("hello")))
    attempts: list[int] = []

    class Cut(httpx2.SyncByteStream):
        def __init__(self, body: bytes) -> None:
            self.body = body

        def __iter__(self) -> Any:
            yield self.body[:10]
            raise httpx2.ReadError("connection reset")

    def flaky(request: httpx2.Request) -> httpx2.Response:
        response = fake.handler(request)
        attempts.append(1)
        if len(attempts) == 1:
            return httpx2.Response(200, headers=response.headers, stream=Cut(response.read()))
        return response

    session = new_session(Mode.RECORD)
    client = session.openai(
        transport=httpx2.MockTransport(flaky),
        api_key="sk-test",
        base_url=OPENAI_BASE_URL,
        max_retries=1,
    )
    client._sleep_for_retry = lambda **_: None
    with session.run():
        assert _hi(client).choices[0].message.content == "hello"
    session.close()
    assert len(attempts) == 2
    golden = session.recorder.rollout()
    types = [e.type for e in golden.events]
    assert types.count(LLM_TURN_STARTED) == 1
    assert types.count(LLM_TURN_COMPLETED) == 1
    replay = new_session(Mode.DRY, golden)
    client = replay.openai(transport=offline_transport(), base_url=OPENAI_BASE_URL)
    with replay.run():
        assert _hi(client).choices[0].message.content == "hello"


def test_a_long_stream_is_kept_as_text_and_still_replays() -> None:
    pieces = 8000  # one token each: past what a line of the format may hold as JSON

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + orjson.dumps(body) + b"\n\n"

    stream = b"".join(
        [chunk({"role": "assistant", "content": ""})]
        + [chunk({"content": "a"}) for _ in range(pieces)]
        + [chunk({}, "stop"), b"data: [DONE]\n\n"]
    )

    def long_answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=stream)

    def ask(session: RolloutSession, transport: Any) -> str:
        client = session.openai(transport=transport, api_key="sk-test", base_url=OPENAI_BASE_URL)
        with session.run() as run:
            chunks = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            run.output = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        session.close()
        return str(run.output)

    session = new_session(Mode.RECORD)
    assert ask(session, httpx2.MockTransport(long_answer)) == "a" * pieces
    golden = session.recorder.rollout()  # within the loader's limits
    [turn] = [e for e in golden.events if e.type == LLM_TURN_COMPLETED]
    assert turn.data["content"] == "a" * pieces
    assert "text" in turn.data["raw"]
    replay = new_session(Mode.DRY, golden)
    assert ask(replay, offline_transport()) == "a" * pieces
    assert replay.verdict().matched
