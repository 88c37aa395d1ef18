"""Model requests made by an SDK client, turned into the turns of a rollout.

An :class:`Exchange` sits between an SDK's HTTP client and the network (see
:mod:`pytest_rollout.sdk.transport`, which holds the HTTP-library side). For each request it
recognises as a model call (:func:`pytest_rollout.sdk.wire.api_for`) it does what the test's mode
asks:

- **record / live / full**: the request goes to the live transport untouched; once a
  successful response has been read in full (or its stream closed), the exchange records an
  ``llm.turn.started`` and an ``llm.turn.completed`` carrying the response as ``raw``, so that
  replay can hand the SDK the bytes it parsed. An error response the SDK gives up on is an
  ``llm.turn.failed`` (:mod:`pytest_rollout.sdk.failures`); the attempts the SDK retries are
  not turns and are not recorded.
- **dry**: the request is matched against the golden's open turns on its canonical key
  (model, messages, tools, parameters; never headers, never volatile ids). A match is
  answered with the recorded bytes (or the recorded error response); anything else raises a
  replay divergence. Nothing reaches the network.

The order the turns are written in, when requests overlap, is the session's
:class:`~pytest_rollout.sdk.flights.TurnLog`'s business. A client may hold several
conversations at once (requests sent side by side, a summary asked for in between): each
request's new messages are counted from the longest earlier request of the client it extends,
whichever order they were sent in.

This module never imports an HTTP library: it deals in methods, paths and bytes. Nor does it
know the session: it talks to a :class:`~pytest_rollout.sdk.flights.TurnPort`.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from ..errors import RolloutError
from ..format.events import DROP_DETECTED
from ..replay.history import RequestHistory, TurnRequest
from ..replay.turn import Turn
from .failures import failed_data, failed_response
from .flights import Entry, TurnPort
from .pricing import cost_usd
from .sse import render_frames
from .wire import Api, WireFormatError, WireRequest, api_for, key_messages, raw_response
from .wire import response_body as _response_body

__all__ = ["Answer", "Exchange", "Flight", "LiveTurn", "UnrecordedRequestError"]


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
    """A live answer to a model request, waiting for its body to be read.

    The transport feeds it the response's bytes as the SDK reads them. A success is recorded
    by :meth:`finish`, once the body was read to its end (or the SDK closed it on purpose);
    an error response once it was read to its end (the SDK reads the body of an error it
    raises; one closed unread is an attempt it retries). A body whose reading failed is
    :meth:`abandon`-ed: the SDK will retry or raise, and the attempt is not a turn.
    """

    flight: Flight
    status: int
    content_type: str
    #: Undoes the response's content encoding (gzip, br, ...), when it has one.
    decode: Callable[[bytes], bytes] | None
    #: Whether the SDK may retry this (error) response.
    retryable: bool
    entry: Entry
    chunks: list[bytes] = field(default_factory=list)
    ttft_ms: float | None = None
    done: bool = False
    read_all: bool = False

    @property
    def failed(self) -> bool:
        return not 200 <= self.status < 300

    def feed(self, chunk: bytes) -> None:
        if self.ttft_ms is None and chunk:
            self.ttft_ms = _ms_since(self.flight.t0)
        self.chunks.append(chunk)

    def abandon(self) -> None:
        """The body could not be read: no turn (unless its start was written already)."""
        if self.done:
            return
        self.done = True
        self.chunks.clear()
        self.flight.log.dropped(self.entry)

    def close(self) -> None:
        """The SDK closed the body: a success is a turn, an error read only in part is not."""
        if self.failed and not self.read_all:
            self.abandon()
        else:
            self.finish()

    def finish(self) -> None:
        """The body was read to its end: record the turn (once)."""
        self.read_all = True
        if self.done:
            return
        self.done = True
        flight = self.flight
        body = b"".join(self.chunks)
        self.chunks.clear()
        try:
            if self.decode is not None:
                body = self.decode(body)
            end = self._end(body)
        except Exception:
            # The SDK already has its bytes: a turn that cannot be recorded is a gap in the
            # recording, never an error in the user's test.
            flight.log.dropped(self.entry)
            flight.exchange.session.emit(DROP_DETECTED, dropped=1)
            return
        if self.failed and self.retryable:
            flight.log.failed(flight.exchange, self.entry, end, flight.body)
        else:
            flight.log.ended(self.entry, end)

    def _end(self, body: bytes) -> Callable[[], None]:
        """What writes the turn's end: its ``llm.turn.completed`` or ``llm.turn.failed``."""
        flight = self.flight
        session = flight.exchange.session
        if self.failed:
            data = failed_data(flight.api.provider, self.status, self.content_type, body)
            return partial(session.fail_sdk_turn, data)
        raw = raw_response(self.status, self.content_type, body)
        turn = flight.api.turn(raw)
        if turn.cost_usd is None:
            cost = cost_usd(turn.model or flight.request.model, turn.usage, session.prices)
            if cost is not None:
                turn = Turn(turn.content, turn.tool_calls, turn.usage, cost, turn.model)
        return partial(session.complete_sdk_turn, turn, _ms_since(flight.t0), raw, self.ttft_ms)


