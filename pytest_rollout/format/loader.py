"""The strict, bounded loader for rollout files (docs/file-format.md).

A rollout may come from anywhere, so the loader trusts nothing: every limit and structural
rule is checked and every refusal is one :class:`~pytest_rollout.RolloutFormatError` naming
the file, the 1-based line and the reason. Parsing is done by orjson, which already refuses
NaN, Infinity, overflowing floats, lone surrogates, a byte order mark and invalid UTF-8; the
two things it would accept silently (integers beyond 64 bits become floats, a duplicate key
keeps its last value) are detected here. Element limits are checked on the raw bytes before
a long line is parsed, so hostile input cannot make the parser build a huge object, and the
depth limit is checked on the line's brackets after it parsed: both with a handful of C calls
on bytes, never by walking the parsed values, so a file within the limits costs about what
parsing it costs. Each core event's data is then checked against the typed schema of
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
from .schema import CHECKS, json_kind, schema_problem

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

_MIN_INT: Final = -(2**63)
_MAX_INT: Final = 2**64 - 1
# An integer needs 19 digits or more to leave the 64-bit range; shorter runs are safe.
# Every digit becomes "0", so one find() spots 19 digits in a row (C speed; a regex
# search for \d{19} cost most of a bulk load).
_DIGITS_TO_ZERO: Final = bytes.maketrans(b"123456789", b"000000000")
_NINETEEN_ZEROS: Final = b"0" * 19
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


class _Refusal(Exception):
    """Internal: a line was refused; carries the reason until the line number is known."""


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
    with collector_paused():
        parsed = bulk_parse(data, bounds, like)
        events = None if parsed is None else parsed_events(parsed, bounds, tolerant)
        if events is None:
            parsed = None
            events = _parse_events(data, path, limits, tolerant)
    ended = bool(events) and events[-1].type in TERMINAL_TYPES
    cut_short = len(events) if cut or not ended else None
    return Rollout(path, JsonEvents(events), cut_short), parsed


def _bounds(limits: Limits) -> Bounds:
    # A line can only hold more elements than the limit if it is longer than the limit.
    line_bytes = min(limits.elements, limits.line_bytes)
    return Bounds(line_bytes, limits.depth, limits.events, limits.max_step)


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


def _parse_events(data: bytes, path: str, limits: Limits, tolerant: bool) -> tuple[Event, ...]:
    """The events of a whole file, each line checked as docs/file-format.md says.

    A hot loop over up to 100,000 lines: the common line (as the recorder writes it) is
    accepted inline, on locals, with a handful of C calls; anything unusual, including
    every refusal, goes through :func:`_strict_event`, which says what is wrong.
    """
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
    for lineno, raw in _content_lines(data):
        # The fast path accepts exactly what the strict path accepts; anything unusual
        # (including every refusal) takes the strict path, which says what is wrong.
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
                check = checks.get(etype)
                if check is not None and (problem := check(payload)) is not None:
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
        obj = _parse_line(raw, limits, orjson.loads)
        etype, seq, ts, payload = _envelope(obj)
    except _Refusal as refusal:
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


def _content_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The 1-based number and bytes of each non-blank line; lines end at ``\\n`` only.

    Lines are cut one at a time (never ``data.split``, whose list of millions of tiny or
    empty lines would cost gigabytes), and runs of blank lines are skipped in C.
    """
    if data.count(b"\n") <= _SPLIT_LINES:
        # A sane number of lines: split in C, and skip the blank ones.
        for lineno, raw in enumerate(data.split(b"\n"), 1):
            if raw and (raw[0] == 123 or raw.strip(b" \t\r")):  # 123: "{"
                yield lineno, raw
        return
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


def _parse_line(raw: bytes, limits: Limits, loads_: Any) -> Any:
    if len(raw) > limits.line_bytes:
        raise _Refusal(f"line is {len(raw)} bytes, over the {limits.line_bytes}-byte limit")
    # Every JSON element takes at least one byte of its own, so only a line longer than the
    # element limit can exceed it; count those on the raw bytes before parsing anything.
    if len(raw) > limits.elements:
        _check_element_count(raw, limits)
    try:
        obj = loads_(raw)
    except orjson.JSONDecodeError as exc:
        raise _Refusal(_decode_reason(raw, exc)) from None
    # Depth needs one bracket per level: a line with few brackets cannot be too deep.
    if raw.count(b"[") + raw.count(b"{") > limits.depth:
        _check_depth(raw, limits)
    if raw.translate(_DIGITS_TO_ZERO).find(_NINETEEN_ZEROS) >= 0 or b"\\u003" in raw:
        _check_exactly(raw)
    elif raw.count(b":") != _colons(obj):
        # Each key owns one structural colon, and orjson writes every parsed string with
        # its colons unescaped, so equal counts mean no key was dropped as a duplicate.
        # (A colon written as \u003a would break the count: those lines go the exact way.)
        _check_exactly(raw)
    return obj


def _colons(obj: Any) -> int:
    """Colons in orjson's rendering of ``obj``, or -1 (forcing the exact check) if none."""
    try:
        return orjson.dumps(obj).count(b":")
    except orjson.JSONEncodeError:  # nesting deeper than orjson writes (a custom depth)
        return -1


