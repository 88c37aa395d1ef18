"""Model APIs on the wire: their requests and responses, in the project's vocabulary.

Three HTTP APIs are understood: OpenAI Chat Completions (``openai.chat``), OpenAI Responses
(``openai.responses``) and Anthropic Messages (``anthropic.messages``). :func:`api_for`
names the API a request goes to from its method and URL path; the :class:`Api` turns a
request body into a :class:`WireRequest` (messages, tools, the other parameters) and a
recorded response into a :class:`~pytest_rollout.turns.Turn`.

A response is recorded as a *raw dict*: ``{"status", "content_type"}`` plus ``"json"`` for
a JSON body, ``"frames"`` (see :mod:`pytest_rollout.sse`) for an event stream, or ``"text"``
for anything else. :func:`raw_response` builds one from bytes and :func:`response_body`
gives equivalent bytes back. Reading a response never raises: a body of an unexpected
shape yields the turn that can be read from it (often an empty one), so that a test never
fails because a provider added a field. Requests are stricter: a body that is not a JSON
object of the API's shape raises :class:`WireFormatError`.

:func:`key_messages` replaces the volatile ids in messages (tool call ids, item ids) by
placeholders numbered in order of appearance, so that a request's identity keeps which
result answers which call but not the names a provider made up for them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

import orjson

from .errors import RolloutError
from .sse import parse_frames, render_frames
from .turns import ToolCall, Turn

__all__ = [
    "ANTHROPIC_MESSAGES",
    "APIS",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "VOLATILE_PARAMS",
    "Api",
    "WireFormatError",
    "WireRequest",
    "api_for",
    "key_messages",
    "raw_response",
    "response_body",
]


class WireFormatError(RolloutError):
    """A model request body, or a recorded raw response, is not of the expected shape."""

    __module__ = "pytest_rollout"


#: Top-level request keys that never belong to a request's identity: they change from run
#: to run (or user to user) without changing what is asked.
VOLATILE_PARAMS: Final = frozenset(
    {"previous_response_id", "prompt_cache_key", "safety_identifier", "user", "metadata"}
)

#: Keys whose string values :func:`key_messages` replaces by placeholders.
_ID_KEYS: Final = frozenset({"id", "call_id", "tool_call_id", "tool_use_id"})

#: Statuses a recorded response may carry.
_MIN_STATUS: Final = 100
_MAX_STATUS: Final = 599


@dataclass(frozen=True, slots=True)
class WireRequest:
    """A model request in the project's vocabulary.

    ``messages`` is the conversation sent, system prompt first when the API carries it
    apart (Responses ``instructions``, Anthropic ``system``) and a Responses ``input``
    string as a user message. ``tools`` is the request's ``tools`` as sent (``None`` when
    absent). ``params`` holds every other top-level key, ``model`` and ``stream``
    included, minus :data:`VOLATILE_PARAMS`.
    """

    api: str
    provider: str
    model: str | None
    messages: list[Any]
    tools: Any
    params: dict[str, Any]
    stream: bool


# --------------------------------------------------------------------------- helpers
# Readers of untrusted JSON: each returns a value of the asked type or an empty one.


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _arguments(value: Any) -> dict[str, Any]:
    """Tool call arguments as an object: a JSON string is parsed, an empty one is ``{}``;
    anything that is not an object is kept as ``{"_unparsed": value}``."""
    if isinstance(value, Mapping):
        return dict(value)
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {"_unparsed": value}
        if isinstance(parsed, dict):
            return parsed
    return {"_unparsed": value}


def _usage(input_tokens: Any, output_tokens: Any) -> dict[str, int] | None:
    tokens_in, tokens_out = _int(input_tokens), _int(output_tokens)
    if tokens_in is None and tokens_out is None:
        return None
    return {"input_tokens": tokens_in or 0, "output_tokens": tokens_out or 0}


def _turn(
    texts: list[str], calls: list[ToolCall], usage: dict[str, int] | None, model: Any
) -> Turn:
    return Turn(content="".join(texts) or None, tool_calls=calls, usage=usage, model=_str(model))


def _call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    return ToolCall(_str(call_id) or "", _str(name) or "", _arguments(arguments))


# --------------------------------------------------------------------------- requests


def _load_body(api: str, path: str, body: bytes) -> dict[str, Any]:
    where = f"{api} request (POST .../{path.lstrip('/')})"
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise WireFormatError(f"{where}: the body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise WireFormatError(
            f"{where}: the body must be a JSON object, got {type(value).__name__}"
        )
    return value


def _require_list(where: str, body: Mapping[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    if not isinstance(value, list):
        got = "nothing" if value is None else type(value).__name__
        raise WireFormatError(f"{where}: '{key}' must be a list of messages, got {got}")
    return value


def _chat_messages(where: str, body: Mapping[str, Any]) -> list[Any]:
    return list(_require_list(where, body, "messages"))


def _responses_messages(where: str, body: Mapping[str, Any]) -> list[Any]:
    messages: list[Any] = []
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise WireFormatError(
                f"{where}: 'instructions' must be a string, got {type(instructions).__name__}"
            )
        messages.append({"role": "system", "content": instructions})
    given = body.get("input")
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
    elif isinstance(given, list):
        messages.extend(given)
    elif given is not None:
        raise WireFormatError(
            f"{where}: 'input' must be a string or a list, got {type(given).__name__}"
        )
    return messages


def _anthropic_messages(where: str, body: Mapping[str, Any]) -> list[Any]:
    messages: list[Any] = []
    system = body.get("system")
    if system is not None:
        if not isinstance(system, str | list):
            raise WireFormatError(
                f"{where}: 'system' must be a string or a list of blocks, "
                f"got {type(system).__name__}"
            )
        messages.append({"role": "system", "content": system})
    messages.extend(_require_list(where, body, "messages"))
    return messages


# --------------------------------------------------------------------------- responses


def _chat_json(body: Any) -> Turn:
    body = _dict(body)
    choices = _list(body.get("choices"))
    message = _dict(_dict(choices[0]).get("message")) if choices else {}
    texts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        texts.append(content)
    else:  # a list of parts, as some compatible servers send
        texts.extend(t for part in _list(content) if (t := _str(_dict(part).get("text"))))
    calls: list[ToolCall] = []
    for raw in _list(message.get("tool_calls")):
        call = _dict(raw)
        if call.get("type") == "custom":
            custom = _dict(call.get("custom"))
            calls.append(_call(call.get("id"), custom.get("name"), {"input": custom.get("input")}))
            continue
        function = _dict(call.get("function"))
        calls.append(_call(call.get("id"), function.get("name"), function.get("arguments")))
    usage = _dict(body.get("usage"))
    return _turn(
        texts,
        calls,
        _usage(usage.get("prompt_tokens"), usage.get("completion_tokens")),
        body.get("model"),
    )


@dataclass
class _StreamedCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _chat_frames(frames: list[Any]) -> Turn:
    texts: list[str] = []
    calls: dict[int, _StreamedCall] = {}
    usage: dict[str, int] | None = None
    model: Any = None
    for frame in frames:
        chunk = _dict(_dict(frame).get("data"))  # "[DONE]" reads as an empty chunk
        if _str(chunk.get("model")):
            model = chunk["model"]
        if isinstance(chunk.get("usage"), Mapping):
            found = _usage(
                chunk["usage"].get("prompt_tokens"), chunk["usage"].get("completion_tokens")
            )
            usage = found or usage
        for raw_choice in _list(chunk.get("choices")):
            choice = _dict(raw_choice)
            if (_int(choice.get("index")) or 0) != 0:  # n > 1: the first choice is the turn
                continue
            delta = _dict(choice.get("delta"))
            if text := _str(delta.get("content")):
                texts.append(text)
            for raw_piece in _list(delta.get("tool_calls")):
                piece = _dict(raw_piece)
                index = _int(piece.get("index"))
                if index is None:  # servers that leave the index out: a new id, a new call
                    new = bool(piece.get("id")) and all(c.id != piece["id"] for c in calls.values())
                    index = len(calls) if new or not calls else max(calls)
                call = calls.setdefault(index, _StreamedCall())
                function = _dict(piece.get("function"))
                if not call.id and (call_id := _str(piece.get("id"))):
                    call.id = call_id
                if not call.name and (name := _str(function.get("name"))):
                    call.name = name
                if arguments := _str(function.get("arguments")):
                    call.arguments.append(arguments)
    tool_calls = [
        ToolCall(c.id, c.name, _arguments("".join(c.arguments))) for _, c in sorted(calls.items())
    ]
    return _turn(texts, tool_calls, usage, model)


def _responses_output(items: list[Any]) -> tuple[list[str], list[ToolCall]]:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for raw in items:
        item = _dict(raw)
        kind = item.get("type")
        if kind == "message":
            for raw_part in _list(item.get("content")):
                part = _dict(raw_part)
                if part.get("type") == "output_text" and (text := _str(part.get("text"))):
                    texts.append(text)
        elif kind == "function_call":
            calls.append(_call(item.get("call_id"), item.get("name"), item.get("arguments")))
        elif kind == "custom_tool_call":
            calls.append(_call(item.get("call_id"), item.get("name"), {"input": item.get("input")}))
    return texts, calls


def _responses_json(body: Any) -> Turn:
    body = _dict(body)
    texts, calls = _responses_output(_list(body.get("output")))
    usage = _dict(body.get("usage"))
    return _turn(
        texts,
        calls,
        _usage(usage.get("input_tokens"), usage.get("output_tokens")),
        body.get("model"),
    )


_RESPONSES_FINAL: Final = frozenset(
    {"response.completed", "response.incomplete", "response.failed"}
)


def _responses_frames(frames: list[Any]) -> Turn:
    final: Mapping[str, Any] | None = None
    texts: list[str] = []
    items: list[Any] = []
    model: Any = None
    for raw in frames:
        frame = _dict(raw)
        data = _dict(frame.get("data"))
        kind = data.get("type", frame.get("event"))
        response = data.get("response")
        if isinstance(response, Mapping):
            if kind in _RESPONSES_FINAL:
                final = response
            if _str(response.get("model")):
                model = response["model"]
        if kind == "response.output_text.delta" and (text := _str(data.get("delta"))):
            texts.append(text)
        elif kind == "response.output_item.done":
            items.append(data.get("item"))
    if final is not None:
        return _responses_json(final)
    # Cut short: what the stream said before it stopped.
    _, calls = _responses_output(items)
    return _turn(texts, calls, None, model)


def _anthropic_json(body: Any) -> Turn:
    body = _dict(body)
    texts: list[str] = []
    calls: list[ToolCall] = []
    for raw in _list(body.get("content")):
        block = _dict(raw)
        if block.get("type") == "text" and (text := _str(block.get("text"))):
            texts.append(text)
        elif block.get("type") == "tool_use":
            calls.append(_call(block.get("id"), block.get("name"), block.get("input")))
    usage = _dict(body.get("usage"))
    return _turn(
        texts,
        calls,
        _usage(usage.get("input_tokens"), usage.get("output_tokens")),
        body.get("model"),
    )


@dataclass
class _Block:
    kind: str
    text: list[str] = field(default_factory=list)
    call: _StreamedCall = field(default_factory=_StreamedCall)
    start_input: Any = None


def _anthropic_frames(frames: list[Any]) -> Turn:
    blocks: dict[int, _Block] = {}
    model: Any = None
    input_tokens: Any = None
    output_tokens: Any = None
    for raw in frames:
        frame = _dict(raw)
        data = _dict(frame.get("data"))
        kind = data.get("type", frame.get("event"))
        if kind == "message_start":
            message = _dict(data.get("message"))
            model = message.get("model")
            usage = _dict(message.get("usage"))
            input_tokens = usage.get("input_tokens")
            output_tokens = usage.get("output_tokens")
        elif kind == "content_block_start":
            index = _int(data.get("index"))
            start = _dict(data.get("content_block"))
            if index is None or start.get("type") not in ("text", "tool_use"):
                continue
            block = blocks[index] = _Block(str(start["type"]))
            if block.kind == "text":
                if text := _str(start.get("text")):
                    block.text.append(text)
            else:
                block.call.id = _str(start.get("id")) or ""
                block.call.name = _str(start.get("name")) or ""
                block.start_input = start.get("input")
        elif kind == "content_block_delta":
            index = _int(data.get("index"))
            found = None if index is None else blocks.get(index)
            if found is None:
                continue
            delta = _dict(data.get("delta"))
            if delta.get("type") == "text_delta" and (text := _str(delta.get("text"))):
                found.text.append(text)
            elif delta.get("type") == "input_json_delta" and (
                piece := _str(delta.get("partial_json"))
            ):
                found.call.arguments.append(piece)
        elif kind == "message_delta":
            usage = _dict(data.get("usage"))
            # Cumulative counts: the last one seen is the total.
            if _int(usage.get("output_tokens")) is not None:
                output_tokens = usage["output_tokens"]
            if _int(usage.get("input_tokens")) is not None:
                input_tokens = usage["input_tokens"]
    texts: list[str] = []
    calls: list[ToolCall] = []
    for _, block in sorted(blocks.items()):
        if block.kind == "text":
            texts.extend(block.text)
            continue
        arguments: Any = "".join(block.call.arguments)
        if not arguments and isinstance(block.start_input, Mapping):
            arguments = block.start_input
        calls.append(ToolCall(block.call.id, block.call.name, _arguments(arguments)))
    return _turn(texts, calls, _usage(input_tokens, output_tokens), model)


# --------------------------------------------------------------------------- the APIs


@dataclass(frozen=True, slots=True)
class Api:
    """One model API: its name, its provider, the path it is posted to, and its readers.

    ``path`` is the end of the URL path that names the API (``/chat/completions``,
    ``/responses``, ``/messages``).
    """

    name: str
    provider: str
    path: str
    _messages: Callable[[str, Mapping[str, Any]], list[Any]] = field(repr=False, compare=False)
    _read_json: Callable[[Any], Turn] = field(repr=False, compare=False)
    _read_frames: Callable[[list[Any]], Turn] = field(repr=False, compare=False)
    _message_keys: frozenset[str] = field(repr=False, compare=False)

    def request(self, body: bytes) -> WireRequest:
        """The request a body carries. Raises :class:`WireFormatError` when the body is not
        a JSON object, or its messages (``messages``, ``input``, ``instructions``,
        ``system``) are not of the API's types, or its ``model`` is not a string."""
        data = _load_body(self.name, self.path, body)
        where = f"{self.name} request (POST .../{self.path.lstrip('/')})"
        messages = self._messages(where, data)
        model = data.get("model")
        if model is not None and not isinstance(model, str):
            raise WireFormatError(f"{where}: 'model' must be a string, got {type(model).__name__}")
        skipped = self._message_keys | VOLATILE_PARAMS | {"tools"}
        params = {k: v for k, v in data.items() if k not in skipped}
        return WireRequest(
            api=self.name,
            provider=self.provider,
            model=model,
            messages=messages,
            tools=data.get("tools"),
            params=params,
            stream=bool(data.get("stream")),
        )

    def turn(self, raw: Mapping[str, Any]) -> Turn:
        """The turn a recorded raw response holds. Never raises: a body of another shape
        (an error, a text body, a truncated stream) gives what can be read, at worst an
        empty turn."""
        found: object = raw
        if not isinstance(found, Mapping):
            return Turn()
        if "frames" in raw:
            return self._read_frames(_list(raw["frames"]))
        if "json" in raw:
            return self._read_json(raw["json"])
        return Turn()


