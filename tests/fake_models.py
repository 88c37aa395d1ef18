"""A scripted fake "live model" standing in for the OpenAI and Anthropic servers.

The fake answers HTTP requests exactly as the real services do (same JSON bodies, same
server-sent event sequences), so the real ``openai`` and ``anthropic`` SDKs parse its
answers. It never touches the network: it plugs into an SDK client through
``httpx2.MockTransport``.

Scripting a model::

    fake = FakeModel(
        "openai.chat",  # or "openai.responses" or "anthropic.messages"
        [
            Call("get_weather", {"city": "Paris"}),  # turn 1: one tool call
            [Call("get_weather", {"city": "Oslo"}),  # turn 2: parallel tool calls
             Call("get_time", {"tz": "CET"})],
            [Say("Let me check."), Call("lookup", {})],  # turn 3: text, then a call
            Say("It is sunny in Paris."),  # turn 4: plain text ("..." works too)
            Fail(429, "Rate limit reached"),  # turn 5: an API error
        ],
    )
    client = fake.client()  # openai.OpenAI / anthropic.Anthropic wired to the fake
    client = openai.OpenAI(api_key="sk-test", base_url=OPENAI_BASE_URL,
                           http_client=httpx2.Client(transport=fake.transport()))

Each request consumes the next turn; ``fake.requests`` holds the parsed request bodies.
Requests sent side by side (``asyncio.gather``, threads) arrive in an order that varies, so
a turn can instead be keyed by the request's last text (``answers={"Oslo?": Say("Cold.")}``:
the last message's text, or the Responses input when it is a string), and be slowed down
(``Slow(Say("..."), 0.05)``: the answer comes after that many seconds; the async transport
sleeps without blocking the event loop).
``"stream": true`` requests get a ``text/event-stream`` answer. When the script runs out
the fake answers a 500 error (with ``x-should-retry: false``) so that a test notices.

Ids (``chatcmpl-``, ``resp_``, ``msg_``, ``call_``, ``fc_``, ``toolu_``, request ids) and
``created`` timestamps are volatile: different on every call, as the real services' are.
Everything else, including the token usage, is a deterministic function of the request
and the script: input tokens grow with the size of the conversation (messages, input,
instructions, system prompt, tools), output tokens with the size of the scripted content.
Volatile ids have a fixed length, so echoing them back does not change the usage.

``FakeModel.offline()`` is a model that must never be reached: any request raises
``AssertionError("the live model was called during replay")`` (and is still recorded in
``requests``, because the Anthropic SDK wraps transport exceptions in
``APIConnectionError``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import secrets
import string
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

OPENAI_CHAT = "openai.chat"
OPENAI_RESPONSES = "openai.responses"
ANTHROPIC_MESSAGES = "anthropic.messages"
APIS = (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES)

OPENAI_BASE_URL = "http://fake.test/v1"
ANTHROPIC_BASE_URL = "http://fake.test"
OFFLINE_MESSAGE = "the live model was called during replay"

_PATHS = {
    OPENAI_CHAT: "/chat/completions",
    OPENAI_RESPONSES: "/responses",
    ANTHROPIC_MESSAGES: "/v1/messages",
}
_CONVERSATION_KEYS = ("system", "instructions", "messages", "input", "tools")
_SYSTEM_FINGERPRINT = "fp_f0ad3c1e2b"
_STREAM_PIECES = 3
_JSON = "application/json"
_EVENT_STREAM = "text/event-stream; charset=utf-8"


# --------------------------------------------------------------------------- script


@dataclass(frozen=True)
class Say:
    """A scripted text answer."""

    text: str


@dataclass(frozen=True)
class Call:
    """A scripted tool call: the tool's name and its arguments (a JSON object)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def arguments_json(self) -> str:
        """The arguments as the services serialise them: compact JSON."""
        return json.dumps(self.arguments, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Fail:
    """A scripted API error: the HTTP status and the error message; ``retry`` sets the
    ``x-should-retry`` header (``None``: no header, the SDK decides by the status)."""

    status: int = 500
    message: str = "The server had an error while processing your request."
    retry: bool | None = None


@dataclass(frozen=True)
class Slow:
    """A scripted turn answered after ``seconds``."""

    turn: Say | Call | Fail | str | Sequence[Say | Call | str]
    seconds: float


Part = Say | Call
Turn = Say | Call | Fail | Slow | str | Sequence[Say | Call | str]
_Scripted = tuple[Part, ...] | Fail


def _normalize(turn: Turn) -> _Scripted:
    """One scripted turn as a non-empty tuple of parts (or a ``Fail``)."""
    if isinstance(turn, Slow):
        return _normalize(turn.turn)
    if isinstance(turn, Fail):
        return turn
    if isinstance(turn, str | Say | Call):
        turn = [turn]
    parts = tuple(Say(part) if isinstance(part, str) else part for part in turn)
    if not parts or not all(isinstance(part, Say | Call) for part in parts):
        raise ValueError(f"a scripted turn is Say, Call, Fail or a list of Say/Call: {turn!r}")
    return parts


# ------------------------------------------------------------------ volatile values

_COUNTER = itertools.count(1)
_BASE62 = string.digits + string.ascii_letters
_last_created = 0


def _base62(number: int, width: int) -> str:
    digits = ""
    while number:
        number, digit = divmod(number, 62)
        digits = _BASE62[digit] + digits
    return digits.rjust(width, "0")[-width:]


def _volatile_id(prefix: str, length: int, *, hexadecimal: bool = False) -> str:
    """``prefix`` + a fixed-length body: a global counter followed by a random part."""
    count = next(_COUNTER)
    if hexadecimal:
        head = f"{count:08x}"[-8:]
        tail = secrets.token_hex(length)[: length - len(head)]
    else:
        head = _base62(count, 6)
        tail = "".join(secrets.choice(_BASE62) for _ in range(length - len(head)))
    return prefix + head + tail


def _created() -> int:
    """A Unix timestamp that is now or later, and different from the previous one."""
    global _last_created
    _last_created = max(int(time.time()), _last_created + 1)
    return _last_created


def _obfuscation() -> str:
    """The random padding the OpenAI services add to streamed chunks."""
    return secrets.token_urlsafe(secrets.randbelow(12) + 1)


# --------------------------------------------------------------------- token usage


def _tokens(value: Any) -> int:
    """A deterministic token estimate: one token per four characters of JSON."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return math.ceil(len(text) / 4)


def _input_tokens(body: dict[str, Any]) -> int:
    return 3 + sum(_tokens(body[key]) for key in _CONVERSATION_KEYS if key in body)


def _output_tokens(parts: Sequence[Part]) -> int:
    total = 0
    for part in parts:
        if isinstance(part, Say):
            total += max(1, _tokens(part.text))
        else:
            total += 8 + _tokens(part.name) + _tokens(part.arguments_json)
    return total


@dataclass(frozen=True)
class _Usage:
    input: int
    output: int

    @property
    def total(self) -> int:
        return self.input + self.output


def _pieces(text: str, count: int = _STREAM_PIECES) -> list[str]:
    """``text`` split into at most ``count`` consecutive non-empty pieces."""
    if not text:
        return []
    size = math.ceil(len(text) / count)
    return [text[start : start + size] for start in range(0, len(text), size)]


# ---------------------------------------------------------------- HTTP responses


class _EventStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """A response body delivered one server-sent event at a time (sync and async)."""

    def __init__(self, frames: list[bytes]) -> None:
        self._frames = frames

    def __iter__(self) -> Iterator[bytes]:
        yield from self._frames

    async def __aiter__(self) -> Any:
        for frame in self._frames:
            yield frame


def _sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    """One server-sent event frame."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def _headers(api: str, content_type: str) -> dict[str, str]:
    if api == ANTHROPIC_MESSAGES:
        return {"content-type": content_type, "request-id": _volatile_id("req_011C", 20)}
    return {
        "content-type": content_type,
        "x-request-id": _volatile_id("req_", 32, hexadecimal=True),
        "openai-version": "2020-10-01",
        "openai-processing-ms": "42",
    }


def _json_response(api: str, status: int, body: dict[str, Any]) -> httpx2.Response:
    return httpx2.Response(status, headers=_headers(api, _JSON), json=body)


def _stream_response(api: str, frames: list[bytes]) -> httpx2.Response:
    return httpx2.Response(200, headers=_headers(api, _EVENT_STREAM), stream=_EventStream(frames))


_OPENAI_ERROR_TYPES = {400: "invalid_request_error", 404: "invalid_request_error"}
_OPENAI_ERROR_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded"}
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(api: str, status: int, message: str) -> dict[str, Any]:
    """The JSON error body the service of ``api`` sends with HTTP ``status``."""
    if api == ANTHROPIC_MESSAGES:
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": _volatile_id("req_011C", 20),
        }
    kind = _OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "requests")
    return {
        "error": {
            "message": message,
            "type": kind,
            "param": None,
            "code": _OPENAI_ERROR_CODES.get(status),
        }
    }


