"""``rollout view --serve``: the viewer on a local port, for this machine's browser only.

The server listens on 127.0.0.1 at a port the system picks, and answers GET and HEAD only:

- ``/`` is the page shell (the viewer's code, no rollout data); ``/data.json`` is the data,
  answered only to a request carrying the session's random token in ``X-Rollout-Token``.
  The token travels in the URL's fragment (``#token=...``), which browsers never send to a
  server, and the page's script puts it in that header. Nothing is logged.
- A request whose ``Host`` is not this server's address (DNS rebinding), that carries a
  body, or that uses another method is refused before anything else is read.
- Every response carries the page's strict Content-Security-Policy and headers that forbid
  sniffing, framing, referrers and caching.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from .page import content_security_policy, page_data, render_page

__all__ = ["TOKEN_HEADER", "ViewServer"]

TOKEN_HEADER: Final = "X-Rollout-Token"
DATA_PATH: Final = "/data.json"


class ViewServer:
    """The viewer of ``entries`` served on 127.0.0.1 (``port=0``: any free port)."""

    def __init__(self, title: str, entries: Sequence[Mapping[str, Any]], *, port: int = 0) -> None:
        self.token = secrets.token_urlsafe(32)
        shell = render_page(title, [], data_url=DATA_PATH).encode("utf-8")
        data = page_data(title, entries)
        handler = _handler(shell, data, self.token, content_security_policy())
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        handler.hosts = frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})

    @property
    def url(self) -> str:
        """Where to open the viewer: the token is in the fragment, never sent as is."""
        return f"http://127.0.0.1:{self.port}/#token={self.token}"

    def serve_forever(self) -> None:
        self._server.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(shell: bytes, data: bytes, token: str, csp: str) -> type[_Handler]:
    class Handler(_Handler):
        pass

    Handler.shell = shell
    Handler.data = data
    Handler.token = token
    Handler.csp = csp
    return Handler


class _Handler(BaseHTTPRequestHandler):
    shell: bytes = b""
    data: bytes = b""
    token: str = ""
    csp: str = ""
    hosts: frozenset[str] = frozenset()
    server_version = "rollout-view"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing: not the paths, not the headers."""

    def _send(self, status: int, body: bytes, content_type: str, *, head: bool = False) -> None:
        self.send_response(status)
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

    def _refuse(self, status: int, reason: str) -> None:
        self.close_connection = True
        self._send(status, reason.encode() + b"\n", "text/plain; charset=utf-8")

    def _checked(self) -> bool:
        """Whether the request may be answered at all (else it was refused)."""
        if self.headers.get("Host", "") not in self.hosts:
            self._refuse(421, "this server answers requests for its own address only")
            return False
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or (length not in (None, "0")):
            self._refuse(413, "this server accepts no request bodies")
            return False
        return True

    def _answer(self, *, head: bool) -> None:
        if not self._checked():
            return
        path = self.path.split("?", 1)[0]
        if path == "/":
            self._send(200, self.shell, "text/html; charset=utf-8", head=head)
        elif path == DATA_PATH:
            given = self.headers.get(TOKEN_HEADER, "")
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                self._refuse(403, "a valid token is required")
                return
            self._send(200, self.data, "application/json", head=head)
        else:
            self._refuse(404, "not found")

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def _not_allowed(self) -> None:
        self.close_connection = True
        self.send_response(405)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed
