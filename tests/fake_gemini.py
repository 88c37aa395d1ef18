"""A scripted fake of Google's Gemini service, listening on 127.0.0.1.

It answers ``generateContent`` and ``streamGenerateContent?alt=sse`` the way the Gemini API
and Vertex AI do (same JSON bodies, same server-sent events), on their paths
(``/v1beta/models/{model}:...`` and ``/v1beta1/projects/{p}/locations/{l}/publishers/google/
models/{model}:...``), so the real ``google-genai`` SDK parses its answers. Unlike
``fake_models``, it is a real HTTP server: the SDK reaches it through the network stack.

Scripting a model::

    fake = FakeGemini([
        Call("get_weather", {"city": "Paris"}),            # turn 1: one function call
        [Call("get_weather", {"city": "Oslo"}),            # turn 2: two calls in one turn
         Call("get_time", {"city": "Oslo"})],
        Say("Sunny."),                                     # turn 3: text
        Fail(400, "The prompt is too long."),              # turn 4: an API error
    ])
    with fake:                                             # started, then stopped
        client = genai.Client(api_key="k", http_options={"base_url": fake.base_url})

Every answer carries a fresh ``responseId`` and ``createTime``, and comes after an uneven
delay, as the real service's do; function calls carry a fresh ``id`` when ``call_ids`` is
set (Vertex AI and recent models name them), none otherwise. The token usage is a
deterministic function of the request and the script (``cached`` tokens of the prompt are
reported as ``cachedContentTokenCount``). ``fake.requests`` holds each request's path and
parsed body. When the script runs out, the fake answers a 500 error.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_STREAM_PIECES = 3


@dataclass(frozen=True)
class Say:
    """A scripted text answer."""

    text: str


@dataclass(frozen=True)
class Call:
    """A scripted function call: the function's name and its arguments."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Fail:
    """A scripted API error: the HTTP status and the message."""

    status: int = 500
    message: str = "Internal error encountered."


Part = Say | Call
Turn = Say | Call | Fail | Sequence[Say | Call]

_STATUS = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}


def _tokens(value: Any) -> int:
    """One token per four characters of JSON: deterministic."""
    return math.ceil(len(json.dumps(value, sort_keys=True)) / 4)


def _parts(turn: Turn) -> tuple[Part, ...]:
    if isinstance(turn, Say | Call):
        return (turn,)
    assert not isinstance(turn, Fail)
    return tuple(turn)


class FakeGemini:
    """The fake service: start it (``with fake:`` or :meth:`start`), point a client at
    :attr:`base_url`, stop it."""

    def __init__(self, script: Sequence[Turn], *, call_ids: bool = False, cached: int = 0) -> None:
        self.script = list(script)
        self.call_ids = call_ids
        self.cached = cached
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- the server ---------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the fake is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeGemini:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, content_type, payload = fake.answer(self.path, body)
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the answers --------------------------------------------------------------------

    @property
    def remaining(self) -> int:
        return len(self.script)

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        """``(status, content type, body)`` of the next scripted turn."""
        with self._lock:
            self.requests.append((path, body))
            turn: Turn = self.script.pop(0) if self.script else Fail(500, "the script ran out")
        time.sleep(random.uniform(0.001, 0.03))  # uneven latency
        if isinstance(turn, Fail):
            error = {
                "code": turn.status,
                "message": turn.message,
                "status": _STATUS.get(turn.status, "INTERNAL"),
            }
            return (
                turn.status,
                "application/json; charset=UTF-8",
                json.dumps({"error": error}).encode(),
            )
        model = path.split("?", 1)[0].rpartition("/")[2].partition(":")[0]
        parts = _parts(turn)
        if ":streamGenerateContent" in path:
            return 200, "text/event-stream", self._stream(body, parts, model)
        payload = self._response(body, [self._part(p) for p in parts], model, last=True)
        return 200, "application/json; charset=UTF-8", json.dumps(payload, indent=2).encode()

    def _part(self, part: Part) -> dict[str, Any]:
        if isinstance(part, Say):
            return {"text": part.text}
        call: dict[str, Any] = {"name": part.name, "args": part.args}
        if self.call_ids:
            call["id"] = str(uuid.uuid4())
        return {"functionCall": call}

    def _usage(self, body: dict[str, Any], parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
        prompt = 3 + sum(
            _tokens(body[key]) for key in ("contents", "systemInstruction", "tools") if key in body
        )
        candidates = max(1, _tokens(parts))
        usage = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "totalTokenCount": prompt + candidates,
        }
        if self.cached:
            usage["cachedContentTokenCount"] = min(self.cached, prompt)
        return usage

    def _response(
        self,
        body: dict[str, Any],
        parts: list[dict[str, Any]],
        model: str,
        *,
        last: bool,
        all_parts: Sequence[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if last:
            candidate["finishReason"] = "STOP"
        response: dict[str, Any] = {
            "candidates": [candidate],
            "usageMetadata": self._usage(body, all_parts or parts),
            "modelVersion": model,
            "createTime": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "responseId": uuid.uuid4().hex[:22],
        }
        if not last:
            del response["usageMetadata"]["candidatesTokenCount"]
        return response

    def _stream(self, body: dict[str, Any], parts: Sequence[Part], model: str) -> bytes:
        """Text in a few pieces, each function call whole, the usage complete at the end."""
        pieces: list[dict[str, Any]] = []
        for part in parts:
            if isinstance(part, Say):
                size = max(1, math.ceil(len(part.text) / _STREAM_PIECES))
                pieces.extend(
                    {"text": part.text[i : i + size]} for i in range(0, len(part.text), size)
                )
            else:
                pieces.append(self._part(part))
        chunks = [
            self._response(body, [piece], model, last=i == len(pieces) - 1, all_parts=pieces)
            for i, piece in enumerate(pieces)
        ]
        return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)
