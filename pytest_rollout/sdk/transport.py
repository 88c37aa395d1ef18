"""HTTP transports that put an :class:`~pytest_rollout.sdk.exchange.Exchange` under an SDK client.

The OpenAI and Anthropic SDKs send every request through an HTTP client they accept as
``http_client``, and that client through its transport. A transport of ours is all it takes
to record and replay them with their own request building and response parsing intact, and
without patching anything. Current SDKs use ``httpx2``, older ones ``httpx``; the two share
this transport API.

The behaviour lives in the classes of this module, which import neither library: the
bodies (:class:`_TeeBody`, :class:`_ServedBody`) and the transports (:class:`_SyncTransport`,
:class:`_AsyncTransport`, over the routing they share in :class:`_RolloutTransport`). The
libraries check that a transport and a body are of their own base classes, so
:func:`transport_classes` binds ours to the library a client comes from, once per library,
when first asked (neither library is imported before that).

In dry replay a request the golden cannot answer is refused by raising (a replay divergence,
or a request that is not a model call) from the transport, and that error must reach the
agent as it is: :func:`_for_the_agent` makes it one the sending SDK neither wraps nor
retries (the Anthropic SDK, and the OpenAI SDK before its 3.20 release, turn any other
exception into a retried ``APIConnectionError``).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any, ClassVar, Final, TypeVar, cast

from ..errors import RolloutError
from .exchange import Answer, Exchange, Flight, LiveTurn
from .failures import may_retry

__all__ = ["transport_classes"]

_T = TypeVar("_T")


# --------------------------------------------------------------------------- bodies


class _TeeBody:
    """A live response's body, passed on to the SDK as it reads and kept for the turn.

    It is read in one pass, like the network: an SDK that stops reading at the end of a
    stream and then drains it gets the rest, never the body again.
    """

    def __init__(self, inner: Any, turn: LiveTurn) -> None:
        self._inner = inner
        self._turn = turn
        self._chunks: Any = None

    def __iter__(self) -> Iterator[bytes]:
        if self._chunks is None:
            self._chunks = iter(self._inner)
        try:
            for chunk in self._chunks:
                self._turn.feed(chunk)
                yield chunk
        except Exception:
            self._turn.abandon()  # a body cut short is not a turn
            raise
        self._turn.finish()

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._turn.close()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._chunks is None:
            self._chunks = aiter(self._inner)
        try:
            async for chunk in self._chunks:
                self._turn.feed(chunk)
                yield chunk
        except Exception:
            self._turn.abandon()
            raise
        self._turn.finish()

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._turn.close()


class _ServedBody:
    """A recorded body, handed over chunk by chunk (a stream, event by event); the turn
    is recorded once it was read to its end, or closed, as a live one is."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self._next = 0
        self._done = False

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            self._answer.done()

    def __iter__(self) -> Iterator[bytes]:
        chunks = self._answer.chunks
        while self._next < len(chunks):
            self._next += 1
            yield chunks[self._next - 1]
        self._finish()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.__iter__():
            yield chunk

    def close(self) -> None:
        self._finish()

    async def aclose(self) -> None:
        self._finish()


# --------------------------------------------------------------------------- responses


def _header(response: Any, name: str) -> str | None:
    value = response.headers.get(name)
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class _Library:
    """An HTTP library (``httpx2`` or ``httpx``) with our bodies bound to its stream types:
    it builds the responses our transports hand back."""

    module: ModuleType
    tee: type[_TeeBody]
    served_body: type[_ServedBody]

    def decoder(self, status: int, encoding: str) -> Callable[[bytes], bytes]:
        """A function that undoes ``encoding`` (gzip, br, ...) the way the client would."""
        module = self.module

        def decode(body: bytes) -> bytes:
            headers = [("content-encoding", encoding)]
            return bytes(module.Response(status, headers=headers, content=body).read())

        return decode

    def served(self, answer: Answer, request: Any) -> Any:
        """The response to a request answered from the golden (which the SDK is told never
        to retry: a recorded error is the one the SDK gave up on)."""
        return self.module.Response(
            answer.status,
            headers=[("content-type", answer.content_type), ("x-should-retry", "false")],
            stream=self.served_body(answer),
            request=request,
        )

    def recorded(self, flight: Flight, response: Any, request: Any) -> Any:
        """The live ``response``, its body tee'd into the turn."""
        status = response.status_code
        encoding = _header(response, "content-encoding")
        turn = flight.response(
            status,
            _header(response, "content-type") or "",
            None if encoding is None else self.decoder(status, encoding),
            may_retry(status, _header(response, "x-should-retry")),
        )
        return self.module.Response(
            status,
            headers=response.headers,
            stream=self.tee(response.stream, turn),
            extensions=response.extensions,
            request=request,
        )


# --------------------------------------------------------------------------- replay errors

#: SDKs that wrap whatever their HTTP client raises in a retried ``APIConnectionError``
#: ("Connection error."), except their own errors, which they raise as they are: the
#: module and its errors' base class. The OpenAI SDK did so up to its 3.1x releases; later
#: ones wrap only HTTP errors, and its own errors still pass as they are. Its 1.x line
#: wraps even its own errors: nothing passes through it unwrapped.
_WRAPPING_SDKS: Final = (("anthropic", "AnthropicError"), ("openai", "OpenAIError"))

_UNWRAPPED: dict[tuple[type, ...], type[RolloutError]] = {}


