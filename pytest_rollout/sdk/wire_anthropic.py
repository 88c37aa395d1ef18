"""Anthropic's model API on the wire: Messages.

:data:`ANTHROPIC_MESSAGES` (``anthropic.messages``, ``POST .../messages``) is the
:class:`~pytest_rollout.sdk.wire_api.Api` instance; the rest are its readers: of a request's
messages (a ``system`` prompt becomes a system message first), of a JSON response and of a
streamed one. Built on :mod:`pytest_rollout.sdk.wire_api`; :mod:`pytest_rollout.sdk.wire` gathers
the APIs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..replay.turn import ToolCall, Turn
from .wire_api import (
    Api,
    WireFormatError,
    _anthropic_usage,
    _arguments,
    _call,
    _dict,
    _int,
    _list,
    _require_list,
    _str,
    _StreamedCall,
    _turn,
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
    return _turn(texts, calls, _anthropic_usage(body.get("usage")), body.get("model"))


@dataclass
class _Block:
    """A content block as a stream gives it: text in pieces, or a tool call."""

    kind: str
    text: list[str] = field(default_factory=list)
    call: _StreamedCall = field(default_factory=_StreamedCall)
    start_input: Any = None

    def tool_call(self) -> ToolCall:
        """The tool call of a ``tool_use`` block: its streamed input, else the input the
        block started with."""
        arguments: Any = "".join(self.call.arguments)
        if not arguments and isinstance(self.start_input, Mapping):
            arguments = self.start_input
        return ToolCall(self.call.id, self.call.name, _arguments(arguments))


class _MessageStream:
    """A streamed Message, assembled event by event: its content blocks by index, its
    model and its token counts (cumulative: the last count seen is the total)."""

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.model: Any = None
        self.input_tokens: Any = None
        self.output_tokens: Any = None
        self.cache_read: Any = None
        self.cache_write: Any = None
        self._readers: dict[str, Callable[[Mapping[str, Any]], None]] = {
            "message_start": self._message_start,
            "content_block_start": self._block_start,
            "content_block_delta": self._block_delta,
            "message_delta": self._message_delta,
        }

    def read(self, raw: Any) -> None:
        """Take one frame into account; frames of other kinds are skipped."""
        frame = _dict(raw)
        data = _dict(frame.get("data"))
        reader = self._readers.get(str(data.get("type", frame.get("event"))))
        if reader is not None:
            reader(data)

    def _message_start(self, data: Mapping[str, Any]) -> None:
        message = _dict(data.get("message"))
        self.model = message.get("model")
        usage = _dict(message.get("usage"))
        self.input_tokens = usage.get("input_tokens")
        self.output_tokens = usage.get("output_tokens")
        self.cache_read = usage.get("cache_read_input_tokens")
        self.cache_write = usage.get("cache_creation_input_tokens")

    def _block_start(self, data: Mapping[str, Any]) -> None:
        index = _int(data.get("index"))
        start = _dict(data.get("content_block"))
        if index is None or start.get("type") not in ("text", "tool_use"):
            return
        block = self.blocks[index] = _Block(str(start["type"]))
        if block.kind == "text":
            if text := _str(start.get("text")):
                block.text.append(text)
            return
        block.call.id = _str(start.get("id")) or ""
        block.call.name = _str(start.get("name")) or ""
        block.start_input = start.get("input")

    def _block_delta(self, data: Mapping[str, Any]) -> None:
        index = _int(data.get("index"))
        block = None if index is None else self.blocks.get(index)
        if block is None:
            return
        delta = _dict(data.get("delta"))
        if delta.get("type") == "text_delta" and (text := _str(delta.get("text"))):
            block.text.append(text)
        elif delta.get("type") == "input_json_delta" and (piece := _str(delta.get("partial_json"))):
            block.call.arguments.append(piece)

    def _message_delta(self, data: Mapping[str, Any]) -> None:
        usage = _dict(data.get("usage"))
        if _int(usage.get("output_tokens")) is not None:
            self.output_tokens = usage["output_tokens"]
        if _int(usage.get("input_tokens")) is not None:
            self.input_tokens = usage["input_tokens"]
        if _int(usage.get("cache_read_input_tokens")) is not None:
            self.cache_read = usage["cache_read_input_tokens"]
        if _int(usage.get("cache_creation_input_tokens")) is not None:
            self.cache_write = usage["cache_creation_input_tokens"]

    def turn(self) -> Turn:
        """The turn the frames read so far make."""
        texts: list[str] = []
        calls: list[ToolCall] = []
        for _, block in sorted(self.blocks.items()):
            if block.kind == "text":
                texts.extend(block.text)
            else:
                calls.append(block.tool_call())
        usage = _anthropic_usage(
            {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cache_read_input_tokens": self.cache_read,
                "cache_creation_input_tokens": self.cache_write,
            }
        )
        return _turn(texts, calls, usage, self.model)


def _anthropic_frames(frames: list[Any]) -> Turn:
    stream = _MessageStream()
    for frame in frames:
        stream.read(frame)
    return stream.turn()


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