def _error_response(
    api: str, status: int, message: str, *, retry: bool | None = None
) -> httpx2.Response:
    response = _json_response(api, status, error_body(api, status, message))
    if retry is not None:
        response.headers["x-should-retry"] = "true" if retry else "false"
    return response


# ------------------------------------------------------- OpenAI Chat Completions


def _chat_usage(usage: _Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.total,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat_text(parts: Sequence[Part]) -> str | None:
    texts = [part.text for part in parts if isinstance(part, Say)]
    return "".join(texts) if texts else None


def _chat_calls(parts: Sequence[Part]) -> list[Call]:
    return [part for part in parts if isinstance(part, Call)]


def _chat_completion(body: dict[str, Any], parts: Sequence[Part], usage: _Usage) -> dict[str, Any]:
    """A full ``chat.completion`` object."""
    calls = _chat_calls(parts)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": _chat_text(parts),
        "refusal": None,
        "annotations": [],
    }
    if calls:
        message["tool_calls"] = [
            {
                "id": _volatile_id("call_", 24),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json},
            }
            for call in calls
        ]
    return {
        "id": _volatile_id("chatcmpl-", 29),
        "object": "chat.completion",
        "created": _created(),
        "model": body.get("model", "gpt-4o"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": _chat_usage(usage),
        "service_tier": "default",
        "system_fingerprint": _SYSTEM_FINGERPRINT,
    }


def _chat_deltas(parts: Sequence[Part]) -> Iterator[dict[str, Any]]:
    """The ``delta`` objects of a streamed chat completion, in order."""
    text = _chat_text(parts)
    yield {"role": "assistant", "content": "" if text is not None else None, "refusal": None}
    for piece in _pieces(text or ""):
        yield {"content": piece}
    for index, call in enumerate(_chat_calls(parts)):
        yield {
            "tool_calls": [
                {
                    "index": index,
                    "id": _volatile_id("call_", 24),
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
            ]
        }
        for piece in _pieces(call.arguments_json):
            yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}


def _chat_chunks(body: dict[str, Any], parts: Sequence[Part], usage: _Usage) -> list[bytes]:
    """The server-sent events of a streamed chat completion, ``[DONE]`` included."""
    options = body.get("stream_options") or {}
    include_usage = bool(options.get("include_usage"))
    obfuscate = options.get("include_obfuscation", True) is not False
    head = {
        "id": _volatile_id("chatcmpl-", 29),
        "object": "chat.completion.chunk",
        "created": _created(),
        "model": body.get("model", "gpt-4o"),
        "service_tier": "default",
        "system_fingerprint": _SYSTEM_FINGERPRINT,
    }

    def chunk(choices: list[dict[str, Any]], chunk_usage: dict[str, Any] | None = None) -> bytes:
        data = {**head, "choices": choices}
        if include_usage:
            data["usage"] = chunk_usage
        if obfuscate:
            data["obfuscation"] = _obfuscation()
        return _sse(data)

    def choice(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}

    frames = [chunk([choice(delta)]) for delta in _chat_deltas(parts)]
    finish_reason = "tool_calls" if _chat_calls(parts) else "stop"
    frames.append(chunk([choice({}, finish_reason)]))
    if include_usage:
        frames.append(chunk([], _chat_usage(usage)))
    frames.append(_sse("[DONE]"))
    return frames


# ------------------------------------------------------------ OpenAI Responses


@dataclass(frozen=True)
class _Item:
    """One output item of a response, with its volatile ids fixed for the whole answer."""

    part: Part
    id: str
    call_id: str | None = None

    def snapshot(self, *, done: bool) -> dict[str, Any]:
        """The item as ``output_item.added`` (not done) or ``.done`` / the response show it."""
        status = "completed" if done else "in_progress"
        if isinstance(self.part, Say):
            content = [_output_text(self.part.text)] if done else []
            return {
                "id": self.id,
                "type": "message",
                "status": status,
                "content": content,
                "role": "assistant",
            }
        return {
            "id": self.id,
            "type": "function_call",
            "status": status,
            "arguments": self.part.arguments_json if done else "",
            "call_id": self.call_id,
            "name": self.part.name,
        }


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def _response_items(parts: Sequence[Part]) -> list[_Item]:
    return [
        _Item(part, _volatile_id("msg_", 50, hexadecimal=True))
        if isinstance(part, Say)
        else _Item(part, _volatile_id("fc_", 50, hexadecimal=True), _volatile_id("call_", 24))
        for part in parts
    ]


def _responses_usage(usage: _Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total,
    }


def _response_object(
    body: dict[str, Any],
    response_id: str,
    created_at: int,
    items: Sequence[_Item],
    usage: _Usage | None,
) -> dict[str, Any]:
    """A ``response`` object: in progress (``usage`` None) or completed."""
    done = usage is not None
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": "completed" if done else "in_progress",
        "background": False,
        "completed_at": created_at + 1 if done else None,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": body.get("max_tool_calls"),
        "model": body.get("model", "gpt-4o"),
        "output": [item.snapshot(done=True) for item in items] if done else [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "prompt_cache_key": body.get("prompt_cache_key"),
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": body.get("safety_identifier"),
        "service_tier": "default",
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "top_logprobs": 0,
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": _responses_usage(usage) if usage is not None else None,
        "user": body.get("user"),
        "metadata": body.get("metadata") or {},
    }


def _response(body: dict[str, Any], parts: Sequence[Part], usage: _Usage) -> dict[str, Any]:
    """A full, completed ``response`` object."""
    response_id = _volatile_id("resp_", 50, hexadecimal=True)
    return _response_object(body, response_id, _created(), _response_items(parts), usage)


def _item_events(index: int, item: _Item) -> Iterator[dict[str, Any]]:
    """The stream events of one output item, without ``sequence_number``."""
    yield {
        "type": "response.output_item.added",
        "output_index": index,
        "item": item.snapshot(done=False),
    }
    where = {"item_id": item.id, "output_index": index}
    if isinstance(item.part, Say):
        text = item.part.text
        part = {**where, "content_index": 0}
        yield {"type": "response.content_part.added", **part, "part": _output_text("")}
        for piece in _pieces(text):
            yield {
                "type": "response.output_text.delta",
                **part,
                "delta": piece,
                "logprobs": [],
                "obfuscation": _obfuscation(),
            }
        yield {"type": "response.output_text.done", **part, "text": text, "logprobs": []}
        yield {"type": "response.content_part.done", **part, "part": _output_text(text)}
    else:
        arguments = item.part.arguments_json
        for piece in _pieces(arguments):
            yield {
                "type": "response.function_call_arguments.delta",
                **where,
                "delta": piece,
                "obfuscation": _obfuscation(),
            }
        yield {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
    yield {
        "type": "response.output_item.done",
        "output_index": index,
        "item": item.snapshot(done=True),
    }


def _response_events(body: dict[str, Any], parts: Sequence[Part], usage: _Usage) -> list[bytes]:
    """The server-sent events of a streamed response, each with its ``sequence_number``."""
    response_id = _volatile_id("resp_", 50, hexadecimal=True)
    created_at = _created()
    items = _response_items(parts)
    in_progress = _response_object(body, response_id, created_at, items, None)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": in_progress},
        {"type": "response.in_progress", "response": in_progress},
    ]
    for index, item in enumerate(items):
        events.extend(_item_events(index, item))
    completed = _response_object(body, response_id, created_at, items, usage)
    events.append({"type": "response.completed", "response": completed})
    return [
        _sse({"type": event["type"], "sequence_number": number, **event}, event["type"])
        for number, event in enumerate(events)
    ]


# ---------------------------------------------------------- Anthropic Messages


@dataclass(frozen=True)
class _Block:
    """One content block of a message, with its volatile tool-use id fixed."""

    part: Part
    id: str | None = None

    def full(self) -> dict[str, Any]:
        if isinstance(self.part, Say):
            return {"type": "text", "text": self.part.text}
        return {
            "type": "tool_use",
            "id": self.id,
            "name": self.part.name,
            "input": self.part.arguments,
        }

    def start(self) -> dict[str, Any]:
        if isinstance(self.part, Say):
            return {"type": "text", "text": ""}
        return {"type": "tool_use", "id": self.id, "name": self.part.name, "input": {}}

    def deltas(self) -> list[dict[str, Any]]:
        if isinstance(self.part, Say):
            return [{"type": "text_delta", "text": piece} for piece in _pieces(self.part.text)]
        pieces = ["", *_pieces(self.part.arguments_json)]
        return [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]


def _blocks(parts: Sequence[Part]) -> list[_Block]:
    return [
        _Block(part) if isinstance(part, Say) else _Block(part, _volatile_id("toolu_01", 22))
        for part in parts
    ]


def _anthropic_usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _stop_reason(parts: Sequence[Part]) -> str:
    return "tool_use" if any(isinstance(part, Call) for part in parts) else "end_turn"


def _message_object(
    body: dict[str, Any], blocks: Sequence[_Block], usage: _Usage, *, started: bool
) -> dict[str, Any]:
    """A ``message``: complete, or as ``message_start`` shows it (``started``)."""
    return {
        "id": _volatile_id("msg_01", 22),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-haiku-4-5"),
        "content": [] if started else [block.full() for block in blocks],
        "stop_reason": None if started else _stop_reason([block.part for block in blocks]),
        "stop_sequence": None,
        "usage": _anthropic_usage(usage.input, 1 if started else usage.output),
    }


def _message(body: dict[str, Any], parts: Sequence[Part], usage: _Usage) -> dict[str, Any]:
    """A full Anthropic ``message`` object."""
    return _message_object(body, _blocks(parts), usage, started=False)


def _message_events(body: dict[str, Any], parts: Sequence[Part], usage: _Usage) -> list[bytes]:
    """The server-sent events of a streamed Anthropic message."""
    blocks = _blocks(parts)
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": _message_object(body, blocks, usage, started=True)}
    ]
    for index, block in enumerate(blocks):
        events.append(
            {"type": "content_block_start", "index": index, "content_block": block.start()}
        )
        if index == 0:
            events.append({"type": "ping"})
        events.extend(
            {"type": "content_block_delta", "index": index, "delta": delta}
            for delta in block.deltas()
        )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(parts), "stop_sequence": None},
            "usage": {"output_tokens": usage.output},
        }
    )
    events.append({"type": "message_stop"})
    return [_sse(event, event["type"]) for event in events]


