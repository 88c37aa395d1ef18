"""SDK clients whose model calls are recorded and replayed: what ``rollout.openai()`` and its
siblings build.

Each client is the SDK's own class, built with the user's keyword arguments and an HTTP
client whose transport is ours (:mod:`pytest_rollout.sdk.transport`), through the SDK's
documented ``http_client`` parameter. The SDKs stay optional: they are imported here, when a
client is asked for, and a missing one is a :class:`MissingPackageError` naming what to
install.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import Any, Final

from ..errors import RolloutError
from .exchange import Exchange
from .flights import TurnPort
from .transport import transport_classes

__all__ = ["MissingPackageError", "client", "http_client"]

#: The environment variable each SDK reads its key from.
_KEY_VARIABLES: Final = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}

#: The key an SDK client gets in dry replay when it has none: nothing is sent anywhere, but
#: the SDKs refuse to build a client (or a request) without one.
REPLAY_API_KEY: Final = "rollout-replay-no-key"

_ASYNC_CLASSES: Final = frozenset({"AsyncOpenAI", "AsyncAnthropic"})

#: The HTTP libraries the SDKs build on, the current one first.
_HTTP_LIBRARIES: Final = ("httpx2", "httpx")


class MissingPackageError(RolloutError):
    """A client was asked for whose package is not installed."""

    __module__ = "pytest_rollout"


def _import(name: str, wanted_by: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise MissingPackageError(
            f"{wanted_by} needs the {name} package, which is not installed: pip install {name}"
        ) from None


def _library_of(cls: type) -> ModuleType | None:
    """The HTTP library (``httpx2`` or ``httpx``) that ``cls`` or one of its bases is from."""
    for base in cls.__mro__:
        top = base.__module__.partition(".")[0]
        if top in _HTTP_LIBRARIES:
            return importlib.import_module(top)
    return None


#: The model SDKs whose own HTTP client class tells which library they build on.
_SDKS: Final = ("openai", "anthropic")


def _sdk_library() -> ModuleType | None:
    """The HTTP library every model SDK imported so far builds on (``None``: none is
    imported, or they disagree). The SDKs are not imported here: a framework imports its
    SDK before its test builds a client."""
    libraries = set()
    for name in _SDKS:
        default = getattr(sys.modules.get(name), "DefaultHttpxClient", None)
        library = _library_of(default) if isinstance(default, type) else None
        if library is not None:
            libraries.add(library)
    return libraries.pop() if len(libraries) == 1 else None


def _http_module(transport: Any, library: str | None = None) -> ModuleType:
    """The HTTP library to build on: ``library`` when asked for (a framework that wants an
    ``httpx.Client`` and is handed an ``httpx2.Client`` ignores it), else the one
    ``transport`` belongs to, else the one the loaded model SDKs build on (the OpenAI SDK's
    2.x line, which frameworks pin, is on ``httpx``), else ``httpx2`` (what current SDKs
    use), else ``httpx``."""
    found = None if transport is None else _library_of(type(transport))
    if library is not None:
        if library not in _HTTP_LIBRARIES:
            raise RolloutError(
                f"rollout.http_client(library=...) must be one of "
                f"{', '.join(map(repr, _HTTP_LIBRARIES))}, got {library!r}"
            )
        if found is not None and found.__name__ != library:
            raise RolloutError(
                f"rollout.http_client(library={library!r}) was given a {found.__name__} "
                f"transport: pass a transport of {library}"
            )
        return _import(library, f"rollout.http_client(library={library!r})")
    if found is not None:
        return found
    found = _sdk_library()
    if found is not None:
        return found
    for name in _HTTP_LIBRARIES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise MissingPackageError(
        "rollout.http_client() needs an HTTP library the SDKs use, and neither httpx2 nor "
        "httpx is installed: pip install httpx2"
    )


def _recording_transport(
    session: TurnPort, module: ModuleType, transport: Any, *, asynchronous: bool
) -> Any:
    sync_class, async_class = transport_classes(module)
    live = transport
    if live is None and not session.replays_every_turn:
        live = module.AsyncHTTPTransport() if asynchronous else module.HTTPTransport()
    return (async_class if asynchronous else sync_class)(Exchange(session), live)


def http_client(
    session: TurnPort,
    transport: Any,
    client_kwargs: dict[str, Any],
    *,
    asynchronous: bool,
    library: str | None = None,
) -> Any:
    """An HTTP client of ``library`` (see :func:`_http_module`) whose model requests go
    through ``session``; ``transport`` is the live one (the network when ``None``; never
    used in dry replay)."""
    module = _http_module(transport, library)
    kwargs = dict(client_kwargs)
    # Model calls take long: the library's default of 5 seconds would cut most of them.
    kwargs.setdefault("timeout", module.Timeout(600.0, connect=5.0))
    kwargs.setdefault("follow_redirects", True)
    kwargs["transport"] = _recording_transport(
        session, module, transport, asynchronous=asynchronous
    )
    return (module.AsyncClient if asynchronous else module.Client)(**kwargs)


def _sdk_http_client(
    session: TurnPort, sdk: ModuleType, transport: Any, *, asynchronous: bool
) -> Any:
    """The SDK's own default HTTP client (its timeouts, limits and redirects), with our
    transport in it; a plain one where the SDK has no such class."""
    name = "DefaultAsyncHttpxClient" if asynchronous else "DefaultHttpxClient"
    default = getattr(sdk, name, None)
    if not isinstance(default, type):
        return http_client(session, transport, {}, asynchronous=asynchronous)
    module = _library_of(default)
    if module is None:
        return http_client(session, transport, {}, asynchronous=asynchronous)
    recording = _recording_transport(session, module, transport, asynchronous=asynchronous)
    return default(transport=recording)


def client(
    session: TurnPort,
    package: str,
    class_name: str,
    transport: Any,
    client_kwargs: dict[str, Any],
) -> Any:
    """The SDK's ``class_name`` built with ``client_kwargs`` and a recording HTTP client."""
    method = "rollout." + ("async_" if class_name in _ASYNC_CLASSES else "") + package + "()"
    sdk = _import(package, method)
    if "http_client" in client_kwargs:
        raise RolloutError(
            f"{method} builds its own http_client; to send requests through a transport of "
            f"your own, pass it as {method[:-1]}transport=...)"
        )
    kwargs = dict(client_kwargs)
    if session.replays_every_turn:
        if kwargs.get("api_key") is None:
            kwargs["api_key"] = os.environ.get(_KEY_VARIABLES[package]) or REPLAY_API_KEY
        # A replayed answer never fails for a reason a retry could fix; a divergence
        # retried would only make the test wait for the SDK's back-off.
        kwargs.setdefault("max_retries", 0)
    asynchronous = class_name in _ASYNC_CLASSES
    http = _sdk_http_client(session, sdk, transport, asynchronous=asynchronous)
    return getattr(sdk, class_name)(http_client=http, **kwargs)
