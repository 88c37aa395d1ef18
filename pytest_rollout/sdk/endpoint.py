"""A recording endpoint: a loopback HTTP server through which an agent in another process (a
Node service, a CLI, a container, a suite in another language) talks to its model, recorded
and replayed like an SDK client of the test's own.

The server is a thin bridge. Each request that comes in becomes a request of the HTTP library
the SDK clients use, handed to the same recording transport that ``rollout.http_client()``
builds (:mod:`pytest_rollout.sdk.transport`); its response (a stream chunk by chunk, as it
arrives) is written back. So the turns land in the test's rollout with the same request keys,
the same divergences and the same replay as those of an in-process client:

- **recording** (and full replay), the request goes to the service its API belongs to, or
  to ``upstream=``, with the key from this process's environment in place of the client's
  (:mod:`pytest_rollout.sdk.endpoint_http`);
- **dry replay**, it is answered from the golden; a request the golden cannot answer gets the
  replay divergence recorded in the run (``unrecorded_turn``, ``prompt_mismatch``) and an
  HTTP 400 error in the API's shape, which the client's SDK raises.

The server listens on 127.0.0.1 only, on a port the system picks unless told, one thread per
connection. Every URL it serves starts with a token made for this endpoint
(``http://127.0.0.1:PORT/TOKEN/v1``): a client hands its base URL's path on untouched,
whatever SDK or language it is, where headers differ from one SDK to the next (and the
client's own key header is dropped). A request without the token is refused with a 403 and
nothing of it is read or recorded.

A client that goes away in the middle of a streamed answer closes the answer's body, as an
SDK that stops reading a stream does: the turn is recorded with what was passed on, and the
server carries on.
"""

from __future__ import annotations

import contextlib
import hmac
import importlib
import os
import secrets
import socket
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType, TracebackType
from typing import Any, ClassVar, Final

from ..diff.divergence import ReplayDivergenceError
from ..errors import RolloutError
from ..format.events import ERROR_CONTEXT
from ..replay.turn import Turn
from ..safety.sanitize import sanitize
from .endpoint_http import BodyError, Upstreams, error_body, provider_of, read_body
from .endpoint_http import response_headers as _passed_back
from .exchange import Exchange
from .flights import TurnPort
from .transport import transport_classes
from .wire import api_for

__all__ = ["LOOPBACK", "PLACEHOLDER_KEY", "Endpoint"]

#: The one address the endpoint listens on.
LOOPBACK: Final = "127.0.0.1"

#: The API key :meth:`Endpoint.env` gives the other process: its SDK wants one, and the
#: endpoint drops it (the real key never leaves this process).
PLACEHOLDER_KEY: Final = "rollout-endpoint"

#: Seconds a connection may stay idle (between requests, or in the middle of sending one).
IDLE_TIMEOUT: Final = 300.0

_HTTP_LIBRARIES: Final = ("httpx2", "httpx")


def _http_module() -> ModuleType:
    for name in _HTTP_LIBRARIES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise RolloutError(
        "the recording endpoint needs httpx2 or httpx, the HTTP library of the model SDKs: "
        "pip install httpx2"
    )


class _RemoteTurns:
    """The test's turn port, each turn it completes marked ``remote``: the agent that asked
    for it runs in another process, with its tools, which nothing here records (so the
    check for tools run outside ``rollout.tools`` leaves its calls alone)."""

    def __init__(self, port: TurnPort) -> None:
        self._port = port

    def __getattr__(self, name: str) -> Any:
        return getattr(self._port, name)

    def complete_sdk_turn(
        self,
        turn: Turn,
        latency_ms: float,
        raw: Mapping[str, Any],
        ttft_ms: float | None,
        remote: bool = True,
    ) -> None:
        self._port.complete_sdk_turn(turn, latency_ms, raw, ttft_ms, remote=True)


