"""The bytes of a rollout line, made from pieces that are built once and reused.

A line is ``{"ts":"<second>.<micros>Z","seq":<seq>,"type":<type>,"data":<data>}`` followed by
a newline (docs/file-format.md). The recorder makes up to 100,000 of them in a run, so
:class:`LineMaker` never formats one with ``%``: the time up to the second is formatted once a
second, the microseconds come from a table, ``,"type":...,"data":`` is made once a type, and
the ending that splices an implied step into the payload once a step. That costs half of
formatting each line.
"""

from __future__ import annotations

import time
from typing import Final

import orjson

from .events import DROP_DETECTED

__all__ = ["LineMaker"]

_DIGITS: Final = tuple(b"%03d" % n for n in range(1000))
_SEQ: Final = b'Z","seq":'
_END: Final = b"}\n"
_DROP_MIDDLE: Final = b',"type":%b,"data":' % orjson.dumps(DROP_DETECTED)


class LineMaker:
    """Appends the pieces of rollout lines to a list; ``b"".join`` of it is the lines."""

    __slots__ = ("_ending", "_ending_step", "_head", "_middles", "_second_start")

    def __init__(self) -> None:
        # The first event's time is never in this "second": it formats its own.
        self._second_start = -(2**63)
        self._head = b""  # '{"ts":"' and the current second, up to its '.'
        self._middles: dict[str, bytes] = {}  # ',"type":<type>,"data":' by type
        self._ending_step = -1
        self._ending = b""  # ',"step":<step>}}\n' for the last implied step

    def add(
        self,
        pieces: list[bytes],
        now: int,
        event_type: str,
        payload: bytes,
        seq: int,
        step: int,
        implied: bool,
        gap: int = 0,
    ) -> bool:
        """The line of one event emitted at ``now`` (nanoseconds since the epoch); whether
        it holds a piece made for it (the first line of its second, of its type or of its
        step): the rest of a line around its payload is pieces earlier lines held, and
        digits.

        ``payload`` is the JSON object of its data. An ``implied`` step is not in it: it
        goes last, as in ``{**data, "step": step}``, spliced into the line instead of
        copying the payload. A ``gap`` of lost events puts a ``recorder.drop_detected``
        line at ``seq`` first, and the event at ``seq + 1``. Nothing is added when this
        raises (an event type that is no string).
        """
        middle = self._middles.get(event_type)
        fresh = middle is None
        if middle is None:
            middle = self._new_middle(event_type)
        micros = (now - self._second_start) // 1000
        if not 0 <= micros < 1_000_000:
            micros = self._new_second(now) // 1000
            fresh = True
        head = self._head
        high = _DIGITS[micros // 1000]
        low = _DIGITS[micros % 1000]
        if gap:
            marker = b'{"step":%d,"dropped":%d}' % (step, gap)
            pieces += (head, high, low, _SEQ, b"%d" % seq, _DROP_MIDDLE, marker, _END)
            seq += 1
        if not implied:
            pieces += (head, high, low, _SEQ, b"%d" % seq, middle, payload, _END)
        elif len(payload) > 2:
            if step != self._ending_step:
                self._ending_step = step
                self._ending = b',"step":%d}}\n' % step
                fresh = True
            pieces += (head, high, low, _SEQ, b"%d" % seq, middle, payload[:-1], self._ending)
        else:  # {} becomes {"step":N}
            pieces += (head, high, low, _SEQ, b"%d" % seq, middle, b'{"step":%d}}\n' % step)
        return fresh

    def _new_middle(self, event_type: str) -> bytes:
        middle = self._middles[event_type] = b',"type":%b,"data":' % orjson.dumps(event_type)
        return middle

    def _new_second(self, now: int) -> int:
        """Format the timestamp prefix of a new second once; return the nanoseconds into it."""
        second = now // 1_000_000_000
        self._second_start = second * 1_000_000_000
        self._head = (
            b'{"ts":"%b.' % time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)).encode()
        )
        return now - self._second_start
