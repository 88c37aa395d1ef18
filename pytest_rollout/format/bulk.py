"""The loader's fast path: a whole file as the recorder writes it, checked in bulk.

A rollout the recorder wrote has one compact JSON object per line, each written back by
orjson byte for byte. Such a file is checked here with a few passes over all its lines at
once (``map``, ``set``, ``min``, list comparisons: loops that run in C), instead of a round
of Python code per line. Every rule of the line-by-line check in :mod:`.loader` is applied
(the limits, the envelope, seq and step order, the single ``run.started`` and terminal
event, the typed schema); where any of them might not hold, or a line is written otherwise,
:func:`bulk_events` answers ``None`` and the loader reads the file line by line, which
accepts the same files and says what is wrong with the others. Nothing is refused here.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import orjson

from .events import CORE_TYPES, RUN_STARTED, STEP_TYPE_PREFIXES, TERMINAL_TYPES, Event
from .schema import CHECKS

__all__ = ["Bounds", "bulk_events"]

#: Every byte but the opening brackets and the newline (deleted to count brackets a line).
_NOT_OPENINGS: Final = bytes(b for b in range(256) if b not in b"[{\n")
_ABSENT: Final[Any] = object()
_new_event: Final = tuple.__new__


class Bounds(NamedTuple):
    """The loader's limits as the fast path uses them."""

    line_bytes: int  # a line at most this long holds no more elements than the limit
    depth: int
    events: int
    max_step: int


def bulk_events(data: bytes, bounds: Bounds, tolerant: bool) -> tuple[Event, ...] | None:
    """The events of ``data`` when every line is as the recorder writes it and every rule
    holds, or ``None``: then the line-by-line path decides (and names what is wrong).

    Call it with the cyclic garbage collector paused: it builds every event at once.
    """
    if data.count(b"\n") > bounds.events + 1:  # not split: the copies could be large
        return None
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if not lines or len(lines) > bounds.events or max(map(len, lines)) > bounds.line_bytes:
        return None
    try:
        objects = list(map(orjson.loads, lines))  # a blank line does not parse either
    except orjson.JSONDecodeError:
        return None
    if not _written_back(objects, lines):  # (a line that is not an object: see _events)
        return None
    if max(map(len, data.translate(None, _NOT_OPENINGS).split(b"\n"))) > bounds.depth:
        return None
    return _events(objects, bounds, tolerant)


def _written_back(objects: list[Any], lines: list[bytes]) -> bool:
    """Whether orjson writes each parsed line back byte for byte: no duplicate key was
    dropped, no integer beyond 64 bits became a float, and the line is compact.

    Each line's encoding is compared as it is made and freed at once, so the memory that
    holds one is reused for the next: keeping many (a copy of the file) costs the page
    faults of mapping them afresh, more than the writing.
    """
    try:
        return all(map(bytes.__eq__, map(orjson.dumps, objects), lines))
    except orjson.JSONEncodeError:  # deeper than orjson writes
        return False


def _events(objects: list[Any], bounds: Bounds, tolerant: bool) -> tuple[Event, ...] | None:
    """The events of the parsed lines, after the checks of each one's envelope, step and
    data: a tight loop on locals, as the line-by-line path's common case. A line that is
    not a JSON object has no ``get``: the file then goes line by line."""
    try:
        return _checked_events(objects, bounds, tolerant)
    except AttributeError:
        return None


def _checked_events(objects: list[Any], bounds: Bounds, tolerant: bool) -> tuple[Event, ...] | None:
    events: list[Event] = []
    append = events.append
    checks = CHECKS
    shared = CORE_TYPES.get
    carrying = STEP_TYPE_PREFIXES
    terminals = TERMINAL_TYPES
    max_step = bounds.max_step
    last_seq = -1
    step = 0
    ended = False
    for lineno, obj in enumerate(objects, 1):
        ts = obj.get("ts")
        seq = obj.get("seq")
        etype = obj.get("type")
        payload = obj.get("data")
        if (
            ended
            or type(ts) is not str
            or type(seq) is not int
            or seq <= last_seq
            or type(etype) is not str
            or (etype == RUN_STARTED) is not (lineno == 1)
            or not etype
            or type(payload) is not dict
        ):
            return None
        raw_step = payload.get("step", _ABSENT)
        if raw_step is _ABSENT:
            if etype.startswith(carrying):
                return None
        elif type(raw_step) is not int or not step <= raw_step <= max_step:
            return None
        elif raw_step != step:
            step = raw_step  # one int object serves every event of a step
        elif not raw_step and etype.startswith(carrying):
            return None
        check = checks.get(etype)
        if check is not None and check(payload) is not None:
            return None
        last_seq = seq
        ended = etype in terminals
        append(_new_event(Event, (seq, ts, shared(etype, etype), payload, step, lineno)))
    if events[0].step or not (ended or tolerant):  # run.started is at step 0
        return None
    return tuple(events)
