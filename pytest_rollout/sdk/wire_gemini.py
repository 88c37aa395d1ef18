"""Google's model API on the wire: Gemini ``generateContent``, on the Gemini API and Vertex AI.

:data:`GEMINI_GENERATE` (``gemini.generate``) is the
:class:`~pytest_rollout.sdk.wire_api.Api` instance. It answers ``POST`` paths that end with
``:generateContent`` or ``:streamGenerateContent`` (the stream asked for as server-sent
events, ``?alt=sse``), whichever service they go to:

- the Gemini API: ``/v1beta/models/{model}:generateContent``;
- Vertex AI: ``/v1/projects/{project}/locations/{location}/publishers/google/models/{model}
  :generateContent``, and a tuned model's ``.../endpoints/{id}:generateContent``.

The model is named by the path, not the body, so the request's ``model`` parameter comes from
there (``gemini-2.5-flash``; ``endpoints/123`` for an endpoint), and a streamed request has
``stream: true`` among its parameters, as an OpenAI one has.

A request's messages are its ``contents`` as sent (``user`` and ``model`` turns of
``parts``), after its ``systemInstruction`` as a system message (its text, when it is text
only). A response's turn is its first candidate: the text of its parts (thought summaries
left out), each ``functionCall`` part a tool call (several in one turn are parallel calls),
and the usage of its ``usageMetadata``. A call the service sent without an ``id`` gets one
made from the response's bytes and its place in the turn, so the same response always
names its calls alike and two calls never share a name. A stream's chunks are read in
order and joined into one turn, as the whole response would have been.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

import orjson

from ..replay.turn import ToolCall, Turn
from .wire_api import (
    Api,
    WireFormatError,
    _arguments,
    _dict,
    _int,
    _list,
    _require_list,
    _str,
    _turn,
    _usage,
)

__all__ = ["GEMINI_GENERATE", "gemini_model"]

#: The ends of a path that name a generateContent call.
_METHODS: Final = (":generateContent", ":streamGenerateContent")
_STREAM: Final = ":streamGenerateContent"
#: The keys of a request body that hold its conversation.
_SYSTEM_KEYS: Final = ("systemInstruction", "system_instruction")


# --------------------------------------------------------------------------- paths


def _is_generate(path: str) -> bool:
    return path.endswith(_METHODS)


def gemini_model(path: str) -> str | None:
    """The model a generateContent path names: ``gemini-2.5-flash`` of
    ``/v1beta/models/gemini-2.5-flash:generateContent`` (and of Vertex AI's
    ``.../publishers/google/models/gemini-2.5-flash:...``), ``tunedModels/t1`` or
    ``endpoints/123`` for a tuned model or an endpoint; ``None`` for another path."""
    path = path.split("?", 1)[0].rstrip("/")
    if not _is_generate(path):
        return None
    resource = path.rpartition(":")[0]
    segments = [s for s in resource.split("/") if s]
    if len(segments) < 2:
        return segments[-1] if segments else None
    collection, name = segments[-2], segments[-1]
    return name if collection == "models" else f"{collection}/{name}"


def _path_params(path: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    model = gemini_model(path)
    if model is not None:
        params["model"] = model
    if path.split("?", 1)[0].rstrip("/").endswith(_STREAM):
        params["stream"] = True
    return params


# --------------------------------------------------------------------------- requests


def _system_text(system: Mapping[str, Any]) -> Any:
    """A system instruction as text when it is text only (its parts all ``{"text": ...}``),
    else as sent."""
    parts = system.get("parts")
    if set(system) - {"parts", "role"} or not isinstance(parts, list) or not parts:
        return dict(system)
    texts = [
        p["text"]
        for p in parts
        if isinstance(p, Mapping) and set(p) == {"text"} and isinstance(p["text"], str)
    ]
    if len(texts) != len(parts):
        return dict(system)
    return "\n".join(texts)


def _gemini_messages(where: str, body: Mapping[str, Any]) -> list[Any]:
    messages: list[Any] = []
    for key in _SYSTEM_KEYS:
        system = body.get(key)
        if system is None:
            continue
        if isinstance(system, str):
            messages.append({"role": "system", "content": system})
        elif isinstance(system, Mapping):
            messages.append({"role": "system", "content": _system_text(system)})
        else:
            raise WireFormatError(
                f"{where}: '{key}' must be a content object, got {type(system).__name__}"
            )
    messages.extend(_require_list(where, body, "contents"))
    return messages


# --------------------------------------------------------------------------- responses


def _gemini_usage(metadata: Any) -> dict[str, int] | None:
    """The usage of ``usageMetadata``: the prompt (with the tool-use prompt) in, the
    candidates and the thoughts out; ``cachedContentTokenCount`` is the part of the prompt
    read from the cache."""
    usage = _dict(metadata)
    prompt, candidates = (
        _int(usage.get("promptTokenCount")),
        _int(usage.get("candidatesTokenCount")),
    )
    thoughts = _int(usage.get("thoughtsTokenCount")) or 0
    tool_prompt = _int(usage.get("toolUsePromptTokenCount")) or 0
    if prompt is None and candidates is None:
        total = _int(usage.get("totalTokenCount"))
        return None if total is None else _usage(total, 0)
    tokens_in = (prompt or 0) + tool_prompt
    return _usage(tokens_in, (candidates or 0) + thoughts, usage.get("cachedContentTokenCount"))


class _Candidate:
    """The first candidate of a response, read whole or chunk by chunk: its text, its
    function calls, the usage and the model version (the last ones seen)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls: list[tuple[Any, Any, Any]] = []  # id, name, args
        self.usage: dict[str, int] | None = None
        self.model: Any = None

    def read(self, body: Any) -> None:
        body = _dict(body)
        if _str(body.get("modelVersion")):
            self.model = body["modelVersion"]
        if isinstance(body.get("usageMetadata"), Mapping):
            self.usage = _gemini_usage(body["usageMetadata"]) or self.usage
        candidates = _list(body.get("candidates"))
        first = next((c for c in candidates if (_int(_dict(c).get("index")) or 0) == 0), None)
        for raw in _list(_dict(_dict(first).get("content")).get("parts")):
            part = _dict(raw)
            text = _str(part.get("text"))
            if text and not part.get("thought"):
                self.texts.append(text)
            call = part.get("functionCall")
            if isinstance(call, Mapping):
                self.calls.append((call.get("id"), call.get("name"), call.get("args")))

    def turn(self, source: Any) -> Turn:
        """The turn read so far; ``source`` (the body or the frames) names the calls that
        came without an id."""
        digest = ""
        calls: list[ToolCall] = []
        for index, (call_id, name, args) in enumerate(self.calls, 1):
            given = _str(call_id)
            if not given:
                if not digest:
                    digest = hashlib.sha256(_bytes_of(source)).hexdigest()[:20]
                given = f"call_{digest}{index:02d}"
            calls.append(ToolCall(given, _str(name) or "", _arguments(args)))
        return _turn(self.texts, calls, self.usage, self.model)


def _bytes_of(source: Any) -> bytes:
    try:
        return orjson.dumps(source, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return repr(source).encode()


def _gemini_json(body: Any) -> Turn:
    candidate = _Candidate()
    candidate.read(body)
    return candidate.turn(body)


def _gemini_frames(frames: list[Any]) -> Turn:
    candidate = _Candidate()
    for frame in frames:
        candidate.read(_dict(frame).get("data"))
    return candidate.turn(frames)


# --------------------------------------------------------------------------- the API


GEMINI_GENERATE: Final = Api(
    "gemini.generate",
    "gemini",
    ":generateContent",
    _gemini_messages,
    _gemini_json,
    _gemini_frames,
    frozenset({"contents", *_SYSTEM_KEYS}),
    "contents",
    _is_generate,
    _path_params,
)
