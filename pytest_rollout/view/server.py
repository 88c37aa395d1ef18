"""``rollout view --serve``: the viewer on a local port, for this machine's browser only.

The server listens on 127.0.0.1 at a port the system picks, and answers GET and HEAD only:

- ``/`` is the page shell (the viewer's code, no rollout data); ``/data.json`` is the data,
  answered only to a request carrying the session's random token, as
  ``Authorization: Bearer <token>`` (or in ``X-Rollout-Token``). The token travels in the
  URL's fragment (``#token=...``), which browsers never send to a server; the page's script
  keeps it in ``sessionStorage``, strips it from the address and sends it in that header.
  ``/data.json?agent=NAME`` is the data with that agent's events only
  (:func:`~.agents.entry_for_agent`). ``/health`` (with the token) names the server's process,
  for a second ``rollout view --serve`` to find it alive (:mod:`.descriptor`). Nothing is
  logged.
- A request whose ``Host`` is not this server's address (DNS rebinding), whose ``Origin``
  is present and not this server's own (another site's script), that carries a body, or
  that uses another method is refused before anything else is read.
- Given ``reload``, the data follows the files: each data request asks it for new entries
  (it returns ``None`` when nothing changed).
- Every response, refusals and errors included (a malformed request line, an unknown
  method, an over-long URI or header), carries the page's strict Content-Security-Policy and
  headers that forbid sniffing, framing, referrers and caching; an error's body is its status
  alone, never an echo of the request.
- A client has :data:`REQUEST_TIMEOUT` seconds from connecting to send its whole request,
  and as long again to take each write of the answer; past that its connection is closed,
  so an idle or a trickling client cannot hold one of the server's threads for ever.
"""

from __future__ import annotations

import hmac
import io
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Final
from urllib.parse import parse_qs, urlsplit

import orjson

from .agents import entry_for_agent
from .descriptor import HEALTH_PATH
from .page import content_security_policy, page_bytes, page_data

__all__ = ["REQUEST_TIMEOUT", "TOKEN_HEADER", "Reload", "ViewServer"]

TOKEN_HEADER: Final = "X-Rollout-Token"
DATA_PATH: Final = "/data.json"
#: Seconds a client has to send its request (and to take each write of the answer).
REQUEST_TIMEOUT: Final = 5.0
#: The data of this many agents' views is kept, besides the whole data.
AGENT_VIEWS_KEPT: Final = 8

#: New ``(title, entries)`` when the rollouts changed, else ``None``.
Reload = Callable[[], "tuple[str, Sequence[Mapping[str, Any]]] | None"]


class _Content:
    """The data served, whole or for one agent, made once per rollouts and agent."""

    def __init__(
        self, title: str, entries: Sequence[Mapping[str, Any]], reload: Reload | None
    ) -> None:
        self._lock = threading.Lock()
        self._reload = reload
        self._set(title, entries)

    def _set(self, title: str, entries: Sequence[Mapping[str, Any]]) -> None:
        self._title = title
        self._entries = entries
        self._whole = page_data(title, entries)
        self._by_agent: dict[str, bytes] = {}

    def data(self, agent: str | None) -> bytes:
        with self._lock:
            fresh = self._reload() if self._reload is not None else None
            if fresh is not None:
                self._set(*fresh)
            if agent is None:
                return self._whole
            data = self._by_agent.get(agent)
            if data is None:
                entries = [entry_for_agent(entry, agent) for entry in self._entries]
                data = page_data(self._title, entries, agent=agent)
                if len(self._by_agent) >= AGENT_VIEWS_KEPT:
                    del self._by_agent[next(iter(self._by_agent))]
                self._by_agent[agent] = data
            return data


