"""Model API requests and responses, read as the real OpenAI and Anthropic APIs send them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rollout.errors import RolloutError
from pytest_rollout.replay.turn import ToolCall, Turn
from pytest_rollout.sdk.sse import parse_frames
from pytest_rollout.sdk.wire import (
    ANTHROPIC_MESSAGES,
    APIS,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    Api,
    WireFormatError,
    WireRequest,
    api_for,
    key_messages,
    raw_response,
    response_body,
)

JSON = "application/json"
SSE = "text/event-stream; charset=utf-8"


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def sse(*events: tuple[str | None, Any]) -> bytes:
    """A stream as the servers write it: ``event:`` (when named), one ``data:`` line."""
    out = []
    for event, data in events:
        head = f"event: {event}\n" if event else ""
        out.append(f"{head}data: {data if isinstance(data, str) else dumps(data)}\n\n")
    return "".join(out).encode()


def raw_json(body: Any, status: int = 200) -> dict[str, Any]:
    return raw_response(status, "application/json; charset=utf-8", json.dumps(body).encode())


def raw_sse(stream: bytes) -> dict[str, Any]:
    return raw_response(200, SSE, stream)


# ================================================================== OpenAI Chat Completions

CHAT_PARALLEL = {
    "id": "chatcmpl-C1a2b3c4",
    "object": "chat.completion",
    "created": 1760000000,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_Paris1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_Oslo2",
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "arguments": '{"city":"Oslo","unit":"celsius"}',
                        },
                    },
                ],
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 82,
        "completion_tokens": 51,
        "total_tokens": 133,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    },
    "service_tier": "default",
    "system_fingerprint": "fp_07871e2ad8",
}

CHAT_TEXT = {
    **CHAT_PARALLEL,
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "It is 18°C and sunny in Paris.",
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
}


def chat_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-C1a2b3c4",
        "object": "chat.completion.chunk",
        "created": 1760000000,
        "model": "gpt-4o-2024-08-06",
        "service_tier": "default",
        "system_fingerprint": "fp_07871e2ad8",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": None,
        **extra,
    }


def tool_piece(index: int, arguments: str, call_id: str = "", name: str = "") -> dict[str, Any]:
    if call_id:
        return {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
    return {"index": index, "function": {"arguments": arguments}}


CHAT_USAGE_CHUNK = {
    **chat_chunk({}),
    "choices": [],
    "usage": {
        "prompt_tokens": 82,
        "completion_tokens": 51,
        "total_tokens": 133,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    },
}

#: Two parallel calls, their argument pieces interleaved, then the usage chunk and [DONE].
CHAT_STREAM_CHUNKS = [
    chat_chunk({"role": "assistant", "content": None, "refusal": None}),
    chat_chunk({"tool_calls": [tool_piece(0, "", "call_Paris1", "get_weather")]}),
    chat_chunk({"tool_calls": [tool_piece(0, '{"ci')]}),
    chat_chunk({"tool_calls": [tool_piece(1, "", "call_Oslo2", "get_weather")]}),
    chat_chunk({"tool_calls": [tool_piece(1, '{"city":"Oslo",')]}),
    chat_chunk({"tool_calls": [tool_piece(0, 'ty":"Paris"}')]}),
    chat_chunk({"tool_calls": [tool_piece(1, '"unit":"celsius"}')]}),
    chat_chunk({}, "tool_calls"),
    CHAT_USAGE_CHUNK,
]
CHAT_STREAM = sse(*((None, c) for c in CHAT_STREAM_CHUNKS), (None, "[DONE]"))

CHAT_TEXT_CHUNKS = [
    chat_chunk({"role": "assistant", "content": "", "refusal": None}),
    chat_chunk({"content": "It is 18°C"}),
    chat_chunk({"content": " and sunny in Paris."}),
    chat_chunk({}, "stop"),
]
CHAT_TEXT_STREAM = sse(*((None, c) for c in CHAT_TEXT_CHUNKS), (None, "[DONE]"))

PARIS_AND_OSLO = (
    ToolCall("call_Paris1", "get_weather", {"city": "Paris"}),
    ToolCall("call_Oslo2", "get_weather", {"city": "Oslo", "unit": "celsius"}),
)


def test_chat_json_parallel_tool_calls() -> None:
    turn = OPENAI_CHAT.turn(raw_json(CHAT_PARALLEL))
    assert turn == Turn(
        content=None,
        tool_calls=PARIS_AND_OSLO,
        usage={"input_tokens": 82, "output_tokens": 51},
        model="gpt-4o-2024-08-06",
    )


def test_chat_json_text() -> None:
    turn = OPENAI_CHAT.turn(raw_json(CHAT_TEXT))
    assert turn.content == "It is 18°C and sunny in Paris."
    assert turn.tool_calls == ()


def test_chat_stream_merges_interleaved_tool_call_pieces_and_reads_the_usage_chunk() -> None:
    raw = raw_sse(CHAT_STREAM)
    assert raw["frames"][-1] == {"data": "[DONE]"}
    turn = OPENAI_CHAT.turn(raw)
    assert turn == OPENAI_CHAT.turn(raw_json(CHAT_PARALLEL))


def test_chat_stream_text() -> None:
    turn = OPENAI_CHAT.turn(raw_sse(CHAT_TEXT_STREAM))
    assert turn.content == "It is 18°C and sunny in Paris."
    assert turn.usage is None  # no stream_options.include_usage
    assert turn.model == "gpt-4o-2024-08-06"


def test_chat_stream_with_several_choices_reads_the_first() -> None:
    chunks = [
        chat_chunk({"content": "A"}),
        {**chat_chunk({}), "choices": [{"index": 1, "delta": {"content": "B"}}]},
        chat_chunk({"content": "a"}),
    ]
    assert OPENAI_CHAT.turn(raw_sse(sse(*((None, c) for c in chunks)))).content == "Aa"


def test_chat_stream_cut_short_keeps_what_arrived() -> None:
    cut = CHAT_STREAM[: CHAT_STREAM.index(b'ty\\":\\"Paris')]
    turn = OPENAI_CHAT.turn(raw_sse(cut))
    assert turn.tool_calls == (
        ToolCall("call_Paris1", "get_weather", {"_unparsed": '{"ci'}),
        ToolCall("call_Oslo2", "get_weather", {"_unparsed": '{"city":"Oslo",'}),
    )
    assert turn.usage is None


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("{}", {}),
        ("", {}),
        ('{"q": [1, 2]}', {"q": [1, 2]}),
        ("[1, 2]", {"_unparsed": "[1, 2]"}),
        ('{"city": "Par', {"_unparsed": '{"city": "Par'}),
        ("null", {"_unparsed": "null"}),
    ],
)
def test_chat_arguments_that_are_not_an_object_are_kept_unparsed(
    arguments: str, expected: dict[str, Any]
) -> None:
    body = json.loads(json.dumps(CHAT_PARALLEL))
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = arguments
    assert OPENAI_CHAT.turn(raw_json(body)).tool_calls[0].arguments == expected


def test_chat_custom_tool_call_input_is_kept_as_text() -> None:
    body = json.loads(json.dumps(CHAT_PARALLEL))
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": "call_c1", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
    ]
    turn = OPENAI_CHAT.turn(raw_json(body))
    assert turn.tool_calls == (ToolCall("call_c1", "sql", {"input": "SELECT 1"}),)


# ======================================================================= OpenAI Responses

GET_WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}

TEXT_ITEM = {
    "id": "msg_68a1b2",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "content": [
        {"type": "output_text", "text": "Let me check ", "annotations": [], "logprobs": []},
        {"type": "output_text", "text": "both cities.", "annotations": [], "logprobs": []},
    ],
}
CALL_PARIS = {
    "id": "fc_68a1c3",
    "type": "function_call",
    "status": "completed",
    "arguments": '{"city":"Paris"}',
    "call_id": "call_Paris1",
    "name": "get_weather",
}
CALL_OSLO = {
    "id": "fc_68a1d4",
    "type": "function_call",
    "status": "completed",
    "arguments": '{"city":"Oslo","unit":"celsius"}',
    "call_id": "call_Oslo2",
    "name": "get_weather",
}


def responses_body(
    output: list[Any], status: str = "completed", usage: bool = True
) -> dict[str, Any]:
    return {
        "id": "resp_68a1a0",
        "object": "response",
        "created_at": 1760000000,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": "You are a weather bot.",
        "max_output_tokens": None,
        "model": "gpt-4.1-2025-04-14",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [GET_WEATHER_TOOL],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": 70,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 40,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110,
        }
        if usage
        else None,
        "user": None,
        "metadata": {},
    }


REASONING_ITEM = {"id": "rs_68a1", "type": "reasoning", "summary": []}
RESPONSES_JSON = responses_body([REASONING_ITEM, TEXT_ITEM, CALL_PARIS, CALL_OSLO])


def responses_stream(final: str | None = "response.completed") -> bytes:
    seq = iter(range(1000))

    def ev(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "sequence_number": next(seq), **fields}

    pending = {**CALL_PARIS, "status": "in_progress", "arguments": ""}
    events = [
        ev("response.created", response=responses_body([], "in_progress", usage=False)),
        ev("response.in_progress", response=responses_body([], "in_progress", usage=False)),
        ev(
            "response.output_item.added",
            output_index=0,
            item={**TEXT_ITEM, "status": "in_progress", "content": []},
        ),
        ev(
            "response.content_part.added",
            item_id="msg_68a1b2",
            output_index=0,
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": [], "logprobs": []},
        ),
        *(
            ev(
                "response.output_text.delta",
                item_id="msg_68a1b2",
                output_index=0,
                content_index=0,
                delta=d,
                logprobs=[],
            )
            for d in ("Let me check ", "both cities.")
        ),
        ev("response.output_item.done", output_index=0, item=TEXT_ITEM),
        ev("response.output_item.added", output_index=1, item=pending),
        *(
            ev(
                "response.function_call_arguments.delta",
                item_id="fc_68a1c3",
                output_index=1,
                delta=d,
            )
            for d in ('{"city":', '"Paris"}')
        ),
        ev(
            "response.function_call_arguments.done",
            item_id="fc_68a1c3",
            output_index=1,
            arguments='{"city":"Paris"}',
        ),
        ev("response.output_item.done", output_index=1, item=CALL_PARIS),
        ev("response.output_item.done", output_index=2, item=CALL_OSLO),
    ]
    if final is not None:
        status = final.removeprefix("response.")
        events.append(
            ev(final, response=responses_body([TEXT_ITEM, CALL_PARIS, CALL_OSLO], status))
        )
    return sse(*events)


RESPONSES_TURN = Turn(
    content="Let me check both cities.",
    tool_calls=PARIS_AND_OSLO,
    usage={"input_tokens": 70, "output_tokens": 40},
    model="gpt-4.1-2025-04-14",
)


def test_responses_json_message_and_function_calls() -> None:
    assert OPENAI_RESPONSES.turn(raw_json(RESPONSES_JSON)) == RESPONSES_TURN


@pytest.mark.parametrize("final", ["response.completed", "response.incomplete"])
def test_responses_stream_reads_the_final_response(final: str) -> None:
    assert OPENAI_RESPONSES.turn(raw_sse(responses_stream(final))) == RESPONSES_TURN


def test_responses_stream_failed_reads_the_failed_response() -> None:
    stream = responses_stream(None) + sse(
        (
            "response.failed",
            {
                "type": "response.failed",
                "sequence_number": 99,
                "response": {
                    **responses_body([], "failed", usage=False),
                    "error": {"code": "server_error", "message": "The model failed."},
                },
            },
        )
    )
    turn = OPENAI_RESPONSES.turn(raw_sse(stream))
    assert turn == Turn(model="gpt-4.1-2025-04-14")


def test_responses_stream_cut_short_reads_deltas_and_finished_items() -> None:
    turn = OPENAI_RESPONSES.turn(raw_sse(responses_stream(None)))
    assert turn == Turn(
        content="Let me check both cities.",
        tool_calls=PARIS_AND_OSLO,
        usage=None,
        model="gpt-4.1-2025-04-14",
    )


def test_responses_refusal_and_reasoning_are_not_content() -> None:
    refusal = {
        **TEXT_ITEM,
        "content": [{"type": "refusal", "refusal": "I can't help with that."}],
    }
    turn = OPENAI_RESPONSES.turn(raw_json(responses_body([REASONING_ITEM, refusal])))
    assert turn.content is None
    assert turn.tool_calls == ()


# ====================================================================== Anthropic Messages

ANTHROPIC_USAGE = {
    "input_tokens": 412,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 96,
    "service_tier": "standard",
}

ANTHROPIC_JSON = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [
        {"type": "text", "text": "I'll check "},
        {"type": "text", "text": "both cities."},
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "get_weather",
            "input": {"city": "Paris"},
        },
        {"type": "tool_use", "id": "toolu_01B7ac", "name": "get_time", "input": {}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": ANTHROPIC_USAGE,
}


def anthropic_stream(cut_after: int | None = None) -> bytes:
    start = {
        **ANTHROPIC_JSON,
        "content": [],
        "stop_reason": None,
        "usage": {**ANTHROPIC_USAGE, "output_tokens": 1},
    }

    def delta(index: int, kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        body = {"type": "content_block_delta", "index": index, "delta": {"type": kind, **fields}}
        return "content_block_delta", body

    def block(index: int, content: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        body = {"type": "content_block_start", "index": index, "content_block": content}
        return "content_block_start", body

    def stop(index: int) -> tuple[str, dict[str, Any]]:
        return "content_block_stop", {"type": "content_block_stop", "index": index}

    paris = {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather"}
    events: list[tuple[str, Any]] = [
        ("message_start", {"type": "message_start", "message": start}),
        block(0, {"type": "text", "text": ""}),
        ("ping", {"type": "ping"}),
        delta(0, "text_delta", text="I'll check "),
        delta(0, "text_delta", text="both cities."),
        stop(0),
        block(1, {**paris, "input": {}}),
        delta(1, "input_json_delta", partial_json=""),
        delta(1, "input_json_delta", partial_json='{"city'),
        delta(1, "input_json_delta", partial_json='": "Pa'),
        delta(1, "input_json_delta", partial_json='ris"}'),
        stop(1),
        block(2, {"type": "tool_use", "id": "toolu_01B7ac", "name": "get_time", "input": {}}),
        delta(2, "input_json_delta", partial_json=""),
        stop(2),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 96},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    if cut_after is not None:
        events = events[:cut_after]
    return sse(*events)


ANTHROPIC_TURN = Turn(
    content="I'll check both cities.",
    tool_calls=(
        ToolCall("toolu_01A09q90qw90lq917835lq9", "get_weather", {"city": "Paris"}),
        ToolCall("toolu_01B7ac", "get_time", {}),
    ),
    usage={"input_tokens": 412, "output_tokens": 96},
    model="claude-sonnet-4-5-20250929",
)


def test_anthropic_json_text_and_tool_use() -> None:
    assert ANTHROPIC_MESSAGES.turn(raw_json(ANTHROPIC_JSON)) == ANTHROPIC_TURN


def test_anthropic_stream_joins_input_json_deltas() -> None:
    raw = raw_sse(anthropic_stream())
    assert raw["frames"][2] == {"event": "ping", "data": {"type": "ping"}}
    assert ANTHROPIC_MESSAGES.turn(raw) == ANTHROPIC_TURN


def test_anthropic_stream_cut_inside_a_tool_call() -> None:
    turn = ANTHROPIC_MESSAGES.turn(raw_sse(anthropic_stream(cut_after=10)))
    assert turn.content == "I'll check both cities."
    assert turn.tool_calls == (
        ToolCall("toolu_01A09q90qw90lq917835lq9", "get_weather", {"_unparsed": '{"city": "Pa'}),
    )
    # The output count of message_start stands until message_delta says more.
    assert turn.usage == {"input_tokens": 412, "output_tokens": 1}


def test_anthropic_stream_with_an_error_event() -> None:
    stream = anthropic_stream(cut_after=5) + sse(
        (
            "error",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        )
    )
    turn = ANTHROPIC_MESSAGES.turn(raw_sse(stream))
    assert turn.content == "I'll check both cities."
    assert turn.model == "claude-sonnet-4-5-20250929"


def test_anthropic_message_delta_input_tokens_win() -> None:
    stream = anthropic_stream(cut_after=6) + sse(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"input_tokens": 420, "output_tokens": 12},
            },
        )
    )
    assert ANTHROPIC_MESSAGES.turn(raw_sse(stream)).usage == {
        "input_tokens": 420,
        "output_tokens": 12,
    }


def test_anthropic_thinking_and_server_tools_are_not_turn_content() -> None:
    body = {
        **ANTHROPIC_JSON,
        "content": [
            {"type": "thinking", "thinking": "Hmm.", "signature": "EqQB"},
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01",
                "name": "web_search",
                "input": {"query": "weather"},
            },
            {"type": "text", "text": "Sunny."},
        ],
    }
    turn = ANTHROPIC_MESSAGES.turn(raw_json(body))
    assert turn.content == "Sunny."
    assert turn.tool_calls == ()


# ============================================================== shapes that must not raise

ODD_BODIES: list[Any] = [
    {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit"}},
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    [],
    "text",
    None,
    17,
    {"choices": [None, 5], "usage": "x", "model": 3},
    {"choices": [{"message": {"content": 5, "tool_calls": [5, {"function": 7}]}}]},
    {"choices": [{"message": {"content": [{"type": "text", "text": "part"}, 5]}}]},
    {"output": [5, {"type": "message", "content": "x"}, {"type": "function_call"}]},
    {"content": [None, {"type": "tool_use", "input": [1]}], "usage": {"input_tokens": True}},
]

ODD_FRAMES: list[Any] = [
    [1, "x", None],
    [{"data": [1]}, {"data": {"choices": "x"}}, {"event": "message_start", "data": "[DONE]"}],
    [{"data": {"type": "content_block_delta", "index": 9, "delta": {"type": "text_delta"}}}],
    [{"data": {"type": "content_block_start", "index": "0", "content_block": {"type": "text"}}}],
    [{"data": {"type": "response.completed", "response": [1]}}],
    [{"data": {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "{"}}]}}]}}],
]


@pytest.mark.parametrize("api", APIS.values(), ids=list(APIS))
@pytest.mark.parametrize("body", ODD_BODIES)
def test_odd_json_bodies_give_a_turn(api: Api, body: Any) -> None:
    assert isinstance(api.turn({"status": 200, "content_type": JSON, "json": body}), Turn)


@pytest.mark.parametrize("api", APIS.values(), ids=list(APIS))
@pytest.mark.parametrize("frames", ODD_FRAMES)
def test_odd_frames_give_a_turn(api: Api, frames: Any) -> None:
    assert isinstance(api.turn({"status": 200, "content_type": SSE, "frames": frames}), Turn)


@pytest.mark.parametrize("api", APIS.values(), ids=list(APIS))
@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"status": 502, "content_type": "text/html", "text": "<html>Bad gateway</html>"},
        {"frames": "not a list"},
        [],
    ],
)
def test_raw_dicts_without_a_readable_body_give_an_empty_turn(api: Api, raw: Any) -> None:
    assert api.turn(raw) == Turn()


def test_chat_stream_without_an_index_starts_a_call_per_id() -> None:
    chunks = [
        {"choices": [{"delta": {"tool_calls": [{"id": "a", "function": {"name": "f"}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": '{"x":1}'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"id": "b", "function": {"name": "g"}}]}}]},
    ]
    turn = OPENAI_CHAT.turn(raw_sse(sse(*((None, c) for c in chunks))))
    assert turn.tool_calls == (ToolCall("a", "f", {"x": 1}), ToolCall("b", "g", {}))


#: The keys and type names the readers look for, so that random bodies reach deep.
_KEYS = [
    "choices",
    "message",
    "delta",
    "content",
    "tool_calls",
    "function",
    "index",
    "arguments",
    "usage",
    "output",
    "type",
    "response",
    "item",
    "input",
    "content_block",
    "partial_json",
    "text",
    "id",
    "name",
    "model",
    "data",
    "event",
]
_TYPES = [
    "message",
    "function_call",
    "custom_tool_call",
    "output_text",
    "text",
    "tool_use",
    "text_delta",
    "input_json_delta",
    "message_start",
    "content_block_start",
    "content_block_delta",
    "message_delta",
    "response.completed",
    "response.output_text.delta",
    "response.output_item.done",
]
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False)
    | st.text(max_size=5)
    | st.sampled_from(_TYPES),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner),
    max_leaves=25,
)


@given(_json, _json)
def test_no_shape_of_body_or_frames_raises(body: Any, frames: Any) -> None:
    for api in APIS.values():
        assert isinstance(api.turn({"json": body}), Turn)
        assert isinstance(api.turn({"frames": frames}), Turn)
        if isinstance(frames, list):
            assert isinstance(api.turn({"frames": [{"data": f} for f in frames]}), Turn)


# =============================================================================== api_for


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/v1/chat/completions", "openai.chat"),
        ("post", "/v1/chat/completions", "openai.chat"),
        ("POST", "/openai/deployments/gpt-4o/chat/completions", "openai.chat"),
        ("POST", "/v1/chat/completions?api-version=2024-10-21", "openai.chat"),
        ("POST", "/api/v1/chat/completions/", "openai.chat"),
        ("POST", "/v1/responses", "openai.responses"),
        ("POST", "/openai/v1/responses", "openai.responses"),
        ("POST", "/v1/messages", "anthropic.messages"),
        ("POST", "/v1/messages?beta=true", "anthropic.messages"),
        ("GET", "/v1/chat/completions", None),
        ("GET", "/v1/responses/resp_123", None),
        ("POST", "/v1/chat/completions/chatcmpl-123", None),
        ("POST", "/v1/responses/resp_123", None),
        ("POST", "/v1/responses/resp_123/cancel", None),
        ("POST", "/v1/responses/input_tokens", None),
        ("POST", "/v1/responses/compact", None),
        ("GET", "/v1/responses/resp_123/input_items", None),
        ("POST", "/v1/messages/count_tokens", None),
        ("POST", "/v1/messages/batches", None),
        ("POST", "/v1/threads/thread_abc/messages", None),
        ("POST", "/v1/completions", None),
        ("POST", "/v1/embeddings", None),
        ("DELETE", "/v1/responses/resp_123", None),
    ],
)
def test_api_for(method: str, path: str, expected: str | None) -> None:
    api = api_for(method, path)
    assert (api.name if api else None) == expected


def test_the_apis() -> None:
    assert [(a.name, a.provider) for a in APIS.values()] == [
        ("openai.chat", "openai"),
        ("openai.responses", "openai"),
        ("anthropic.messages", "anthropic"),
        ("gemini.generate", "gemini"),
        ("bedrock.converse", "bedrock"),
        ("bedrock.converse_stream", "bedrock"),
    ]


# =============================================================================== requests

CHAT_REQUEST: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "Weather in Paris and Oslo?"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ],
    "temperature": 0,
    "stream": True,
    "stream_options": {"include_usage": True},
    "user": "user-1234",
    "metadata": {"run": "abc"},
    "prompt_cache_key": "k1",
    "safety_identifier": "hash-of-user",
}


def test_chat_request() -> None:
    request = OPENAI_CHAT.request(orjson.dumps(CHAT_REQUEST))
    assert request == WireRequest(
        api="openai.chat",
        provider="openai",
        model="gpt-4o",
        messages=CHAT_REQUEST["messages"],
        tools=CHAT_REQUEST["tools"],
        params={
            "model": "gpt-4o",
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        stream=True,
    )


def test_responses_request_with_instructions_and_string_input() -> None:
    body = {
        "model": "gpt-4.1",
        "instructions": "You are a weather bot.",
        "input": "Weather in Paris?",
        "tools": [GET_WEATHER_TOOL],
        "previous_response_id": "resp_68a1a0",
        "store": False,
    }
    request = OPENAI_RESPONSES.request(orjson.dumps(body))
    assert request.messages == [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert request.tools == [GET_WEATHER_TOOL]
    # which response it follows is volatile; that it follows one is not
    assert request.params == {
        "model": "gpt-4.1",
        "previous_response_id": "id-given",
        "store": False,
    }
    assert request.stream is False


def test_responses_request_with_input_items() -> None:
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
        CALL_PARIS,
        {"type": "function_call_output", "call_id": "call_Paris1", "output": "18C"},
    ]
    request = OPENAI_RESPONSES.request(orjson.dumps({"model": "gpt-4.1", "input": items}))
    assert request.messages == items
    assert request.tools is None


def test_responses_request_without_input() -> None:
    request = OPENAI_RESPONSES.request(b'{"model": "gpt-4.1", "prompt": {"id": "pmpt_1"}}')
    assert request.messages == []
    assert request.params == {"model": "gpt-4.1", "prompt": {"id": "pmpt_1"}}


@pytest.mark.parametrize(
    "system",
    [
        "You are a weather bot.",
        [
            {
                "type": "text",
                "text": "You are a weather bot.",
                "cache_control": {"type": "ephemeral"},
            }
        ],
    ],
)
def test_anthropic_request(system: Any) -> None:
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "18C"}],
        },
    ]
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": system,
        "messages": messages,
        "metadata": {"user_id": "u-1"},
        "stream": True,
    }
    request = ANTHROPIC_MESSAGES.request(orjson.dumps(body))
    assert request.messages == [{"role": "system", "content": system}, *messages]
    assert request.params == {"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": True}
    assert request.provider == "anthropic"
    assert request.stream is True


@pytest.mark.parametrize(
    ("api", "body", "message"),
    [
        (OPENAI_CHAT, b"", "openai.chat .*chat/completions.*not JSON"),
        (OPENAI_CHAT, b"{'model': 1}", "not JSON"),
        (OPENAI_CHAT, b"[]", "must be a JSON object, got list"),
        (OPENAI_CHAT, b'{"model": "gpt-4o"}', "'messages' must be a list of messages, got nothing"),
        (OPENAI_CHAT, b'{"messages": {}}', "'messages' must be a list of messages, got dict"),
        (OPENAI_CHAT, b'{"messages": [], "model": 4}', "'model' must be a string, got int"),
        (OPENAI_RESPONSES, b'{"input": 3}', "openai.responses .*responses.*'input'"),
        (OPENAI_RESPONSES, b'{"input": "", "instructions": []}', "'instructions' must be"),
        (ANTHROPIC_MESSAGES, b'{"messages": [], "system": 5}', "anthropic.messages .*'system'"),
        (ANTHROPIC_MESSAGES, b'"hi"', "must be a JSON object, got str"),
    ],
)
def test_bad_request_bodies_are_refused(api: Api, body: bytes, message: str) -> None:
    with pytest.raises(WireFormatError, match=message):
        api.request(body)


def test_wire_format_error_is_a_rollout_error() -> None:
    assert issubclass(WireFormatError, RolloutError)
    assert WireFormatError.__module__ == "pytest_rollout"


# ============================================================================ key_messages


def chat_history(ids: tuple[str, str]) -> list[Any]:
    return [
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "get_weather", "arguments": a}}
                for i, a in zip(ids, ('{"city":"Paris"}', '{"city":"Oslo"}'), strict=True)
            ],
        },
        {"role": "tool", "tool_call_id": ids[0], "content": "18C"},
        {"role": "tool", "tool_call_id": ids[1], "content": "9C"},
    ]


def test_key_messages_numbers_ids_in_order_of_appearance() -> None:
    history = chat_history(("call_Paris1", "call_Oslo2"))
    keyed = key_messages(history)
    assert [c["id"] for c in keyed[1]["tool_calls"]] == ["id-1", "id-2"]
    assert [m["tool_call_id"] for m in keyed[2:]] == ["id-1", "id-2"]
    assert keyed[0] == history[0]
    assert history[2]["tool_call_id"] == "call_Paris1"  # the original is untouched


def test_key_messages_ignores_fresh_ids_but_not_which_result_answers_which_call() -> None:
    a = key_messages(chat_history(("call_A", "call_B")))
    b = key_messages(chat_history(("call_x9", "call_y8")))
    assert a == b
    swapped = chat_history(("call_A", "call_B"))
    swapped[2]["tool_call_id"], swapped[3]["tool_call_id"] = "call_B", "call_A"
    assert key_messages(swapped) != a


def test_key_messages_on_anthropic_and_responses_histories() -> None:
    anthropic = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_9", "name": "f", "input": {"id": 7}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9"}]},
    ]
    keyed = key_messages(anthropic)
    assert keyed[0]["content"][0]["id"] == keyed[1]["content"][0]["tool_use_id"] == "id-1"
    assert keyed[0]["content"][0]["input"] == {"id": 7}  # not a string: kept
    responses = [
        REASONING_ITEM,
        CALL_PARIS,
        {"type": "function_call_output", "call_id": "call_Paris1", "output": "call_Paris1"},
    ]
    keyed = key_messages(responses)
    assert keyed[0]["id"] == "id-1"
    assert (keyed[1]["id"], keyed[1]["call_id"]) == ("id-2", "id-3")
    assert keyed[2]["call_id"] == "id-3"
    assert keyed[2]["output"] == "call_Paris1"  # only values under id keys change


# ========================================================================= raw responses


def test_raw_json_response_and_back() -> None:
    body = json.dumps(CHAT_PARALLEL, indent=2).encode()
    raw = raw_response(200, "application/json", body)
    assert raw == {"status": 200, "content_type": "application/json", "json": CHAT_PARALLEL}
    status, content_type, out = response_body(raw)
    assert (status, content_type) == (200, "application/json")
    assert orjson.loads(out) == CHAT_PARALLEL


def test_raw_problem_json_is_json() -> None:
    raw = raw_response(400, "application/problem+json", b'{"title": "bad"}')
    assert raw["json"] == {"title": "bad"}


def test_raw_stream_response_and_back() -> None:
    raw = raw_response(200, "text/event-stream", anthropic_stream())
    assert [f.get("event") for f in raw["frames"]][:3] == [
        "message_start",
        "content_block_start",
        "ping",
    ]
    _, content_type, out = response_body(raw)
    assert content_type == "text/event-stream"
    assert parse_frames(out) == parse_frames(anthropic_stream())


def test_raw_text_response_and_back() -> None:
    raw = raw_response(502, "text/html; charset=utf-8", b"<html>Bad gateway</html>")
    assert raw == {
        "status": 502,
        "content_type": "text/html; charset=utf-8",
        "text": "<html>Bad gateway</html>",
    }
    assert response_body(raw) == (502, "text/html; charset=utf-8", b"<html>Bad gateway</html>")


@pytest.mark.parametrize("body", [b"", b'{"choices": [', b"\xff\xfe"])
def test_a_json_content_type_with_a_body_that_is_not_json_is_text(body: bytes) -> None:
    raw = raw_response(500, JSON, body)
    assert "json" not in raw
    assert raw["text"] == body.decode("utf-8", errors="replace")


def test_an_event_stream_with_no_frames_keeps_its_text() -> None:
    raw = raw_response(500, SSE, b'{"error": {"message": "upstream failed"}}')
    assert raw["text"] == '{"error": {"message": "upstream failed"}}'
    assert "frames" not in raw
    assert raw_response(200, SSE, b"")["frames"] == []
    assert raw_response(200, SSE, b": keep-alive\n\n")["text"] == ": keep-alive\n\n"


def test_json_null_is_a_body() -> None:
    raw = raw_response(200, JSON, b"null")
    assert raw == {"status": 200, "content_type": JSON, "json": None}
    assert response_body(raw) == (200, JSON, b"null")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "must be an object"),
        ({"content_type": JSON, "json": {}}, "'status'"),
        ({"status": True, "content_type": JSON, "json": {}}, "'status'"),
        ({"status": "200", "content_type": JSON, "json": {}}, "'status'"),
        ({"status": 42, "content_type": JSON, "json": {}}, "'status'"),
        ({"status": 200, "json": {}}, "'content_type'"),
        ({"status": 200, "content_type": None, "json": {}}, "'content_type'"),
        ({"status": 200, "content_type": JSON}, "exactly one of"),
        ({"status": 200, "content_type": JSON, "json": {}, "text": ""}, "exactly one of"),
        ({"status": 200, "content_type": SSE, "frames": {"data": 1}}, "'frames' must be a list"),
        ({"status": 200, "content_type": SSE, "frames": [{"event": "x"}]}, "'frames'.*no 'data'"),
        ({"status": 200, "content_type": SSE, "frames": ["data: 1"]}, "'frames'"),
        ({"status": 200, "content_type": "text/plain", "text": b"x"}, "'text' must be a string"),
        ({"status": 200, "content_type": JSON, "json": {1: 2}}, "'json' cannot be encoded"),
        ({"status": 200, "content_type": JSON, "json": 2**70}, "'json' cannot be encoded"),
    ],
)
def test_malformed_raw_dicts_are_refused(raw: Any, message: str) -> None:
    with pytest.raises(WireFormatError, match=message):
        response_body(raw)


# ============================================== the real SDKs agree with these fixtures

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")
pydantic = pytest.importorskip("pydantic")


def test_fixtures_validate_as_sdk_types() -> None:
    from anthropic.types import Message, RawMessageStreamEvent
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent

    ChatCompletion.model_validate(CHAT_PARALLEL, strict=True)
    ChatCompletion.model_validate(CHAT_TEXT, strict=True)
    for chunk in CHAT_STREAM_CHUNKS + CHAT_TEXT_CHUNKS:
        ChatCompletionChunk.model_validate(chunk, strict=True)
    Response.model_validate(RESPONSES_JSON)
    stream_event = pydantic.TypeAdapter(ResponseStreamEvent)
    for frame in parse_frames(responses_stream()):
        assert stream_event.validate_python(frame["data"]).type == frame["event"]
    Message.model_validate(ANTHROPIC_JSON, strict=True)
    message_event = pydantic.TypeAdapter(RawMessageStreamEvent)
    for frame in parse_frames(anthropic_stream()):
        if frame["event"] != "ping":
            assert message_event.validate_python(frame["data"]).type == frame["event"]


class Server:
    """Answers every request with a recorded raw response, and keeps the requests."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        status, content_type, body = response_body(self.raw)
        return httpx2.Response(status, headers={"content-type": content_type}, content=body)

    def request(self) -> WireRequest:
        (sent,) = self.requests
        api = api_for(sent.method, sent.url.path)
        assert api is not None
        return api.request(sent.content)


