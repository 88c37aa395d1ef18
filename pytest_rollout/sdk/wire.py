"""Model APIs on the wire: their requests and responses, in the project's vocabulary.

Four HTTP APIs are understood: OpenAI Chat Completions (``openai.chat``), OpenAI Responses
(``openai.responses``), Anthropic Messages (``anthropic.messages``) and Gemini
``generateContent`` (``gemini.generate``, on the Gemini API and Vertex AI). :func:`api_for`
names the API a request goes to from its method and URL path; the :class:`Api` turns a
request body into a :class:`WireRequest` (messages, tools, the other parameters) and a
recorded response into a :class:`~pytest_rollout.replay.turn.Turn`.

A response is recorded as a *raw dict*: ``{"status", "content_type"}`` plus ``"json"`` for
a JSON body, ``"frames"`` (see :mod:`pytest_rollout.sdk.sse`) for an event stream, or ``"text"``
for anything else. :func:`raw_response` builds one from bytes and :func:`response_body`
gives equivalent bytes back. Reading a response never raises: a body of an unexpected
shape yields the turn that can be read from it (often an empty one), so that a test never
fails because a provider added a field. Requests are stricter: a body that is not a JSON
object of the API's shape raises :class:`WireFormatError`.

:func:`key_messages` replaces the volatile ids in messages (tool call ids, item ids) by
placeholders numbered in order of appearance, so that a request's identity keeps which
result answers which call but not the names a provider made up for them.

This is the front module: the rest of the project imports from here. The pieces live in
:mod:`pytest_rollout.sdk.wire_api` (the :class:`Api` type, :class:`WireRequest`,
:class:`WireFormatError` and the readers every API shares),
:mod:`pytest_rollout.sdk.wire_openai` (:data:`OPENAI_CHAT`, :data:`OPENAI_RESPONSES`),
:mod:`pytest_rollout.sdk.wire_anthropic` (:data:`ANTHROPIC_MESSAGES`) and
:mod:`pytest_rollout.sdk.wire_gemini` (:data:`GEMINI_GENERATE`); those import
:mod:`~pytest_rollout.sdk.wire_api` only, never this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

import orjson

from .aws_events import EVENT_STREAM_MEDIA, decode_events, encode_events
from .sse import parse_frames, render_frames
from .wire_anthropic import ANTHROPIC_MESSAGES
from .wire_api import VOLATILE_PARAMS, Api, WireFormatError, WireRequest, _int, media_type
from .wire_bedrock import BEDROCK_CONVERSE, BEDROCK_CONVERSE_STREAM
from .wire_gemini import GEMINI_GENERATE
from .wire_openai import OPENAI_CHAT, OPENAI_RESPONSES

__all__ = [
    "ANTHROPIC_MESSAGES",
    "APIS",
    "BEDROCK_CONVERSE",
    "BEDROCK_CONVERSE_STREAM",
    "GEMINI_GENERATE",
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

#: Keys whose string values :func:`key_messages` replaces by placeholders.
_ID_KEYS: Final = frozenset({"id", "call_id", "tool_call_id", "tool_use_id", "toolUseId"})
#: The content blocks of a Bedrock message that carry a tool use id.
_BEDROCK_CALL_KEYS: Final = ("toolUse", "toolResult")
#: The parts of a Gemini content that carry a call id.
_GEMINI_CALL_KEYS: Final = ("functionCall", "functionResponse")

#: Statuses a recorded response may carry.
_MIN_STATUS: Final = 100
_MAX_STATUS: Final = 599


# --------------------------------------------------------------------------- the APIs


#: Every API :func:`api_for` knows, by name.
APIS: Final[Mapping[str, Api]] = MappingProxyType(
    {
        api.name: api
        for api in (
            OPENAI_CHAT,
            OPENAI_RESPONSES,
            ANTHROPIC_MESSAGES,
            GEMINI_GENERATE,
            BEDROCK_CONVERSE,
            BEDROCK_CONVERSE_STREAM,
        )
    }
)


def api_for(method: str, path: str) -> Api | None:
    """The API a request goes to, or ``None`` when it is not a model turn.

    Only a ``POST`` whose URL path ends with an API's path counts: ``/responses/{id}``,
    ``/responses/input_tokens``, ``/messages/count_tokens`` or ``/messages/batches`` are
    not turns, nor is OpenAI's Assistants ``/threads/{id}/messages``; Gemini's
    ``:generateContent`` and ``:streamGenerateContent`` are, ``:countTokens`` is not. A
    query string and a trailing slash are ignored.
    """
    if method.upper() != "POST":
        return None
    path = path.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    for api in APIS.values():
        if api.matches(path):
            if api is ANTHROPIC_MESSAGES and "/threads/" in path:
                return None
            return api
    return None


def _wrapped(value: Any, keys: tuple[str, ...], ids: Callable[[Any], Any]) -> Any:
    """``value`` with ``ids`` applied to the objects it wraps under ``keys`` (a Gemini part's
    ``functionCall``, a Bedrock content block's ``toolUse``...)."""
    if not isinstance(value, Mapping) or not any(k in value for k in keys):
        return value
    return {k: ids(v) if k in keys else v for k, v in value.items()}


def key_messages(messages: list[Any], names: dict[str, str] | None = None) -> list[Any]:
    """A copy of ``messages`` whose volatile ids are replaced by ``"id-1"``, ``"id-2"``, ...
    in order of first appearance (the same id always gets the same placeholder).

    Ids are replaced only where the APIs put them: the ``id``, ``call_id``, ``tool_call_id``
    and ``tool_use_id`` of a message or Responses item, of its ``tool_calls`` entries, and of
    its content blocks, the ``toolUseId`` of a Bedrock ``toolUse`` or ``toolResult`` block,
    and the ``id`` of a Gemini part's ``functionCall`` or
    ``functionResponse``. A tool's own arguments or input (``{"id": "order-17"}``) are data,
    and stay as they are.

    ``names`` carries the placeholders given so far: pass the same dict to key the messages
    a conversation adds after those keyed before (each turn then keys only its new messages).
    """
    if names is None:
        names = {}

    def ids(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        return {
            key: names.setdefault(item, f"id-{len(names) + 1}")
            if key in _ID_KEYS and isinstance(item, str)
            else item
            for key, item in value.items()
        }

    def message(value: Any) -> Any:
        found = ids(value)
        if not isinstance(found, dict):
            return found
        for key in ("tool_calls", "content"):
            parts = found.get(key)
            if isinstance(parts, list):
                found[key] = [_wrapped(ids(part), _BEDROCK_CALL_KEYS, ids) for part in parts]
        parts = found.get("parts")
        if isinstance(parts, list):
            found["parts"] = [_wrapped(part, _GEMINI_CALL_KEYS, ids) for part in parts]
        return found

    return [message(m) for m in messages]


# --------------------------------------------------------------------------- raw responses


def raw_response(status: int, content_type: str, body: bytes) -> dict[str, Any]:
    """The recorded form of a response: ``"frames"`` for ``text/event-stream`` (unless the
    body holds no frame but is not blank), ``"json"`` for a JSON media type
    (``application/json``, ``*+json``) whose body parses, ``"events"`` for a whole AWS event
    stream (:mod:`pytest_rollout.sdk.aws_events`), ``"text"`` (UTF-8, undecodable
    bytes replaced) for anything else."""
    raw: dict[str, Any] = {"status": status, "content_type": content_type}
    media = media_type(content_type)
    if media == "text/event-stream":
        frames = parse_frames(body)
        if (frames or not body.strip()) and _fits(frames):
            raw["frames"] = frames
            return raw
        # Not a stream after all (an error page sent as one), or a stream too long to keep
        # frame by frame: keep what was said, as text.
    elif media == EVENT_STREAM_MEDIA:
        events = decode_events(body)
        if events is not None and _fits(events):
            raw["events"] = events
            return raw
        # Not a whole stream, or too long to keep event by event: kept as text, as said.
    elif media == "application/json" or media.endswith("+json"):
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
        else:
            if _fits(value):
                raw["json"] = value
                return raw
    raw["text"] = body.decode("utf-8", errors="replace")
    return raw


#: How many JSON elements a parsed response may hold; more is kept as one text string, so
#: that its event stays well within the loader's element limit per line (docs/file-format.md).
RAW_ELEMENTS: Final = 40_000


def _fits(value: Any, budget: int = RAW_ELEMENTS) -> bool:
    """Whether ``value`` holds at most ``budget`` JSON elements (counting stops early)."""
    stack = [value]
    while stack:
        item = stack.pop()
        budget -= 1
        if budget < 0:
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _json_body(value: Any) -> bytes:
    return orjson.dumps(value)


def _frames_body(value: Any) -> bytes:
    if not isinstance(value, list):
        raise WireFormatError(
            f"a recorded raw response's 'frames' must be a list, got {type(value).__name__}"
        )
    return render_frames(value)


def _events_body(value: Any) -> bytes:
    if not isinstance(value, list):
        raise WireFormatError(
            f"a recorded raw response's 'events' must be a list, got {type(value).__name__}"
        )
    return encode_events(value)


def _text_body(value: Any) -> bytes:
    if not isinstance(value, str):
        raise WireFormatError(
            f"a recorded raw response's 'text' must be a string, got {type(value).__name__}"
        )
    return value.encode("utf-8")


#: How each kind of recorded body is turned back into bytes.
_BODY_WRITERS: Final[Mapping[str, Callable[[Any], bytes]]] = MappingProxyType(
    {"json": _json_body, "frames": _frames_body, "events": _events_body, "text": _text_body}
)


def _status(raw: Mapping[str, Any]) -> int:
    status = _int(raw.get("status"))
    if status is None or not _MIN_STATUS <= status <= _MAX_STATUS:
        raise WireFormatError(
            "a recorded raw response needs an HTTP 'status' from 100 to 599, "
            f"got {raw.get('status')!r}"
        )
    return status


def _content_type(raw: Mapping[str, Any]) -> str:
    content_type = raw.get("content_type")
    if not isinstance(content_type, str):
        raise WireFormatError(
            f"a recorded raw response needs a 'content_type' string, got {content_type!r}"
        )
    return content_type


def _body(raw: Mapping[str, Any]) -> bytes:
    """The bytes of the one body (``json``, ``frames`` or ``text``) ``raw`` holds."""
    bodies = [key for key in _BODY_WRITERS if key in raw]
    if len(bodies) != 1:
        raise WireFormatError(
            "a recorded raw response needs exactly one of 'json', 'frames', 'events' and "
            "'text', "
            f"got {bodies or 'none'}"
        )
    key = bodies[0]
    try:
        return _BODY_WRITERS[key](raw[key])
    except WireFormatError:
        raise
    except (orjson.JSONEncodeError, ValueError) as exc:
        raise WireFormatError(
            f"a recorded raw response's {key!r} cannot be encoded: {exc}"
        ) from None


def response_body(raw: Mapping[str, Any]) -> tuple[int, str, bytes]:
    """``(status, content_type, body)`` of a recorded raw response: bytes equivalent to
    those recorded (JSON re-encoded compactly, frames re-rendered). Raises
    :class:`WireFormatError` when ``raw`` is not a raw response."""
    if not isinstance(raw, Mapping):
        raise WireFormatError(
            f"a recorded raw response must be an object, got {type(raw).__name__}"
        )
    return _status(raw), _content_type(raw), _body(raw)