class ViewServer:
    """The viewer of ``entries`` served on 127.0.0.1 (``port=0``: any free port).

    ``timeout``: seconds a client has to send its whole request, and to take each write
    of the answer, before its connection is closed. ``reload``: asked for new entries at
    each data request (see the module docstring).
    """

    def __init__(
        self,
        title: str,
        entries: Sequence[Mapping[str, Any]],
        *,
        port: int = 0,
        timeout: float = REQUEST_TIMEOUT,
        reload: Reload | None = None,
    ) -> None:
        self.token = secrets.token_urlsafe(32)
        shell = page_bytes(title, [], data_url=DATA_PATH)
        content = _Content(title, entries, reload)
        handler = _handler(shell, content, self.token, content_security_policy(), timeout)
        self._server = _QuietServer(("127.0.0.1", port), handler)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        handler.hosts = frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})
        handler.origins = frozenset({f"http://{host}" for host in handler.hosts})
        self._state = threading.Lock()
        self._started = self._closed = False

    @property
    def url(self) -> str:
        """Where to open the viewer: the token is in the fragment, never sent as is."""
        return f"http://127.0.0.1:{self.port}/#token={self.token}"

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` (at once when it was shut down already)."""
        with self._state:
            if self._closed:
                return
            self._started = True
        self._server.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        """Stop serving (waiting for :meth:`serve_forever` if it started) and close."""
        with self._state:
            started, self._closed = self._started, True
        if started:
            self._server.shutdown()
        self._server.server_close()


class _Budgeted(io.RawIOBase):
    """A socket's reads, all within one time budget: a request that trickles in a byte at
    a time runs out of it as surely as one that never comes."""

    def __init__(self, connection: socket.socket, seconds: float) -> None:
        super().__init__()
        self._connection = connection
        self._deadline = time.monotonic() + seconds

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self._connection.settimeout(left)
        return self._connection.recv_into(buffer)


class _QuietServer(ThreadingHTTPServer):
    """A server that prints nothing when a connection fails (a client gone mid-answer)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Log nothing, as for the requests themselves."""


def _handler(
    shell: bytes, content: _Content, token: str, csp: str, timeout: float
) -> type[_Handler]:
    class Handler(_Handler):
        pass

    Handler.shell = shell
    Handler.content = content
    Handler.token = token
    Handler.csp = csp
    Handler.timeout = timeout
    return Handler


class _Handler(BaseHTTPRequestHandler):
    shell: bytes = b""
    content: _Content
    token: str = ""
    csp: str = ""
    hosts: frozenset[str] = frozenset()
    origins: frozenset[str] = frozenset()
    timeout: ClassVar[float] = REQUEST_TIMEOUT
    server_version = "rollout-view"
    sys_version = ""
    # A bare "GET /" (HTTP/0.9) would be answered without a status line or headers.
    default_request_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing: not the paths, not the headers."""

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the socket's own reader, replaced by one within the budget
        self.rfile = io.BufferedReader(_Budgeted(self.connection, self.timeout))

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        *,
        head: bool = False,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        self.connection.settimeout(self.timeout)  # the request's budget is spent or unused
        self.send_response(status)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", self.csp)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _refuse(self, status: int, reason: str, *, extra: Mapping[str, str] | None = None) -> None:
        self.close_connection = True
        head = self.command == "HEAD"
        body = reason.encode() + b"\n"
        self._send(status, body, "text/plain; charset=utf-8", head=head, extra=extra)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Every error the HTTP layer finds (a malformed request, an unknown method, an
        over-long line) is answered like a refusal: the status only, with every header."""
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "error"
        self._refuse(code, f"{code} {phrase}")

    def _checked(self) -> bool:
        """Whether the request may be answered at all (else it was refused)."""
        if self.headers.get("Host", "") not in self.hosts:
            self._refuse(421, "this server answers requests for its own address only")
            return False
        if any(origin not in self.origins for origin in self.headers.get_all("Origin", [])):
            self._refuse(403, "this server answers its own page only, not another origin")
            return False
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or (length not in (None, "0")):
            self._refuse(413, "this server accepts no request bodies")
            return False
        return True

    def _authorized(self) -> bool:
        """Whether the request carries the token (``Authorization: Bearer``, or the
        ``X-Rollout-Token`` header); else it is refused."""
        bearer = self.headers.get("Authorization", "")
        scheme, _, given = bearer.partition(" ")
        if scheme.lower() != "bearer":
            given = self.headers.get(TOKEN_HEADER, "")
        if hmac.compare_digest(given.strip().encode("latin-1", "replace"), self.token.encode()):
            return True
        self._refuse(403, "a valid token is required")
        return False

    def _answer(self, *, head: bool) -> None:
        if not self._checked():
            return
        parts = urlsplit(self.path)
        if parts.path == "/":
            self._send(200, self.shell, "text/html; charset=utf-8", head=head)
        elif parts.path == DATA_PATH:
            if not self._authorized():
                return
            agent = parse_qs(parts.query).get("agent", [None])[0]
            data = self.content.data(agent)
            self._send(200, data, "application/json", head=head)
        elif parts.path == HEALTH_PATH:
            if not self._authorized():
                return
            health = orjson.dumps({"service": "rollout-view", "pid": os.getpid()})
            self._send(200, health, "application/json", head=head)
        else:
            self._refuse(404, "not found")

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def _not_allowed(self) -> None:
        self._refuse(405, "only GET and HEAD are answered", extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed
