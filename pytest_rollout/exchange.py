"""Model requests made by an SDK client, turned into the turns of a rollout.

An :class:`Exchange` sits between an SDK's HTTP client and the network (see
:mod:`pytest_rollout.transport`, which holds the HTTP-library side). For each request it
recognises as a model call (:func:`pytest_rollout.wire.api_for`) it does what the test's mode
asks:

- **record / live / full**: the request goes to the live transport untouched; once a
  successful response has been read in full (or its stream closed), the exchange records an
  ``llm.turn.started`` and an ``llm.turn.completed`` carrying the response as ``raw``, so that
  replay can hand the SDK the bytes it parsed. Failed attempts (an error status the SDK may
  retry) are not turns and are not recorded.
- **dry**: the request is matched against the golden's next turn on its canonical key (model,
  messages, tools, parameters; never headers, never volatile ids). A match is answered with
  the recorded bytes; anything else raises a replay divergence. Nothing reaches the network.

This module never imports an HTTP library: it deals in methods, paths and bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .divergence import ReplayDivergenceError
from .errors import RolloutError
from .events import DROP_DETECTED
from .pricing import cost_usd
from .replay import new_messages
from .sse import render_frames
from .turns import Turn
from .wire import Api, WireFormatError, WireRequest, api_for, key_messages, raw_response
from .wire import response_body as _response_body

if TYPE_CHECKING:
    from .session import RolloutSession

__all__ = ["Answer", "Exchange", "LiveTurn", "UnrecordedRequestError"]


class UnrecordedRequestError(RolloutError):
    """In replay, the SDK made a request that is not a model call: replay answers model
    calls only, and never lets a request through to the network."""

    __module__ = "pytest_rollout"


@dataclass(frozen=True, slots=True)
class Answer:
    """A response served from the golden: status, content type and the body, in the chunks
    it is handed over in (one per event of a stream, as a service sends them)."""

    status: int
    content_type: str
    chunks: tuple[bytes, ...]


@dataclass(slots=True)
class LiveTurn:
    """A model request sent live, waiting for its response to be read.

    The transport feeds it the response's bytes as the SDK reads them and calls
    :meth:`finish` once, when the stream is exhausted or closed.
    """

    exchange: Exchange
    api: Api
    request: WireRequest
    t0: float
    status: int
    content_type: str
    #: Undoes the response's content encoding (gzip, br, ...), when it has one.
    decode: Callable[[bytes], bytes] | None = None
    chunks: list[bytes] = field(default_factory=list)
    ttft_ms: float | None = None
    done: bool = False

    def feed(self, chunk: bytes) -> None:
        if self.ttft_ms is None and chunk:
            self.ttft_ms = _ms_since(self.t0)
        self.chunks.append(chunk)

    def finish(self) -> None:
        """Record the turn (once)."""
        if self.done:
            return
        self.done = True
        body = b"".join(self.chunks)
        self.chunks.clear()
        if self.decode is not None:
            body = self.decode(body)
        try:
            raw = raw_response(self.status, self.content_type, body)
            self.exchange.record(self.api, self.request, raw, _ms_since(self.t0), self.ttft_ms)
        except ReplayDivergenceError:
            raise
        except Exception:
            # The SDK already has its bytes: a turn that cannot be recorded is a gap in the
            # recording, never an error in the user's test.
            self.exchange.session.emit(DROP_DETECTED, dropped=1)


def _ms_since(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


class Exchange:
    """The model calls of one SDK client, recorded into (or replayed from) a session."""

    def __init__(self, session: RolloutSession) -> None:
        self.session = session
        self._previous: dict[str, list[Any]] = {}
        self._refused: tuple[bytes, RolloutError] | None = None

    @property
    def replaying(self) -> bool:
        """Whether requests are answered from the golden instead of the network."""
        return self.session.serves_turns

    def model_request(self, method: str, path: str, body: bytes) -> tuple[Api, WireRequest] | None:
        """The model call this request is, or ``None`` for any other request.

        In replay, a request that is not a model call is refused (nothing goes live); while
        recording, it passes through unrecorded.
        """
        api = api_for(method, path)
        if api is None:
            if self.replaying:
                raise UnrecordedRequestError(
                    f"{method} {path} is not a model call, and replay answers model calls "
                    f"only: nothing is sent to the network while replaying "
                    f"(record this test live with --rollout-record, or mark it "
                    f"@pytest.mark.rollout(replay=False))"
                )
            return None
        try:
            return api, api.request(body)
        except WireFormatError:
            if self.replaying:
                raise
            return None  # recording must never break the test: the SDK gets its answer

    def answer(self, api: Api, request: WireRequest, body: bytes) -> Answer:
        """Replay: the golden's response to ``request``, or a replay divergence.

        An SDK may retry a request that raised (Anthropic's does): the same bytes again get
        the same error, so one divergence is reported once.
        """
        refused = self._refused
        if refused is not None and refused[0] == body:
            raise refused[1]
        try:
            return self._answer(api, request)
        except RolloutError as exc:
            self._refused = (body, exc)
            raise

    def _answer(self, api: Api, request: WireRequest) -> Answer:
        t0 = time.perf_counter()
        fresh, key = self._messages(api, request)
        data = self.session.replay_sdk_turn(
            api.provider, request, fresh, key, lambda: _ms_since(t0)
        )
        raw = data.get("raw")
        if not isinstance(raw, Mapping):
            raise RolloutError(
                f"the golden's turn has no recorded response to give the {api.provider} SDK "
                f"(it was recorded through a provider, not an SDK client): re-record this "
                f"test with --rollout-record"
            )
        status, content_type, body = _response_body(raw)
        frames = raw.get("frames")
        if isinstance(frames, list) and frames:
            return Answer(status, content_type, tuple(render_frames([f]) for f in frames))
        return Answer(status, content_type, (body,))

    def begin_live(
        self,
        api: Api,
        request: WireRequest,
        t0: float,
        status: int,
        content_type: str,
        decode: Callable[[bytes], bytes] | None,
    ) -> LiveTurn | None:
        """A live response arrived: a turn to record when it is a success, else ``None``."""
        if not 200 <= status < 300:
            return None
        return LiveTurn(self, api, request, t0, status, content_type, decode)

    def record(
        self,
        api: Api,
        request: WireRequest,
        raw: dict[str, Any],
        latency_ms: float,
        ttft_ms: float | None,
    ) -> None:
        """Record a live turn: the request, then what the response said."""
        fresh, key = self._messages(api, request)
        turn = api.turn(raw)
        if turn.cost_usd is None:
            cost = cost_usd(turn.model or request.model, turn.usage, self.session.prices)
            if cost is not None:
                turn = Turn(turn.content, turn.tool_calls, turn.usage, cost, turn.model)
        self.session.record_sdk_turn(
            api.provider, request, fresh, key, turn, raw, latency_ms, ttft_ms
        )

    def _messages(self, api: Api, request: WireRequest) -> tuple[list[Any], list[Any]]:
        """The request's messages that are new since this client's previous request of the
        same API, and the whole list as its key (volatile ids made stable)."""
        messages = request.messages
        fresh = new_messages(self._previous.get(api.name, []), messages)
        self._previous[api.name] = messages
        return fresh, key_messages(messages)
