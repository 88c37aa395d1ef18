"""The recorder: turns emitted events into rollout lines (docs/file-format.md), cheaply and safely.

``emit`` does only what must happen at once, under one lock: the event gets its place in the
run and its step, the clock is read, and the payload is snapshotted into orjson bytes (later
mutation by the agent cannot change what was recorded). The rest is done for a small batch
of events at a time (when the batch is full, when the run ends, or when the recorder is
read), in emission order: the event cap, the redactor (which sees every payload's bytes
before anything else does, so nothing downstream ever sees a secret), ``seq``, and the line,
appended to an in-memory buffer that is written to the file in batches.

It never raises into the caller: a payload that cannot be encoded, an event past the event
cap or a failed write is counted, and events lost before a later one is recorded are marked
by a ``recorder.drop_detected`` line in their place. The terminal event is always recorded,
so a recorded file stays loadable.

The file is written as a hidden ``.partial`` file beside ``path`` and renamed into place by
:meth:`Recorder.close` after its bytes are synced and scanned for secrets once more, so
``path`` only ever holds a whole run. ``max_file_bytes`` caps the file (not the in-memory
run, which the comparison uses): past it, lines are left out of the file and a
``recorder.drop_detected`` line followed by the run's last line stands in for them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson

from .events import (
    DROP_DETECTED,
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    RUN_STARTED,
    TERMINAL_TYPES,
)
from .files import FILE_MODE
from .loader import DEFAULT_LIMITS, Rollout, loads

if TYPE_CHECKING:
    from ..safety.redact import Redactor

__all__ = ["Recorder", "RecorderStats", "encode_payload"]

# The pieces of a line: {"ts":"<second>.<micros>Z","seq":<seq>,"type":<type>,"data":<data>}
_DIGITS: Final = tuple(b"%03d" % n for n in range(1000))
_SEQ: Final = b'Z","seq":'
_END: Final = b"}\n"
_DROP_MIDDLE: Final = b',"type":%b,"data":' % orjson.dumps(DROP_DETECTED)

#: An emitted event waiting to become a line: the clock when it was emitted, its type, its
#: payload (``None``: lost as it was emitted), its step, and whether the step is implied.
_Pending = tuple[int, str, bytes | None, int, bool]
_LOST: Final[_Pending] = (0, "", None, 0, False)
#: The most events made into lines at once: small enough to stay in the CPU's cache.
_BATCH: Final = 64
_ABSENT: Final = object()
#: On Linux, this advice on written bytes starts their writeback without waiting for it.
_START_WRITEBACK: Final = (
    getattr(os, "POSIX_FADV_DONTNEED", None) if sys.platform == "linux" else None
)
_dumps: Final = orjson.dumps


#: The only types that can move the step (the rest carry the current one).
_STEP_MOVERS: Final = frozenset({RUN_STARTED, LLM_TURN_STARTED, LLM_TURN_COMPLETED})
_TURN_TYPES: Final = frozenset({LLM_TURN_STARTED, LLM_TURN_COMPLETED})


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
    #: The label of a secret found in the file's bytes before it was renamed into place; the
    #: file was then deleted instead.
    leaked: str | None = None


def _default(value: Any) -> Any:
    """Encode the common non-JSON types agents pass around; refuse everything else."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    dump = getattr(value, "model_dump", None)  # pydantic v2 models
    if callable(dump):
        return dump(mode="json")
    raise TypeError(f"cannot record a value of type {type(value).__name__}")


def _placeholder(value: Any) -> Any:
    try:
        return _default(value)
    except Exception:
        return f"<unrecordable {type(value).__name__}>"


