"""Canonicalization (docs/replay.md): the form in which two runs are compared.

A canonical event keeps what a run *did* and drops what only says *when* or *how fast*:
the envelope's ``ts`` and ``seq``, run and event ids, wall-clock timings, provider names,
prompt hashes, model versions and raw provider bytes. Cost and token usage are set aside
too: they feed the score and the cost delta, never a mismatch. Floats are rounded, and the
result is encoded by orjson with sorted keys, so two events are equal exactly when their
canonical bytes are (``1``, ``1.0`` and ``true`` stay different).

A secret redacted in ``hashed`` mode compares as its label alone: a run on a machine with
another API key in its environment did the same thing, and its requests must match.

Within a step, tool events are put in the order the step's turn announced the calls (its
``tool_calls``), each call's start before its completion: parallel calls finish in whatever
order their latencies give, and that order is not behaviour. A step already in that order
(the usual case) is kept as it is.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

import orjson

from ..format.events import (
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    Event,
)
from ..format.gcpause import collector_paused
from .call_order import results_in_call_order
from .ignore_paths import IgnorePath, _States
from .volatile import BUILTIN, Renaming, Volatile

__all__ = [
    "DEFAULT_DROP_KEYS",
    "CanonicalEvent",
    "CanonicalOptions",
    "announced_calls",
    "canonical_bytes",
    "canonicalize",
    "canonicalize_event",
    "canonicalize_run",
    "in_announced_order",
    "renamed",
    "step_in_announced_order",
    "tool_order",
]

#: Keys removed from the top level of every event's ``data``.
DEFAULT_DROP_KEYS: Final = frozenset(
    {
        # identities that change on every run
        "run_id",
        "test_id",
        "event_id",
        "trace_id",
        "span_id",
        # where a forked run came from: provenance, not what the run did
        "forked_from",
        # wall-clock timings
        "total_duration_ms",
        "ttft_ms",
        "latency_ms",
        "duration_ms",
        # where the answer came from, not what it was
        "provider",
        "prompt_hash",
        "messages_hash",
        "key_volatile",
        "model_version",
        "raw",
        # reported as a delta and scored, never a mismatch
        "cost_usd",
        "cumulative_cost_usd",
        "cost_totals",
        "usage",
    }
)


@dataclass(frozen=True, slots=True)
class CanonicalOptions:
    """How events are canonicalized. Extend the defaults with :meth:`extended`.

    ``drop_keys``: keys removed from the top level of every event's ``data``.
    ``ignore_paths``: ``[TYPE:]path`` patterns removed at any depth, e.g.
    ``"tool.call.completed:output.fetched_at"`` or ``"**.request_id"``.
    ``ignore_types``: event types left out of the comparison altogether.
    ``float_digits``: decimal places floats are rounded to.
    ``volatile``: the values renamed by first appearance (:mod:`.volatile`).
    ``exact_paths``: ``[TYPE:]path`` patterns whose values are compared as they are, never
    renamed (a test whose subject is the timestamp itself).
    """

    drop_keys: frozenset[str] = DEFAULT_DROP_KEYS
    ignore_paths: tuple[IgnorePath, ...] = ()
    ignore_types: frozenset[str] = frozenset()
    float_digits: int = 9
    volatile: Volatile = BUILTIN
    exact_paths: tuple[IgnorePath, ...] = ()
    _index: dict[str | None, tuple[IgnorePath, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def extended(
        self,
        *,
        drop_keys: Iterable[str] = (),
        ignore_paths: Iterable[str] = (),
        ignore_types: Iterable[str] = (),
        float_digits: int | None = None,
        volatile: Volatile | None = None,
        exact_paths: Iterable[str] = (),
    ) -> CanonicalOptions:
        """A copy that also drops ``drop_keys``, ignores ``ignore_paths`` and ``ignore_types``
        and keeps ``exact_paths`` as they are; ``float_digits`` and ``volatile`` replace
        this one's when given."""
        return replace(
            self,
            drop_keys=self.drop_keys | frozenset(drop_keys),
            ignore_paths=self.ignore_paths + tuple(IgnorePath.parse(p) for p in ignore_paths),
            ignore_types=self.ignore_types | frozenset(ignore_types),
            float_digits=self.float_digits if float_digits is None else float_digits,
            volatile=self.volatile if volatile is None else volatile,
            exact_paths=self.exact_paths + tuple(IgnorePath.parse(p) for p in exact_paths),
        )

    def volatile_paths_for(self, event_type: str) -> tuple[tuple[str, IgnorePath], ...]:
        """The declared ``LABEL@PATH`` entries that apply to ``event_type``."""
        paths = self.volatile.paths
        if not paths:
            return ()
        return tuple((label, p) for label, p in paths if p.event_type in (None, event_type))

    def exact_for(self, event_type: str) -> tuple[IgnorePath, ...]:
        """The exact paths that apply to ``event_type``."""
        if not self.exact_paths:
            return ()
        return tuple(p for p in self.exact_paths if p.event_type in (None, event_type))

    def paths_for(self, event_type: str) -> tuple[IgnorePath, ...]:
        """The ignore paths that apply to ``event_type`` (cached per type)."""
        found = self._index.get(event_type)
        if found is None:
            found = tuple(p for p in self.ignore_paths if p.event_type in (None, event_type))
            self._index[event_type] = found
        return found


