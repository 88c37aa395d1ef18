"""OpenAI's model APIs on the wire: Chat Completions and Responses.

:data:`OPENAI_CHAT` (``openai.chat``, ``POST .../chat/completions``) and
:data:`OPENAI_RESPONSES` (``openai.responses``, ``POST .../responses``) are the
:class:`~pytest_rollout.sdk.wire_api.Api` instances; the rest are their readers: of a request's
messages (a Responses ``instructions`` string becomes a system message first, an ``input``
string a user message), of a JSON response and of a streamed one. Built on
:mod:`pytest_rollout.sdk.wire_api`; :mod:`pytest_rollout.sdk.wire` gathers the APIs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..replay.turn import ToolCall, Turn
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
)

__all__ = ["OPENAI_CHAT", "OPENAI_RESPONSES"]

#: Chat Completions names its token counts its own way.
_CHAT_TOKENS: Final = ("prompt_tokens", "completion_tokens")


# --------------------------------------------------------------------------- requests


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
    return _turn(texts, calls, _reported_usage(body.get("usage"), _CHAT_TOKENS), body.get("model"))


class _ChatStream:
    """A streamed chat completion, assembled chunk by chunk: the first choice's text and
    tool calls (by index), the model and the usage."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls: dict[int, _StreamedCall] = {}
        self.usage: dict[str, int] | None = None
        self.model: Any = None

    def read(self, frame: Any) -> None:
        """Take one frame into account (``[DONE]`` reads as an empty chunk)."""
        chunk = _dict(_dict(frame).get("data"))
        if _str(chunk.get("model")):
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = _reported_usage(chunk["usage"], _CHAT_TOKENS) or self.usage
        for raw_choice in _list(chunk.get("choices")):
            choice = _dict(raw_choice)
            if (_int(choice.get("index")) or 0) == 0:  # n > 1: the first choice is the turn
                self._delta(_dict(choice.get("delta")))

    def _delta(self, delta: Mapping[str, Any]) -> None:
        if text := _str(delta.get("content")):
            self.texts.append(text)
        for raw_piece in _list(delta.get("tool_calls")):
            self._tool_piece(_dict(raw_piece))

    def _index(self, piece: Mapping[str, Any]) -> int:
        """The index of the call a piece belongs to. For servers that leave it out: a new
        id is a new call, anything else continues the last one."""
        index = _int(piece.get("index"))
        if index is not None:
            return index
        calls = self.calls
        new = bool(piece.get("id")) and all(c.id != piece["id"] for c in calls.values())
        return len(calls) if new or not calls else max(calls)

    def _tool_piece(self, piece: Mapping[str, Any]) -> None:
        call = self.calls.setdefault(self._index(piece), _StreamedCall())
        function = _dict(piece.get("function"))
        if not call.id and (call_id := _str(piece.get("id"))):
            call.id = call_id
        if not call.name and (name := _str(function.get("name"))):
            call.name = name
        if arguments := _str(function.get("arguments")):
            call.arguments.append(arguments)

    def turn(self) -> Turn:
        """The turn the frames read so far make."""
        tool_calls = [
            ToolCall(c.id, c.name, _arguments("".join(c.arguments)))
            for _, c in sorted(self.calls.items())
        ]
        return _turn(self.texts, tool_calls, self.usage, self.model)


def _chat_frames(frames: list[Any]) -> Turn:
    stream = _ChatStream()
    for frame in frames:
        stream.read(frame)
    return stream.turn()


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
    return _turn(texts, calls, _reported_usage(body.get("usage")), body.get("model"))


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
            if isinstance(kind, str) and kind in _RESPONSES_FINAL:
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


# --------------------------------------------------------------------------- the APIs


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
    "input",
)
