"""HTTP transports that put an :class:`~pytest_rollout.exchange.Exchange` under an SDK client.

The OpenAI and Anthropic SDKs send every request through an HTTP client they accept as
``http_client``, and that client through its transport. A transport of ours is all it takes
to record and replay them with their own request building and response parsing intact, and
without patching anything. Current SDKs use ``httpx2``, older ones ``httpx``; the two share
this transport API, so the classes are built for whichever module the client comes from,
when first asked for (neither is imported before that).
"""

from __future__ import annotations

import time
from functools import cache
from types import ModuleType
from typing import Any

from .exchange import Answer, Exchange, LiveTurn

__all__ = ["transport_classes"]


def _decoder(module: ModuleType, status: int, encoding: str) -> Any:
    """A function that undoes ``encoding`` (gzip, br, ...) the way the client would."""

    def decode(body: bytes) -> bytes:
        response = module.Response(status, headers=[("content-encoding", encoding)], content=body)
        return bytes(response.read())

    return decode


def _header(response: Any, name: str) -> str | None:
    value = response.headers.get(name)
    return None if value is None else str(value)


@cache
def transport_classes(module: ModuleType) -> tuple[type[Any], type[Any]]:
    """The sync and async transport classes for an HTTP module (``httpx2`` or ``httpx``)."""

    class Tee(module.SyncByteStream):  # type: ignore[name-defined,misc]
        """A live response's body, passed on to the SDK as it reads and kept for the turn."""

        def __init__(self, inner: Any, turn: LiveTurn, decode: Any) -> None:
            self._inner = inner
            self._turn = turn
            self._decode = decode
            self._chunks: Any = None

        def __iter__(self) -> Any:
            # One pass over the body, like the network: an SDK that stops reading at the
            # end of a stream and then drains it gets the rest, never the body again.
            if self._chunks is None:
                self._chunks = iter(self._inner)
            for chunk in self._chunks:
                self._turn.feed(chunk)
                yield chunk
            self._turn.finish(self._decode)

        def close(self) -> None:
            try:
                self._inner.close()
            finally:
                self._turn.finish(self._decode)

    class AsyncTee(module.AsyncByteStream):  # type: ignore[name-defined,misc]
        """The async counterpart of :class:`Tee`."""

        def __init__(self, inner: Any, turn: LiveTurn, decode: Any) -> None:
            self._inner = inner
            self._turn = turn
            self._decode = decode
            self._chunks: Any = None

        async def __aiter__(self) -> Any:
            if self._chunks is None:  # one pass over the body, as in Tee
                self._chunks = aiter(self._inner)
            async for chunk in self._chunks:
                self._turn.feed(chunk)
                yield chunk
            self._turn.finish(self._decode)

        async def aclose(self) -> None:
            try:
                await self._inner.aclose()
            finally:
                self._turn.finish(self._decode)

    def _live_turn(exchange: Exchange, call: Any, t0: float, response: Any) -> LiveTurn | None:
        api, request = call
        return exchange.begin_live(
            api,
            request,
            t0,
            response.status_code,
            _header(response, "content-type") or "",
            _header(response, "content-encoding"),
        )

    def _rewrap(response: Any, stream: Any, request: Any) -> Any:
        return module.Response(
            response.status_code,
            headers=response.headers,
            stream=stream,
            extensions=response.extensions,
            request=request,
        )

    class Served(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[name-defined,misc]
        """A recorded body, handed over chunk by chunk (a stream, event by event)."""

        def __init__(self, chunks: tuple[bytes, ...]) -> None:
            self._chunks = chunks

        def __iter__(self) -> Any:
            yield from self._chunks

        async def __aiter__(self) -> Any:
            for chunk in self._chunks:
                yield chunk

    def _served(answer: Answer, request: Any) -> Any:
        return module.Response(
            answer.status,
            headers=[("content-type", answer.content_type)],
            stream=Served(answer.chunks),
            request=request,
        )

    class RolloutTransport(module.BaseTransport):  # type: ignore[name-defined,misc]
        """Records the model requests it passes to ``live`` (or, in dry replay, answers
        them from the golden and never calls ``live``)."""

        def __init__(self, exchange: Exchange, live: Any) -> None:
            self.exchange = exchange
            self.live = live

        def handle_request(self, request: Any) -> Any:
            exchange = self.exchange
            body = request.read()
            call = exchange.model_request(request.method, request.url.path, body)
            if call is not None and exchange.replaying:
                return _served(exchange.answer(*call, body), request)
            if call is None:
                return self.live.handle_request(request)
            exchange.session.sdk_turn_ready()
            t0 = time.perf_counter()
            response = self.live.handle_request(request)
            turn = _live_turn(exchange, call, t0, response)
            if turn is None:
                return response
            encoding = turn.content_encoding
            decode = _decoder(module, response.status_code, encoding) if encoding else None
            return _rewrap(response, Tee(response.stream, turn, decode), request)

        def close(self) -> None:
            if self.live is not None:
                self.live.close()

    class AsyncRolloutTransport(module.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        """The async counterpart of :class:`RolloutTransport`."""

        def __init__(self, exchange: Exchange, live: Any) -> None:
            self.exchange = exchange
            self.live = live

        async def handle_async_request(self, request: Any) -> Any:
            exchange = self.exchange
            body = await request.aread()
            call = exchange.model_request(request.method, request.url.path, body)
            if call is not None and exchange.replaying:
                return _served(exchange.answer(*call, body), request)
            if call is None:
                return await self.live.handle_async_request(request)
            exchange.session.sdk_turn_ready()
            t0 = time.perf_counter()
            response = await self.live.handle_async_request(request)
            turn = _live_turn(exchange, call, t0, response)
            if turn is None:
                return response
            encoding = turn.content_encoding
            decode = _decoder(module, response.status_code, encoding) if encoding else None
            return _rewrap(response, AsyncTee(response.stream, turn, decode), request)

        async def aclose(self) -> None:
            if self.live is not None:
                await self.live.aclose()

    return RolloutTransport, AsyncRolloutTransport