#: What the analyzers' events only measure (cost, tokens, the hash algorithm that depends on
#: whether a key is set), scoped to their types so that a user's own event with a field of
#: the same name is still compared.
ANALYZER_IGNORES: Final = tuple(
    IgnorePath.parse(p)
    for p in (
        "cost.anomaly:step_cost_usd",
        "cost.anomaly:rolling_average_usd",
        "context.window.snapshot:tokens_used",
        "context.window.snapshot:fraction",
        "context.window.warning:tokens_used",
        "context.window.warning:fraction",
        "llm.request.snapshot:algorithm",
    )
)

DEFAULT_OPTIONS: Final = CanonicalOptions(ignore_paths=ANALYZER_IGNORES)


@dataclass(frozen=True, slots=True)
class CanonicalEvent:
    """An event in comparable form: ``key`` is its canonical orjson encoding."""

    step: int
    type: str
    data: dict[str, Any]
    key: bytes
    source: Event


def _round_floats(value: Any, digits: int) -> Any:
    kind = type(value)
    if kind is float:
        return round(value, digits)
    # Strings, ints and the other leaves are kept without a call per leaf.
    if kind is dict:
        return {k: _round_floats(v, digits) if type(v) in _ROUNDED else v for k, v in value.items()}
    if kind is list:
        return [_round_floats(v, digits) if type(v) in _ROUNDED else v for v in value]
    return value


#: The types that _round_floats changes or descends into (exact types, not subclasses).
_ROUNDED: Final = frozenset({float, dict, list})


#: The ignore paths that may still match below a value, each with the positions it reached.
_Live = tuple[tuple[IgnorePath, _States], ...]


def _children(value: Any) -> Iterable[tuple[Any, Any]] | None:
    """The ``(key or index, item)`` pairs of a dict or a list (``None``: a leaf)."""
    if type(value) is dict:
        return value.items()
    if type(value) is list:
        return enumerate(value)
    return None


def _strip_paths(value: Any, live: _Live) -> Any:
    """``value`` without what ``live`` matches below it. What no path can reach any more
    is kept as it is, not copied."""
    items = _children(value)
    if items is None:
        return value
    kept: list[tuple[Any, Any]] = []
    for segment, item in items:
        below: list[tuple[IgnorePath, _States]] = []
        for path, states in live:
            reached = path.advance(states, segment)
            if not reached:
                continue
            if path.accepts(reached):
                break
            below.append((path, reached))
        else:
            kept.append((segment, _strip_paths(item, tuple(below)) if below else item))
    if type(value) is dict:
        return dict(kept)
    return [item for _, item in kept]


#: A secret redacted in ``hashed`` mode (see :mod:`pytest_rollout.safety.redact`).
_HASHED_SECRET: Final = re.compile(rb"\[REDACTED:([A-Za-z0-9_.:-]+?):sha256:[0-9a-f]{64}\]")


def _unhashed(encoded: bytes) -> bytes:
    if b"[REDACTED:" not in encoded:
        return encoded
    return _HASHED_SECRET.sub(rb"[REDACTED:\1]", encoded)


