"""Google Gen AI clients whose model calls are recorded and replayed: what ``rollout.gemini()``
builds.

The client is the SDK's own ``google.genai.Client``, built with the user's keyword arguments
and, through its documented ``http_options`` (``client_args`` and ``async_client_args``),
our transports (:mod:`pytest_rollout.sdk.transport`) under the HTTP clients it builds for
``client.models`` and ``client.aio.models``, which it owns and closes as its own. The
Gemini API and Vertex AI both work. In dry replay neither an API key nor Google credentials
are needed, and nothing looks for them (no application default credentials, no metadata
server): the client gets a placeholder key, or on Vertex AI a placeholder token and, when
none is given, a placeholder project.

A framework that builds its ``google.genai.Client`` itself, with one set of ``client_args``
for both HTTP clients (LangChain's ``ChatGoogleGenerativeAI``), gets them from
``rollout.gemini_client_args()``: their ``transport`` serves both sides.
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from types import ModuleType
from typing import Any, Final

from ..errors import RolloutError
from .clients import REPLAY_API_KEY, MissingPackageError, _http_module, _recording_transport
from .flights import TurnPort

__all__ = ["gemini_client", "gemini_client_args"]

#: The environment variables the SDK reads its key from (the Gemini API, Vertex AI express).
_KEY_VARIABLES: Final = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
#: The project a Vertex AI client gets in dry replay when it has none: its requests name it
#: in their path, which is not part of what a request is matched on.
REPLAY_PROJECT: Final = "rollout-replay-project"


def _import(name: str, method: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise MissingPackageError(
            f"{method} needs the google-genai package, which is not installed: "
            f"pip install google-genai"
        ) from None


def _vertex(kwargs: dict[str, Any]) -> bool:
    given = kwargs.get("vertexai")
    if given is not None:
        return bool(given)
    for name in ("GOOGLE_GENAI_USE_ENTERPRISE", "GOOGLE_GENAI_USE_VERTEXAI"):
        value = os.environ.get(name)
        if value is not None:
            return value.lower() in ("true", "1")
    return False


def _replay_credentials(kwargs: dict[str, Any], method: str) -> None:
    """What a client needs to be built, and to send, in dry replay: nothing real."""
    has_key = kwargs.get("api_key") or any(os.environ.get(v) for v in _KEY_VARIABLES)
    if not _vertex(kwargs):
        if not has_key:
            kwargs["api_key"] = REPLAY_API_KEY
        return
    if has_key or kwargs.get("credentials") is not None:
        return
    oauth2 = _import("google.oauth2.credentials", method)
    # A token that never expires: the SDK sends it and never refreshes it.
    kwargs["credentials"] = oauth2.Credentials(token=REPLAY_API_KEY)
    if not kwargs.get("project") and not os.environ.get("GOOGLE_CLOUD_PROJECT"):
        kwargs["project"] = REPLAY_PROJECT


def _http_options(types: Any, given: Any, method: str, sync: Any, asynchronous: Any) -> Any:
    """``given`` (``HttpOptions``, a dict of its fields or ``None``) with our transports in
    the arguments the SDK builds its HTTP clients with (so that it owns and closes them)."""
    if given is None:
        options = types.HttpOptions()
    elif isinstance(given, dict):
        options = types.HttpOptions.model_validate(given)
    else:
        options = given.model_copy()
    client_args = dict(options.client_args or {})
    async_client_args = dict(options.async_client_args or {})
    if (
        options.httpx_client is not None
        or options.httpx_async_client is not None
        or "transport" in client_args
        or "transport" in async_client_args
    ):
        raise RolloutError(
            f"{method} builds the HTTP clients of its http_options itself; to send "
            f"requests through a transport of your own, pass it as "
            f"{method[:-1]}transport=...)"
        )
    options.client_args = {**client_args, "transport": sync}
    options.async_client_args = {**async_client_args, "transport": asynchronous}
    return options


def _side(transport: Any, method: str) -> Any:
    """``transport`` when it serves requests ``method`` sends (``handle_request`` or
    ``handle_async_request``), else ``None`` (the network)."""
    return transport if transport is not None and hasattr(transport, method) else None


def gemini_client(
    session: TurnPort, transport: Any, client_kwargs: dict[str, Any], *, aio: bool = False
) -> Any:
    """A ``google.genai.Client`` built with ``client_kwargs``, its sync and async HTTP
    clients recording through ``session`` (``aio``: its ``.aio`` client is returned).
    ``transport`` is the live one (the network when ``None``; never used in dry replay): a
    transport with both ``handle_request`` and ``handle_async_request`` serves both sides,
    one with only one of them serves that side."""
    method = "rollout.async_gemini()" if aio else "rollout.gemini()"
    module = _import("google.genai", method)
    types = _import("google.genai.types", method)
    kwargs = dict(client_kwargs)
    if session.replays_every_turn:
        _replay_credentials(kwargs, method)
    library = _http_module(transport)
    sync = _recording_transport(
        session, library, _side(transport, "handle_request"), asynchronous=False
    )
    asynchronous = _recording_transport(
        session, library, _side(transport, "handle_async_request"), asynchronous=True
    )
    kwargs["http_options"] = _http_options(
        types, kwargs.get("http_options"), method, sync, asynchronous
    )
    client = module.Client(**kwargs)
    return client.aio if aio else client


class _BothSides:
    """One transport for the sync and the async HTTP client built with the same arguments:
    ``handle_request`` and ``close`` go to the sync recording transport,
    ``handle_async_request`` and ``aclose`` to the async one."""

    def __init__(self, sync: Any, asynchronous: Any) -> None:
        self._sync = sync
        self._async = asynchronous

    def handle_request(self, request: Any) -> Any:
        return self._sync.handle_request(request)

    async def handle_async_request(self, request: Any) -> Any:
        return await self._async.handle_async_request(request)

    def close(self) -> None:
        self._sync.close()

    async def aclose(self) -> None:
        await self._async.aclose()


@cache
def _both_sides_class(module: ModuleType) -> type[_BothSides]:
    """:class:`_BothSides` as a ``BaseTransport`` and an ``AsyncBaseTransport`` of
    ``module`` (the SDK picks the HTTP library of its clients by the transport's classes)."""
    bases = (_BothSides, module.BaseTransport, module.AsyncBaseTransport)
    namespace = {"__module__": __name__, "__doc__": _BothSides.__doc__}
    return type("GeminiRolloutTransport", bases, namespace)


def gemini_client_args(
    session: TurnPort, transport: Any, client_args: dict[str, Any]
) -> dict[str, Any]:
    """``client_args`` with a ``transport`` that records, for both the sync and the async
    HTTP client a ``google.genai.Client`` builds with them (``HttpOptions.client_args`` and
    ``async_client_args``, or LangChain's ``ChatGoogleGenerativeAI(client_args=...)``).
    ``transport`` is the live one, as for :func:`gemini_client`."""
    library = _http_module(transport)
    sync = _recording_transport(
        session, library, _side(transport, "handle_request"), asynchronous=False
    )
    asynchronous = _recording_transport(
        session, library, _side(transport, "handle_async_request"), asynchronous=True
    )
    return {**client_args, "transport": _both_sides_class(library)(sync, asynchronous)}