def openai_client(server: Server) -> Any:
    return openai.OpenAI(
        api_key="sk-test",
        base_url="https://api.openai.com/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(server)),
        max_retries=0,
    )


def anthropic_client(server: Server) -> Any:
    return anthropic.Anthropic(
        api_key="sk-ant-test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(server)),
        max_retries=0,
    )


def sdk_calls(calls: Iterator[tuple[str, str, Any]]) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(i, n, a if isinstance(a, dict) else orjson.loads(a)) for i, n, a in calls)


USER = [{"role": "user", "content": "Weather in Paris and Oslo?"}]


def test_openai_sdk_chat_reads_the_replayed_bytes_as_the_turn_says() -> None:
    server = Server(raw_json(CHAT_PARALLEL))
    completion = openai_client(server).chat.completions.create(model="gpt-4o", messages=USER)
    message = completion.choices[0].message
    calls = sdk_calls((c.id, c.function.name, c.function.arguments) for c in message.tool_calls)
    assert calls == OPENAI_CHAT.turn(server.raw).tool_calls
    assert server.request().messages == USER


def test_openai_sdk_chat_stream_reads_the_replayed_bytes_as_the_turn_says() -> None:
    server = Server(raw_sse(CHAT_STREAM))
    with openai_client(server).chat.completions.stream(
        model="gpt-4o", messages=USER, stream_options={"include_usage": True}
    ) as stream:
        completion = stream.get_final_completion()
    turn = OPENAI_CHAT.turn(server.raw)
    message = completion.choices[0].message
    calls = sdk_calls((c.id, c.function.name, c.function.arguments) for c in message.tool_calls)
    assert calls == turn.tool_calls
    assert turn.usage == {
        "input_tokens": completion.usage.prompt_tokens,
        "output_tokens": completion.usage.completion_tokens,
    }
    request = server.request()
    assert request.stream is True
    assert request.params["stream_options"] == {"include_usage": True}


