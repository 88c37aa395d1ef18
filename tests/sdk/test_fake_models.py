"""The fake live models speak the real wire formats: the real SDKs parse what they send.

Every API is driven through its real SDK client, sync and async, non-streamed, streamed
(``stream=True``) and through the SDK's streaming helper, and each way must yield the
scripted text, tool calls and usage.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from fake_models import (
    ANTHROPIC_MESSAGES,
    OFFLINE_MESSAGE,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    Call,
    Fail,
    FakeModel,
    Say,
    Turn,
    offline_transport,
)

OPENAI_MODEL = "gpt-4.1"
ANTHROPIC_MODEL = "claude-haiku-4-5"  # not deprecated: the SDK warns about deprecated models
MAX_TOKENS = 1024

WEATHER = Call("get_weather", {"city": "Paris", "unit": "celsius"})
TIME = Call("get_time", {"timezone": "Europe/Paris"})
ANSWER = "It is 21 C and sunny in Paris, and it is noon."
SCRIPT: list[Turn] = [[WEATHER, TIME], Say(ANSWER)]

FIRST = [{"role": "user", "content": "What is the weather and the time in Paris?"}]
SECOND = [
    *FIRST,
    {"role": "assistant", "content": "Let me check the weather and the time."},
    {"role": "user", "content": "Thanks. So what is the answer?"},
]


def _schema(name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string"}},
        "required": [name],
        "additionalProperties": False,
    }


CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {**_schema("city"), "properties": {"city": {}, "unit": {}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "The time in a timezone.",
            "parameters": _schema("timezone"),
            "strict": True,
        },
    },
]
RESPONSES_TOOLS = [
    {"type": "function", "name": "get_weather", "parameters": _schema("city"), "strict": False},
    {"type": "function", "name": "get_time", "parameters": _schema("timezone"), "strict": True},
]
ANTHROPIC_TOOLS = [
    {"name": "get_weather", "description": "The weather.", "input_schema": _schema("city")},
    {"name": "get_time", "description": "The time.", "input_schema": _schema("timezone")},
]


@dataclass
class Outcome:
    """What a client got out of one answer, whatever the API and the way of reading it."""

    text: str | None
    calls: list[tuple[str, dict[str, Any]]]
    input_tokens: int
    output_tokens: int


# ----------------------------------------------------------- Chat Completions


def chat_outcome(completion: Any) -> Outcome:
    message = completion.choices[0].message
    calls = [
        (call.function.name, json.loads(call.function.arguments))
        for call in message.tool_calls or []
    ]
    assert completion.choices[0].finish_reason == ("tool_calls" if calls else "stop")
    usage = completion.usage
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    return Outcome(message.content or None, calls, usage.prompt_tokens, usage.completion_tokens)


def chat_chunks_outcome(chunks: list[Any]) -> Outcome:
    """Accumulate raw ``chat.completion.chunk`` objects as a client would."""
    text = ""
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    assert chunks[0].choices[0].delta.role == "assistant"
    assert len({chunk.id for chunk in chunks}) == 1
    for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": delta.id, "name": "", "arguments": ""})
                call["name"] += delta.function.name or ""
                call["arguments"] += delta.function.arguments or ""
    assert all(call["id"].startswith("call_") for call in calls.values())
    assert finish == ("tool_calls" if calls else "stop")
    usage = chunks[-1].usage
    assert chunks[-1].choices == []
    return Outcome(
        text or None,
        [(call["name"], json.loads(call["arguments"])) for call in calls.values()],
        usage.prompt_tokens,
        usage.completion_tokens,
    )


def chat_params(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": OPENAI_MODEL, "messages": messages, "tools": CHAT_TOOLS}


STREAM_USAGE = {"stream_options": {"include_usage": True}}


def chat_create(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    return chat_outcome(client.chat.completions.create(**chat_params(messages)))


def chat_stream(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    stream = client.chat.completions.create(**chat_params(messages), stream=True, **STREAM_USAGE)
    return chat_chunks_outcome(list(stream))


def chat_helper(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    with client.chat.completions.stream(**chat_params(messages), **STREAM_USAGE) as stream:
        events = [event.type for event in stream]
        completion = stream.get_final_completion()
    assert "chunk" in events
    strict_calls = [
        call
        for call in completion.choices[0].message.tool_calls or []
        if call.function.name == "get_time"
    ]
    assert all(call.function.parsed_arguments == TIME.arguments for call in strict_calls)
    return chat_outcome(completion)


async def achat_create(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    return chat_outcome(await client.chat.completions.create(**chat_params(messages)))


async def achat_stream(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    params = {**chat_params(messages), "stream": True, **STREAM_USAGE}
    stream = await client.chat.completions.create(**params)
    return chat_chunks_outcome([chunk async for chunk in stream])


async def achat_helper(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    async with client.chat.completions.stream(**chat_params(messages), **STREAM_USAGE) as stream:
        async for _ in stream:
            pass
        return chat_outcome(await stream.get_final_completion())


# ------------------------------------------------------------------ Responses


def response_outcome(response: Any) -> Outcome:
    assert response.status == "completed"
    calls = [
        (item.name, json.loads(item.arguments))
        for item in response.output
        if item.type == "function_call"
    ]
    assert all(item.status == "completed" for item in response.output)
    usage = response.usage
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    return Outcome(response.output_text or None, calls, usage.input_tokens, usage.output_tokens)


def response_events_outcome(events: list[Any]) -> Outcome:
    """Rebuild the answer from raw Responses stream events, checking their order."""
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert [event.type for event in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1].type == "response.completed"
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    arguments: dict[str, str] = {}
    for event in events:
        if event.type == "response.function_call_arguments.delta":
            arguments[event.item_id] = arguments.get(event.item_id, "") + event.delta
    done = [event.item for event in events if event.type == "response.output_item.done"]
    calls = [
        (item.name, json.loads(arguments[item.id])) for item in done if item.type == "function_call"
    ]
    outcome = response_outcome(events[-1].response)
    assert (outcome.text, outcome.calls) == (text or None, calls)
    return outcome


def response_params(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": OPENAI_MODEL, "input": messages, "tools": RESPONSES_TOOLS}


def responses_create(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    return response_outcome(client.responses.create(**response_params(messages)))


def responses_stream(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    return response_events_outcome(
        list(client.responses.create(**response_params(messages), stream=True))
    )


def responses_helper(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    with client.responses.stream(**response_params(messages)) as stream:
        for _ in stream:
            pass
        response = stream.get_final_response()
    strict_calls = [item for item in response.output if getattr(item, "name", "") == "get_time"]
    assert all(call.parsed_arguments == TIME.arguments for call in strict_calls)  # strict tool
    return response_outcome(response)


async def aresponses_create(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    return response_outcome(await client.responses.create(**response_params(messages)))


async def aresponses_stream(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    stream = await client.responses.create(**response_params(messages), stream=True)
    return response_events_outcome([event async for event in stream])


async def aresponses_helper(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    async with client.responses.stream(**response_params(messages)) as stream:
        async for _ in stream:
            pass
        return response_outcome(await stream.get_final_response())


# ------------------------------------------------------------------- Anthropic


def message_outcome(message: Any) -> Outcome:
    text = "".join(block.text for block in message.content if block.type == "text")
    calls = [(block.name, block.input) for block in message.content if block.type == "tool_use"]
    assert all(
        block.id.startswith("toolu_") for block in message.content if block.type == "tool_use"
    )
    assert message.stop_reason == ("tool_use" if calls else "end_turn")
    usage = message.usage
    return Outcome(text or None, calls, usage.input_tokens, usage.output_tokens)


def message_events_outcome(events: list[Any]) -> Outcome:
    """Rebuild the answer from raw Messages stream events, checking their order."""
    assert events[0].type == "message_start"
    assert [event.type for event in events[-2:]] == ["message_delta", "message_stop"]
    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        if event.type == "content_block_start":
            blocks[event.index] = {"block": event.content_block, "text": "", "json": ""}
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            blocks[event.index]["text"] += event.delta.text
        elif event.type == "content_block_delta":
            blocks[event.index]["json"] += event.delta.partial_json
    text = "".join(entry["text"] for entry in blocks.values() if entry["block"].type == "text")
    calls = [
        (entry["block"].name, json.loads(entry["json"]))
        for entry in blocks.values()
        if entry["block"].type == "tool_use"
    ]
    assert events[-2].delta.stop_reason == ("tool_use" if calls else "end_turn")
    input_tokens = events[0].message.usage.input_tokens
    return Outcome(text or None, calls, input_tokens, events[-2].usage.output_tokens)


def message_params(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": ANTHROPIC_MODEL,
        "max_tokens": MAX_TOKENS,
        "messages": messages,
        "tools": ANTHROPIC_TOOLS,
    }


def messages_create(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    return message_outcome(client.messages.create(**message_params(messages)))


def messages_stream(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    return message_events_outcome(
        list(client.messages.create(**message_params(messages), stream=True))
    )


def messages_helper(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    with client.messages.stream(**message_params(messages)) as stream:
        text = "".join(stream.text_stream)
        outcome = message_outcome(stream.get_final_message())
    assert text == (outcome.text or "")
    return outcome


async def amessages_create(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    return message_outcome(await client.messages.create(**message_params(messages)))


async def amessages_stream(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    stream = await client.messages.create(**message_params(messages), stream=True)
    return message_events_outcome([event async for event in stream])


async def amessages_helper(client: Any, messages: list[dict[str, Any]]) -> Outcome:
    async with client.messages.stream(**message_params(messages)) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        outcome = message_outcome(await stream.get_final_message())
    assert text == (outcome.text or "")
    return outcome


# ---------------------------------------------------------------------- driving

Runner = Callable[[Any, list[dict[str, Any]]], Outcome]
AsyncRunner = Callable[[Any, list[dict[str, Any]]], Awaitable[Outcome]]

RUNNERS: dict[tuple[str, str], tuple[Runner, AsyncRunner]] = {
    (OPENAI_CHAT, "create"): (chat_create, achat_create),
    (OPENAI_CHAT, "stream"): (chat_stream, achat_stream),
    (OPENAI_CHAT, "helper"): (chat_helper, achat_helper),
    (OPENAI_RESPONSES, "create"): (responses_create, aresponses_create),
    (OPENAI_RESPONSES, "stream"): (responses_stream, aresponses_stream),
    (OPENAI_RESPONSES, "helper"): (responses_helper, aresponses_helper),
    (ANTHROPIC_MESSAGES, "create"): (messages_create, amessages_create),
    (ANTHROPIC_MESSAGES, "stream"): (messages_stream, amessages_stream),
    (ANTHROPIC_MESSAGES, "helper"): (messages_helper, amessages_helper),
}
MODES = ("create", "stream", "helper")


def drive(fake: FakeModel, mode: str, *, asynchronous: bool = False) -> list[Outcome]:
    """Run both scripted turns through the real SDK client, the way ``mode`` says."""
    runner, async_runner = RUNNERS[fake.api, mode]
    if not asynchronous:
        with fake.client() as client:
            return [runner(client, FIRST), runner(client, SECOND)]

    async def main() -> list[Outcome]:
        async with fake.async_client() as client:
            return [await async_runner(client, FIRST), await async_runner(client, SECOND)]

    return asyncio.run(main())


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", [OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES])
def test_the_sdk_parses_the_scripted_turns(api: str, mode: str, asynchronous: bool) -> None:
    fake = FakeModel(api, SCRIPT)
    first, second = drive(fake, mode, asynchronous=asynchronous)

    assert first.text is None
    assert first.calls == [(WEATHER.name, WEATHER.arguments), (TIME.name, TIME.arguments)]
    assert second.text == ANSWER
    assert second.calls == []
    assert 0 < first.input_tokens < second.input_tokens  # a longer conversation costs more
    assert first.output_tokens > 0
    assert second.output_tokens > 0
    assert fake.remaining == 0
    assert len(fake.requests) == 2
    assert all(bool(body.get("stream")) == (mode != "create") for body in fake.requests)


@pytest.mark.parametrize("api", [OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES])
def test_streamed_and_whole_answers_agree_including_usage(api: str) -> None:
    outcomes = [drive(FakeModel(api, SCRIPT), mode) for mode in MODES]
    outcomes += [drive(FakeModel(api, SCRIPT), "create", asynchronous=True)]
    assert all(outcome == outcomes[0] for outcome in outcomes)


@pytest.mark.parametrize("api", [OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES])
def test_text_and_calls_in_one_turn(api: str) -> None:
    fake = FakeModel(api, [[Say("Checking."), WEATHER]] * 2)
    create, _ = RUNNERS[api, "create"]
    stream, _ = RUNNERS[api, "stream"]
    with fake.client() as client:
        outcomes = [create(client, FIRST), stream(client, FIRST)]
    for outcome in outcomes:
        assert (outcome.text, outcome.calls) == ("Checking.", [(WEATHER.name, WEATHER.arguments)])


# ---------------------------------------------------------------- volatility


def test_chat_ids_and_timestamps_are_volatile() -> None:
    fake = FakeModel(OPENAI_CHAT, [WEATHER, WEATHER])
    with fake.client() as client:
        one, two = (client.chat.completions.create(**chat_params(FIRST)) for _ in range(2))
    assert one.id != two.id
    assert one.id.startswith("chatcmpl-")
    assert one.created != two.created
    ids = [completion.choices[0].message.tool_calls[0].id for completion in (one, two)]
    assert ids[0] != ids[1]
    assert ids[0].startswith("call_")
    assert one.usage == two.usage


def test_responses_ids_are_volatile() -> None:
    fake = FakeModel(OPENAI_RESPONSES, [[Say("Hi."), WEATHER]] * 2)
    with fake.client() as client:
        one, two = (client.responses.create(**response_params(FIRST)) for _ in range(2))
    assert one.id != two.id
    assert one.id.startswith("resp_")
    assert one.created_at != two.created_at
    (message_one, call_one), (message_two, call_two) = one.output, two.output
    assert message_one.id.startswith("msg_")
    assert message_one.id != message_two.id
    assert call_one.id.startswith("fc_")
    assert call_one.id != call_two.id
    assert call_one.call_id.startswith("call_")
    assert call_one.call_id != call_two.call_id
    assert one.usage == two.usage


def test_anthropic_ids_are_volatile() -> None:
    fake = FakeModel(ANTHROPIC_MESSAGES, [WEATHER, WEATHER])
    with fake.client() as client:
        one, two = (client.messages.create(**message_params(FIRST)) for _ in range(2))
    assert one.id != two.id
    assert one.id.startswith("msg_01")
    assert one.content[0].id != two.content[0].id
    assert one.content[0].id.startswith("toolu_01")
    assert one.usage == two.usage
    assert one._request_id != two._request_id


# ------------------------------------------------------------------ wire format


def post(fake: FakeModel, path: str, body: dict[str, Any]) -> httpx2.Response:
    with httpx2.Client(transport=fake.transport(), base_url="http://fake.test") as client:
        return client.post(path, json=body)


def sse_frames(response: httpx2.Response) -> list[dict[str, str]]:
    """The server-sent events of a response body, as ``{"event": ..., "data": ...}``."""
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = []
    for block in response.text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        frames.append(fields)
    return frames


def test_chat_stream_wire_format() -> None:
    fake = FakeModel(OPENAI_CHAT, [WEATHER, WEATHER])
    body = {"model": OPENAI_MODEL, "messages": FIRST, "stream": True}
    without_usage = sse_frames(post(fake, "/v1/chat/completions", body))
    assert all(set(frame) == {"data"} for frame in without_usage)
    assert without_usage[-1]["data"] == "[DONE]"
    chunks = [json.loads(frame["data"]) for frame in without_usage[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert all("usage" not in chunk for chunk in chunks)
    arguments = [chunk["choices"][0]["delta"].get("tool_calls", [{}])[0] for chunk in chunks]
    assert arguments[1]["function"]["name"] == "get_weather"
    assert len([call for call in arguments if "function" in call]) > 2  # split in pieces

    body["stream_options"] = {"include_usage": True}
    with_usage = [
        json.loads(frame["data"])
        for frame in sse_frames(post(fake, "/v1/chat/completions", body))[:-1]
    ]
    assert all(chunk["usage"] is None for chunk in with_usage[:-1])
    assert with_usage[-1]["choices"] == []
    assert with_usage[-1]["usage"]["total_tokens"] > 0


def test_responses_stream_wire_format() -> None:
    fake = FakeModel(OPENAI_RESPONSES, [[Say("Hello there."), WEATHER]])
    body = {"model": OPENAI_MODEL, "input": "hi", "stream": True}
    frames = sse_frames(post(fake, "/v1/responses", body))
    events = [json.loads(frame["data"]) for frame in frames]
    assert [frame["event"] for frame in frames] == [event["type"] for event in events]
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    assert [event["type"] for event in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * 3,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        *["response.function_call_arguments.delta"] * 3,
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert events[0]["response"]["status"] == "in_progress"
    assert events[-1]["response"]["usage"]["output_tokens"] > 0


def test_anthropic_stream_wire_format() -> None:
    fake = FakeModel(ANTHROPIC_MESSAGES, [[Say("Hello there."), WEATHER]])
    body = {"model": ANTHROPIC_MODEL, "max_tokens": 64, "messages": FIRST, "stream": True}
    frames = sse_frames(post(fake, "/v1/messages", body))
    events = [json.loads(frame["data"]) for frame in frames]
    assert [frame["event"] for frame in frames] == [event["type"] for event in events]
    assert [event["type"] for event in events] == [
        "message_start",
        "content_block_start",
        "ping",
        *["content_block_delta"] * 3,
        "content_block_stop",
        "content_block_start",
        *["content_block_delta"] * 4,  # an empty input_json_delta first, as the service does
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[-2]["usage"]["output_tokens"] > 0


def test_async_handler_serves_async_clients() -> None:
    fake = FakeModel(OPENAI_CHAT, [Say("Hi.")])

    async def main() -> Any:
        http_client = httpx2.AsyncClient(transport=httpx2.MockTransport(fake.async_handler))
        async with openai.AsyncOpenAI(
            api_key="sk-test",
            base_url="http://fake.test/v1",
            http_client=http_client,
            max_retries=0,
        ) as client:
            return await client.chat.completions.create(**chat_params(FIRST))

    assert asyncio.run(main()).choices[0].message.content == "Hi."


# ------------------------------------------------------------------------ errors


def test_an_exhausted_script_answers_500_without_retries() -> None:
    fake = FakeModel(OPENAI_CHAT, [])
    with (
        fake.client(max_retries=2) as client,
        pytest.raises(openai.InternalServerError, match="exhausted"),
    ):
        client.chat.completions.create(**chat_params(FIRST))
    assert len(fake.requests) == 1  # x-should-retry: false stops the SDK's retries

    fake = FakeModel(ANTHROPIC_MESSAGES, [])
    with (
        fake.client(max_retries=2) as client,
        pytest.raises(anthropic.InternalServerError, match="exhausted"),
    ):
        client.messages.create(**message_params(FIRST))
    assert len(fake.requests) == 1


def test_scripted_failures_use_each_api_error_shape() -> None:
    fake = FakeModel(OPENAI_RESPONSES, [Fail(429, "Rate limit reached."), Say("ok")])
    with fake.client() as client:
        with pytest.raises(openai.RateLimitError) as raised:
            client.responses.create(**response_params(FIRST))
        assert raised.value.code == "rate_limit_exceeded"
        assert client.responses.create(**response_params(FIRST)).output_text == "ok"

    fake = FakeModel(ANTHROPIC_MESSAGES, [Fail(529, "Overloaded")])
    with fake.client() as client, pytest.raises(anthropic.APIStatusError) as failed:
        client.messages.create(**message_params(FIRST))
    assert failed.value.status_code == 529
    body = failed.value.body
    assert isinstance(body, dict)
    assert body["error"]["type"] == "overloaded_error"


def test_an_unknown_path_answers_404() -> None:
    fake = FakeModel(OPENAI_CHAT, [Say("unused")])
    with fake.client() as client, pytest.raises(openai.NotFoundError):
        client.models.list()
    response = post(FakeModel(ANTHROPIC_MESSAGES, [Say("unused")]), "/v1/complete", {})
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"
    assert fake.remaining == 1


def test_offline_model_refuses_every_request() -> None:
    fake = FakeModel.offline()
    with fake.client() as client, pytest.raises(AssertionError, match=OFFLINE_MESSAGE):
        client.chat.completions.create(**chat_params(FIRST))

    fake = FakeModel.offline(ANTHROPIC_MESSAGES)
    with fake.client() as client, pytest.raises(anthropic.APIConnectionError) as wrapped:
        client.messages.create(**message_params(FIRST))
    assert isinstance(wrapped.value.__cause__, AssertionError)
    assert len(fake.requests) == 1

    with httpx2.Client(transport=offline_transport()) as http, pytest.raises(AssertionError):
        http.get("http://fake.test/v1/models")


def test_offline_model_refuses_async_requests() -> None:
    fake = FakeModel.offline(OPENAI_RESPONSES)

    async def main() -> None:
        async with fake.async_client() as client:
            await client.responses.create(**response_params(FIRST))

    with pytest.raises(AssertionError, match=OFFLINE_MESSAGE):
        asyncio.run(main())


def test_script_validation() -> None:
    assert FakeModel(OPENAI_CHAT, ["plain text"]).remaining == 1
    with pytest.raises(ValueError, match="unknown api"):
        FakeModel("openai.completions", [])
    with pytest.raises(ValueError, match="scripted turn"):
        FakeModel(OPENAI_CHAT, [[]])
    with pytest.raises(ValueError, match="scripted turn"):
        # A Fail inside a multi-part turn is deliberately ill-typed: the script must refuse it.
        FakeModel(OPENAI_CHAT, [[Fail()]])  # type: ignore[list-item]