@dataclass(slots=True)
class Flight:
    """A model request sent live, until its answer is read (or it is lost)."""

    exchange: Exchange
    api: Api
    request: WireRequest
    turn: TurnRequest
    body: bytes
    t0: float

    @property
    def log(self) -> Any:
        return self.exchange.log

    def lost(self) -> None:
        """The live transport raised: no answer, no turn."""
        self.exchange.log.dropped(None)

    def response(
        self,
        status: int,
        content_type: str,
        decode: Callable[[bytes], bytes] | None,
        retryable: bool,
    ) -> LiveTurn:
        """The answer arrived: the turn its body is read into."""
        entry = self.exchange.log.begin(self.turn)
        return LiveTurn(self, status, content_type, decode, retryable, entry)


def _ms_since(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


@dataclass(slots=True)
class _Head:
    """An earlier request of a client: its messages, the id placeholders given in them and
    the hash state after them."""

    api: str
    messages: list[Any]
    names: dict[str, str]
    history: RequestHistory


#: How many earlier requests a client keeps to find the one a request extends.
_HEADS: Final = 16


def _extends(messages: list[Any], head: list[Any]) -> bool:
    size = len(head)
    if size > len(messages):
        return False
    return size == 0 or (messages[size - 1] == head[-1] and messages[:size] == head)


class Exchange:
    """The model calls of one SDK client, recorded into (or replayed from) a session,
    which it reaches through its :class:`~pytest_rollout.sdk.flights.TurnPort`."""

    def __init__(self, session: TurnPort) -> None:
        self.session = session
        self.log = session.turn_log
        self._heads: list[_Head] = []  # the most recent first
        self._lock = threading.Lock()
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
            request = api.request(body, path)
        except WireFormatError:
            if self.replaying:
                raise
            return None  # recording must never break the test: the SDK gets its answer
        # The run names its model from the first request, in every mode at the same point.
        self.session.adopt_sdk_identity(api.provider, request.model)
        return api, request

    def answer(self, api: Api, request: WireRequest, body: bytes) -> Answer:
        """Replay: the golden's response to ``request``, or a replay divergence.

        An SDK may retry a request that raised (the transport keeps current SDKs from it;
        older Anthropic SDKs retry any exception): the same bytes again get the same error,
        so one divergence is reported once.
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
        session, log = self.session, self.log
        entry, data = log.serve(self._turn_request(api, request))
        raw = data.get("raw")
        if not isinstance(raw, Mapping):
            failed = failed_response(data)
            if failed is None:
                raise RolloutError(
                    f"the golden's turn has no recorded response to give the {api.provider} "
                    f"SDK (it was recorded through a provider, not an SDK client): re-record "
                    f"this test with --rollout-record"
                )
            status, content_type, body = failed
            end = partial(session.fail_sdk_turn, dict(data))
            return Answer(status, content_type, (body,), partial(log.served, entry, end))
        status, content_type, body = _response_body(raw)
        recorded = Turn.from_event_data(data)

        def done() -> None:
            log.served(
                entry, partial(session.complete_sdk_turn, recorded, _ms_since(t0), raw, None)
            )

        frames = raw.get("frames")
        if isinstance(frames, list) and frames:
            chunks = tuple(render_frames([f]) for f in frames)
            return Answer(status, content_type, chunks, done)
        return Answer(status, content_type, (body,), done)

    def send(self, api: Api, request: WireRequest, body: bytes, retry: bool | None) -> Flight:
        """A model request is about to be sent to the live transport: tell the session, and
        start its flight (its latency is counted from now). ``retry``: whether the SDK says
        the request is a retry of its previous one (``None``: it does not say)."""
        self.session.sdk_turn_ready()
        turn = self._turn_request(api, request)
        self.log.sending(self, body, retry)
        return Flight(self, api, request, turn, body, time.perf_counter())

    def _turn_request(self, api: Api, request: WireRequest) -> TurnRequest:
        """The request as its turn records it: the messages new since the earlier request of
        this client it extends (the longest one), and the hash of the whole conversation with
        its volatile ids made stable (only the new messages are redacted and hashed)."""
        messages = request.messages
        with self._lock:
            head = self._head_of(api.name, messages)
            if head is None:
                start, names, history = 0, {}, self.session.request_history()
            else:
                start, names = len(head.messages), dict(head.names)
                history = copy.copy(head.history)  # the head stays, for its other children
            keyed = key_messages(messages[start:], names)
            turn = history.request(start, keyed, messages[start:], request.tools, request.params)
            self._heads.insert(0, _Head(api.name, messages, names, history))
            del self._heads[_HEADS:]
        return turn

    def _head_of(self, api: str, messages: list[Any]) -> _Head | None:
        """The longest earlier request of this API that ``messages`` extend."""
        found: _Head | None = None
        for head in self._heads:
            if head.api != api or (found is not None and len(head.messages) <= len(found.messages)):
                continue
            if _extends(messages, head.messages):
                found = head
        return found
