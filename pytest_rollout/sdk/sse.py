"""Server-sent events: a streamed model response, as frames and back as bytes.

A streaming model API answers with ``text/event-stream``: frames of ``event:`` and ``data:``
lines, each ended by a blank line. :func:`parse_frames` reads such a stream the way the
WHATWG specification does (any of ``\\r\\n``, ``\\r`` and ``\\n`` ends a line, ``:`` starts a
comment, one space after a field's colon is dropped, ``id:`` and ``retry:`` are read and
dropped) into ``{"event": name, "data": value}`` dicts, where ``data`` is a JSON value when
the frame's data parses as JSON and the text otherwise (OpenAI's ``[DONE]``). A last frame
with no blank line after it is kept: a stream cut short is still a stream that was seen.

:func:`render_frames` writes frames back, so that ``parse_frames(render_frames(f)) == f``
for any ``f`` that :func:`parse_frames` returned. Equivalent, not identical, bytes: JSON is
re-encoded compactly by orjson, and comments, ids and retry hints are gone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

__all__ = ["parse_frames", "render_frames"]

_LINE_END: Final = re.compile(r"\r\n|\r|\n")


def _value(text: str) -> Any:
    """The JSON value of a frame's data, or the text itself when it is not JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def _frame(event: str, data: list[str]) -> dict[str, Any] | None:
    if not data and not event:
        return None
    frame: dict[str, Any] = {}
    if event:
        frame["event"] = event
    frame["data"] = _value("\n".join(data))
    return frame


def parse_frames(data: bytes) -> list[dict[str, Any]]:
    """The frames of an SSE byte stream, in order.

    Each frame is ``{"event": name, "data": value}``, with ``"event"`` left out when the
    frame named none (or an empty one). A frame with an event but no data line gets
    ``""`` as its data; one with neither (only an id, a retry hint or comments) is
    skipped. Bytes that are not UTF-8 are read with replacement characters: this never
    raises.
    """
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        # The split's artefact after a final line end, not a blank line of the stream.
        lines.pop()
    frames: list[dict[str, Any]] = []
    event = ""
    data_lines: list[str] = []
    for line in lines:
        if not line:
            frame = _frame(event, data_lines)
            if frame is not None:
                frames.append(frame)
            event, data_lines = "", []
            continue
        if line[0] == ":":
            continue
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            data_lines.append(value)
        elif name == "event":
            event = value
        # "id", "retry" and unknown fields are read and dropped.
    frame = _frame(event, data_lines)
    if frame is not None:
        frames.append(frame)
    return frames


def _data_text(data: Any) -> str:
    """The text of a frame's data lines, joined by newlines.

    A string is written as is unless reading it back would change it: one that parses as
    JSON (``"123"``, ``"null"``) or holds a carriage return is written as a JSON string.
    """
    if isinstance(data, str) and "\r" not in data:
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError:
            return data
    try:
        return orjson.dumps(data).decode()
    except orjson.JSONEncodeError as exc:
        raise ValueError(f"SSE frame data is not JSON-encodable: {exc}") from None


def render_frames(frames: Sequence[Mapping[str, Any]]) -> bytes:
    """The SSE bytes of ``frames``: ``event:`` (when named), ``data:`` lines, a blank line.

    JSON values are encoded by orjson; a string that is not JSON is written as is, one
    ``data:`` line per line of it. Raises ``ValueError`` for a frame that is not a mapping,
    has no ``"data"``, names its event with something other than a one-line string, or
    holds data orjson cannot encode.
    """
    out: list[str] = []
    for index, frame in enumerate(frames):
        if not isinstance(frame, Mapping):
            raise ValueError(f"SSE frame {index} is not an object: {type(frame).__name__}")
        if "data" not in frame:
            raise ValueError(f"SSE frame {index} has no 'data'")
        event = frame.get("event")
        if event is not None:
            if not isinstance(event, str) or "\n" in event or "\r" in event:
                raise ValueError(f"SSE frame {index} has an invalid event name: {event!r}")
            if event:
                out.append(f"event: {event}\n")
        try:
            text = _data_text(frame["data"])
        except ValueError as exc:
            raise ValueError(f"SSE frame {index}: {exc}") from None
        out.extend(f"data: {line}\n" for line in text.split("\n"))
        out.append("\n")
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"SSE frames hold text that is not valid Unicode: {exc}") from None
