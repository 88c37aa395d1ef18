"""The recorder: turns emitted events into rollout lines (docs/file-format.md), cheaply and safely.

``emit`` does only what must happen at once, under one lock: the event gets its place in the
run and its step, the clock is read, and the payload is snapshotted into orjson bytes (later
mutation by the agent cannot change what was recorded). The rest is done for a small batch
of events at a time (when the batch is full, when the run ends, or when the recorder is
read), in emission order: the event cap, the redactor (which sees every payload's bytes
before anything else does, so nothing downstream ever sees a secret), ``seq``, and the line
(its bytes are made by :mod:`.lines`), appended to an in-memory buffer that is written to the
file in batches. Payloads are encoded as :mod:`.jsonable` says; a caller that has encoded a
payload already (the session's tool calls, :func:`.jsonable.encode_event`) hands its bytes to
:meth:`Recorder.emit_payload`, so that it is encoded once.

It never raises into the caller: a payload that cannot be encoded, an event past the event
cap or a failed write is counted, and events lost before a later one is recorded are marked
by a ``recorder.drop_detected`` line in their place. The terminal event is always recorded,
so a recorded file stays loadable.

The file (:class:`~.partial.PartialFile`) is written as ``.<name>.partial`` beside ``path``
as the run goes, and renamed into place by :meth:`Recorder.close` after its bytes are synced,
so ``path`` only ever holds a whole run. It is a flight recorder: the lines made so far are
written at every turn boundary (each ``llm.turn.started`` and ``llm.turn.completed``), at the
terminal event and when a batch is full, so a run cut short by a hard crash leaves every
event up to the last turn boundary in the partial file.

The last look. Before any line reaches the file, the redactor's ``scan`` looks at it once
more, and a line holding a secret gives the file up (:attr:`RecorderStats.leaked`). It is
looked at as it is made, whether or not the size cap lets it into the file. A payload the
redactor's gate passed as it was redacted (:class:`PayloadGate`) is the one exception: the
scan finds nothing in such bytes (a property test holds the two to that, on every built-in
rule), so they are not searched again, and its line is looked at only when its envelope holds
a piece no earlier line held (the first line of its event type, of its second, of its step:
see :meth:`.lines.LineMaker.add`; the rest of an envelope is digits). Every other line is
looked at whole.
``root`` is the folder below which no symbolic link is followed (and which says the files'
modes); a refusal is in :attr:`RecorderStats.refused`. ``max_file_bytes`` caps the file (not
the in-memory run, which the comparison uses): past it, lines are left out of the file and
a ``recorder.drop_detected`` line followed by the run's last line stands in for them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

import orjson

from .agents import Acting, AgentOf, acting_agent, stamped_payload, with_agent
from .events import HANDOFF, LLM_TURN_COMPLETED, LLM_TURN_STARTED, RUN_STARTED, TERMINAL_TYPES
from .files import WriteRoot
from .jsonable import encode_payload, encode_with_placeholders, json_default
from .lines import LineMaker
from .loader import DEFAULT_LIMITS, Rollout, loads
from .partial import PartialFile

__all__ = ["PayloadGate", "PayloadRedactor", "Recorder", "RecorderStats", "encode_payload"]


class PayloadRedactor(Protocol):
    """What the recorder asks of a redactor (:class:`~pytest_rollout.safety.redact.Redactor`
    is one): a payload's bytes redacted (``None``: drop the event), a value redacted, and
    the last look at bytes about to reach the file (the label of a secret left, else
    ``None``; not asked when ``mode`` is ``"full"``, which writes secrets as they are)."""

    @property
    def mode(self) -> str: ...

    def redact_payload(self, payload: bytes) -> bytes | None: ...

    def redact(self, value: Any) -> Any: ...

    def scan(self, data: bytes | bytearray | memoryview) -> str | None: ...


@runtime_checkable
class PayloadGate(Protocol):
    """What a redactor may offer besides (:class:`~pytest_rollout.safety.redact.Redactor`
    does): whether its gate passes a payload without reading it, so that ``redact_payload``
    would give the payload back as it is and ``scan`` would find nothing in it. The bytes of
    such a payload are not looked at again before they reach the file."""

    def gate_passes(self, payload: bytes) -> bool: ...


#: An emitted event waiting to become a line: the clock when it was emitted, its type, its
#: payload (``None``: lost as it was emitted), its step, and whether the step is implied.
_Pending = tuple[int, str, bytes | None, int, bool]
_LOST: Final[_Pending] = (0, "", None, 0, False)
#: The most events made into lines at once: small enough to stay in the CPU's cache.
_BATCH: Final = 64
_ABSENT: Final = object()
_dumps: Final = orjson.dumps

#: The only types that can move the step (the rest carry the current one).
_STEP_MOVERS: Final = frozenset({RUN_STARTED, LLM_TURN_STARTED, LLM_TURN_COMPLETED})
_TURN_TYPES: Final = frozenset({LLM_TURN_STARTED, LLM_TURN_COMPLETED})
#: The types whose events _queue decides more about (the run's end, a turn boundary), and
#: those that move the step: the rest are queued inline by emit_payload.
_QUEUED_SLOWLY: Final = TERMINAL_TYPES | _TURN_TYPES | _STEP_MOVERS


def _never(payload: bytes) -> bool:
    """A redactor without a gate vouches for no payload."""
    return False


@dataclass(frozen=True, slots=True)
class RecorderStats:
    """What happened to the emitted events."""

    recorded: int
    dropped: int
    encode_errors: int
    write_errors: int
    #: Events dropped because they held a secret (redaction mode ``none``); also in ``dropped``.
    withheld: int = 0
    #: Lines left out of the file by ``max_file_bytes`` (the run in memory is whole).
    cut_from_file: int = 0
    #: The label of a secret found in the file's bytes before they were written; the file
    #: was then given up (its partial file removed), and the run not saved.
    leaked: str | None = None
    #: Why the file was refused, not written (a symbolic link below its root), and the run
    #: not saved.
    refused: str | None = None


class Recorder:
    """Records one run's events as rollout lines, in memory and optionally to ``path``.

    Steps follow docs/file-format.md unless the payload names one: ``run.started`` is step 0, each
    ``llm.turn.started`` (or a ``llm.turn.completed`` with no start of its own) opens the
    next step, and every other event carries the current step.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        max_events: int = DEFAULT_LIMITS.events,
        flush_every: int = 512,
        clock: Callable[[], int] = time.time_ns,
        redactor: PayloadRedactor | None = None,
        max_file_bytes: int | None = None,
        root: WriteRoot | None = None,
    ) -> None:
        self.path = None if path is None else os.fspath(path)
        self.redactor = redactor
        # A clock of the caller's may give floats: lines are made from whole nanoseconds.
        self._clock = clock if clock is time.time_ns else lambda: int(clock())
        # What emit owns, under _lock: the order of events, their steps, the pending list.
        self._lock = threading.Lock()
        self._pending: list[_Pending] = []
        self._closed = False  # the terminal event was emitted, or close() called
        self._close_called = False
        self._late = 0  # events emitted after that
        self._encode_errors = 0
        self._step = 0
        self._turn_open = False
        self.agent_of: AgentOf | None = None  # who is acting, asked per event (docs/agents.md)
        self._acting = Acting()  # the last agent named, under _lock
        # Emitted events wait in _pending until a batch of them is made into lines.
        self._batch = max(min(flush_every, _BATCH), 1)
        # What the drain owns, under _drain_lock (taken before _lock, never after): the
        # lines, their seq, what was lost, and the file.
        self._drain_lock = threading.Lock()
        self._buffer = bytearray()
        self._seq = 0
        self._gap = 0
        self._dropped = 0
        self._withheld = 0
        self._terminal_seen = False
        self._max_events = max(max_events, 3)
        self._cap = self._max_events - 2
        # Below this seq an event is admitted without further checks (0: always check).
        self._open_below = self._cap - 1
        self._lines = LineMaker()
        self._flush_every = flush_every
        # The seq at which lines are next written out (never, without a file).
        self._flush_seq = flush_every if path is not None else sys.maxsize
        self._file: PartialFile | None = None
        # The last look at lines before they reach the file (not in mode "full").
        self._scan: Callable[[bytes], str | None] | None = None
        # Whether a payload needs neither redaction nor a last look: every payload when
        # there is no redactor (bool of bytes is true); when a file is looked at, those its
        # gate passes (if it has one); otherwise none, and the redactor decides.
        self._vouch: Callable[[bytes], bool] = bool if redactor is None else _never
        if self.path is not None:
            max_bytes = sys.maxsize if max_file_bytes is None else max(max_file_bytes, 0)
            self._file = PartialFile(self.path, max_bytes, root=root)
            if redactor is not None and redactor.mode != "full":
                self._scan = redactor.scan
                if isinstance(redactor, PayloadGate):
                    self._vouch = redactor.gate_passes

    # -- emitting -------------------------------------------------------------------

    def emit(self, event_type: str, data: Mapping[str, Any] | None = None, /) -> None:
        """Record one event. Never raises; see :attr:`stats` for what was lost.

        Only what must happen at once happens here: the event gets its place in the run,
        its step and its time, and its payload is snapshotted as orjson bytes. The rest
        (the event cap, redaction, the line, the file) is done for a batch of events at a
        time, when the batch is full, when the run ends, or when the recorder is read.
        """
        if data is None:
            data = {}
        agent = None if self.agent_of is None else acting_agent(self.agent_of)
        if agent is not None:
            data = with_agent(event_type, data, agent)
        lock = self._lock
        lock.acquire()
        try:
            if self._closed:
                self._late += 1
                return
            if agent is not None or event_type == HANDOFF:
                self._hand_over(agent, data.get("to") if event_type == HANDOFF else None)
            given = data.get("step", _ABSENT)
            if given is _ABSENT:  # the common event: its step follows from its type
                step: int = (
                    self._next_step(event_type) if event_type in _STEP_MOVERS else self._step
                )
                implied = True
            else:
                step, implied, data = self._given_step(event_type, given, data)
            terminal = event_type in TERMINAL_TYPES
            try:
                payload: bytes | None = _dumps(data, json_default)
            except TypeError:
                payload = self._encode_hard(data, terminal)
            due, boundary = self._queue(event_type, payload, step, implied, terminal)
        except Exception:  # the recorder must never break the run it records
            with contextlib.suppress(Exception):
                self._pending.append(_LOST)
            due = boundary = False
        finally:
            lock.release()
        if due:
            self._drain(boundary)

    def emit_payload(self, event_type: str, payload: bytes, /) -> None:
        """Record one event whose payload the caller has encoded: the bytes of a JSON object
        as orjson makes them (its key order kept), with no ``step`` of its own, so the
        event's step follows from its type. What :meth:`emit` does, minus the encoding: the
        bytes are recorded as they are (redacted like any payload). Never raises; a
        payload that is not ``bytes`` is counted as one that could not be encoded."""
        agent = None if self.agent_of is None else acting_agent(self.agent_of)
        if agent is not None:
            self._emit_payload_slowly(event_type, payload, agent)
            return
        if type(payload) is bytes and event_type not in _QUEUED_SLOWLY:
            # The common event (a tool call's): what _queue does, inline.
            lock = self._lock
            lock.acquire()
            try:
                if self._closed:
                    self._late += 1
                    return
                pending = self._pending
                pending.append((self._clock(), event_type, payload, self._step, True))
                if len(pending) < self._batch:
                    return
            except Exception:  # the recorder must never break the run it records
                with contextlib.suppress(Exception):
                    self._pending.append(_LOST)
                return
            finally:
                lock.release()
            self._drain(False)
            return
        self._emit_payload_slowly(event_type, payload)

    def _emit_payload_slowly(
        self, event_type: str, payload: bytes, agent: str | None = None
    ) -> None:
        """:meth:`emit_payload` of an event that moves the step or ends a batch early (a
        turn boundary, the run's end), of a payload that is not ``bytes``, or of one made
        while an agent is named."""
        lock = self._lock
        lock.acquire()
        try:
            if self._closed:
                self._late += 1
                return
            if agent is not None and type(payload) is bytes:
                payload = stamped_payload(payload, agent)
                self._hand_over(agent, None)
            step = self._next_step(event_type) if event_type in _STEP_MOVERS else self._step
            terminal = event_type in TERMINAL_TYPES
            checked = payload if type(payload) is bytes else self._not_bytes(terminal)
            due, boundary = self._queue(event_type, checked, step, True, terminal)
        except Exception:  # the recorder must never break the run it records
            with contextlib.suppress(Exception):
                self._pending.append(_LOST)
            due = boundary = False
        finally:
            lock.release()
        if due:
            self._drain(boundary)

    def _queue(
        self, event_type: str, payload: bytes | None, step: int, implied: bool, terminal: bool
    ) -> tuple[bool, bool]:
        """Give an event its place in the run (under the lock); whether the batch is due,
        and whether it ends at a turn boundary, whose lines are written out at once so that
        a crash loses no finished turn."""
        pending = self._pending
        pending.append((self._clock(), event_type, payload, step, implied))
        # Nothing below can fail: the event is in the run.
        if terminal:
            self._closed = True  # the run is whole: its lines are made at once
        boundary = event_type in _TURN_TYPES and self._file is not None
        return terminal or boundary or len(pending) >= self._batch, boundary

    def _drain(self, write: bool) -> None:
        """Turn the pending events into lines, in the order they were emitted, and write
        them out if ``write`` (a turn boundary) or a flush is due."""
        with self._drain_lock:
            self._drain_held()
            if write:
                self._write_pending()

    def _drain_held(self) -> tuple[int, int]:
        """Make lines of every pending event (the drain lock held); return the count of
        events emitted after the run ended and of payloads that could not be encoded, as
        they stood when the pending events were taken."""
        # Events emitted by other threads meanwhile go to a new list: emitting never waits
        # for a batch to be made into lines.
        with self._lock:
            batch = self._pending
            self._pending = []
            counts = (self._late, self._encode_errors)
        if batch:
            self._process(batch)
            if self._terminal_seen or self._seq >= self._flush_seq:
                self._write_pending()
        return counts

    def _process(self, batch: list[_Pending]) -> None:
        """Admit, redact and make lines of a batch of pending events (under the drain lock).

        The event cap and the redactor decide which events become lines; a gap marker goes
        before the first line after events were lost. The lines are appended to the buffer
        at once, at the end of the batch, after their last look.
        """
        pieces: list[bytes] = []
        looks: list[bytes] = []  # the pieces of the lines to look at before the file
        add_line, vouch = self._lines.add, self._vouch
        seq = start_seq = self._seq
        open_below = start_open_below = self._open_below
        made = 0  # event lines made
        marked = 0  # lost events that the gap markers made account for
        ended = False  # the terminal event's line was made
        terminals = TERMINAL_TYPES
        for now, event_type, snapshot, step, implied in batch:
            terminal = event_type in terminals
            try:
                # The common event: admitted at once, and its payload vouched for, so it is
                # written as it is; its line is looked at only when its envelope holds a
                # piece made for it (a new type, second or step).
                if snapshot is None or seq >= open_below or not vouch(snapshot):
                    payload, look = self._vetted(snapshot, terminal, seq)
                    if payload is None:
                        continue
                else:
                    payload, look = snapshot, False
                gap = self._gap
                first = len(pieces)
                if add_line(pieces, now, event_type, payload, seq, step, implied, gap) or look:
                    looks += pieces[first:]
                if gap:
                    marked += gap
                    self._gap = 0
                    seq += 1
                seq += 1
                made += 1
                if terminal:
                    ended = self._terminal_seen = True
                    open_below = self._open_below = 0
            except Exception:  # e.g. a redactor that failed: the event is lost, not the run
                self._lose(terminal)
        if self._keep(pieces):
            self._seq = seq
            if looks:
                self._look(looks)
        else:  # out of memory: the batch's lines are lost, and counted
            self._seq = start_seq
            self._open_below = start_open_below
            self._lines = LineMaker()  # its pieces are new again for the lines made next
            self._lost_batch(made, marked, ended)

    def _vetted(self, payload: bytes | None, terminal: bool, seq: int) -> tuple[bytes | None, bool]:
        """An event the common path does not take (lost as it was emitted, near the event
        cap or after the run's end, or its payload not vouched for): its payload admitted
        and redacted (``None``: no line), and whether its line is looked at whole."""
        if payload is None or seq >= self._open_below:
            self._seq = seq
            payload = self._admitted(payload, terminal)
            if payload is None:
                return None, False
        if self.redactor is not None:
            payload = self._redacted(payload, terminal)
        return payload, self._scan is not None

    def _lost_batch(self, made: int, marked: int, ended: bool) -> None:
        """Count the lines of a batch that could not be kept (``made`` event lines, gap
        markers for ``marked`` lost events), so that a gap marker stands for them."""
        self._dropped += made
        self._gap += made + marked
        if ended:
            self._terminal_seen = False
            self._reopen()

    def _look(self, pieces: list[bytes]) -> None:
        """The last look at the lines made of ``pieces`` before they reach the file. When
        they hold a secret, the file is given up: nothing more is written to it, and the
        partial file is removed at the end (the run in memory is unaffected)."""
        file, scan = self._file, self._scan
        if file is None or scan is None or file.broken:
            return
        label = scan(b"".join(pieces))
        if label is not None:
            file.give_up(label)

    def _keep(self, pieces: list[bytes]) -> bool:
        """Append the lines of a batch to the buffer; ``False`` if they could not be."""
        try:
            if pieces:
                self._buffer += b"".join(pieces)
        except Exception:
            return False
        return True

    def _lose(self, terminal: bool) -> None:
        """Count an event that could not be made into a line; a gap marker will say so."""
        self._dropped += 1
        self._gap += 1
        if terminal:
            self._reopen()

    def _reopen(self) -> None:
        """The terminal event was lost: let another one end the run (unless it was closed)."""
        with self._lock:
            self._closed = self._close_called

    def _redacted(self, snapshot: bytes, terminal: bool) -> bytes | None:
        """The payload with its secrets replaced, or ``None`` for an event withheld (mode
        ``none``; the terminal event is always kept, so it is redacted instead)."""
        assert self.redactor is not None
        redacted = self.redactor.redact_payload(snapshot)
        if redacted is None and terminal:
            redacted = orjson.dumps(self.redactor.redact(orjson.loads(snapshot)))
        elif redacted is None:
            self._withheld += 1
            self._lose(terminal)
        elif type(redacted) is not bytes:
            raise TypeError(f"the redactor returned {type(redacted).__name__}")
        return redacted

    def _admitted(self, snapshot: bytes | None, terminal: bool) -> bytes | None:
        """The slow path of admission: ``snapshot`` if the event may become a line, or
        ``None`` (counted) for an event lost as it was emitted, one after the terminal
        event, or one past the event cap."""
        if snapshot is None:
            self._lose(terminal)
            return None
        if self._terminal_seen:
            self._dropped += 1
            return None
        # A pending gap marker takes a place of its own before this event; past the cap,
        # two places are kept for the gap marker and the terminal event.
        if not terminal and self._seq + (self._gap > 0) >= self._cap:
            self._lose(terminal)
            return None
        return snapshot

    def _encode_hard(self, data: Mapping[str, Any], terminal: bool) -> bytes | None:
        """Encode a payload that the fast path refused, or count it as lost (``None``)."""
        try:
            return encode_payload(data)
        except Exception:
            self._encode_errors += 1
            if terminal:  # the terminal event is always kept, so the file stays loadable
                return encode_with_placeholders(data)
            return None

    def _not_bytes(self, terminal: bool) -> bytes | None:
        """Count a payload handed over encoded that is no ``bytes``: the event is lost, but
        the terminal event is always kept (with no data), so the file stays loadable."""
        self._encode_errors += 1
        return b"{}" if terminal else None

    def _given_step(
        self, event_type: str, given: Any, data: Mapping[str, Any]
    ) -> tuple[int, bool, Mapping[str, Any]]:
        """The step of an event whose data names one (under the lock), whether it is
        implied, and the data (without a ``step`` that is not an integer)."""
        if type(given) is int:
            # Another event of the open turn's step leaves the turn open.
            if given != self._step or event_type in _TURN_TYPES:
                self._turn_open = event_type == LLM_TURN_STARTED
            self._step = given
            return given, False, data
        step = self._next_step(event_type) if event_type in _STEP_MOVERS else self._step
        return step, True, {k: v for k, v in data.items() if k != "step"}

    def _hand_over(self, agent: str | None, handed_to: Any) -> None:
        """Note who acts now (under the lock); a ``handoff`` goes first where control passed."""
        handoff = self._acting.hand_over(agent, handed_to)
        if handoff is not None:
            self._pending.append((self._clock(), HANDOFF, handoff, self._step, True))

    def _next_step(self, event_type: str) -> int:
        if event_type == RUN_STARTED:
            self._step = 0
        elif event_type == LLM_TURN_STARTED or (
            event_type == LLM_TURN_COMPLETED and not self._turn_open
        ):
            self._step += 1
            self._turn_open = event_type == LLM_TURN_STARTED
        elif event_type == LLM_TURN_COMPLETED:
            self._turn_open = False
        return self._step

    # -- writing --------------------------------------------------------------------

    def _write_pending(self) -> None:
        self._flush_seq = self._seq + self._flush_every
        if self._file is not None:
            self._file.write(self._buffer)
            if self._file.broken:  # nothing more is written: stop draining for it
                self._flush_seq = sys.maxsize

    def flush(self) -> None:
        """Write every line emitted so far to the (partial) file now."""
        with self._drain_lock:
            self._drain_held()
            self._write_pending()

    def close(self) -> None:
        """Write what is pending and put the file in place. Further events are dropped;
        closing again does nothing."""
        with self._lock:
            self._closed = self._close_called = True
        with self._drain_lock:
            self._drain_held()
            self._open_below = 0
            self._terminal_seen = True  # anything still in flight is late
            if self._file is not None:
                self._file.finish(self._buffer)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- reading back ---------------------------------------------------------------

    @property
    def written(self) -> int:
        """Bytes written to the file so far."""
        return 0 if self._file is None else self._file.written

    @property
    def step(self) -> int:
        """The current step."""
        return self._step

    @property
    def stats(self) -> RecorderStats:
        with self._drain_lock:
            late, encode_errors = self._drain_held()
            file = self._file
            return RecorderStats(
                recorded=self._seq,
                dropped=self._dropped + late,
                encode_errors=encode_errors,
                write_errors=0 if file is None else file.write_errors,
                withheld=self._withheld,
                cut_from_file=0 if file is None else file.cut_lines,
                leaked=None if file is None else file.leaked,
                refused=None if file is None else file.refused,
            )

    def getvalue(self) -> bytes:
        """Every recorded line, as the bytes of a rollout file."""
        with self._drain_lock:
            self._drain_held()
            return bytes(self._buffer)

    def rollout(self, path: str = "<recorded>") -> Rollout:
        """The recorded events, validated by the loader as any rollout file would be."""
        return loads(self.getvalue(), path=self.path or path)
