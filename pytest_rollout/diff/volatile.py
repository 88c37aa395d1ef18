"""Values that change on every run (docs/replay.md, "Dates, ids and other values that change
every run"): found inside the canonical bytes of a run and renamed by first appearance.

A run carries the clock and fresh ids inside its data: a system prompt that says
``Today is 2026-12-01.``, a tool that returns ``{"order_id": "4f0c…", "created_at": …}``,
a provider's message id the agent sends back. Compared as they are, they differ on every
run. Dropped, they would hide the one thing that still counts about them: which value went
where. So each distinct volatile value is replaced by a placeholder numbered by the order in
which it first appears in the run (``<date#1>``, ``<uuid#2>``): the same value gets the
same placeholder everywhere in the run, and an agent that passes the id it was given keeps
matching while one that passes another id diverges.

The values are found in canonical JSON bytes, where no built-in kind can straddle a string's
quotes. Scanning every byte of a large run with a regular expression per kind would cost as
much as parsing it, so the built-in kinds are found from anchors that the C scanner finds
at the speed of a byte search (a ``-`` before a month, a UUID group or an id body; a ``_``
before an id body; a ``"`` before a ULID) and only each hit is looked at closely.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from ..format.events import TOOL_CALL_COMPLETED, TOOL_CALL_STARTED, Event
from .ignore_paths import IgnorePath

__all__ = [
    "PROVIDER_IDS",
    "Renaming",
    "Volatile",
    "VolatileMatch",
    "parse_declared",
]

#: Provider ids by prefix, and the label their placeholder takes. An id is the prefix then
#: at least 12 letters and digits, one of them a digit (``run_python`` is a tool's name).
PROVIDER_IDS: Final = {
    b"chatcmpl-": "completion_id",
    b"resp_": "response_id",
    b"msg_": "message_id",
    b"req_": "request_id",
    b"run_": "run_id",
    b"call_": "call_id",
    b"toolu_": "call_id",
    b"fc_": "call_id",
    b"rs_": "reasoning_id",
    b"thread_": "thread_id",
}

# -- the anchors and the close looks -----------------------------------------------------

_MONTH_DAY: Final = rb"(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
_HEX4: Final = rb"[0-9a-fA-F]{4}"
_ID_BODY_AHEAD: Final = rb"[A-Za-z0-9]{12}"

#: A ``-`` that may be inside a date, a UUID or after an id's prefix.
_DASH: Final = re.compile(
    rb"-(?=" + _MONTH_DAY + rb"|" + _HEX4 + rb"-" + _HEX4 + rb"-" + _HEX4 + rb"-"
    rb"|" + _ID_BODY_AHEAD + rb")"
)
#: A ``_`` that may end an id's prefix.
_UNDERSCORE: Final = re.compile(rb"_(?=" + _ID_BODY_AHEAD + rb")")
#: A ``"`` that opens a string holding a ULID and nothing else.
_QUOTE: Final = re.compile(rb'"(?=[0-7][0-9A-HJKMNP-TV-Z]{25}")')

#: A date, then maybe a time of day and a zone, not followed by what would make it part of
#: a longer word (``gpt-4o-2024-08-06`` is a model, checked by what comes before).
_DATE: Final = re.compile(
    rb"[12][0-9]{3}-" + _MONTH_DAY + rb"(?P<time>[Tt ](?:[01][0-9]|2[0-3]):[0-5][0-9]"
    rb"(?::[0-5][0-9](?:[.,][0-9]{1,9})?)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):?[0-5][0-9])?)?"
    rb"(?![0-9A-Za-z_-])"
)
_UUID: Final = re.compile(
    rb"[0-9a-fA-F]{8}-"
    + _HEX4
    + rb"-"
    + _HEX4
    + rb"-"
    + _HEX4
    + rb"-[0-9a-fA-F]{12}(?![0-9A-Za-z])"
)
_ID_BODY: Final = re.compile(rb"(?=[A-Za-z]*[0-9])[A-Za-z0-9]{12,}(?![A-Za-z0-9_])")

#: What may not come before a date (a letter, a digit, ``_`` or ``-``: a model's snapshot
#: date, a file's name), and before a UUID or an id's prefix (a letter or a digit).
_NOT_BEFORE_WORD: Final = frozenset(
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)
_NOT_BEFORE_DATE: Final = _NOT_BEFORE_WORD | frozenset(b"_-")

#: Bytes a declared pattern's match may not hold: it must stay inside one JSON string.
_OUTSIDE_A_STRING: Final = re.compile(rb'["\\]')

_LABEL: Final = re.compile(r"[a-z][a-z0-9_]{0,39}")


#: A volatile value found in canonical bytes: ``buffer[start:end]``, of kind ``label``
#: (a plain tuple: a class of its own costs every process that imports this module).
VolatileMatch = tuple[int, int, str]


def _preceded_by(buffer: bytes, start: int, forbidden: frozenset[int]) -> bool:
    return start > 0 and buffer[start - 1] in forbidden


def _at_dash(buffer: bytes, dash: int) -> VolatileMatch | None:
    """The volatile value around the ``-`` at ``dash``, if any."""
    start = dash - 4
    if start >= 0 and not _preceded_by(buffer, start, _NOT_BEFORE_DATE):
        found = _DATE.match(buffer, start)
        if found is not None:
            label = "timestamp" if found.group("time") else "date"
            return (start, found.end(), label)
    start = dash - 8
    if start >= 0 and not _preceded_by(buffer, start, _NOT_BEFORE_WORD):
        found = _UUID.match(buffer, start)
        if found is not None:
            return (start, found.end(), "uuid")
    return _provider_id(buffer, dash)


def _provider_id(buffer: bytes, end_of_prefix: int) -> VolatileMatch | None:
    """The provider id whose prefix ends at ``end_of_prefix`` (its ``-`` or ``_``), if any."""
    for prefix, label in PROVIDER_IDS.items():
        start = end_of_prefix + 1 - len(prefix)
        if (
            start >= 0
            and buffer.startswith(prefix, start)
            and not _preceded_by(buffer, start, _NOT_BEFORE_WORD)
        ):
            body = _ID_BODY.match(buffer, end_of_prefix + 1)
            if body is not None:
                return (start, body.end(), label)
    return None


def _builtin_matches(buffer: bytes) -> list[VolatileMatch]:
    found: list[VolatileMatch] = []
    end = 0
    for hit in _DASH.finditer(buffer) if b"-" in buffer else ():
        if hit.start() >= end and (match := _at_dash(buffer, hit.start())) is not None:
            found.append(match)
            end = match[1]
    if b"_" in buffer:
        for hit in _UNDERSCORE.finditer(buffer):
            if (match := _provider_id(buffer, hit.start())) is not None:
                found.append(match)
    for hit in _QUOTE.finditer(buffer):
        found.append((hit.start() + 1, hit.start() + 27, "ulid"))
    return found


def _without_overlaps(matches: list[VolatileMatch]) -> list[VolatileMatch]:
    """The matches in order, each that starts inside an earlier one left out (of two that
    start together, the longer is kept)."""
    matches.sort(key=lambda m: (m[0], -m[1]))
    kept: list[VolatileMatch] = []
    end = 0
    for match in matches:
        if match[0] >= end:
            kept.append(match)
            end = match[1]
    return kept


def parse_declared(text: str, source: str = "rollout_volatile") -> tuple[str, str]:
    """``LABEL=REGEX`` as ``(label, regex)``, or ``LABEL@PATH`` (the value at an ignore-path
    pattern, such as a number of epoch seconds, which no pattern of text can find) as
    ``(label, "@" + path)``; a :class:`ValueError` naming ``source`` and the reason when it
    is neither. A regex that itself begins with ``@`` is kept in a group."""
    at, equals = text.find("@"), text.find("=")
    if at != -1 and (equals == -1 or at < equals):
        return _parse_path(text, source)
    label, sep, pattern = text.strip().partition("=")
    label = label.strip()
    if not sep or not pattern:
        raise ValueError(f"{source}: {text!r} is not LABEL=REGEX or LABEL@PATH")
    _check_label(label, source)
    try:
        compiled = re.compile(pattern.encode())
    except re.error as exc:
        raise ValueError(f"{source}: {label}={pattern}: not a regular expression: {exc}") from None
    if compiled.match(b"") is not None:
        raise ValueError(f"{source}: {label}={pattern}: the pattern matches the empty string")
    return label, f"(?:{pattern})" if pattern.startswith("@") else pattern


def _parse_path(text: str, source: str) -> tuple[str, str]:
    label, _, path = text.strip().partition("@")
    label, path = label.strip(), path.strip()
    _check_label(label, source)
    try:
        IgnorePath.parse(path)
    except ValueError as exc:
        raise ValueError(f"{source}: {label}@{path}: {exc}") from None
    return label, "@" + path


def _check_label(label: str, source: str) -> None:
    if not _LABEL.fullmatch(label):
        raise ValueError(
            f"{source}: label {label!r} must be a lowercase word "
            f"(letters, digits and _, starting with a letter)"
        )


@dataclass(frozen=True, slots=True)
class Volatile:
    """What a comparison renames: the built-in kinds (``builtin``) and the declared
    patterns (``declared``: ``(label, regex)`` pairs, see :func:`parse_declared`)."""

    builtin: bool = True
    declared: tuple[tuple[str, str], ...] = ()
    _compiled: tuple[tuple[str, re.Pattern[bytes]], ...] = field(
        init=False, repr=False, compare=False, hash=False
    )
    #: The declared ``LABEL@PATH`` entries, as ``(label, path)``, parsed once.
    paths: tuple[tuple[str, IgnorePath], ...] = field(
        init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        compiled = tuple(
            (label, re.compile(p.encode())) for label, p in self.declared if p[:1] != "@"
        )
        object.__setattr__(self, "_compiled", compiled)
        paths = tuple(
            (label, IgnorePath.parse(p[1:])) for label, p in self.declared if p[:1] == "@"
        )
        object.__setattr__(self, "paths", paths)

    @property
    def active(self) -> bool:
        """Whether anything is renamed at all."""
        return self.builtin or bool(self.declared)

    def with_declared(self, pairs: Iterable[tuple[str, str]]) -> Volatile:
        """A copy that also renames ``pairs`` (each kept once)."""
        declared = tuple(dict.fromkeys((*self.declared, *pairs)))
        return Volatile(self.builtin, declared)

    @property
    def fingerprint(self) -> str:
        """A short name for these rules, kept beside each request key recorded with them
        (``builtin-1``, ``builtin-1+3f9c2ab8e1d0``): a golden keyed with other rules is
        told apart from a changed request."""
        parts = ["builtin-1" if self.builtin else "none"]
        if self.declared:
            text = "\n".join(f"{label}={pattern}" for label, pattern in sorted(self.declared))
            parts.append(hashlib.sha256(text.encode()).hexdigest()[:12])
        return "+".join(parts)

    def matches(self, buffer: bytes) -> list[VolatileMatch]:
        """The volatile values in canonical JSON bytes, in order, none overlapping."""
        found = _builtin_matches(buffer) if self.builtin else []
        for label, pattern in self._compiled:
            for hit in pattern.finditer(buffer):
                if hit.end() > hit.start() and not _OUTSIDE_A_STRING.search(hit.group()):
                    found.append((hit.start(), hit.end(), label))
        if len(found) < 2:
            return found
        return _without_overlaps(found)


#: The built-in kinds and nothing declared.
BUILTIN: Final = Volatile()
#: Nothing renamed.
NOTHING: Final = Volatile(builtin=False)


class Origin:
    """Where a volatile value first appeared: its step and event type, and the tool's name
    for a tool event."""

    __slots__ = ("step", "tool", "type")

    def __init__(self, step: int, type: str, tool: str | None = None) -> None:
        self.step = step
        self.type = type
        self.tool = tool

    @classmethod
    def of(cls, event: Event) -> Origin:
        """Where a value first seen in ``event`` comes from."""
        tool = event.data.get("name") if event.type in _TOOL_TYPES else None
        return cls(event.step, event.type, tool if isinstance(tool, str) else None)

    def describe(self) -> str:
        """``returned by get_order at step 1``, ``in the request at step 2``."""
        if self.type == TOOL_CALL_COMPLETED and self.tool:
            where = f"returned by {self.tool}"
        elif self.type == TOOL_CALL_STARTED and self.tool:
            where = f"passed to {self.tool}"
        else:
            where = _WHERE.get(self.type, f"in a {self.type} event")
        return f"{where} at step {self.step}"


_TOOL_TYPES: Final = frozenset({TOOL_CALL_STARTED, TOOL_CALL_COMPLETED})
_WHERE: Final = {
    "llm.turn.started": "in the request",
    "llm.turn.completed": "in the model's answer",
    "run.started": "in the run's start",
    "run.completed": "in the run's output",
}

_PLACEHOLDER: Final = re.compile(r"<([a-z][a-z0-9_]*)#([0-9]+)>")


class Renaming:
    """The volatile values of one run (or one request) renamed by first appearance.

    :meth:`rename` is fed the run's canonical bytes in the run's order; each value met for
    the first time takes the next number of its kind."""

    __slots__ = ("_counts", "_names", "_origins", "volatile")

    def __init__(self, volatile: Volatile = BUILTIN) -> None:
        self.volatile = volatile
        self._names: dict[bytes, bytes] = {}
        self._counts: dict[str, int] = {}
        # Each placeholder's value and the event it was first seen in (for its origin).
        self._origins: dict[str, tuple[str, Event | None]] = {}

    def rename(self, buffer: bytes, source: Event | None = None, *, keep: bool = True) -> bytes:
        """``buffer`` (of the event ``source``, if any) with each volatile value replaced by
        its placeholder (``buffer`` itself when it holds none). With ``keep=False`` the
        values met for the first time are numbered for this buffer only, and the renaming
        is left as it was."""
        found = self.volatile.matches(buffer)
        if not found:
            return buffer
        named = self._named if keep else self._fork()._named
        pieces: list[bytes] = []
        last = 0
        for start, end, label in found:
            pieces += (buffer[last:start], named(label, buffer[start:end], source))
            last = end
        pieces.append(buffer[last:])
        return b"".join(pieces)

    def _fork(self) -> Renaming:
        """A renaming that goes on from this one, leaving it as it is."""
        fork = Renaming(self.volatile)
        fork._names, fork._counts = dict(self._names), dict(self._counts)
        return fork

    def name(self, label: str, value: bytes, source: Event | None = None) -> str:
        """The placeholder of a value found by its place, not its text (``value``: its
        canonical JSON bytes): numbered among its label's as :meth:`rename` numbers."""
        return self._named(label, value, source, b"@" + label.encode() + b":" + value).decode()

    def _named(
        self, label: str, value: bytes, source: Event | None, key: bytes | None = None
    ) -> bytes:
        """The placeholder of ``value`` (kept under ``key``, else the value itself): the one
        it has, or the next of its label."""
        key = value if key is None else key
        name = self._names.get(key)
        if name is None:
            number = self._counts.get(label, 0) + 1
            self._counts[label] = number
            name = self._names[key] = f"<{label}#{number}>".encode()
            self._origins[name.decode()] = (value.decode("utf-8", "replace"), source)
        return name

    def origin_of(self, placeholder: str) -> Origin | None:
        """Where the value a placeholder stands for first appeared in this run."""
        found = self._origins.get(placeholder)
        return None if found is None or found[1] is None else Origin.of(found[1])

    def restore(self, text: str) -> str:
        """``text`` with each placeholder of this run put back as the value it stands for."""
        origins = self._origins
        return _PLACEHOLDER.sub(lambda m: origins.get(m.group(), (m.group(), None))[0], text)


def placeholders_in(text: str) -> list[str]:
    """The placeholders in ``text``, in order."""
    return [m.group() for m in _PLACEHOLDER.finditer(text)]


def only_placeholders_differ(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are the same text once every placeholder is taken out: what
    differs between them is which value stands where."""
    return _PLACEHOLDER.sub("", a) == _PLACEHOLDER.sub("", b) and a != b