def _decode_reason(raw: bytes, exc: orjson.JSONDecodeError) -> str:
    reason = exc.msg
    if "byte order mark" in reason:
        return f"invalid JSON at column {exc.colno}: a UTF-8 byte order mark is not allowed"
    if "UTF-8" in reason:
        # orjson says "surrogates not allowed" at column 1 for any invalid byte: find it.
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            byte = raw[bad.start]
            return f"line is not valid UTF-8 (byte 0x{byte:02x} at column {bad.start + 1})"
        return "line is not valid UTF-8"
    return f"invalid JSON at column {exc.colno}: {reason}"


#: Bytes that only matter to the shape of a line, with the brackets made one kind: the
#: depth check peels ``()`` pairs, one level a pass.
_BRACKETS: Final = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")
_JSON_SPACE: Final = b" \t\r\n"


def _structure(raw: bytes, max_strings: int) -> bytes | None:
    """``raw`` with every string literal replaced by ``0`` and whitespace removed: what is
    left are the line's structural characters, so counts on it are exact for valid JSON.

    All in C: escapes (``\\\\``, then ``\\"``) are removed, after which every quote
    opens or closes a string, so splitting on quotes alternates between the outside and the
    inside of strings. ``None`` when the line holds more than ``max_strings`` quotes
    (splitting would cost memory per string; the caller decides without it).
    """
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    if raw.count(b'"') > 2 * max_strings:
        return None
    if b'"' in raw:
        raw = b"0".join(raw.split(b'"')[::2])
    return raw.translate(None, _JSON_SPACE)


def _check_element_count(raw: bytes, limits: Limits) -> None:
    """Refuse a line of more than ``limits.elements`` JSON elements, before it is parsed.

    The root, plus one element per child of a non-empty container: one more than its
    commas. Commas and openings on the raw bytes, less the empty ``[]`` and ``{}``, bound
    that from above (strings only add to it); only a line that this bound cannot clear is
    counted exactly, on its structure (:func:`_structure`).
    """
    limit = limits.elements
    openings = raw.count(b"[") + raw.count(b"{")
    if raw.count(b",") + openings - raw.count(b"[]") - raw.count(b"{}") < limit:
        return
    # Each element is at most two string literals (a key and its value), four quotes.
    shape = _structure(raw, 2 * limit + 2)
    if shape is None:
        raise _Refusal(f"more than {limit} JSON elements in one line")
    openings = shape.count(b"[") + shape.count(b"{")
    empty = shape.count(b"[]") + shape.count(b"{}")
    if 1 + shape.count(b",") + openings - empty > limit:
        raise _Refusal(f"more than {limit} JSON elements in one line")


def _check_depth(raw: bytes, limits: Limits) -> None:
    """Refuse a (parsed, so valid) line nested deeper than ``limits.depth``.

    Only containers are levels (a scalar inside the 100th container is at depth 100). Its
    brackets, outside strings, are peeled one level a pass (every innermost ``()`` at once,
    in C); what is left after ``depth`` passes is deeper than that.
    """
    shape = _structure(raw, len(raw))
    assert shape is not None
    brackets = shape.translate(_BRACKETS, _NOT_BRACKETS)
    for peeled in range(limits.depth):
        if len(brackets) <= 2 * (limits.depth - peeled):
            return  # a balanced run of 2k brackets nests at most k deep
        brackets = brackets.replace(b"()", b"")
    if brackets:
        raise _Refusal(f"JSON nesting deeper than {limits.depth} levels")


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refusal(f"duplicate key {json.dumps(key)}")
            seen.add(key)
    return result


def _checked_int(text: str) -> int:
    # 2**64 has 20 digits: a longer literal is out of range before int() is asked to parse
    # it (which would also trip Python's limit on huge integer strings).
    if len(text.lstrip("-")) > 20 or not _MIN_INT <= (value := int(text)) <= _MAX_INT:
        raise _Refusal(f"integer {_short_text(text)} is beyond 64 bits")
    return value


def _check_exactly(raw: bytes) -> None:
    """Re-read a suspicious line with hooks that see every key and integer literal."""
    try:
        json.loads(raw, object_pairs_hook=_reject_duplicates, parse_int=_checked_int)
    except RecursionError:  # only reachable with a custom depth limit near Python's own
        raise _Refusal("JSON nesting too deep to check its keys and integers") from None


def _envelope(obj: Any) -> tuple[str, int, str, dict[str, Any]]:
    if type(obj) is not dict:
        raise _Refusal(f"expected a JSON object, got {json_kind(obj)}")
    for key, kind in _REQUIRED:
        if key not in obj:
            raise _Refusal(f'missing field "{key}"')
        value = obj[key]
        if type(value) is not kind:
            raise _Refusal(f'field "{key}" must be {_KIND_NAMES[kind]}, got {json_kind(value)}')
    seq: int = obj["seq"]
    if seq < 0:
        raise _Refusal(f"seq must not be negative, got {seq}")
    etype: str = obj["type"]
    if not etype:
        raise _Refusal('field "type" is empty')
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


def _short_text(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."
