"""The strict, bounded loader for rollout files (docs/file-format.md).

A rollout may come from anywhere, so the loader trusts nothing: every limit and structural
rule is checked and every refusal is one :class:`~pytest_rollout.RolloutFormatError` naming
the file, the 1-based line and the reason. Parsing is done by orjson; what it would accept
silently (integers beyond 64 bits, duplicate keys) and the limits on a line's size, elements
and depth are checked on the line's raw bytes with a handful of C calls (:mod:`.rawline`),
never by walking the parsed values, so a file within the limits costs about what parsing it
costs. Each core event's data is then checked against the typed schema of
:mod:`.schema`, so code reading a loaded rollout can trust the types of its fields. A file as
the recorder writes it is checked in bulk first (:mod:`.bulk`); any other file, and every
refusal, goes line by line.

A *tolerant* load (``tolerant=True``) reads a file that was cut short, as a crash leaves it:
an unparseable last line without its newline is left out, and a missing terminal event is
accepted; the :class:`Rollout` says so in ``cut_short_after``. Everything else is as strict.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import orjson

from ..errors import RolloutFormatError
from .bulk import Bounds, Parsed, bulk_parse, parsed_events
from .events import (
    CORE_TYPES,
    RUN_STARTED,
    STEP_TYPE_PREFIXES,
    TERMINAL_TYPES,
    Event,
    JsonEvents,
    is_step_carrying,
)
from .files import Unreadable, read_regular
from .gcpause import collector_paused
from .rawline import Refusal, parse_line
from .schema import CHECKS, agent_problem, json_kind, schema_problem

__all__ = ["Limits", "Rollout", "load", "loads", "parse", "read_rollout_bytes"]


@dataclass(frozen=True, slots=True)
class Limits:
    """The loader's bounds. The defaults are the contract of docs/file-format.md."""

    line_bytes: int = 16 * 1024 * 1024
    events: int = 100_000
    total_bytes: int = 256 * 1024 * 1024
    depth: int = 100
    elements: int = 100_000
    max_step: int = 1_000_000


DEFAULT_LIMITS: Final = Limits()

# A run of JSON whitespace, newlines included: blank lines are skipped by one match.
_JSON_WHITESPACE: Final = re.compile(rb"[ \t\r\n]*+")
_REQUIRED: Final = (("ts", str), ("seq", int), ("type", str), ("data", dict))


@dataclass(frozen=True, slots=True)
class Rollout:
    """A loaded rollout: its source path and its events in file order.

    ``cut_short_after`` is ``None`` for a whole run. A tolerant load of a file that was cut
    short (no terminal event, or an incomplete last line that was left out) sets it to the
    number of whole events kept.
    """

    path: str
    events: tuple[Event, ...]
    cut_short_after: int | None = None

    @property
    def steps(self) -> int:
        """The highest step of the run (the number of LLM turns it took)."""
        return self.events[-1].step if self.events else 0


def load(
    path: str | os.PathLike[str], *, limits: Limits = DEFAULT_LIMITS, tolerant: bool = False
) -> Rollout:
    """Load and validate a rollout file.

    Raises :class:`RolloutFormatError` for anything that breaks the file format or a loader limit
    (docs/file-format.md), including files that are not regular files (FIFOs, devices,
    directories), which are refused on the opened handle without blocking. ``tolerant``:
    accept a file that was cut short (see :func:`loads`).
    """
    name = os.fspath(path)
    data = read_rollout_bytes(name, limits=limits)
    return loads(data, path=name, limits=limits, tolerant=tolerant)


def loads(
    data: bytes,
    *,
    path: str = "<bytes>",
    limits: Limits = DEFAULT_LIMITS,
    tolerant: bool = False,
) -> Rollout:
    """Validate rollout ``data`` (the bytes of a whole file); ``path`` names it in errors.

    ``tolerant``: accept a run that was cut short, as a crash leaves its file: a last line
    that does not end with a newline and does not parse is left out, and a run without its
    terminal event is accepted. The result's ``cut_short_after`` then says how many whole
    events were kept (``None``: the run was whole). Every other rule is as strict.
    """
    return parse(data, path=path, limits=limits, tolerant=tolerant)[0]


def parse(
    data: bytes,
    *,
    path: str,
    limits: Limits = DEFAULT_LIMITS,
    tolerant: bool = False,
    like: Parsed | None = None,
) -> tuple[Rollout, Parsed | None]:
    """:func:`loads`, and the file's parsed lines when the fast path read it (``None``: it
    was read line by line). ``like``: the parsed lines of a run this one is about to be
    compared with, to read it like that run (:class:`~.pair.Reference`, which owns this)."""
    if len(data) > limits.total_bytes:
        raise RolloutFormatError(
            path, None, f"file is {len(data)} bytes, over the {limits.total_bytes}-byte limit"
        )
    cut = False
    if tolerant:
        data, cut = _without_cut_line(data, limits)
    bounds = _bounds(limits)
    # Cut at most events + 1 times: the rest of a file of more lines stays in one piece
    # (refused by both paths), so many short lines never become many objects.
    lines = data.split(b"\n", bounds.events + 1)
    if lines[-1] == b"":
        lines.pop()  # (after the newline that ends the last line)
    with collector_paused():
        parsed = bulk_parse(data, lines, bounds, like)
        # The line-by-line path takes the lines if they were all cut, and declined in bulk.
        whole = lines if parsed is None and (not lines or b"\n" not in lines[-1]) else None
        del lines
        events = None if parsed is None else parsed_events(parsed, bounds, tolerant)
        if events is None:
            parsed = None
            events = _parse_events(data, whole, path, limits, tolerant)
    ended = bool(events) and events[-1].type in TERMINAL_TYPES
    cut_short = len(events) if cut or not ended else None
    return Rollout(path, JsonEvents(events), cut_short), parsed


def _bounds(limits: Limits) -> Bounds:
    # A line can only hold more elements than the limit if it is longer than the limit.
    short_line = min(limits.elements, limits.line_bytes)
    return Bounds(
        short_line, limits.line_bytes, limits.elements, limits.depth, limits.events, limits.max_step
    )


def _without_cut_line(data: bytes, limits: Limits) -> tuple[bytes, bool]:
    """``data`` without its last line when that line was cut: no newline after it, and it
    does not parse as JSON (a whole last line without its newline is kept)."""
    if not data or data.endswith(b"\n"):
        return data, False
    start = data.rfind(b"\n") + 1
    last = data[start:]
    if not last.strip(b" \t\r") or len(last) > limits.line_bytes:
        return data, False
    try:
        orjson.loads(last)
    except orjson.JSONDecodeError:
        return data[:start], True
    return data, False


def read_rollout_bytes(path: str | os.PathLike[str], *, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """A rollout file's bytes, read as :func:`load` reads them: regular files only, checked on
    the opened handle without blocking, up to the size limit plus one byte (so that an
    oversize file shows). One read can then be both checked against a receipt and loaded
    with :func:`loads`. Raises :class:`RolloutFormatError`.
    """
    name = os.fspath(path)
    try:
        return read_regular(name, limits.total_bytes, "rollout file")
    except Unreadable as exc:
        raise RolloutFormatError(name, None, exc.reason) from None


def _parse_events(
    data: bytes, lines: list[bytes] | None, path: str, limits: Limits, tolerant: bool
) -> tuple[Event, ...]:
    """The events of ``data`` (cut into ``lines``, or ``None``: see :func:`_content_lines`),
    each line checked as docs/file-format.md says. A hot loop: the common line (as the
    recorder writes it) is accepted inline, on locals, with a handful of C calls; anything
    unusual, including every refusal, goes through :func:`_strict_event`, which says why."""
    events: list[Event] = []
    append = events.append
    step = 0
    last_seq = -1
    terminal_line = 0
    loads_ = orjson.loads
    dumps = orjson.dumps
    decode_error = orjson.JSONDecodeError
    # A line can only break the element or depth limits if it is long enough to hold that
    # many elements or brackets; the common line is checked with a handful of C calls.
    long_line = min(limits.elements, limits.line_bytes)
    bracket_line = 2 * limits.depth
    max_step = limits.max_step
    terminals = TERMINAL_TYPES
    checks = CHECKS
    shared = CORE_TYPES.get
    for lineno, raw in _content_lines(data, lines):
        # The fast path accepts exactly what the strict path accepts, and no more.
        obj: Any = None
        same = False
        if len(raw) <= long_line and raw[0] == 123:  # "{"
            try:
                obj = loads_(raw)
                # orjson writes a parsed line back byte for byte unless a duplicate key was
                # dropped or a big integer became a float (or the writer spaced it otherwise).
                same = type(obj) is dict and dumps(obj) == raw
            except (decode_error, TypeError):  # TypeError: deeper than orjson writes
                same = False
        if same and (len(raw) <= bracket_line or raw.count(b"[") + raw.count(b"{") <= limits.depth):
            ts = obj.get("ts")
            seq = obj.get("seq")
            etype = obj.get("type")
            payload = obj.get("data")
            raw_step = None if type(payload) is not dict else payload.get("step", _ABSENT)
            if (
                events
                and not terminal_line
                and type(ts) is str
                and type(seq) is int
                and seq > last_seq
                and type(etype) is str
                and etype
                and etype != RUN_STARTED
                and len(events) < limits.events
                and (
                    (raw_step is _ABSENT and not etype.startswith(STEP_TYPE_PREFIXES))
                    or (
                        type(raw_step) is int
                        and step <= raw_step <= max_step
                        and (raw_step or not etype.startswith(STEP_TYPE_PREFIXES))
                    )
                )
            ):
                assert type(payload) is dict
                if ((check := checks.get(etype)) is not None and (problem := check(payload))) or (
                    "agent" in payload and (problem := agent_problem(payload))
                ):
                    raise RolloutFormatError(path, lineno, problem)
                if raw_step is not _ABSENT and raw_step != step:
                    step = raw_step  # one int object serves every event of a step
                last_seq = seq
                terminal_line = lineno if etype in terminals else 0
                append(Event(seq, ts, shared(etype, etype), payload, step, lineno))
                continue
        event = _strict_event(
            raw, lineno, path, limits, _Position(len(events), last_seq, step, terminal_line)
        )
        step = event.step
        last_seq = event.seq
        terminal_line = lineno if event.type in terminals else 0
        append(event)
    _check_ending(events, terminal_line, path, tolerant)
    return tuple(events)


class _Position(NamedTuple):
    """Where the run stands before a line: events so far, and the last seq, step and
    terminal line (0: none yet)."""

    events: int
    last_seq: int
    step: int
    terminal_line: int


def _strict_event(raw: bytes, lineno: int, path: str, limits: Limits, at: _Position) -> Event:
    """The event of line ``lineno`` after every check, or a refusal naming what is wrong."""
    try:
        obj = parse_line(raw, limits.line_bytes, limits.elements, limits.depth)
        etype, seq, ts, payload = _envelope(obj)
    except Refusal as refusal:
        raise RolloutFormatError(path, lineno, str(refusal)) from None
    if at.terminal_line:
        raise RolloutFormatError(
            path, lineno, f"event after the terminal event on line {at.terminal_line}"
        )
    if at.events >= limits.events:
        raise RolloutFormatError(path, lineno, f"more than {limits.events} events")
    if seq <= at.last_seq:
        raise RolloutFormatError(
            path, lineno, f"seq {seq} does not increase (previous seq was {at.last_seq})"
        )
    step = _event_step(etype, payload, at.step, not at.events, path, lineno, limits)
    problem = schema_problem(etype, payload)
    if problem is not None:
        raise RolloutFormatError(path, lineno, problem)
    return Event(seq, ts, CORE_TYPES.get(etype, etype), payload, step, lineno)


def _check_ending(events: list[Event], terminal_line: int, path: str, tolerant: bool) -> None:
    """Refuse a file without events, or (unless ``tolerant``) one whose run never ended."""
    if not events:
        raise RolloutFormatError(path, None, "no events: the file is empty")
    if not terminal_line and not tolerant:
        raise RolloutFormatError(
            path,
            events[-1].line,
            "the run has no terminal event (run.completed or run.failed); "
            "the file is truncated or the run never ended",
        )


_ABSENT: Final[Any] = object()
#: Up to this many lines a file is split at once; past it (a hostile file of blank lines)
#: lines are cut one at a time, so memory stays bounded by the file's size.
_SPLIT_LINES: Final = 1_000_000


def _content_lines(data: bytes, lines: list[bytes] | None) -> Iterator[tuple[int, bytes]]:
    """The 1-based number and bytes of each non-blank line; lines end at ``\\n`` only.
    ``lines``: ``data`` cut into its lines, or ``None`` (a file of more lines than the
    event limit was not cut whole).

    Past a sane number of lines, lines are cut one at a time (never ``data.split``, whose
    list of millions of tiny or empty lines would cost gigabytes), and runs of blank lines
    are skipped in C.
    """
    if lines is None:
        if data.count(b"\n") > _SPLIT_LINES:
            yield from _cut_lines(data)
            return
        lines = data.split(b"\n")
    # A sane number of lines, split in C: skip the blank ones.
    for lineno, raw in enumerate(lines, 1):
        if raw and (raw[0] == 123 or raw.strip(b" \t\r")):  # 123: "{"
            yield lineno, raw


def _cut_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """:func:`_content_lines` of a file of very many lines, cut one at a time."""
    find = data.find
    skip = _JSON_WHITESPACE.match
    size = len(data)
    lineno = 1
    start = 0
    while start < size:
        end = find(b"\n", start)
        if end < 0:
            end = size
        raw = data[start:end]
        if raw.strip(b" \t\r"):
            yield lineno, raw
            lineno += 1
            start = end + 1
            continue
        blank = skip(data, start)  # always matches: this line's bytes are whitespace
        text = size if blank is None else blank.end()
        if text == size:
            return
        # This line was blank, so a newline lies between it and the text: start there.
        line_start = data.rfind(b"\n", start, text) + 1
        lineno += data.count(b"\n", start, line_start)
        start = line_start


def _envelope(obj: Any) -> tuple[str, int, str, dict[str, Any]]:
    if type(obj) is not dict:
        raise Refusal(f"expected a JSON object, got {json_kind(obj)}")
    for key, kind in _REQUIRED:
        if key not in obj:
            raise Refusal(f'missing field "{key}"')
        value = obj[key]
        if type(value) is not kind:
            raise Refusal(f'field "{key}" must be {_KIND_NAMES[kind]}, got {json_kind(value)}')
    seq: int = obj["seq"]
    if seq < 0:
        raise Refusal(f"seq must not be negative, got {seq}")
    etype: str = obj["type"]
    if not etype:
        raise Refusal('field "type" is empty')
    return etype, seq, obj["ts"], obj["data"]


def _event_step(
    etype: str,
    payload: dict[str, Any],
    previous: int,
    first: bool,
    path: str,
    lineno: int,
    limits: Limits,
) -> int:
    raw_step = payload.get("step")
    # A present but null step is refused like any other non-integer, not read as absent.
    if "step" in payload and (type(raw_step) is not int or not 0 <= raw_step <= limits.max_step):
        raise RolloutFormatError(
            path,
            lineno,
            f"step must be an integer from 0 to {limits.max_step}, got {_short(raw_step)}",
        )
    if first:
        if etype != RUN_STARTED:
            raise RolloutFormatError(
                path, lineno, f"the first event must be run.started, got {_short(etype)}"
            )
        if raw_step:
            raise RolloutFormatError(path, lineno, f"run.started must be at step 0, got {raw_step}")
        return 0
    if etype == RUN_STARTED:
        raise RolloutFormatError(path, lineno, "run.started appears more than once")
    step = previous if raw_step is None else raw_step
    if step < previous:
        raise RolloutFormatError(
            path, lineno, f"step {step} goes back (the previous event was at step {previous})"
        )
    if is_step_carrying(etype) and (raw_step is None or step < 1):
        raise RolloutFormatError(
            path, lineno, f"{_short(etype)} must carry a step of 1 or more, got {_short(raw_step)}"
        )
    return step


_KIND_NAMES: Final = {str: "a string", int: "an integer", dict: "an object"}


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."