def test_openai_sdk_responses_stream_reads_the_replayed_bytes_as_the_turn_says() -> None:
    server = Server(raw_sse(responses_stream()))
    client = openai_client(server)
    with client.responses.stream(
        model="gpt-4.1", input="Weather?", instructions="You are a weather bot."
    ) as stream:
        response = stream.get_final_response()
    turn = OPENAI_RESPONSES.turn(server.raw)
    assert response.output_text == turn.content
    calls = sdk_calls(
        (i.call_id, i.name, i.arguments) for i in response.output if i.type == "function_call"
    )
    assert calls == turn.tool_calls
    assert server.request().messages == [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "Weather?"},
    ]


def test_anthropic_sdk_stream_reads_the_replayed_bytes_as_the_turn_says() -> None:
    server = Server(raw_sse(anthropic_stream()))
    client = anthropic_client(server)
    with client.messages.stream(
        model="claude-haiku-4-5", max_tokens=1024, system="Be brief.", messages=USER
    ) as stream:
        message = stream.get_final_message()
    turn = ANTHROPIC_MESSAGES.turn(server.raw)
    assert "".join(b.text for b in message.content if b.type == "text") == turn.content
    calls = sdk_calls((b.id, b.name, b.input) for b in message.content if b.type == "tool_use")
    assert calls == turn.tool_calls
    assert turn.usage == {
        "input_tokens": message.usage.input_tokens,
        "output_tokens": message.usage.output_tokens,
    }
    request = server.request()
    assert request.api == "anthropic.messages"
    assert request.messages == [{"role": "system", "content": "Be brief."}, *USER]


