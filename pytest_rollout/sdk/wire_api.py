"""What a model API is, and what every API's readers are built from.

An :class:`Api` turns a request body into a :class:`WireRequest` (messages, tools, the
other parameters) and a recorded raw response (see :mod:`pytest_rollout.sdk.wire`) into a
:class:`~pytest_rollout.replay.turn.Turn`, through readers that each provider module supplies
(:mod:`pytest_rollout.sdk.wire_openai`, :mod:`pytest_rollout.sdk.wire_anthropic`). Reading a
response never raises: a body of an unexpected shape yields the turn that can be read from
it (often an empty one), so that a test never fails because a provider added a field.
Requests are stricter: a body that is not a JSON object of the API's shape raises
:class:`WireFormatError`.

This module also holds what the readers share: the readers of untrusted JSON (``_dict``,
``_list``, ``_str``, ``_int``, ...), the checks of a request body (``_load_body``,
``_require_list``) and ``_StreamedCall``, a tool call assembled from stream pieces. It
imports no provider module; the provider modules and :mod:`pytest_rollout.sdk.wire` import it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from ..errors import RolloutError
from ..replay.turn import ToolCall, Turn
from .sse import parse_frames
from .wire_body import BodyCache

__all__ = ["VOLATILE_PARAMS", "Api", "WireFormatError", "WireRequest", "media_type"]


class WireFormatError(RolloutError):
    """A model request body, or a recorded raw response, is not of the expected shape."""

    __module__ = "pytest_rollout"


#: Top-level request keys that never belong to a request's identity: they change from run
#: to run (or user to user) without changing what is asked.
VOLATILE_PARAMS: Final = frozenset({"prompt_cache_key", "safety_identifier", "user", "metadata"})

#: Parameters that name a volatile id: whether one is given counts, not which (a Responses
#: conversation threaded by ``previous_response_id`` is not the same as a fresh one).
ID_PARAMS: Final = frozenset({"previous_response_id"})
ID_PLACEHOLDER: Final = "id-given"


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


def _usage(
    input_tokens: Any,
    output_tokens: Any,
    cache_read: Any = None,
    cache_write: Any = None,
) -> dict[str, int] | None:
    """A turn's usage. ``cache_read``/``cache_write``: the parts of ``input_tokens`` read
    from and written to the prompt cache, kept only when the API reports some (so a
    recording without cache use has no cache fields at all)."""
    tokens_in, tokens_out = _int(input_tokens), _int(output_tokens)
    if tokens_in is None and tokens_out is None:
        return None
    usage = {"input_tokens": tokens_in or 0, "output_tokens": tokens_out or 0}
    if read := _int(cache_read):
        usage["cache_read_tokens"] = read
    if write := _int(cache_write):
        usage["cache_write_tokens"] = write
    return usage


#: The names a usage object gives its input and output tokens (OpenAI Chat has its own).
_TOKENS: Final = ("input_tokens", "output_tokens")


def _reported_usage(usage: Any, names: tuple[str, str] = _TOKENS) -> dict[str, int] | None:
    """The usage an API reports in a ``usage`` object whose token counts have ``names``."""
    usage = _dict(usage)
    # OpenAI: the cached part of the input in prompt_tokens_details (Chat Completions) or
    # input_tokens_details (Responses), as cached_tokens.
    details = _dict(usage.get(f"{names[0]}_details"))
    return _usage(usage.get(names[0]), usage.get(names[1]), details.get("cached_tokens"))


def _anthropic_usage(usage: Any) -> dict[str, int] | None:
    """Anthropic's usage: its ``input_tokens`` leave out the cache reads and writes, which
    are added back, so that ``input_tokens`` counts every input token as OpenAI's does."""
    usage = _dict(usage)
    read = _int(usage.get("cache_read_input_tokens")) or 0
    write = _int(usage.get("cache_creation_input_tokens")) or 0
    tokens_in = _int(usage.get("input_tokens"))
    total = None if tokens_in is None and not (read or write) else (tokens_in or 0) + read + write
    return _usage(total, usage.get("output_tokens"), read, write)


def _turn(
    texts: list[str], calls: list[ToolCall], usage: dict[str, int] | None, model: Any
) -> Turn:
    return Turn(content="".join(texts) or None, tool_calls=calls, usage=usage, model=_str(model))


def _call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    return ToolCall(_str(call_id) or "", _str(name) or "", _arguments(arguments))


@dataclass
class _StreamedCall:
    """A tool call as a stream gives it: id and name once, the arguments in pieces."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- requests


def media_type(content_type: str) -> str:
    """``text/event-stream`` of ``text/event-stream; charset=utf-8``, lower-cased."""
    return content_type.split(";", 1)[0].strip().lower()


def _load_body(where: str, body: bytes) -> dict[str, Any]:
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


# --------------------------------------------------------------------------- the API type


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
    #: The key of the body's message array, which grows from one request to the next.
    _history_key: str = field(default="messages", repr=False, compare=False)
    #: Whether a URL path is this API's, where the end of the path does not say it alone
    #: (``None``: the path ends with :attr:`path`).
    _matches: Callable[[str], bool] | None = field(default=None, repr=False, compare=False)
    #: The parameters a URL path carries (Gemini names its model there, not in the body).
    _path_params: Callable[[str], dict[str, Any]] | None = field(
        default=None, repr=False, compare=False
    )
    _bodies: BodyCache = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_bodies", BodyCache(self._history_key))

    def matches(self, path: str) -> bool:
        """Whether a URL path (query string and trailing slash removed) is this API's."""
        return self._matches(path) if self._matches is not None else path.endswith(self.path)

    def request(self, body: bytes, path: str = "") -> WireRequest:
        """The request a body carries (``path``: the URL path it was posted to, for an API
        that names parameters there). Raises :class:`WireFormatError` when the body is not
        a JSON object, or its messages (``messages``, ``input``, ``instructions``,
        ``system``, ``contents``) are not of the API's types, or its ``model`` is not a
        string."""
        where = f"{self.name} request (POST .../{self.path.lstrip('/')})"
        # A body that extends one of the last few is parsed at the cost of its new messages.
        data = self._bodies.load(body, lambda whole: _load_body(where, whole))
        messages = self._messages(where, data)
        model = data.get("model")
        if model is not None and not isinstance(model, str):
            raise WireFormatError(f"{where}: 'model' must be a string, got {type(model).__name__}")
        skipped = self._message_keys | VOLATILE_PARAMS | {"tools"}
        params = {
            k: ID_PLACEHOLDER if k in ID_PARAMS and isinstance(v, str) else v
            for k, v in data.items()
            if k not in skipped
        }
        if self._path_params is not None:
            params.update(self._path_params(path))
            model = params.get("model", model)
        return WireRequest(
            api=self.name,
            provider=self.provider,
            model=model,
            messages=messages,
            tools=data.get("tools"),
            params=params,
            stream=bool(params.get("stream")),
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
        text = raw.get("text")
        if isinstance(text, str):  # a long stream or body, kept as text
            if media_type(str(raw.get("content_type", ""))) == "text/event-stream":
                return self._read_frames(parse_frames(text.encode("utf-8")))
            try:
                return self._read_json(orjson.loads(text))
            except orjson.JSONDecodeError:
                return Turn()
        return Turn()
