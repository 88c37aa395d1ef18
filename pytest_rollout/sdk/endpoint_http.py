"""The HTTP side of the recording endpoint (:mod:`pytest_rollout.sdk.endpoint`): where a request
that came in goes upstream, which headers cross, how a body is read off the socket, and the
error bodies the endpoint answers with.

Nothing here knows a session or an HTTP library: it deals in paths, header pairs and bytes.

- **Where a request goes.** The path after the endpoint's token is the service's own path
  (``/v1/chat/completions``, ``/v1/messages``, ``/v1beta/models/...:generateContent``). It is
  sent to ``upstream`` when one was given (a proxy, a local model server: its root URL; a
  trailing ``/v1`` is not doubled), else to the service the API belongs to.
- **Keys.** The key a client sends (``Authorization``, ``x-api-key``, ``x-goog-api-key``,
  ``api-key``, a ``key=`` query parameter) is dropped: the process behind the endpoint holds a
  placeholder. The upstream key is the one in the environment of the process that runs the
  endpoint (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY`` /
  ``GOOGLE_API_KEY``), put in the header its service reads. Headers are never recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

import orjson

from ..errors import RolloutError

__all__ = [
    "MAX_BODY",
    "BodyError",
    "Upstreams",
    "error_body",
    "provider_of",
    "read_body",
    "response_headers",
]

#: The largest request body the endpoint reads (a long conversation with images fits).
MAX_BODY: Final = 64 * 1024 * 1024

#: Each provider's service, when no ``upstream`` is given.
SERVICES: Final[Mapping[str, str]] = {
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "google": "https://generativelanguage.googleapis.com",
}

#: The environment variables a provider's key is read from (the first one set wins), and
#: the header that carries it and how.
_KEYS: Final[Mapping[str, tuple[tuple[str, ...], str, Callable[[str], str]]]] = {
    "openai": (("OPENAI_API_KEY",), "authorization", lambda key: f"Bearer {key}"),
    "anthropic": (("ANTHROPIC_API_KEY",), "x-api-key", lambda key: key),
    "gemini": (("GEMINI_API_KEY", "GOOGLE_API_KEY"), "x-goog-api-key", lambda key: key),
    "google": (("GEMINI_API_KEY", "GOOGLE_API_KEY"), "x-goog-api-key", lambda key: key),
}

#: Headers that carry a client's key: never passed on.
_KEY_HEADERS: Final = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key"})

#: Headers about one hop of a connection, never passed on (either way); ``accept-encoding``
#: is left out towards the service so that it answers in plain bytes, as a stream flows best.
_HOP: Final = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "accept-encoding",
        "expect",
    }
)


class Readable(Protocol):
    """A request's byte stream (the handler's ``rfile``)."""

    def read(self, size: int, /) -> bytes: ...

    def readline(self, size: int, /) -> bytes: ...


class BodyError(RolloutError):
    """A request body the endpoint cannot read: its HTTP status and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def provider_of(path: str, headers: Mapping[str, str]) -> str:
    """The provider a request that is not a known model call is meant for, from its headers
    and path (a request for ``/v1/models`` goes to the service its client speaks to)."""
    if "anthropic-version" in headers or "x-api-key" in headers:
        return "anthropic"
    if "x-goog-api-key" in headers or ("/models/" in path and ":" in path.rsplit("/", 1)[-1]):
        return "gemini"
    return "openai"


@dataclass(frozen=True, slots=True)
class Upstreams:
    """Where the endpoint sends requests: ``upstream`` (a root URL) or each API's service,
    and the keys read from ``environ``."""

    upstream: str | None
    environ: Mapping[str, str]

    @classmethod
    def of(cls, upstream: str | None, environ: Mapping[str, str]) -> Upstreams:
        if upstream is not None:
            parts = urlsplit(upstream)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise RolloutError(
                    f"upstream= must be an http:// or https:// URL (the service's root, such "
                    f"as http://127.0.0.1:8000), got {upstream!r}"
                )
            upstream = upstream.rstrip("/")
        return cls(upstream, dict(environ))

    def url(self, provider: str, path: str, query: str) -> str:
        """The upstream URL of a request for ``path`` (what follows the token) and ``query``
        (without a client's ``key=``)."""
        base = self.upstream or SERVICES.get(provider, SERVICES["openai"])
        if base.endswith("/v1") and (path == "/v1" or path.startswith("/v1/")):
            base = base[: -len("/v1")]
        kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "key"]
        return base + path + (f"?{urlencode(kept)}" if kept else "")

    def headers(self, provider: str, incoming: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """The headers sent upstream: the client's, less its key and the hop-by-hop ones,
        plus the key of ``provider`` from the environment (when it is set there)."""
        sent = [
            (name, value)
            for name, value in incoming
            if name.lower() not in _HOP and name.lower() not in _KEY_HEADERS
        ]
        found = _KEYS.get(provider)
        if found is not None:
            variables, header, shape = found
            key = next((self.environ[v] for v in variables if self.environ.get(v)), None)
            if key is not None:
                sent.append((header, shape(key)))
        return sent


def response_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """A response's headers as the endpoint passes them back (the hop-by-hop ones dropped:
    the endpoint frames the body itself)."""
    return [(name, value) for name, value in headers if name.lower() not in _HOP]


def read_body(stream: Readable, headers: Mapping[str, str], limit: int = MAX_BODY) -> bytes:
    """The request body on ``stream``: ``Content-Length`` bytes, or a chunked body; none
    when neither is said. Raises :class:`BodyError` for a body too long or malformed."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return _chunked(stream, limit)
    text = headers.get("content-length")
    if text is None:
        return b""
    try:
        size = int(text)
    except ValueError:
        raise BodyError(400, f"Content-Length is not a number: {text[:40]!r}") from None
    if size < 0:
        raise BodyError(400, "Content-Length is negative")
    if size > limit:
        raise BodyError(413, f"the request body is over {limit} bytes")
    body = stream.read(size)
    if len(body) != size:
        raise BodyError(400, "the request body ended early")
    return body


def _chunked(stream: Readable, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = stream.readline(1026)
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise BodyError(400, "a malformed chunk in the request body") from None
        if size == 0:
            while stream.readline(1026).strip():  # the trailer, up to its blank line
                pass
            return b"".join(parts)
        total += size
        if total > limit:
            raise BodyError(413, f"the request body is over {limit} bytes")
        chunk = stream.read(size)
        if len(chunk) != size:
            raise BodyError(400, "the request body ended early")
        parts.append(chunk)
        stream.readline(3)  # the CRLF after the chunk


def error_body(provider: str, status: int, message: str, code: str) -> bytes:
    """An error the endpoint answers with, shaped as ``provider``'s service shapes its errors,
    so that the client's SDK raises it with ``message``."""
    value: dict[str, Any]
    if provider == "anthropic":
        value = {"type": "error", "error": {"type": code, "message": message}}
    elif provider in ("gemini", "google"):
        value = {"error": {"code": status, "message": message, "status": code.upper()}}
    else:
        value = {"error": {"message": message, "type": code, "param": None, "code": code}}
    return orjson.dumps(value)