OPENAI_CHAT: Final = Api(
    "openai.chat",
    "openai",
    "/chat/completions",
    _chat_messages,
    _chat_json,
    _chat_frames,
    frozenset({"messages"}),
)
OPENAI_RESPONSES: Final = Api(
    "openai.responses",
    "openai",
    "/responses",
    _responses_messages,
    _responses_json,
    _responses_frames,
    frozenset({"input", "instructions"}),
)
ANTHROPIC_MESSAGES: Final = Api(
    "anthropic.messages",
    "anthropic",
    "/messages",
    _anthropic_messages,
    _anthropic_json,
    _anthropic_frames,
    frozenset({"messages", "system"}),
)

#: Every API :func:`api_for` knows, by name.
APIS: Final[Mapping[str, Api]] = MappingProxyType(
    {api.name: api for api in (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES)}
)


def api_for(method: str, path: str) -> Api | None:
    """The API a request goes to, or ``None`` when it is not a model turn.

    Only a ``POST`` whose URL path ends with an API's path counts: ``/responses/{id}``,
    ``/responses/input_tokens``, ``/messages/count_tokens`` or ``/messages/batches`` are
    not turns, nor is OpenAI's Assistants ``/threads/{id}/messages``. A query string and a
    trailing slash are ignored.
    """
    if method.upper() != "POST":
        return None
    path = path.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    for api in APIS.values():
        if path.endswith(api.path):
            if api is ANTHROPIC_MESSAGES and "/threads/" in path:
                return None
            return api
    return None


def key_messages(messages: list[Any]) -> list[Any]:
    """A copy of ``messages`` with every string under ``id``, ``call_id``, ``tool_call_id``
    and ``tool_use_id`` (at any depth) replaced by ``"id-1"``, ``"id-2"``, ... in order of
    first appearance; the same id always gets the same placeholder."""
    names: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                if key in _ID_KEYS and isinstance(item, str):
                    out[key] = names.setdefault(item, f"id-{len(names) + 1}")
                else:
                    out[key] = walk(item)
            return out
        if isinstance(value, list | tuple):
            return [walk(item) for item in value]
        return value

    return [walk(message) for message in messages]


# --------------------------------------------------------------------------- raw responses


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def raw_response(status: int, content_type: str, body: bytes) -> dict[str, Any]:
    """The recorded form of a response: ``"frames"`` for ``text/event-stream`` (unless the
    body holds no frame but is not blank), ``"json"`` for a JSON media type
    (``application/json``, ``*+json``) whose body parses, ``"text"`` (UTF-8, undecodable
    bytes replaced) for anything else."""
    raw: dict[str, Any] = {"status": status, "content_type": content_type}
    media = _media_type(content_type)
    if media == "text/event-stream":
        frames = parse_frames(body)
        if frames or not body.strip():
            raw["frames"] = frames
            return raw
        # Not a stream after all (an error page sent as one): keep what was said.
    if media == "application/json" or media.endswith("+json"):
        try:
            raw["json"] = orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
        else:
            return raw
    raw["text"] = body.decode("utf-8", errors="replace")
    return raw


def response_body(raw: Mapping[str, Any]) -> tuple[int, str, bytes]:
    """``(status, content_type, body)`` of a recorded raw response: bytes equivalent to
    those recorded (JSON re-encoded compactly, frames re-rendered). Raises
    :class:`WireFormatError` when ``raw`` is not a raw response."""
    if not isinstance(raw, Mapping):
        raise WireFormatError(
            f"a recorded raw response must be an object, got {type(raw).__name__}"
        )
    status = _int(raw.get("status"))
    if status is None or not _MIN_STATUS <= status <= _MAX_STATUS:
        raise WireFormatError(
            "a recorded raw response needs an HTTP 'status' from 100 to 599, "
            f"got {raw.get('status')!r}"
        )
    content_type = raw.get("content_type")
    if not isinstance(content_type, str):
        raise WireFormatError(
            f"a recorded raw response needs a 'content_type' string, got {content_type!r}"
        )
    bodies = [key for key in ("json", "frames", "text") if key in raw]
    if len(bodies) != 1:
        raise WireFormatError(
            "a recorded raw response needs exactly one of 'json', 'frames' and 'text', "
            f"got {bodies or 'none'}"
        )
    key = bodies[0]
    value = raw[key]
    try:
        if key == "json":
            body = orjson.dumps(value)
        elif key == "frames":
            if not isinstance(value, list):
                raise WireFormatError(
                    f"a recorded raw response's 'frames' must be a list, got {type(value).__name__}"
                )
            body = render_frames(value)
        else:
            if not isinstance(value, str):
                raise WireFormatError(
                    f"a recorded raw response's 'text' must be a string, got {type(value).__name__}"
                )
            body = value.encode("utf-8")
    except WireFormatError:
        raise
    except (orjson.JSONEncodeError, ValueError) as exc:
        raise WireFormatError(
            f"a recorded raw response's {key!r} cannot be encoded: {exc}"
        ) from None
    return status, content_type, body
