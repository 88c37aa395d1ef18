"""The loader's fast path: a whole file as the recorder writes it, checked in bulk.

A rollout the recorder wrote has one compact JSON object per line, each written back by
orjson byte for byte. Such a file is checked here with a few passes over all its lines at
once (``map``, ``set``, ``min``, list comparisons: loops that run in C), instead of a round
of Python code per line. Every rule of the line-by-line check in :mod:`.loader` is applied
(the limits, the envelope, seq and step order, the single ``run.started`` and terminal
event, the typed schema); where any of them might not hold, or a line is written otherwise,
:func:`bulk_parse` or :func:`parsed_events` answers ``None`` and the loader reads the file line
by line, which accepts the same files and says what is wrong with the others. Nothing is
refused here. A line of megabytes (a tool's output) is read here too, when the commas and
opening brackets of every line, counted in one pass over the file before anything is
parsed, bound its elements and depth within the limits.

A run about to be compared with another is read *like* it (``like``): a line that is the
other run's line at the same place but for its timestamp (as when a test replays its golden)
is not parsed again: its event is made of the other line's object and this line's
timestamp. The two runs' events then share their data, and the comparison finds them equal
without reading it. The other run's lines are not kept for this: each one is what orjson
writes of its object, made again one at a time when it is compared, so a reference run
costs its objects and no copy of its file (half a gigabyte at a million events).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator
from typing import Any, Final, NamedTuple

import orjson

from .events import CORE_TYPES, RUN_STARTED, STEP_TYPE_PREFIXES, TERMINAL_TYPES, Event
from .schema import CHECKS, agent_problem

__all__ = ["Bounds", "Parsed", "bulk_parse", "parsed_events"]

#: Every byte but the opening brackets and the newline (deleted to count brackets a line).
_NOT_OPENINGS: Final = bytes(b for b in range(256) if b not in b"[{\n")
#: Every byte but the commas, the opening brackets and the newline (a long line's marks).
_NOT_MARKS: Final = bytes(b for b in range(256) if b not in b",[{\n")
_ABSENT: Final[Any] = object()
_new_event: Final = tuple.__new__

# A recorder's line: '{"ts":"' and a 27-byte timestamp (2026-06-28T13:34:56.000583Z) at
# bytes 7-33, then '","seq":' and the rest of the event.
_HEAD: Final = b'{"ts":"'
_SEQ_KEY: Final = b'","seq":'
_STAMP: Final = operator.itemgetter(slice(7, 34))
_AFTER_STAMP: Final = operator.itemgetter(slice(34, None))
#: The bytes a timestamp is made of: none needs escaping in JSON, and none is a bracket.
_STAMP_BYTES: Final = b"0123456789-:.TZ"


class Bounds(NamedTuple):
    """The loader's limits as the fast path uses them."""

    short_line: int  # a line at most this long holds no more elements than the limit
    line_bytes: int
    elements: int
    depth: int
    events: int
    max_step: int


class Parsed(NamedTuple):
    """The objects of a file's lines, each line what orjson writes of its object. In a file
    read like another (``like``), a line copied from the other's has the other's object, and
    its own timestamp in ``stamps`` (``None`` for the lines parsed afresh)."""

    objects: list[Any]
    stamps: list[str | None] | None = None


def bulk_parse(
    data: bytes, lines: list[bytes], bounds: Bounds, like: Parsed | None = None
) -> Parsed | None:
    """The objects of the ``lines`` of ``data`` when every line is within the limits and as
    the recorder writes it, or ``None``. ``lines``: ``data`` cut at most ``bounds.events +
    1`` times (the rest of a file of more lines stays in one piece, so that many short
    lines never become many objects), less the empty piece after a last newline. ``like``:
    the parsed lines of a run that ``data``'s run is about to be compared with, read on its
    own (see the module's text). With :func:`parsed_events` after it, the fast path; call
    both with the cyclic garbage collector paused, since they build every object and event
    at once."""
    if not lines or len(lines) > bounds.events:
        return None
    longest = max(map(len, lines))
    # A file with a line long enough to hold more elements than the limit (a tool's output
    # of megabytes) has its lines' elements and brackets bounded before anything is parsed.
    counted = longest > bounds.short_line
    if counted and not _long_lines_fit(data, longest, bounds):
        return None
    stamps = None
    try:
        if like is None:
            objects = _written_back(lines, counted)  # a blank line does not parse
        else:
            alike = _alike(lines, like.objects)
            read = list(itertools.compress(lines, map(operator.not_, alike)))
            objects = _written_back(read, counted)
            if objects is not None:
                objects = _merged(alike, itertools.compress(like.objects, alike), objects)
                copied = itertools.compress(lines, alike)
                stamps = _merged(alike, map(bytes.decode, map(_STAMP, copied)), _nothing())
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):  # (the other's data was changed)
        return None
    if objects is None:  # (a line that is not an object: see parsed_events)
        return None
    if not counted and not _shallow(data, bounds.depth):
        return None
    return Parsed(objects, stamps)


def _shallow(data: bytes, depth: int) -> bool:
    """Whether no line of ``data`` has more opening brackets than ``depth``. Every line's
    brackets, copied lines' too (they have the other line's, which passed): one pass over
    the file, and no copy of the lines read afresh to count theirs alone."""
    return max(map(len, data.translate(None, _NOT_OPENINGS).split(b"\n"))) <= depth


def _long_lines_fit(data: bytes, longest: int, bounds: Bounds) -> bool:
    """Whether every line of ``data`` is within the line limit, holds fewer commas and
    opening brackets than the element limit (each element past the first is one of those)
    and no more opening brackets than the depth limit: one pass in C over the file, for
    one with lines of megabytes. Any other goes line by line, where a line's elements and
    depth are counted exactly."""
    if longest > bounds.line_bytes:
        return False
    marks = data.translate(None, _NOT_MARKS).split(b"\n")
    if max(map(len, marks)) >= bounds.elements:
        return False
    commas = map(bytes.count, marks, itertools.repeat(b","))
    openings: int = max(map(operator.sub, map(len, marks), commas))
    return openings <= bounds.depth


def _alike(lines: list[bytes], theirs: list[Any]) -> list[bool]:
    """For each line, whether it is the line of the other run at the same place but for its
    timestamp: the same bytes from byte 34 on, and both a recorder's line with a plain
    timestamp. Such a line's object is the other's with this line's timestamp, and it is
    written back exactly as the other was (a timestamp has nothing to escape).

    The other run's line is what orjson writes of its object (``theirs``: a run read on its
    own, every line written back byte for byte), made when it is compared and let go of at
    once: no copy of that run's file is held."""
    n = min(len(lines), len(theirs))
    dumps = orjson.dumps
    tails = map(_AFTER_STAMP, map(dumps, theirs[:n]))
    alike = list(map(operator.eq, map(_AFTER_STAMP, lines[:n]), tails))
    head, seq_key, stamp, plain = _HEAD, _SEQ_KEY, _STAMP, _STAMP_BYTES
    for place in itertools.compress(range(n), alike.copy()):
        mine, other = lines[place], dumps(theirs[place])
        # Equal from byte 34 on: where one has its seq key, so has the other.
        alike[place] = (
            mine.startswith(head)
            and other.startswith(head)
            and mine.startswith(seq_key, 34)
            and not stamp(mine).translate(None, plain)
            and not stamp(other).translate(None, plain)
        )
    alike.extend(itertools.repeat(False, len(lines) - n))
    return alike


def _merged(alike: list[bool], copied: Iterable[Any], fresh: Iterable[Any]) -> list[Any]:
    """One item for each line, in order: the next of ``copied`` where ``alike``, else the
    next of ``fresh``."""
    from_copied, from_fresh = iter(copied), iter(fresh)
    return [next(from_copied) if same else next(from_fresh) for same in alike]


def _nothing() -> Iterator[None]:
    return itertools.repeat(None)


def _written_back(lines: list[bytes], one_by_one: bool) -> list[Any] | None:
    """Each line's object, when orjson writes each one back byte for byte (no duplicate key
    was dropped, no integer beyond 64 bits became a float, and the line is compact), else
    ``None``.

    Lines of megabytes (``one_by_one``) are each parsed, written back and compared in turn,
    stopping at the first written otherwise: a file that goes line by line is parsed in
    bulk no further. Other files are parsed whole first, a little faster.
    """
    if not one_by_one:
        objects = list(map(orjson.loads, lines))
        return objects if _same(objects, lines) else None
    kept, parsed = itertools.tee(map(orjson.loads, lines))
    return list(kept) if _same(parsed, lines) else None


def _same(objects: Iterable[Any], lines: list[bytes]) -> bool:
    """Whether orjson writes each object back as its line. Each line's encoding is compared
    as it is made and freed at once, so the memory that holds one is reused for the next:
    keeping many (a copy of the file) costs the page faults of mapping them afresh, more
    than the writing."""
    try:
        return all(map(bytes.__eq__, map(orjson.dumps, objects), lines))
    except orjson.JSONEncodeError:  # deeper than orjson writes
        return False


def parsed_events(parsed: Parsed, bounds: Bounds, tolerant: bool) -> tuple[Event, ...] | None:
    """The events of the parsed lines, after the checks of each one's envelope, step and
    data: a tight loop on locals, as the line-by-line path's common case. A line that is
    not a JSON object has no ``get``: the file then goes line by line.

    A line copied from the other run's (see :func:`bulk_parse`) has that run's data,
    which passed the same type's schema check when that run was read: it is not checked
    again."""
    stamps = _nothing() if parsed.stamps is None else parsed.stamps
    try:
        return _checked_events(parsed.objects, stamps, bounds, tolerant)
    except AttributeError:
        return None


def _checked_events(
    objects: list[Any], stamps: Iterable[str | None], bounds: Bounds, tolerant: bool
) -> tuple[Event, ...] | None:
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
    for lineno, (obj, stamp) in enumerate(zip(objects, stamps, strict=False), 1):
        ts = obj.get("ts") if stamp is None else stamp
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
        # (A copied line's data passed its check in the other run.)
        if stamp is None and (
            ((check := checks.get(etype)) is not None and check(payload) is not None)
            or ("agent" in payload and agent_problem(payload) is not None)
        ):
            return None
        last_seq = seq
        ended = etype in terminals
        append(_new_event(Event, (seq, ts, shared(etype, etype), payload, step, lineno)))
    if events[0].step or not (ended or tolerant):  # run.started is at step 0
        return None
    return tuple(events)