def test_anthropic_sdk_json_and_count_tokens_path() -> None:
    server = Server(raw_json(ANTHROPIC_JSON))
    client = anthropic_client(server)
    message = client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=USER)
    assert message.content[2].input == {"city": "Paris"}
    assert server.request().params == {"model": "claude-haiku-4-5", "max_tokens": 64}
    server = Server(raw_json({"input_tokens": 12}))
    anthropic_client(server).messages.count_tokens(model="claude-haiku-4-5", messages=USER)
    (sent,) = server.requests
    assert api_for(sent.method, sent.url.path) is None


@pytest.mark.parametrize("kind", [[], {}, 3, None])
def test_a_stream_event_type_of_another_type_is_not_an_error(kind: object) -> None:
    for api in (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES):
        assert api.turn({"frames": [{"data": {"type": kind, "response": {}}}]}) is not None


def test_key_messages_renames_the_apis_ids_but_not_a_tools_own_data() -> None:
    from pytest_rollout.sdk.wire import key_messages

    messages: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_9", "name": "cancel", "input": {"id": "ord-17"}}
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9"}]},
        {
            "role": "assistant",
            "tool_calls": [{"id": "call_4", "function": {"name": "f", "arguments": '{"id": "x"}'}}],
        },
        {"type": "function_call", "id": "fc_1", "call_id": "call_5", "arguments": "{}"},
    ]
    keyed = key_messages(messages)
    assert keyed[0]["content"][0]["id"] == "id-1"
    assert keyed[0]["content"][0]["input"] == {"id": "ord-17"}
    assert keyed[1]["content"][0]["tool_use_id"] == "id-1"
    assert keyed[2]["tool_calls"][0]["id"] == "id-2"
    assert keyed[3]["id"] == "id-3"
    assert keyed[3]["call_id"] == "id-4"
    other = [dict(messages[0], content=[dict(messages[0]["content"][0], input={"id": "ord-99"})])]
    assert key_messages(other) != key_messages(messages[:1])