class Endpoint:
    """A loopback endpoint whose model requests go through ``port`` (a session's
    :class:`~pytest_rollout.sdk.flights.TurnPort`), from :meth:`start` to :meth:`stop`.

    ``upstream``: the root URL requests go to when recording (default: each API's service).
    ``listen_port``: the port to listen on (0: one the system picks). ``environ``: where the
    upstream keys are read (default: this process's environment, when the endpoint starts).
    """

    def __init__(
        self,
        port: TurnPort,
        *,
        upstream: str | None = None,
        listen_port: int = 0,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._port = port
        self._upstreams = Upstreams.of(upstream, os.environ if environ is None else environ)
        module = self._module = _http_module()
        self.token = secrets.token_urlsafe(24)
        self._prefix = f"/{self.token}"
        self._stopped = threading.Event()
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        handler = type("EndpointHandler", (_Handler,), {"endpoint": self})
        try:
            self._server = _Server((LOOPBACK, listen_port), handler)
        except OSError as exc:
            raise RolloutError(
                f"the recording endpoint cannot listen on {LOOPBACK}:{listen_port}: "
                f"{exc.strerror or exc} (pass port=0 for a free port)"
            ) from None
        self.port: int = self._server.server_address[1]
        sync_class, _ = transport_classes(module)
        live = None if port.replays_every_turn else module.HTTPTransport()
        self._transport = sync_class(Exchange(_RemoteTurns(port)), live)

    # -- what to hand the other process ----------------------------------------------

    @property
    def url(self) -> str:
        """The endpoint's root: the base URL of clients that add ``/v1`` themselves (the
        Anthropic SDK, the Claude CLI: ``ANTHROPIC_BASE_URL``)."""
        return f"http://{LOOPBACK}:{self.port}{self._prefix}"

    @property
    def base_url(self) -> str:
        """The base URL of OpenAI clients (``OPENAI_BASE_URL``): the root and ``/v1``."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The base URL of Anthropic clients (``ANTHROPIC_BASE_URL``): the root."""
        return self.url

    def env(self, **extra: str) -> dict[str, str]:
        """The environment variables that point the OpenAI and Anthropic SDKs (and the tools
        built on them) at this endpoint, with a placeholder key each; ``extra`` is added."""
        return {
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": PLACEHOLDER_KEY,
            "ANTHROPIC_BASE_URL": self.anthropic_base_url,
            "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
            **extra,
        }

    def __str__(self) -> str:
        return self.base_url

    def __repr__(self) -> str:
        state = "stopped" if self._stopped.is_set() else "serving"
        return f"<rollout endpoint on {LOOPBACK}:{self.port}, {state}>"

    # -- its life --------------------------------------------------------------------

    def start(self) -> Endpoint:
        """Serve in a thread of its own (once)."""
        if self._thread is None and not self._stopped.is_set():
            self._thread = threading.Thread(
                target=self._serve_forever, name=f"rollout-endpoint-{self.port}", daemon=True
            )
            self._thread.start()
        return self

    def _serve_forever(self) -> None:
        self._server.serve_forever(poll_interval=0.1)

    def wait(self) -> None:
        """Block until the endpoint is stopped (a signal, Ctrl-C, interrupts the wait)."""
        while not self._stopped.wait(0.2):
            pass

    def stop(self) -> None:
        """Stop serving: no new request is taken, open connections are closed, and the
        live transport is let go. Calling it again does nothing."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._transport.close()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def __enter__(self) -> Endpoint:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # -- one request -----------------------------------------------------------------

    def _tracked(self, connection: socket.socket, opened: bool) -> None:
        with self._lock:
            if opened:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _rest(self, path: str) -> str | None:
        """What follows the token in ``path`` (``None``: the token is not there)."""
        prefix = self._prefix
        head, rest = path[: len(prefix)], path[len(prefix) :]
        if not hmac.compare_digest(head.encode(), prefix.encode()):
            return None
        if rest and not rest.startswith("/"):
            return None
        return rest or "/"

    def serve(self, handler: _Handler) -> None:
        """Answer the request ``handler`` holds."""
        path, _, query = handler.path.partition("?")
        rest = self._rest(path)
        if rest is None:
            message = (
                "pytest-rollout endpoint: this URL lacks the endpoint's token; use the base "
                "URL the endpoint gave (rollout.endpoint().base_url)"
            )
            handler.refuse(403, provider_of(path, {}), "rollout_bad_token", message)
            return
        if self._stopped.is_set():
            handler.refuse(503, "openai", "rollout_stopped", "the endpoint has stopped")
            return
        headers = {name.lower(): value for name, value in handler.headers.items()}
        method = handler.command
        api = api_for(method, rest)
        provider = api.provider if api is not None else provider_of(rest, headers)
        try:
            body = read_body(handler.rfile, headers)
        except BodyError as exc:
            handler.refuse(exc.status, provider, "rollout_bad_request", str(exc))
            return
        upstreams = self._upstreams
        request = self._module.Request(
            method,
            upstreams.url(provider, rest, query),
            headers=upstreams.headers(provider, handler.headers.items()),
            content=body,
        )
        try:
            response = self._transport.handle_request(request)
        except ReplayDivergenceError as exc:  # recorded in the run already
            code = f"rollout_{exc.divergence.kind.value}"
            handler.refuse(400, provider, code, f"pytest-rollout: {exc}")
            return
        except RolloutError as exc:
            self._note_refusal(method, rest, exc)
            handler.refuse(400, provider, "rollout_replay_refused", f"pytest-rollout: {exc}")
            return
        except Exception as exc:  # the service could not be reached: the SDK may retry
            text = f"pytest-rollout endpoint: the service did not answer: {type(exc).__name__}"
            handler.refuse(502, provider, "rollout_upstream_unreachable", f"{text}: {exc}")
            return
        handler.relay(response)

    def _note_refusal(self, method: str, path: str, error: RolloutError) -> None:
        """A request replay refused that is no divergence (a request that is not a model
        call): the other process got an error the test would not see, so the run says so."""
        self._port.emit(
            ERROR_CONTEXT,
            error={"class": type(error).__name__, "message": str(error)},
            request=f"{method} {path}",
            source="rollout.endpoint",
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The port is the system's pick, or one the user named: never taken over from a
    # listener that is still there.
    allow_reuse_address = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed (a client gone mid-answer) is not news."""


class _Handler(BaseHTTPRequestHandler):
    """One connection to the endpoint: requests one after another (HTTP/1.1 keep-alive)."""

    endpoint: ClassVar[Endpoint]
    protocol_version = "HTTP/1.1"
    server_version = "pytest-rollout-endpoint"
    sys_version = ""
    timeout = IDLE_TIMEOUT

    def setup(self) -> None:
        super().setup()
        self.endpoint._tracked(self.connection, opened=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.endpoint._tracked(self.connection, opened=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing is logged: a request's path holds the token."""

    def _serve(self) -> None:
        self.endpoint.serve(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _serve

    def refuse(self, status: int, provider: str, code: str, message: str) -> None:
        """Answer an error, shaped as ``provider``'s; the connection is closed after it
        (a body left unread must not be taken for the next request)."""
        body = error_body(provider, status, sanitize(message), code)
        self.close_connection = True
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.send_header("x-should-retry", "false")
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            pass

    def relay(self, response: Any) -> None:
        """Write ``response`` back, its body chunk by chunk as it comes; a client that goes
        away closes the body (the turn keeps what was passed on)."""
        try:
            self.send_response(response.status_code)
            for name, value in _passed_back(response.headers.multi_items()):
                self.send_header(name, value)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for chunk in response.iter_raw():
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except Exception:  # the client went away, or the service did mid-answer
            self.close_connection = True
        finally:
            response.close()