def canonical_bytes(value: Any) -> bytes:
    """The canonical JSON encoding of a value: orjson, keys sorted. Equal bytes mean equal
    values of the same JSON kinds (``1``, ``1.0`` and ``true`` differ)."""
    return _unhashed(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


def _compared_data(event: Event, options: CanonicalOptions) -> dict[str, Any]:
    """A copy of the event's data without what is never compared: the drop keys, the step
    (carried by the event itself) and the ignore paths of its type. Floats are unrounded."""
    drop = options.drop_keys
    data = {k: v for k, v in event.data.items() if k not in drop}
    data.pop("step", None)
    if event.type == LLM_TURN_STARTED:
        ordered = results_in_call_order(data.get("messages"))
        if ordered is not None:
            data["messages"] = ordered
    paths = options.paths_for(event.type)
    if paths:
        data = _strip_paths(data, tuple((p, p.start) for p in paths))
    return data


def canonicalize_event(event: Event, options: CanonicalOptions = DEFAULT_OPTIONS) -> CanonicalEvent:
    """The canonical form of one event."""
    data = _round_floats(_compared_data(event, options), options.float_digits)
    key = orjson.dumps([event.step, event.type, data], option=orjson.OPT_SORT_KEYS)
    unhashed = _unhashed(key)
    if unhashed is not key:
        key = unhashed
        data = orjson.loads(key)[2]
    return CanonicalEvent(event.step, event.type, data, key, event)


def canonicalize(
    events: Iterable[Event], options: CanonicalOptions = DEFAULT_OPTIONS
) -> list[CanonicalEvent]:
    """The canonical form of a run: its events minus ignored types, each canonicalized, with
    the tool events of each step in the order its turn announced the calls, and the run's
    volatile values renamed by first appearance in that order."""
    return canonicalize_run(events, options)[0]


def canonicalize_run(
    events: Iterable[Event], options: CanonicalOptions = DEFAULT_OPTIONS
) -> tuple[list[CanonicalEvent], Renaming]:
    """:func:`canonicalize`, and the renaming of the run's volatile values (which value
    each placeholder stands for, and where it first appeared)."""
    ignored = options.ignore_types
    ordered = in_announced_order(events if isinstance(events, Sequence) else list(events))
    renaming = Renaming(options.volatile)
    # Many small containers without cycles: the cyclic collector would only re-scan them.
    with collector_paused():
        found = [canonicalize_event(e, options) for e in ordered if e.type not in ignored]
        if options.volatile.active:
            found = [renamed(c, options, renaming) for c in found]
    return found, renaming


def renamed(
    canonical: CanonicalEvent, options: CanonicalOptions, renaming: Renaming
) -> CanonicalEvent:
    """``canonical`` with its volatile values renamed, ``renaming`` having seen the run's
    events before it (``canonical`` itself when it holds none). The values at the exact
    paths of its type stay as they are."""
    source = canonical.source
    key = canonical.key
    by_path = options.volatile_paths_for(canonical.type)
    if by_path:
        live = tuple((p, p.start, label) for label, p in by_path)
        named = _named_at_paths(canonical.data, live, renaming, source)
        if named is not canonical.data:
            key = orjson.dumps([canonical.step, canonical.type, named], option=orjson.OPT_SORT_KEYS)
    key = renaming.rename(key, source)
    if key is canonical.key:
        return canonical
    data = orjson.loads(key)[2]
    exact = options.exact_for(canonical.type)
    if exact:
        data = _kept_exact(data, canonical.data, tuple((p, p.start) for p in exact))
    # Sorted again: a renamed key may sort elsewhere than the value it stands for.
    key = orjson.dumps([canonical.step, canonical.type, data], option=orjson.OPT_SORT_KEYS)
    return CanonicalEvent(canonical.step, canonical.type, data, key, canonical.source)


def _named_at_paths(
    value: Any,
    live: tuple[tuple[IgnorePath, _States, str], ...],
    renaming: Renaming,
    source: Event,
) -> Any:
    """``value`` with each scalar a ``LABEL@PATH`` entry reaches replaced by its label's
    placeholder (``value`` itself when none is reached)."""
    items = _children(value)
    if items is None:
        return value
    changed = False
    result: list[tuple[Any, Any]] = []
    for segment, item in items:
        below: list[tuple[IgnorePath, _States, str]] = []
        new = item
        for path, states, label in live:
            reached = path.advance(states, segment)
            if reached and path.accepts(reached) and type(item) not in (dict, list):
                new = renaming.name(label, canonical_bytes(item), source)
                break
            if reached:
                below.append((path, reached, label))
        else:
            if below:
                new = _named_at_paths(item, tuple(below), renaming, source)
        changed |= new is not item
        result.append((segment, new))
    if not changed:
        return value
    return dict(result) if type(value) is dict else [item for _, item in result]


def _kept_exact(renamed_value: Any, plain: Any, live: _Live) -> Any:
    """``renamed_value`` with what ``live`` matches taken from ``plain``, as it was."""
    if type(renamed_value) is dict and type(plain) is dict:
        items: Iterable[tuple[Any, Any]] = renamed_value.items()
        result: Any = {}
    elif type(renamed_value) is list and type(plain) is list and len(plain) == len(renamed_value):
        items = enumerate(renamed_value)
        result = list(renamed_value)
    else:
        return renamed_value
    for segment, item in items:
        before = plain[segment] if type(plain) is list else plain.get(segment, _NONE)
        below: list[tuple[IgnorePath, _States]] = []
        taken = False
        for path, states in live:
            reached = path.advance(states, segment)
            if reached and path.accepts(reached):
                taken = before is not _NONE
                break
            if reached:
                below.append((path, reached))
        if taken:
            result[segment] = before
        elif below and before is not _NONE:
            result[segment] = _kept_exact(item, before, tuple(below))
        else:
            result[segment] = item
    return result


_NONE: Final[Any] = object()


# -- announcement order ------------------------------------------------------------------

#: The event types put in announcement order within a step.
TOOL_TYPES: Final = frozenset({TOOL_CALL_STARTED, TOOL_CALL_COMPLETED})


def announced_calls(data: Mapping[str, Any]) -> list[str]:
    """The ids of the tool calls an ``llm.turn.completed`` announced, in order."""
    calls = data.get("tool_calls")
    if not calls or type(calls) is not list:
        return []
    return [
        c["id"]
        for c in calls
        if (type(c) is dict or isinstance(c, Mapping)) and isinstance(c.get("id"), str)
    ]


def tool_order(announced: Sequence[str], tools: Sequence[Event]) -> list[int] | None:
    """Where each of a step's tool events goes in announcement order (``result[k]`` is the
    index in ``tools`` of the k-th event), or ``None`` when they are in that order already.

    A call's place is the index of its id among the ids ``announced`` (a repeated id takes
    its announced places in turn, and a completion the place of the earliest open start of
    its id); its start comes before its completion. Events whose call was not announced
    keep their relative order, after the announced ones.
    """
    if _plainly_in_order(announced, tools):
        return None
    places: dict[str, deque[int]] = {}
    for index, announced_id in enumerate(announced):
        places.setdefault(announced_id, deque()).append(index)
    unknown = len(announced)
    started: dict[str, deque[int]] = {}
    keys: list[tuple[int, int, int]] = []
    for position, event in enumerate(tools):
        call_id = event.data.get("call_id")
        place = unknown
        if type(call_id) is str:
            if event.type == TOOL_CALL_STARTED:
                free = places.get(call_id)
                if free:
                    place = free.popleft()
                    started.setdefault(call_id, deque()).append(place)
            elif opened := started.get(call_id):
                place = opened.popleft()
        phase = 0 if place == unknown or event.type == TOOL_CALL_STARTED else 1
        keys.append((place, phase, position))
    if all(map(operator.lt, keys, itertools.islice(keys, 1, None))):
        return None
    return [position for _, _, position in sorted(keys)]


def _plainly_in_order(announced: Sequence[str], tools: Sequence[Event]) -> bool:
    """The usual case, told at little cost: the calls start in the order announced, and
    each completion ends the one call open (a sufficient test, not a necessary one)."""
    count = len(announced)
    started = 0
    open_id: Any = None
    for event in tools:
        call_id = event.data.get("call_id")
        if event.type == TOOL_CALL_STARTED:
            if started >= count or announced[started] != call_id:
                return False
            started += 1
            open_id = call_id if open_id is None else _SEVERAL
        elif open_id is _SEVERAL or open_id is None or open_id != call_id:
            return False
        else:
            open_id = None
    return True


#: More than one call is open.
_SEVERAL: Final[Any] = object()


def step_in_announced_order(events: Sequence[Event]) -> list[Event] | None:
    """The events of one step with its tool events in announcement order (each other event
    keeps its place), or ``None`` when they are in that order already."""
    announced: list[str] = []
    slots: list[int] = []
    for index, event in enumerate(events):
        kind = event.type
        if kind in TOOL_TYPES:
            slots.append(index)
        elif kind == LLM_TURN_COMPLETED:
            announced.extend(announced_calls(event.data))
    if len(slots) < 2:
        return None
    order = tool_order(announced, [events[i] for i in slots])
    if order is None:
        return None
    ordered = list(events)
    for slot, source in zip(slots, order, strict=True):
        ordered[slot] = events[slots[source]]
    return ordered


def in_announced_order(events: Sequence[Event]) -> Sequence[Event]:
    """A run with the tool events of each step (each run of events at one step) in the order
    its turn announced the calls; ``events`` itself when they are in that order already."""
    steps = [e.step for e in events]
    changes = itertools.compress(range(1, len(steps)), map(operator.ne, steps[1:], steps))
    result: list[Event] | None = None
    for start, stop in itertools.pairwise([0, *changes, len(steps)]):
        if stop - start < 2:
            continue
        ordered = step_in_announced_order(events[start:stop])
        if ordered is not None:
            if result is None:
                result = list(events)
            result[start:stop] = ordered
    return events if result is None else result


def arguments_hash(arguments: Any) -> str:
    """sha256 of a tool call's canonical arguments: how replay and the integrity check know
    a call for the one recorded."""
    return hashlib.sha256(canonical_bytes(arguments)).hexdigest()
