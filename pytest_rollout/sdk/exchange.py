"""Model requests made by an SDK client, turned into the turns of a rollout.

An :class:`Exchange` sits between an SDK's HTTP client and the network (see
:mod:`pytest_rollout.sdk.transport`, which holds the HTTP-library side). For each request it
recognises as a model call (:func:`pytest_rollout.sdk.wire.api_for`) it does what the test's mode
asks:

- **record / live / full**: the request goes to the live transport untouched; once a
  successful response has been read in full (or its stream closed), the exchange records an
  ``llm.turn.started`` and an ``llm.turn.completed`` carrying the response as ``raw``, so that
  replay can hand the SDK the bytes it parsed. Failed attempts (an error status the SDK may
  retry) are not turns and are not recorded.
- **dry**: the request is matched against the golden's next turn on its canonical key (model,
  messages, tools, parameters; never headers, never volatile ids). A match is answered with
  the recorded bytes; anything else raises a replay divergence. Nothing reaches the network.

This module never imports an HTTP library: it deals in methods, paths and bytes. Nor does it
know the session: it talks to a :class:`~pytest_rollout.sdk.port.TurnPort`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..diff.divergence import ReplayDivergenceError
from ..errors import RolloutError
from ..format.events import DROP_DETECTED
from ..replay.history import RequestHistory, TurnRequest, new_messages
from ..replay.turns import Turn
from .port import TurnPort
from .pricing import cost_usd
from .sse import render_frames
from .wire import Api, WireFormatError, WireRequest, api_for, key_messages, raw_response
from .wire import response_body as _response_body

__all__ = ["Answer", "Exchange", "LiveTurn", "UnrecordedRequestError"]


class UnrecordedRequestError(RolloutError):
    """In replay, the SDK made a request that is not a model call: replay answers model
    calls only, and never lets a request through to the network."""

    __module__ = "pytest_rollout"


@dataclass(frozen=True, slots=True)
class Answer:
    """A response served from the golden: status, content type and the body, in the chunks
    it is handed over in (one per event of a stream, as a service sends them).

    ``done`` is called once the SDK has read the whole body: the turn is recorded then, as a
    live one is, so that a tool the agent runs while a stream is still open sits in the
    same place in both runs.
    """

    status: int
    content_type: str
    chunks: tuple[bytes, ...]
    done: Callable[[], None]


@dataclass(slots=True)
class LiveTurn:
    """A model request answered live, waiting for its response to be read.

    The transport feeds it the response's bytes as the SDK reads them. The turn is recorded
    by :meth:`finish`, once the body was read to its end (or the SDK closed it on purpose);
    a body whose reading failed is :meth:`abandon`-ed: the SDK will retry or raise, and the
    attempt is not a turn. ``llm.turn.started`` is written at the latest then, and earlier
    when the run records anything else while the body is still open (a tool the agent
    runs mid-stream).
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
    opened: bool = False

    def open(self) -> None:
        """Write the turn's ``llm.turn.started`` (once)."""
        if self.opened:
            return
        self.opened = True
        self.exchange.open_turn(self.api, self.request)

    def feed(self, chunk: bytes) -> None:
        if self.ttft_ms is None and chunk:
            self.ttft_ms = _ms_since(self.t0)
        self.chunks.append(chunk)

    def abandon(self) -> None:
        """The body could not be read: no turn (unless it was opened already)."""
        if self.done:
            return
        self.done = True
        self.chunks.clear()
        self.exchange.session.cancel_deferred(self.open)

    def finish(self) -> None:
        """Record the turn (once)."""
        if self.done:
            return
        self.done = True
        self.exchange.session.cancel_deferred(self.open)
        body = b"".join(self.chunks)
        self.chunks.clear()
        try:
            if self.decode is not None:
                body = self.decode(body)
            raw = raw_response(self.status, self.content_type, body)
            self.open()
            self.exchange.complete(self.api, self.request, raw, _ms_since(self.t0), self.ttft_ms)
        except ReplayDivergenceError:
            raise
        except Exception:
            # The SDK already has its bytes: a turn that cannot be recorded is a gap in the
            # recording, never an error in the user's test.
            self.exchange.session.emit(DROP_DETECTED, dropped=1)


def _ms_since(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


class Exchange:
    """The model calls of one SDK client, recorded into (or replayed from) a session,
    which it reaches through its :class:`~pytest_rollout.sdk.port.TurnPort`."""

    def __init__(self, session: TurnPort) -> None:
        self.session = session
        self._previous: dict[str, list[Any]] = {}
        self._names: dict[str, dict[str, str]] = {}  # id placeholders given, per API
        self._histories: dict[str, RequestHistory] = {}
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
            request = api.request(body)
        except WireFormatError:
            if self.replaying:
                raise
            return None  # recording must never break the test: the SDK gets its answer
        # The run names its model from the first request, in every mode at the same point.
        self.session.adopt_sdk_identity(api.provider, request.model)
        return api, request

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
        session = self.session
        data = session.serve_sdk_turn(self._turn_request(api, request))
        raw = data.get("raw")
        if not isinstance(raw, Mapping):
            raise RolloutError(
                f"the golden's turn has no recorded response to give the {api.provider} SDK "
                f"(it was recorded through a provider, not an SDK client): re-record this "
                f"test with --rollout-record"
            )
        status, content_type, body = _response_body(raw)
        recorded = Turn.from_event_data(data)

        def done() -> None:
            session.complete_sdk_turn(recorded, _ms_since(t0), raw, None)

        frames = raw.get("frames")
        if isinstance(frames, list) and frames:
            chunks = tuple(render_frames([f]) for f in frames)
            return Answer(status, content_type, chunks, done)
        return Answer(status, content_type, (body,), done)

    def going_live(self) -> float:
        """A model request is about to be sent to the live transport: tell the session,
        and return the time its latency is counted from."""
        self.session.sdk_turn_ready()
        return time.perf_counter()

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
        turn = LiveTurn(self, api, request, t0, status, content_type, decode)
        self.session.defer(turn.open)
        return turn

    def open_turn(self, api: Api, request: WireRequest) -> None:
        """Write a live turn's ``llm.turn.started``."""
        self.session.open_sdk_turn(self._turn_request(api, request))

    def complete(
        self,
        api: Api,
        request: WireRequest,
        raw: dict[str, Any],
        latency_ms: float,
        ttft_ms: float | None,
    ) -> None:
        """Record what a live response said, as the turn's ``llm.turn.completed``."""
        turn = api.turn(raw)
        if turn.cost_usd is None:
            cost = cost_usd(turn.model or request.model, turn.usage, self.session.prices)
            if cost is not None:
                turn = Turn(turn.content, turn.tool_calls, turn.usage, cost, turn.model)
        self.session.complete_sdk_turn(turn, latency_ms, raw, ttft_ms)

    def _turn_request(self, api: Api, request: WireRequest) -> TurnRequest:
        """The request as its turn records it: the messages new since this client's previous
        request of the same API, and the hash of the whole conversation with its volatile
        ids made stable (only the new messages are redacted and hashed)."""
        messages = request.messages
        fresh = new_messages(self._previous.get(api.name, []), messages)
        history = self._histories.get(api.name)
        if history is None:
            history = self._histories[api.name] = self.session.request_history()
        start = len(messages) - len(fresh)
        names = dict(self._names.get(api.name, {})) if start else {}
        keyed = key_messages(messages[start:], names)
        turn = history.request(start, keyed, fresh, request.tools, request.params)
        self._previous[api.name], self._names[api.name] = messages, names
        return turn
