"""Anthropic's model API on the wire: Messages.

:data:`ANTHROPIC_MESSAGES` (``anthropic.messages``, ``POST .../messages``) is the
:class:`~pytest_rollout.sdk.wire_api.Api` instance; the rest are its readers: of a request's
messages (a ``system`` prompt becomes a system message first), of a JSON response and of a
streamed one. Built on :mod:`pytest_rollout.sdk.wire_api`; :mod:`pytest_rollout.sdk.wire` gathers
the APIs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..replay.turns import ToolCall, Turn
from .wire_api import (
    Api,
    WireFormatError,
    _arguments,
    _call,
    _dict,
    _int,
    _list,
    _reported_usage,
    _require_list,
    _str,
    _StreamedCall,
    _turn,
    _usage,
)

__all__ = ["ANTHROPIC_MESSAGES"]


# --------------------------------------------------------------------------- requests


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
    return _turn(texts, calls, _reported_usage(body.get("usage")), body.get("model"))


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


# --------------------------------------------------------------------------- the API


ANTHROPIC_MESSAGES: Final = Api(
    "anthropic.messages",
    "anthropic",
    "/messages",
    _anthropic_messages,
    _anthropic_json,
    _anthropic_frames,
    frozenset({"messages", "system"}),
)