def _scrub(value: Any, depth: int) -> Any:
    """A copy of ``value`` that orjson can encode: strings with lone surrogates escaped,
    integers beyond 64 bits as text, anything else unencodable as a placeholder."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, bool | float) or value is None:
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else str(value)
    if depth >= 100:
        return f"<unrecordable {type(value).__name__}>"
    if isinstance(value, Mapping):
        return {_scrub(str(k), depth): _scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v, depth + 1) for v in value]
    return _scrub(_placeholder(value), depth + 1)


def encode_payload(data: Mapping[str, Any]) -> bytes:
    """Encode an event payload the way the recorder does (raises on unencodable data)."""
    try:
        return orjson.dumps(data, default=_default)
    except TypeError:
        # Non-string keys make orjson several times slower, so allow them only when needed.
        return orjson.dumps(data, default=_default, option=orjson.OPT_NON_STR_KEYS)


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
        redactor: Redactor | None = None,
        max_file_bytes: int | None = None,
    ) -> None:
        self.path = None if path is None else os.fspath(path)
        self.redactor = redactor
        self._max_file_bytes = sys.maxsize if max_file_bytes is None else max(max_file_bytes, 0)
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
        # The first event's time is never in this "second": it formats its own.
        self._second_start = -(2**63)
        self._head = b""  # '{"ts":"' and the current second, up to its '.'
        self._middles: dict[str, bytes] = {}  # ',"type":<type>,"data":' by type
        self._flush_every = flush_every
        # The seq at which lines are next written out (never, without a file).
        self._flush_seq = flush_every if path is not None else sys.maxsize
        self._written = 0
        self._partial: str | None = None
        self._fd: int | None = None
        self._file_broken = False
        self._file_done = False  # closed: the file is in place (or was given up)
        self._cut_at: int | None = None  # buffer offset of the first line left out of the file
        self._cut_lines = 0
        self._write_errors = 0
        self._leaked: str | None = None

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
        lock = self._lock
        lock.acquire()
        try:
            if self._closed:
                self._late += 1
                return
            given = data.get("step", _ABSENT)
            if given is _ABSENT:  # the common event: its step follows from its type
                step: int = (
                    self._next_step(event_type) if event_type in _STEP_MOVERS else self._step
                )
                implied = event_type != RUN_STARTED
            elif type(given) is int:
                step = given
                implied = False
                # Another event of the open turn's step leaves the turn open.
                if step != self._step or event_type in _TURN_TYPES:
                    self._turn_open = event_type == LLM_TURN_STARTED
                self._step = step
            else:
                step = self._next_step(event_type) if event_type in _STEP_MOVERS else self._step
                implied = event_type != RUN_STARTED
                data = {k: v for k, v in data.items() if k != "step"}  # a non-integer step
            terminal = event_type in TERMINAL_TYPES
            try:
                payload: bytes | None = _dumps(data, _default)
            except TypeError:
                payload = self._encode_hard(data, terminal)
            pending = self._pending
            pending.append((self._clock(), event_type, payload, step, implied))
            # Nothing below can fail: the event is in the run.
            if terminal:
                self._closed = True  # the run is whole: its lines are made at once
            due = terminal or len(pending) >= self._batch
        except Exception:  # the recorder must never break the run it records
            with contextlib.suppress(Exception):
                self._pending.append(_LOST)
            due = False
        finally:
            lock.release()
        if due:
            self._drain()

    def _drain(self) -> None:
        """Turn the pending events into lines, in the order they were emitted."""
        with self._drain_lock:
            self._drain_held()

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

        A line is joined from pieces, most of them made once and reused: the time up to the
        second (once a second), its microseconds (a table), ``,"type":...,"data":`` (once a
        type), the step's ending (once a step). Formatting each line with ``%`` costs twice
        as much.
        """
        pieces: list[bytes] = []
        redactor = self.redactor
        middles = self._middles
        second_start = self._second_start
        head = self._head
        seq = start_seq = self._seq
        open_below = start_open_below = self._open_below
        made = 0  # event lines made
        marked = 0  # lost events that the gap markers made account for
        ended = False  # the terminal event's line was made
        ending_step = -1
        ending = b""
        for now, event_type, snapshot, step, implied in batch:
            terminal = False
            try:
                if snapshot is None:  # lost when it was emitted
                    self._dropped += 1
                    self._gap += 1
                    continue
                terminal = event_type in TERMINAL_TYPES
                if seq >= open_below:  # near the cap, or after the terminal event
                    self._seq = seq
                    if not self._admit(terminal):
                        continue
                payload = snapshot
                if redactor is not None:
                    redacted = self._redacted(snapshot, terminal)
                    if redacted is None:
                        continue
                    if type(redacted) is not bytes:
                        raise TypeError(f"the redactor returned {type(redacted).__name__}")
                    payload = redacted
                micros = (now - second_start) // 1000
                if not 0 <= micros < 1_000_000:
                    micros = self._new_second(now) // 1000
                    second_start = self._second_start
                    head = self._head
                high = _DIGITS[micros // 1000]
                low = _DIGITS[micros % 1000]
                middle = middles.get(event_type)
                if middle is None:
                    middle = middles[event_type] = b',"type":%b,"data":' % _dumps(event_type)
                if self._gap:
                    marker = b'{"step":%d,"dropped":%d}' % (step, self._gap)
                    pieces += (head, high, low, _SEQ, b"%d" % seq, _DROP_MIDDLE, marker, _END)
                    marked += self._gap
                    self._gap = 0
                    seq += 1
                if not implied:
                    pieces += (head, high, low, _SEQ, b"%d" % seq, middle, payload, _END)
                else:
                    # An implied step goes last in the payload, as in {**data, "step": step},
                    # but spliced into the line instead of copying the dict.
                    if step != ending_step:
                        ending_step = step
                        ending = b',"step":%d}}\n' % step
                    if len(payload) > 2:
                        pieces += (head, high, low, _SEQ, b"%d" % seq, middle, payload[:-1], ending)
                    else:  # {} becomes {"step":N}
                        data = b'{"step":%d}}\n' % step
                        pieces += (head, high, low, _SEQ, b"%d" % seq, middle, data)
                seq += 1
                made += 1
                if terminal:
                    ended = self._terminal_seen = True
                    open_below = self._open_below = 0
            except Exception:  # e.g. a redactor that failed: the event is lost, not the run
                self._dropped += 1
                self._gap += 1
                if terminal:
                    self._reopen()
        try:
            if pieces:
                self._buffer += b"".join(pieces)
        except Exception:  # out of memory: the batch's lines are lost, and counted
            self._seq = start_seq
            self._open_below = start_open_below
            self._dropped += made
            self._gap += made + marked
            if ended:
                self._terminal_seen = False
                self._reopen()
            return
        self._seq = seq

    def _reopen(self) -> None:
        """The terminal event was lost: let another one end the run (unless it was closed)."""
        with self._lock:
            self._closed = self._close_called

    def _redacted(self, snapshot: bytes, terminal: bool) -> bytes | None:
        """The payload with its secrets replaced, or ``None`` for an event withheld (mode
        ``none``; the terminal event is always kept, so it is redacted instead)."""
        assert self.redactor is not None
        redacted = self.redactor.redact_payload(snapshot)
        if redacted is not None:
            return redacted
        if terminal:
            return orjson.dumps(self.redactor.redact(orjson.loads(snapshot)))
        self._withheld += 1
        self._dropped += 1
        self._gap += 1
        return None

    def _admit(self, terminal: bool) -> bool:
        """The slow path of admission: after the terminal event, or near the event cap."""
        if self._terminal_seen:
            self._dropped += 1
            return False
        # A pending gap marker takes a place of its own before this event; past the cap,
        # two places are kept for the gap marker and the terminal event.
        if not terminal and self._seq + (self._gap > 0) >= self._cap:
            self._dropped += 1
            self._gap += 1
            return False
        return True

    def _encode_hard(self, data: Mapping[str, Any], terminal: bool) -> bytes | None:
        """Encode a payload that the fast path refused, or count it as lost (``None``)."""
        try:
            return encode_payload(data)
        except Exception:
            self._encode_errors += 1
            if terminal:  # the terminal event is always kept, so the file stays loadable
                try:
                    return orjson.dumps(data, default=_placeholder, option=orjson.OPT_NON_STR_KEYS)
                except TypeError:  # a lone surrogate or an integer beyond 64 bits
                    return orjson.dumps(_scrub(data, 0))
            return None

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

    def _new_second(self, now: int) -> int:
        """Format the timestamp prefix of a new second once; return the nanoseconds into it."""
        second = now // 1_000_000_000
        self._second_start = second * 1_000_000_000
        self._head = (
            b'{"ts":"%b.' % time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)).encode()
        )
        return now - self._second_start

    # -- writing --------------------------------------------------------------------

    def _write_pending(self) -> None:
        self._flush_seq = self._seq + self._flush_every
        if self.path is None or self._file_broken or self._cut_at is not None or self._file_done:
            return
        end = len(self._buffer)
        if end > self._max_file_bytes:
            # Only whole lines go to the file: cut after the last one that fits. The first
            # line (run.started) and, at close, the last are kept whatever their size, so
            # the file still loads.
            end = self._buffer.rfind(b"\n", self._written, self._max_file_bytes) + 1
            end = max(self._written, end, self._buffer.find(b"\n") + 1)
            self._cut_at = end
        self._write_out(end)

    def _write_out(self, end: int) -> None:
        if self._written >= end or self._file_broken:
            return
        assert self.path is not None
        try:
            fd = self._open_partial()
            # Write from a view of the buffer, released before returning: a live view would
            # pin the buffer and make the next append fail.
            with memoryview(self._buffer) as whole, whole[self._written : end] as part:
                _write_all(fd, part)
            if _START_WRITEBACK is not None:
                # Have the kernel start writing these bytes to disk now, while the run goes
                # on, so that the fsync at close has little left to wait for. A hint: it
                # changes no byte, and its failure is no write error. Pages already on disk
                # may leave the page cache: the recorder never reads its file back.
                with contextlib.suppress(OSError):
                    os.posix_fadvise(fd, self._written, end - self._written, _START_WRITEBACK)
            self._written = end
        except OSError:
            self._file_failed()

    def _open_partial(self) -> int:
        if self._fd is None:
            assert self.path is not None
            parent = os.path.dirname(self.path) or "."
            os.makedirs(parent, exist_ok=True)
            name = os.path.basename(self.path)
            self._fd, self._partial = tempfile.mkstemp(
                prefix=f".{name}.", suffix=".partial", dir=parent
            )
        return self._fd

    def _file_failed(self) -> None:
        # A file that missed a write would hold a hole; stop writing to it. The lines
        # stay in memory, so the run's comparison and golden are unaffected.
        self._write_errors += 1
        self._file_broken = True
        self._flush_seq = sys.maxsize

    def _write_cut_tail(self) -> None:
        """End a file cut by ``max_file_bytes``: a gap marker for the lines left out, then
        the run's last line (its terminal event), so the file still loads."""
        if self._cut_at is None or self._file_broken:
            return
        buffer = self._buffer
        last = buffer.rfind(b"\n", 0, len(buffer) - 1) + 1
        tail = bytes(buffer[max(last, self._cut_at) :])
        if last > self._cut_at:
            self._cut_lines = buffer.count(b"\n", self._cut_at, last)
            first = orjson.loads(buffer[self._cut_at : buffer.index(b"\n", self._cut_at)])
            step = first["data"].get("step", 0)
            marker = {"step": step, "dropped": self._cut_lines}
            line = {"ts": first["ts"], "seq": first["seq"], "type": DROP_DETECTED, "data": marker}
            tail = orjson.dumps(line) + b"\n" + tail
        try:
            _write_all(self._open_partial(), tail)
        except OSError:
            self._file_failed()

    def _publish(self) -> None:
        """Close the partial file and rename it into place, unless a secret is found."""
        if self._fd is None or self._partial is None:
            return
        fd, partial = self._fd, self._partial
        self._fd = self._partial = None
        try:
            if not self._file_broken:
                os.fsync(fd)
                os.fchmod(fd, FILE_MODE)
        except OSError:
            self._file_failed()
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
        leaked = None
        if not self._file_broken and self.redactor is not None and self.redactor.mode != "full":
            leaked = self.redactor.scan(bytes(self._buffer))
        if self._file_broken or leaked is not None:
            self._leaked = leaked
            with contextlib.suppress(OSError):
                os.unlink(partial)
            return
        assert self.path is not None
        try:
            os.replace(partial, self.path)
        except OSError:
            self._file_failed()
            with contextlib.suppress(OSError):
                os.unlink(partial)

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
            if self._file_done:
                return
            self._write_pending()
            self._write_cut_tail()
            self._publish()
            self._file_done = True

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- reading back ---------------------------------------------------------------

    @property
    def written(self) -> int:
        """Bytes written to the file so far."""
        return self._written

    @property
    def step(self) -> int:
        """The current step."""
        return self._step

    @property
    def stats(self) -> RecorderStats:
        with self._drain_lock:
            late, encode_errors = self._drain_held()
            return RecorderStats(
                recorded=self._seq,
                dropped=self._dropped + late,
                encode_errors=encode_errors,
                write_errors=self._write_errors,
                withheld=self._withheld,
                cut_from_file=self._cut_lines,
                leaked=self._leaked,
            )

    def getvalue(self) -> bytes:
        """Every recorded line, as the bytes of a rollout file."""
        with self._drain_lock:
            self._drain_held()
            return bytes(self._buffer)

    def rollout(self, path: str = "<recorded>") -> Rollout:
        """The recorded events, validated by the loader as any rollout file would be."""
        return loads(self.getvalue(), path=self.path or path)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    """Write all of ``data`` (``os.write`` may write less than asked)."""
    with memoryview(data) as view:
        done = 0
        while done < len(view):
            with view[done:] as rest:
                done += os.write(fd, rest)
