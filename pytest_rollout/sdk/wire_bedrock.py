"""Amazon Bedrock's model API on the wire: Converse and ConverseStream.

:data:`BEDROCK_CONVERSE` (``bedrock.converse``, ``POST /model/{modelId}/converse``) and
:data:`BEDROCK_CONVERSE_STREAM` (``bedrock.converse_stream``, ``.../converse-stream``) are the
:class:`~pytest_rollout.sdk.wire_api.Api` instances; the rest are their readers.

Bedrock names the model in the URL path, not in the body: a request's parameters take the
path's model id as ``"model"`` (:func:`model_of`), and ConverseStream's ``"stream": true``,
so that a streamed and a plain request never stand for each other. A request's ``system``
blocks become a system message first; its ``toolConfig.tools`` are the request's tools, and
the rest of ``toolConfig`` (``toolChoice``) stays a parameter; ``requestMetadata`` (tags for
the invocation logs) is left out of its identity, as ``metadata`` is for the other APIs.

A Converse response is JSON; a ConverseStream response is an AWS event stream, recorded as
its events (``"events"``, :mod:`pytest_rollout.sdk.aws_events`). Usage: Bedrock counts the
input tokens read from and written to the prompt cache apart from ``inputTokens``; they are
added back, as for Anthropic, so that ``input_tokens`` counts every input token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote

from ..replay.turn import ToolCall, Turn
from .wire_api import (
    Api,
    WireFormatError,
    WireRequest,
    _anthropic_usage,
    _call,
    _dict,
    _int,
    _list,
    _require_list,
    _str,
    _StreamedCall,
    _turn,
)

__all__ = ["BEDROCK_CONVERSE", "BEDROCK_CONVERSE_STREAM", "model_of"]

_CONVERSE: Final = "/converse"
_CONVERSE_STREAM: Final = "/converse-stream"


def model_of(path: str) -> tuple[str, bool] | None:
    """``(model id, streamed)`` of a Converse or ConverseStream URL path
    (``/model/{modelId}/converse``; the id percent-decoded, as an ARN is sent), else
    ``None``."""
    path = path.split("?", 1)[0].rstrip("/")
    _, sep, model = path.rpartition("/model/")
    if not sep:
        return None
    for end, streamed in ((_CONVERSE_STREAM, True), (_CONVERSE, False)):
        if model.endswith(end) and "/" not in model[: -len(end)] and model[: -len(end)]:
            return unquote(model[: -len(end)]), streamed
    return None


def _path_params(path: str) -> dict[str, Any]:
    found = model_of(path)
    if found is None:
        return {}
    model, streamed = found
    return {"model": model, "stream": True} if streamed else {"model": model}


# --------------------------------------------------------------------------- requests


def _bedrock_messages(where: str, body: Mapping[str, Any]) -> list[Any]:
    messages: list[Any] = []
    system = body.get("system")
    if system is not None:
        if not isinstance(system, list):
            raise WireFormatError(
                f"{where}: 'system' must be a list of blocks, got {type(system).__name__}"
            )
        messages.append({"role": "system", "content": system})
    messages.extend(_require_list(where, body, "messages"))
    return messages


# --------------------------------------------------------------------------- responses


def _bedrock_usage(usage: Any) -> dict[str, int] | None:
    usage = _dict(usage)
    return _anthropic_usage(
        {
            "input_tokens": usage.get("inputTokens"),
            "output_tokens": usage.get("outputTokens"),
            "cache_read_input_tokens": usage.get("cacheReadInputTokens"),
            "cache_creation_input_tokens": usage.get("cacheWriteInputTokens"),
        }
    )


def _bedrock_json(body: Any) -> Turn:
    body = _dict(body)
    message = _dict(_dict(body.get("output")).get("message"))
    texts: list[str] = []
    calls: list[ToolCall] = []
    for raw in _list(message.get("content")):
        block = _dict(raw)
        if text := _str(block.get("text")):
            texts.append(text)
        elif "toolUse" in block:
            use = _dict(block["toolUse"])
            calls.append(_call(use.get("toolUseId"), use.get("name"), use.get("input")))
    return _turn(texts, calls, _bedrock_usage(body.get("usage")), None)


@dataclass
class _Block:
    """A content block as ConverseStream gives it: text in pieces, or a tool call."""

    text: list[str] = field(default_factory=list)
    call: _StreamedCall | None = None


def _read_block(blocks: dict[int, _Block], kind: Any, data: Mapping[str, Any]) -> None:
    """Take a ``contentBlockStart`` or ``contentBlockDelta`` event into account."""
    index = _int(data.get("contentBlockIndex"))
    if index is None or kind not in ("contentBlockStart", "contentBlockDelta"):
        return
    block = blocks.setdefault(index, _Block())
    if kind == "contentBlockStart":
        use = _dict(_dict(data.get("start")).get("toolUse"))
        if use:
            block.call = _StreamedCall(
                _str(use.get("toolUseId")) or "", _str(use.get("name")) or ""
            )
        return
    delta = _dict(data.get("delta"))
    if text := _str(delta.get("text")):
        block.text.append(text)
    piece = _str(_dict(delta.get("toolUse")).get("input"))
    if piece and block.call is not None:
        block.call.arguments.append(piece)


def _bedrock_events(events: list[Any]) -> Turn:
    blocks: dict[int, _Block] = {}
    usage: Any = None
    for raw in events:
        event = _dict(raw)
        kind = _dict(event.get("headers")).get(":event-type")
        data = _dict(event.get("data"))
        if kind == "metadata":
            usage = data.get("usage")
        else:
            _read_block(blocks, kind, data)
    texts: list[str] = []
    calls: list[ToolCall] = []
    for _, block in sorted(blocks.items()):
        texts.extend(block.text)
        if block.call is not None:
            call = block.call
            calls.append(_call(call.id, call.name, "".join(call.arguments)))
    return _turn(texts, calls, _bedrock_usage(usage), None)


def _no_frames(frames: list[Any]) -> Turn:
    """Bedrock sends no server-sent events: a body recorded as such holds no turn."""
    return Turn()


# --------------------------------------------------------------------------- the API


@dataclass(frozen=True, slots=True)
class _BedrockApi(Api):
    """A Bedrock API: the tools are in ``toolConfig``, a stream is recorded as events."""

    def request(self, body: bytes, path: str = "") -> WireRequest:
        found = Api.request(self, body, path)
        params = dict(found.params)
        config = params.pop("toolConfig", None)
        tools = None
        if isinstance(config, Mapping):
            tools = config.get("tools")
            rest = {k: v for k, v in config.items() if k != "tools"}
            if rest:
                params["toolConfig"] = rest
        elif config is not None:
            params["toolConfig"] = config
        return WireRequest(
            found.api, found.provider, found.model, found.messages, tools, params, found.stream
        )

    def turn(self, raw: Mapping[str, Any]) -> Turn:
        found: object = raw
        if isinstance(found, Mapping) and "events" in raw:
            return _bedrock_events(_list(raw["events"]))
        return Api.turn(self, raw)


_SKIPPED: Final = frozenset({"messages", "system", "requestMetadata"})

BEDROCK_CONVERSE: Final = _BedrockApi(
    "bedrock.converse",
    "bedrock",
    _CONVERSE,
    _bedrock_messages,
    _bedrock_json,
    _no_frames,
    _SKIPPED,
    _path_params=_path_params,
)
BEDROCK_CONVERSE_STREAM: Final = _BedrockApi(
    "bedrock.converse_stream",
    "bedrock",
    _CONVERSE_STREAM,
    _bedrock_messages,
    _bedrock_json,
    _no_frames,
    _SKIPPED,
    _path_params=_path_params,
)