_COMPLETE = {
    OPENAI_CHAT: _chat_completion,
    OPENAI_RESPONSES: _response,
    ANTHROPIC_MESSAGES: _message,
}
_STREAM = {
    OPENAI_CHAT: _chat_chunks,
    OPENAI_RESPONSES: _response_events,
    ANTHROPIC_MESSAGES: _message_events,
}


# -------------------------------------------------------------------- the model


class FakeModel:
    """A scripted live model for one API, answering through ``httpx2.MockTransport``.

    ``api`` is ``"openai.chat"``, ``"openai.responses"`` or ``"anthropic.messages"``.
    ``script`` is a list of turns, one per request, each one of:

    * ``Say("text")`` (or just ``"text"``): a text answer;
    * ``Call("tool", {"arg": 1})``: one tool call;
    * a list of ``Say``/``Call`` parts: several parts in one answer, e.g. parallel
      tool calls ``[Call("a", {}), Call("b", {})]`` or text then a call;
    * ``Fail(status, message)``: the API's JSON error with that HTTP status.

    ``requests`` lists the parsed JSON bodies of all requests received, in order.
    """

    def __init__(
        self,
        api: str,
        script: Iterable[Turn] = (),
        *,
        offline: bool = False,
        answers: Mapping[str, Turn] | None = None,
    ) -> None:
        if api not in APIS:
            raise ValueError(f"unknown api {api!r}; expected one of {APIS}")
        self.api = api
        self.offline_mode = offline
        self.requests: list[Any] = []
        script = list(script)
        self._turns = [_normalize(turn) for turn in script]
        self._delays = [_delay(turn) for turn in script]
        self._answers = {k: (_normalize(t), _delay(t)) for k, t in (answers or {}).items()}
        self._next = 0

    @classmethod
    def offline(cls, api: str = OPENAI_CHAT) -> FakeModel:
        """A model that must never be called: every request raises ``AssertionError``."""
        return cls(api, offline=True)

    @property
    def remaining(self) -> int:
        """How many scripted turns have not been answered yet."""
        return len(self._turns) - self._next

    # -- HTTP ---------------------------------------------------------------------

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        """Answer one request (the handler for ``httpx2.MockTransport``, sync and async)."""
        body = _parse_body(request)
        self.requests.append(body)
        if self.offline_mode:
            raise AssertionError(OFFLINE_MESSAGE)
        if request.method != "POST" or not request.url.path.endswith(_PATHS[self.api]):
            message = f"Invalid URL ({request.method} {request.url.path})"
            return _error_response(self.api, 404, message)
        if not isinstance(body, dict):
            return _error_response(self.api, 400, "The request body is not a JSON object.")
        turn = self._pick(body)
        if turn is None:
            message = f"FakeModel script exhausted: no turn left for request #{len(self.requests)}"
            return _error_response(self.api, 500, message, retry=False)
        return self._answer(body, turn[0])

    def _pick(self, body: dict[str, Any]) -> tuple[_Scripted, float] | None:
        """The scripted turn (and its delay) that answers ``body``."""
        keyed = self._answers.get(_last_text(body) or "")
        if keyed is not None:
            return keyed
        if self._next >= len(self._turns):
            return None
        self._next += 1
        return self._turns[self._next - 1], self._delays[self._next - 1]

    def _answer(self, body: dict[str, Any], turn: _Scripted) -> httpx2.Response:
        if isinstance(turn, Fail):
            return _error_response(self.api, turn.status, turn.message, retry=turn.retry)
        usage = _Usage(_input_tokens(body), _output_tokens(turn))
        if body.get("stream"):
            return _stream_response(self.api, _STREAM[self.api](body, turn, usage))
        return _json_response(self.api, 200, _COMPLETE[self.api](body, turn, usage))

    def delay_for(self, request: httpx2.Request) -> float:
        """How long the answer to ``request`` waits (0 unless its turn is ``Slow``)."""
        body = _parse_body(request)
        if self.offline_mode or not isinstance(body, dict):
            return 0.0
        keyed = self._answers.get(_last_text(body) or "")
        if keyed is not None:
            return keyed[1]
        return self._delays[self._next] if self._next < len(self._delays) else 0.0

    async def async_handler(self, request: httpx2.Request) -> httpx2.Response:
        """The async twin of ``handler``: a ``Slow`` turn waits without blocking."""
        return self.handler(request)

    def transport(self) -> httpx2.MockTransport:
        """A transport for ``httpx2.Client`` and ``httpx2.AsyncClient`` (a ``Slow`` turn
        sleeps: ``time.sleep`` for the sync client, ``asyncio.sleep`` for the async one)."""
        return _SlowTransport(self)

    # -- SDK clients ----------------------------------------------------------------

    def client(self, **options: Any) -> Any:
        """A real SDK client (``openai.OpenAI`` / ``anthropic.Anthropic``) on this fake.

        ``max_retries`` defaults to 0; ``options`` go to the SDK client's constructor.
        """
        http_client = httpx2.Client(transport=self.transport())
        return self._sdk_client(False, http_client, options)

    def async_client(self, **options: Any) -> Any:
        """A real async SDK client (``AsyncOpenAI`` / ``AsyncAnthropic``) on this fake."""
        http_client = httpx2.AsyncClient(transport=self.transport())
        return self._sdk_client(True, http_client, options)

    def _sdk_client(self, asynchronous: bool, http_client: Any, options: dict[str, Any]) -> Any:
        options = {"max_retries": 0, "http_client": http_client, **options}
        if self.api == ANTHROPIC_MESSAGES:
            import anthropic

            anthropic_sdk = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
            return anthropic_sdk(api_key="sk-ant-test", base_url=ANTHROPIC_BASE_URL, **options)
        import openai

        openai_sdk = openai.AsyncOpenAI if asynchronous else openai.OpenAI
        return openai_sdk(api_key="sk-test", base_url=OPENAI_BASE_URL, **options)


