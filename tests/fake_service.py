"""The fake model service of :mod:`fake_models`, served over real HTTP on 127.0.0.1.

The in-process fakes plug into an SDK client as a transport; an agent in another process
needs a service it can connect to. :class:`FakeService` answers on a loopback port with the
fakes' bodies and event streams (fresh ids and timestamps on every call), after an uneven
delay, a stream one event at a time with uneven gaps, so that a recording made through it
is as noisy as one made against the real service. It counts every request that reaches it
(``hits``) and keeps each one's headers (``headers``).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
from fake_models import FakeModel

__all__ = ["FakeService"]

_PATHS = {
    "openai.chat": "/chat/completions",
    "openai.responses": "/responses",
    "anthropic.messages": "/v1/messages",
}


class FakeService:
    """``models`` (one :class:`~fake_models.FakeModel` per API) served on 127.0.0.1.

    ``frame_gap``: the longest pause between two events of a stream (each pause is drawn
    between a tenth of it and all of it).
    """

    def __init__(self, *models: FakeModel, frame_gap: float = 0.01) -> None:
        self.models = models
        self.frame_gap = frame_gap
        self.hits = 0
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._random = random.Random()
        handler = type("FakeHandler", (_Handler,), {"service": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeService:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop listening: a request after this cannot connect."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    def pause(self) -> float:
        with self._lock:
            return self._random.uniform(self.frame_gap / 10, self.frame_gap)

    def answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Any:
        with self._lock:
            self.hits += 1
            self.headers.append(headers)
        model = next((m for m in self.models if path.endswith(_PATHS[m.api])), self.models[0])
        request = httpx2.Request(method, f"http://fake.test{path}", headers=headers, content=body)
        time.sleep(model.delay_for(request) + self.pause())
        return model.handler(request)


class _Handler(BaseHTTPRequestHandler):
    service: FakeService
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        size = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(size)
        headers = {k.lower(): v for k, v in self.headers.items()}
        response = self.service.answer(self.command, self.path, headers, body)
        self.send_response(response.status_code)
        for name, value in response.headers.multi_items():
            if name.lower() not in ("content-length", "transfer-encoding", "content-encoding"):
                self.send_header(name, value)
        if "event-stream" in response.headers.get("content-type", ""):
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                for frame in _frames(response):
                    time.sleep(self.service.pause())
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                self.close_connection = True
            return
        data = response.read()
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _frames(response: httpx2.Response) -> Iterator[bytes]:
    stream: Any = response.stream
    yield from stream
