"""A scripted fake of Amazon Bedrock's Converse and ConverseStream, served on 127.0.0.1.

Hand a client its ``endpoint_url`` (``rollout.bedrock(endpoint_url=fake.url, ...)``): the real
botocore signs, sends and parses, as against the service. Scripting::

    fake = FakeBedrock([
        Call("get_weather", {"city": "Paris"}),                    # turn 1: a tool use
        [Call("get_weather", {"city": "Oslo"}), Call("get_time", {})],  # parallel tool uses
        Say("It is sunny."),                                         # plain text
        Fail(400, "ValidationException", "Too long."),               # an API error
    ])
    with fake:                     # serving until the block ends
        ...
    fake.requests                  # (path, headers, parsed body) of each request

Each request takes the next turn; past the script the fake answers a 500 error. Volatile
values are fresh on every call, as the service's are: the ``x-amzn-RequestId`` header and
the ``Date``, the ``toolUseId`` of each tool use, ``metrics.latencyMs``, and each answer
comes after an uneven delay. Token usage is a deterministic function of the request and the
script (tool use ids have a fixed length, so echoing them back changes nothing).

ConverseStream answers are AWS event streams. botocore reads them but has no writer, so
:func:`event_message` is a small one of this suite's own (kept apart from the plugin's, so the
test checks one against the other through botocore's reader): a message is its total length
and its headers' length (big-endian uint32 each), a CRC32 of those 8 bytes, the headers
(name length byte, name, type byte 7 and a uint16-length UTF-8 string for each), the JSON
payload, and a CRC32 of everything before it.
"""

from __future__ import annotations

import json
import random
import secrets
import string
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Sequence
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from fake_models import Call, Say

__all__ = ["Call", "Fail", "FakeBedrock", "Say", "event_message"]

_ALPHANUMERIC = string.ascii_letters + string.digits


class Fail:
    """A scripted API error: status, AWS error type, message."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        self.status, self.error_type, self.message = status, error_type, message


Part = Say | Call
Turn = Say | Call | Fail | str | Sequence[Say | Call | str]


def _parts(turn: Turn) -> tuple[Part, ...] | Fail:
    if isinstance(turn, Fail):
        return turn
    items = [turn] if isinstance(turn, Say | Call | str) else list(turn)
    return tuple(Say(p) if isinstance(p, str) else p for p in items)


def event_message(event_type: str, payload: dict[str, Any]) -> bytes:
    """One event-stream message of ``event_type`` carrying ``payload`` (see the module doc)."""
    headers = b""
    for name, value in (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        raw = value.encode()
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw
    body = json.dumps(payload, separators=(",", ":")).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(body), len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def _tool_use_id() -> str:
    return "tooluse_" + "".join(secrets.choice(_ALPHANUMERIC) for _ in range(22))


def _usage(body: dict[str, Any], parts: Sequence[Part]) -> dict[str, int]:
    conversation = {k: body.get(k) for k in ("system", "messages", "toolConfig")}
    tokens_in = max(1, len(json.dumps(conversation)) // 4)
    tokens_out = sum(
        max(1, len(p.text) // 4) if isinstance(p, Say) else 10 + len(p.arguments_json) // 4
        for p in parts
    )
    return {
        "inputTokens": tokens_in,
        "outputTokens": tokens_out,
        "totalTokens": tokens_in + tokens_out,
    }


def _blocks(parts: Sequence[Part]) -> list[dict[str, Any]]:
    return [
        {"text": p.text}
        if isinstance(p, Say)
        else {"toolUse": {"toolUseId": _tool_use_id(), "name": p.name, "input": p.arguments}}
        for p in parts
    ]


def _stop_reason(parts: Sequence[Part]) -> str:
    return "tool_use" if any(isinstance(p, Call) for p in parts) else "end_turn"


def _stream(blocks: list[dict[str, Any]], stop: str, usage: dict[str, int]) -> bytes:
    out = [event_message("messageStart", {"role": "assistant"})]
    for index, block in enumerate(blocks):
        if "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            out.append(
                event_message("contentBlockStart", {"contentBlockIndex": index, "start": start})
            )
            text = json.dumps(use["input"], separators=(",", ":"))
            pieces = [text[: len(text) // 2], text[len(text) // 2 :]]
            deltas: list[dict[str, Any]] = [{"toolUse": {"input": p}} for p in pieces if p]
        else:
            words = block["text"].split(" ")
            half = len(words) // 2 or 1
            pieces = [" ".join(words[:half]), " " + " ".join(words[half:])]
            deltas = [{"text": piece} for piece in pieces if piece.strip()]
        for delta in deltas:
            out.append(
                event_message("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})
            )
        out.append(event_message("contentBlockStop", {"contentBlockIndex": index}))
    out.append(event_message("messageStop", {"stopReason": stop}))
    metrics = {"latencyMs": random.randint(80, 900)}
    out.append(event_message("metadata", {"usage": usage, "metrics": metrics}))
    return b"".join(out)


class FakeBedrock:
    """The fake service (see the module doc). ``url`` is its endpoint once started."""

    def __init__(self, script: Sequence[Turn]) -> None:
        self.script = [_parts(t) for t in script]
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    @property
    def remaining(self) -> int:
        return len(self.script)

    def __enter__(self) -> FakeBedrock:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> FakeBedrock:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                fake._handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        path = unquote(handler.path)
        with self._lock:
            self.requests.append((path, dict(handler.headers), body))
            turn = (
                self.script.pop(0)
                if self.script
                else Fail(500, "InternalServerException", "the script ran out")
            )
        time.sleep(random.uniform(0.0, 0.03))  # uneven latency
        if isinstance(turn, Fail):
            payload = json.dumps({"message": turn.message}).encode()
            self._send(handler, turn.status, "application/json", payload, turn.error_type)
            return
        blocks, stop, usage = _blocks(turn), _stop_reason(turn), _usage(body, turn)
        if path.endswith("/converse-stream"):
            self._send(
                handler, 200, "application/vnd.amazon.eventstream", _stream(blocks, stop, usage)
            )
            return
        answer = {
            "output": {"message": {"role": "assistant", "content": blocks}},
            "stopReason": stop,
            "usage": usage,
            "metrics": {"latencyMs": random.randint(80, 900)},
        }
        self._send(handler, 200, "application/json", json.dumps(answer).encode())

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        content_type: str,
        payload: bytes,
        error_type: str | None = None,
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        handler.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        handler.send_header("Date", formatdate(usegmt=True))
        if error_type is not None:
            handler.send_header("x-amzn-ErrorType", f"{error_type}:http://internal.amazon.com/")
        handler.end_headers()
        handler.wfile.write(payload)
