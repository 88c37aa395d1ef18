"""The port an SDK client's model calls reach a session through, and the order the session's
model turns are written in, whatever order their answers come in.

The exchange (:mod:`pytest_rollout.sdk.exchange`), the HTTP transports and the client
factories never see the session itself, only a :class:`TurnPort`: whether turns are served
from the golden, how a request names the run, and the points at which a model turn is
opened, served, completed or given up. The session's port satisfies it structurally (it
does not subclass it), so that the SDK layer sits below the session and imports nothing
from it. How the SDK side uses it is described in docs/sdk-agents.md.

An agent that fans out (``asyncio.gather`` over several model calls, threads, sub-agents side
by side) has several requests in flight at once, and which answer ends first changes from run
to run. A :class:`TurnLog` (one per session, its :attr:`TurnPort.turn_log`) writes each turn's
``llm.turn.started`` and its end (``llm.turn.completed``, or ``llm.turn.failed`` for an
error response the SDK gave up on) so that the order does not depend on that:

- **recording**: turns whose requests overlap in time form a group; their events are held
  until no request is in flight any more, then written ordered by their canonical request
  key (``messages_hash``). A turn alone in flight is written as soon as it ends.
- **dry replay**: answers are immediate, so requests arrive in the order the agent makes
  them. Each request is matched against the golden's turns still open (the first unconsumed
  one and those recorded back to back with it, :func:`window`), and the turns are written in
  the golden's order: a turn matched ahead of an earlier one waits for it.

When anything else is recorded while turns are held (a tool the agent runs, the end of the
run), the held turns are written first, and a turn whose body is still being read writes its
``llm.turn.started`` then, so that the event lands inside its turn's step.

An error response the SDK may still retry (a 429 or 5xx it was not told to leave alone) is
held apart: the SDK's retry of the same request drops it (retries stay invisible), anything
else writes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final, Protocol

from ..replay.history import RequestHistory, TurnRequest
from ..replay.recorded import Recording
from ..replay.turn import Turn
from .pricing import Price

__all__ = ["Entry", "TurnLog", "TurnPort", "window"]

#: The most turns a dry replay looks past the first open one for a match.
MAX_WINDOW: Final = 64


class TurnPort(Protocol):
    """A session as the SDK layer sees it: the one place model turns are recorded into,
    or (in dry replay) answered from."""

    @property
    def serves_turns(self) -> bool:
        """Whether model requests are answered from the golden (dry replay) instead of
        going to the network."""
        ...

    @property
    def replays_every_turn(self) -> bool:
        """Whether every model request is answered from the golden (a dry replay that is
        not a fork), so that a client needs no live transport, key or retries."""
        ...

    @property
    def prices(self) -> Mapping[str, Price]:
        """Prices per model, for a turn whose response states no cost."""
        ...

    def adopt_sdk_identity(self, provider: str, model: str | None) -> None:
        """Name the run's provider and model from a request, unless they are named already."""
        ...

    def sdk_turn_ready(self) -> None:
        """A live model request is about to be sent (in full replay, the calls the previous
        turn asked for must have been made by now)."""
        ...

    def request_history(self) -> RequestHistory:
        """A new record of one conversation's requests, which hashes each request at the cost
        of its new messages (redacted the way the session redacts)."""
        ...

    @property
    def sdk_recording(self) -> Recording | None:
        """Dry replay: the golden's turns and calls as replay serves them (``None`` when
        nothing is replayed)."""
        ...

    def serve_sdk_turn(self, request: TurnRequest, lookahead: int) -> Mapping[str, Any]:
        """Dry replay: the event data of the recorded turn ``request`` matches, among the
        first unconsumed turn and the ``lookahead`` unconsumed ones after it; else record
        the request's ``llm.turn.started`` and the divergence, and raise it. ``request``
        holds the messages new since the request it extends and the hash of the whole
        conversation with stable ids."""
        ...

    def open_sdk_turn(self, request: TurnRequest) -> None:
        """Record the start of a live request's turn."""
        ...

    def complete_sdk_turn(
        self,
        turn: Turn,
        latency_ms: float,
        raw: Mapping[str, Any],
        ttft_ms: float | None,
        remote: bool = False,
    ) -> None:
        """Record the end of a turn whose response was read in full; ``raw`` is the
        response as recorded (see :func:`pytest_rollout.sdk.wire.raw_response`);
        ``remote``: an agent in another process asked for it (a recording endpoint)."""
        ...

    def fail_sdk_turn(self, data: Mapping[str, Any]) -> None:
        """Record the end of a turn whose answer was an error response the SDK gave up on:
        its ``llm.turn.failed`` (see :mod:`pytest_rollout.sdk.failures`)."""
        ...

    def defer(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` before the next event is recorded."""
        ...

    def cancel_deferred(self, callback: Callable[[], None]) -> None:
        """Forget ``callback`` if it has not run yet."""
        ...

    @property
    def turn_log(self) -> TurnLog:
        """The session's turn log, made once (``TurnLog(self)``) and shared by all its
        SDK clients; it lives as long as the session, and no longer."""
        ...

    def emit(self, event_type: str, /, **data: Any) -> None:
        """Record an event of ``event_type`` (a constant of
        :mod:`pytest_rollout.format.events`) at the current step."""
        ...


class Entry:
    """One turn on its way into the rollout: its request, its place (the request key while
    recording, the golden's turn index in dry replay) and, once its answer was read, what
    writes its end."""

    __slots__ = ("end", "key", "request", "started")

    def __init__(self, key: str | int, request: TurnRequest) -> None:
        self.key = key
        self.request = request
        self.end: Callable[[], None] | None = None
        self.started = False


def window(recording: Recording, first: int) -> int:
    """How many more unconsumed turns after turn ``first`` (the first unconsumed one) a
    request may match: those recorded back to back with it, up to the first turn whose step
    holds tool calls. A request's key holds the whole conversation, so a request that depends
    on an earlier answer can never match ahead of it."""
    turns, calls = recording.turns, recording.calls
    found = 0
    for index in range(first, min(len(turns), first + MAX_WINDOW)):
        turn = turns[index]
        if index > first and not turn.consumed:
            found += 1
        if calls.get(turn.step):
            break
    return found


class TurnLog:
    """The SDK turns of one session on their way into its rollout (see the module doc)."""

    def __init__(self, session: TurnPort) -> None:
        self.session = session
        self._lock = threading.RLock()
        self._in_flight = 0
        self._entries: list[Entry] = []
        # Error responses the SDK may still retry, by exchange: the request body and the turn.
        self._retryable: dict[int, tuple[bytes, Entry]] = {}
        self._armed = False
        self._writing = False
        self._cursor = 0

    # -- recording --------------------------------------------------------------------

    def sending(self, owner: object, body: bytes, retry: bool | None) -> None:
        """A model request of ``owner`` (an exchange) is about to go live. ``retry`` says
        whether the SDK marked it as a retry (``None``: it does not say)."""
        with self._lock:
            held = self._retryable.pop(id(owner), None)
            if held is not None and not (retry is not False and held[0] == body):
                self._entries.append(held[1])  # not the SDK's retry: a turn of its own
                self._settle()
            self._in_flight += 1

    def begin(self, request: TurnRequest) -> Entry:
        """A live answer's body is being read: its turn, keyed by its request."""
        entry = Entry(request.messages_hash, request)
        with self._lock:
            self._entries.append(entry)
            self._arm()
        return entry

    def ended(self, entry: Entry, end: Callable[[], None]) -> None:
        """The turn's answer was read in full: ``end`` writes its end."""
        with self._lock:
            entry.end = end
            self._in_flight -= 1
            if entry.started:  # its start is out already: so is its end, now
                self._entries.remove(entry)
                self._write(end)
            self._settle()

    def failed(self, owner: object, entry: Entry, end: Callable[[], None], body: bytes) -> None:
        """An error response the SDK may retry was read: held until ``owner``'s next request
        shows whether it was retried."""
        with self._lock:
            entry.end = end
            self._in_flight -= 1
            self._entries.remove(entry)
            previous = self._retryable.pop(id(owner), None)
            if previous is not None:
                self._entries.append(previous[1])
            self._retryable[id(owner)] = (body, entry)
            self._arm()
            self._settle()

    def dropped(self, entry: Entry | None) -> None:
        """A request in flight ended without a turn (its body cut short, the connection
        lost, an answer that could not be recorded)."""
        with self._lock:
            self._in_flight -= 1
            if entry is not None and entry in self._entries:
                self._entries.remove(entry)
            self._settle()

    def _settle(self) -> None:
        """Recording: with nothing in flight, write the held turns by request key."""
        if self._in_flight > 0 or self.session.serves_turns:
            return
        ended = sorted((e for e in self._entries if e.end is not None), key=_key)
        for entry in ended:
            self._entries.remove(entry)
            self._write_entry(entry)

    # -- dry replay -------------------------------------------------------------------

    def serve(self, request: TurnRequest) -> tuple[Entry, Mapping[str, Any]]:
        """Dry replay: the golden's turn ``request`` matches, among the open ones; its start
        is written when the golden's earlier turns are."""
        with self._lock:
            recording = self.session.sdk_recording
            first = self._first_open(recording)
            lookahead = 0 if recording is None else window(recording, first)
            data = self.session.serve_sdk_turn(request, lookahead)
            entry = Entry(_index_of(recording, data, first), request)
            self._entries.append(entry)
            self._advance()
            return entry, data

    def served(self, entry: Entry, end: Callable[[], None]) -> None:
        """Dry replay: the SDK read the served answer; ``end`` writes the turn's end."""
        with self._lock:
            entry.end = end
            if entry.started:  # its start is out already: so is its end, now
                self._entries.remove(entry)
                self._write(end)
            self._advance()

    def _first_open(self, recording: Recording | None) -> int:
        if recording is None:
            return 0
        turns = recording.turns
        while self._cursor < len(turns) and turns[self._cursor].consumed:
            self._cursor += 1
        return self._cursor

    def _advance(self) -> None:
        """Write the served turns whose earlier golden turns are all written."""
        recording = self.session.sdk_recording
        while self._entries:
            head = min(self._entries, key=_key)
            if int(head.key) > self._first_open(recording):
                break
            self._write_start(head)
            if head.end is None:
                break
            self._entries.remove(head)
            self._write(head.end)
        self._arm()

    # -- anything else recorded -----------------------------------------------------------

    def _arm(self) -> None:
        waiting = self._retryable or any(not e.started for e in self._entries)
        if waiting and not self._armed:
            self._armed = True
            self.session.defer(self.flush)

    def flush(self) -> None:
        """Something else is recorded: write what is held, and the start of each turn whose
        body is still being read, first."""
        with self._lock:
            self._armed = False
            if self._writing:
                return
            for _, entry in self._retryable.values():
                self._entries.append(entry)
            self._retryable.clear()
            for entry in sorted(self._entries, key=_key):
                if entry.end is not None:
                    self._entries.remove(entry)
                    self._write_entry(entry)
            for entry in sorted(self._entries, key=_key):
                self._write_start(entry)
            self._arm()

    def _write_start(self, entry: Entry) -> None:
        """The turn's ``llm.turn.started``, unless it is out already."""
        if not entry.started:
            entry.started = True
            self._write(partial(self.session.open_sdk_turn, entry.request))

    def _write_entry(self, entry: Entry) -> None:
        self._write_start(entry)
        if entry.end is not None:
            self._write(entry.end)

    def _write(self, write: Callable[[], None]) -> None:
        """Run one of our own writes (nothing held is written in between)."""
        self._writing = True
        try:
            write()
        finally:
            self._writing = False
            if not self._armed:
                self._arm()


def _key(entry: Entry) -> Any:
    return entry.key


def _index_of(recording: Recording | None, data: Mapping[str, Any], first: int) -> int:
    """The index of the golden's turn whose data replay served."""
    if recording is not None:
        turns = recording.turns
        for index in range(first, len(turns)):
            if turns[index].turn is data:
                return index
        for index in range(first):
            if turns[index].turn is data:
                return index
    return first
