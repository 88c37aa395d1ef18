"""AWS event streams (``application/vnd.amazon.eventstream``): the binary framing of Bedrock's
ConverseStream, read into events a golden can show and written back into bytes.

A stream is a run of messages, each: its total length and its headers' length (4-byte
big-endian numbers), a CRC32 of those 8 bytes, the headers, the payload, and a CRC32 of all
that came before it in the message. A header is its name's length (1 byte), the name, a
type byte and the value; Bedrock's headers are strings (type 7: a 2-byte length, then UTF-8).

A recorded event is ``{"headers": {...}, "data": <the payload's JSON>}`` (``"text"`` instead
of ``"data"`` for a payload that is not JSON): reviewable in a pull request, and seen by the
redaction pass like any other recorded text. :func:`decode_events` reads a body with
botocore's own reader (imported when a body is read: only a recording made through botocore
has one), :func:`encode_events` writes the events back as bytes that botocore reads the same.
"""

from __future__ import annotations

import binascii
import importlib
import struct
from typing import Any, Final

import orjson

__all__ = ["EVENT_STREAM_MEDIA", "decode_events", "encode_event", "encode_events"]

#: The media type of an AWS event stream.
EVENT_STREAM_MEDIA: Final = "application/vnd.amazon.eventstream"

_TRUE: Final = 0
_FALSE: Final = 1
_INT32: Final = 4
_STRING: Final = 7


def decode_events(body: bytes) -> list[dict[str, Any]] | None:
    """The events ``body`` holds, or ``None`` when it is not a whole, valid event stream
    (or botocore, which reads it, is not installed)."""
    try:
        eventstream = importlib.import_module("botocore.eventstream")
    except ImportError:
        return None
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(body)
    events: list[dict[str, Any]] = []
    read = 0
    try:
        for message in buffer:
            read += message.prelude.total_length
            events.append(_event(message.headers, message.payload))
    except eventstream.ParserError:
        return None
    # A message cut short is not a stream read to its end.
    return events if read == len(body) else None


def _event(headers: dict[str, Any], payload: bytes) -> dict[str, Any]:
    kept = {
        str(name): value if isinstance(value, str | bool | int) else repr(value)
        for name, value in headers.items()
    }
    event: dict[str, Any] = {"headers": kept}
    try:
        event["data"] = orjson.loads(payload) if payload else None
    except orjson.JSONDecodeError:
        event["text"] = payload.decode("utf-8", errors="replace")
    return event


def _header(name: str, value: Any) -> bytes:
    encoded = name.encode("utf-8")
    head = struct.pack(">B", len(encoded)) + encoded
    if isinstance(value, bool):
        return head + struct.pack(">B", _TRUE if value else _FALSE)
    if isinstance(value, int):
        return head + struct.pack(">Bi", _INT32, value)
    text = str(value).encode("utf-8")
    return head + struct.pack(">BH", _STRING, len(text)) + text


def _message(headers: bytes, payload: bytes) -> bytes:
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + headers + payload
    return message + struct.pack(">I", binascii.crc32(message))


def encode_event(event: Any) -> bytes:
    """One recorded event (see the module doc) as the bytes of one message. Raises
    ``ValueError`` for an event of another shape."""
    if not isinstance(event, dict) or not isinstance(event.get("headers"), dict):
        raise ValueError(f"a recorded event must be an object with 'headers', got {event!r:.80}")
    headers = b"".join(_header(str(k), v) for k, v in event["headers"].items())
    if "text" in event:
        payload = str(event["text"]).encode("utf-8")
    else:
        data = event.get("data")
        payload = b"" if data is None else orjson.dumps(data)
    return _message(headers, payload)


def encode_events(events: list[Any]) -> bytes:
    """Recorded events as an event stream's bytes."""
    return b"".join(encode_event(event) for event in events)