class _SlowTransport(httpx2.MockTransport):
    """``MockTransport`` on a fake, with its ``Slow`` turns' delays."""

    def __init__(self, fake: FakeModel) -> None:
        super().__init__(fake.handler)
        self.fake = fake

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.read()
        delay = self.fake.delay_for(request)
        if delay:
            time.sleep(delay)
        return super().handle_request(request)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        delay = self.fake.delay_for(request)
        if delay:
            await asyncio.sleep(delay)
        return await super().handle_async_request(request)


def _delay(turn: Turn) -> float:
    return turn.seconds if isinstance(turn, Slow) else 0.0


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        found = [t for t in texts if isinstance(t, str)]
        return "".join(found) if found else None
    return None


def _last_text(body: dict[str, Any]) -> str | None:
    """The text of the request's last message (or its Responses input, as a string)."""
    conversation = body.get("messages", body.get("input"))
    if isinstance(conversation, str):
        return conversation
    if isinstance(conversation, list) and conversation and isinstance(conversation[-1], dict):
        return _text_of(conversation[-1].get("content"))
    return None


def _parse_body(request: httpx2.Request) -> Any:
    """The request's JSON body, or None when it has none (or it is not JSON)."""
    if not request.content:
        return None
    try:
        return json.loads(request.content)
    except ValueError:
        return None


def offline_transport() -> httpx2.MockTransport:
    """A transport that fails any request with ``AssertionError`` (replay must not call)."""
    return FakeModel.offline().transport()