def _unwrapped_class(cls: type[RolloutError], bases: tuple[type, ...]) -> type[RolloutError]:
    """``cls``, also a subclass of the SDK error ``bases``; named and shown as ``cls`` is."""
    found = _UNWRAPPED.get((cls, *bases))
    if found is None:
        namespace = {
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
        }
        made = cast(type[RolloutError], type(cls.__name__, (cls, *bases), namespace))
        found = _UNWRAPPED.setdefault((cls, *bases), made)
    return found


def _sent_by(module: ModuleType, request: Any) -> bool:
    """Whether ``request`` was built by the SDK ``module``: the Anthropic SDK says so by its
    ``anthropic-version`` header; the OpenAI SDK by its package version, on a request that is
    not the Anthropic SDK's."""
    headers = request.headers
    if module.__name__ == "anthropic":
        return headers.get("anthropic-version") is not None
    version = getattr(module, "__version__", None)
    return (
        headers.get("anthropic-version") is None
        and version is not None
        and headers.get("x-stainless-package-version") == version
    )


def _for_the_agent(exc: RolloutError, request: Any) -> None:
    """Dry replay's refusal of ``request`` (a replay divergence, a request that is not a
    model call), made to reach the agent unchanged through the SDK that sent it: never
    wrapped, never retried. The exception stays the same object (the session recorded it)
    and an instance of its own class; it only gains the SDK's error base."""
    for module_name, base_name in _WRAPPING_SDKS:
        module = sys.modules.get(module_name)
        base = getattr(module, base_name, None)
        if (
            module is not None
            and isinstance(base, type)
            and issubclass(base, Exception)
            and not isinstance(exc, base)
            and _sent_by(module, request)
        ):
            exc.__class__ = _unwrapped_class(type(exc), (base,))
            return


# --------------------------------------------------------------------------- transports


@dataclass(frozen=True, slots=True)
class _Route:
    """Where a request goes: ``served`` is the golden's response (dry replay); otherwise it
    goes live, and ``flight`` is the model call to record from its response, if any."""

    served: Any = None
    flight: Flight | None = None


def _retry(request: Any) -> bool | None:
    """Whether the SDK says ``request`` retries its previous one (``None``: it does not say)."""
    count = request.headers.get("x-stainless-retry-count")
    if count is None:
        return None
    return str(count).strip() not in ("", "0")


class _RolloutTransport:
    """Records the model requests it passes to ``live`` (or, in dry replay, answers them
    from the golden and never calls ``live``). The sync and async transports differ only
    in how they read and send."""

    library: ClassVar[_Library]

    def __init__(self, exchange: Exchange, live: Any) -> None:
        self.exchange = exchange
        self.live = live

    def _route(self, request: Any, body: bytes) -> _Route:
        exchange = self.exchange
        try:
            call = exchange.model_request(request.method, request.url.path, body)
            if call is None:
                return _Route()
            if exchange.replaying:
                return _Route(served=self.library.served(exchange.answer(*call, body), request))
        except RolloutError as exc:
            if exchange.replaying:
                _for_the_agent(exc, request)
            raise
        return _Route(flight=exchange.send(*call, body, _retry(request)))

    def _recorded(self, route: _Route, response: Any, request: Any) -> Any:
        if route.flight is None:
            return response
        return self.library.recorded(route.flight, response, request)


class _SyncTransport(_RolloutTransport):
    """A transport for ``Client``: ``handle_request`` and ``close``."""

    def handle_request(self, request: Any) -> Any:
        route = self._route(request, request.read())
        if route.served is not None:
            return route.served
        try:
            response = self.live.handle_request(request)
        except BaseException:
            if route.flight is not None:
                route.flight.lost()
            raise
        return self._recorded(route, response, request)

    def close(self) -> None:
        if self.live is not None:
            self.live.close()


class _AsyncTransport(_RolloutTransport):
    """A transport for ``AsyncClient``: ``handle_async_request`` and ``aclose``."""

    async def handle_async_request(self, request: Any) -> Any:
        route = self._route(request, await request.aread())
        if route.served is not None:
            return route.served
        try:
            response = await self.live.handle_async_request(request)
        except BaseException:  # the connection lost, or the task cancelled
            if route.flight is not None:
                route.flight.lost()
            raise
        return self._recorded(route, response, request)

    async def aclose(self) -> None:
        if self.live is not None:
            await self.live.aclose()


def _bind(name: str, ours: type[_T], *bases: type, **namespace: Any) -> type[_T]:
    """``ours`` as a subclass of the library's ``bases`` too, named ``name``."""
    namespace.update(__module__=__name__, __doc__=ours.__doc__)
    return cast(type[_T], type(name, (ours, *bases), namespace))


@cache
def transport_classes(module: ModuleType) -> tuple[type[_SyncTransport], type[_AsyncTransport]]:
    """The sync and async transport classes for an HTTP module (``httpx2`` or ``httpx``)."""
    streams = (module.SyncByteStream, module.AsyncByteStream)
    library = _Library(
        module, _bind("Tee", _TeeBody, *streams), _bind("Served", _ServedBody, *streams)
    )
    return (
        _bind("RolloutTransport", _SyncTransport, module.BaseTransport, library=library),
        _bind("AsyncRolloutTransport", _AsyncTransport, module.AsyncBaseTransport, library=library),
    )
