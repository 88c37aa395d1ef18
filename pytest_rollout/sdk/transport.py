"""HTTP transports that put an :class:`~pytest_rollout.sdk.exchange.Exchange` under an SDK client.

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

    class Tee(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[name-defined,misc]
        """A live response's body, passed on to the SDK as it reads and kept for the turn.

        It is read in one pass, like the network: an SDK that stops reading at the end of a
        stream and then drains it gets the rest, never the body again.
        """

        def __init__(self, inner: Any, turn: LiveTurn) -> None:
            self._inner = inner
            self._turn = turn
            self._chunks: Any = None

        def __iter__(self) -> Any:
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
                self._turn.finish()

        async def __aiter__(self) -> Any:
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
                self._turn.finish()

    class Served(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[name-defined,misc]
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

        def __iter__(self) -> Any:
            chunks = self._answer.chunks
            while self._next < len(chunks):
                self._next += 1
                yield chunks[self._next - 1]
            self._finish()

        async def __aiter__(self) -> Any:
            for chunk in self.__iter__():
                yield chunk

        def close(self) -> None:
            self._finish()

        async def aclose(self) -> None:
            self._finish()

    def served(answer: Answer, request: Any) -> Any:
        return module.Response(
            answer.status,
            headers=[("content-type", answer.content_type)],
            stream=Served(answer),
            request=request,
        )

    def recorded(exchange: Exchange, call: Any, t0: float, response: Any, request: Any) -> Any:
        """The live ``response``, its body tee'd into the turn when it is a success."""
        api, wire_request = call
        status = response.status_code
        encoding = _header(response, "content-encoding")
        turn = exchange.begin_live(
            api,
            wire_request,
            t0,
            status,
            _header(response, "content-type") or "",
            None if encoding is None else _decoder(module, status, encoding),
        )
        if turn is None:
            return response
        return module.Response(
            status,
            headers=response.headers,
            stream=Tee(response.stream, turn),
            extensions=response.extensions,
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
            if call is None:
                return self.live.handle_request(request)
            if exchange.replaying:
                return served(exchange.answer(*call, body), request)
            exchange.session.sdk_turn_ready()
            t0 = time.perf_counter()
            return recorded(exchange, call, t0, self.live.handle_request(request), request)

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
            if call is None:
                return await self.live.handle_async_request(request)
            if exchange.replaying:
                return served(exchange.answer(*call, body), request)
            exchange.session.sdk_turn_ready()
            t0 = time.perf_counter()
            response = await self.live.handle_async_request(request)
            return recorded(exchange, call, t0, response, request)

        async def aclose(self) -> None:
            if self.live is not None:
                await self.live.aclose()

    return RolloutTransport, AsyncRolloutTransport
