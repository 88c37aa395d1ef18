"""The step-aligned comparison of two runs (docs/replay.md).

Both runs are canonicalized and grouped by step; steps are walked in order and each is
``identical``, ``diverged``, ``only_in_a`` or ``only_in_b``. Two events are equal exactly
when their canonical bytes are; a cheaper test that implies it is tried first (see
``_fast_test``), so two identical runs cost one light pass and no diff. Only the first
differing event of the first divergent step is described field by field, with deepdiff;
everything after it is counted as downstream damage.

Tool events are compared in the order each step's turn announced the calls (see
:mod:`~pytest_rollout.diff.canonical`). Only the steps from the first event that differs as
recorded on are checked for that order and put in it, so runs that agree pay nothing for it.
"""

from __future__ import annotations

import collections
import itertools
import math
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Final

import orjson

from ..format.events import LLM_TURN_COMPLETED, Event, JsonEvents
from ..format.gcpause import collector_paused
from ..format.ids import align_call_ids
from .agents import agent_pair
from .canonical import (
    DEFAULT_OPTIONS,
    CanonicalEvent,
    CanonicalOptions,
    _compared_data,
    canonical_bytes,
    canonicalize_event,
    in_announced_order,
    step_in_announced_order,
)
from .volatile import Renaming
from .volatile_runs import may_hold_volatile, renamed_pair, shown_as_recorded

__all__ = [
    "Comparison",
    "FieldChange",
    "FirstDivergence",
    "StepResult",
    "StepStatus",
    "compare",
]


class StepStatus(StrEnum):
    IDENTICAL = "identical"
    DIVERGED = "diverged"
    ONLY_IN_A = "only_in_a"
    ONLY_IN_B = "only_in_b"


@dataclass(frozen=True, slots=True)
class StepResult:
    step: int
    status: StepStatus


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field-level difference. ``path`` reads like ``data.tool_calls[0].arguments.city``;
    ``kind`` is ``changed``, ``added`` (only in b) or ``removed`` (only in a)."""

    path: str
    kind: str
    a: Any
    b: Any


_MISSING: Final[Any] = object()


@dataclass(frozen=True, slots=True)
class FirstDivergence:
    """The headline: the first step where the runs part, and how.

    ``a_events``/``b_events`` are everything each run did at that step (in order);
    ``index`` is the position of the first differing event inside the step, and
    ``a_event``/``b_event`` that event on each side (``None`` where the side has none).
    """

    step: int
    status: StepStatus
    index: int
    a_events: tuple[Event, ...]
    b_events: tuple[Event, ...]
    a_event: Event | None
    b_event: Event | None
    changes: tuple[FieldChange, ...]


@dataclass(frozen=True, slots=True)
class Comparison:
    """The result of :func:`compare`. ``a`` is the reference run (the golden in pytest)."""

    steps: tuple[StepResult, ...]
    first: FirstDivergence | None
    #: The renaming of each run's volatile values (``a``'s, ``b``'s), when either held any.
    renamings: tuple[Renaming, Renaming] | None = None

    @property
    def identical(self) -> bool:
        return self.first is None

    def count(self, status: StepStatus) -> int:
        return sum(1 for s in self.steps if s.status is status)

    @property
    def last_identical_step(self) -> int | None:
        """The last step before the first divergence (``None`` when step 0 already differs)."""
        if self.first is None:
            return self.steps[-1].step if self.steps else None
        before = [s.step for s in self.steps if s.step < self.first.step]
        return before[-1] if before else None


#: A value orjson refuses without a ``default``: its event is decided by the canonical keys.
_UNENCODABLE: Final = object()

# Options of the fast test (see _fast_test): with no `default`, orjson refuses (TypeError)
# instead of encoding like their plain counterparts the subclasses of str, int, dict and
# list, and dataclasses.
_FAST_OPTION: Final = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS
#: An event's step, type and data, as the fast test encodes them.
_ENCODED_PART: Final = operator.itemgetter(4, 2, 3)


class _Run:
    """One side of a comparison: its events (the ignored types left out), grouped by step,
    and their canonical forms, made only for the events that need them."""

    __slots__ = ("canonical", "groups", "options", "reordered", "sources")

    def __init__(self, events: Sequence[Event], options: CanonicalOptions) -> None:
        self.options = options
        ignored = options.ignore_types
        if LLM_TURN_COMPLETED in ignored:
            # The announcements are about to be left out: order the tool events first.
            events = in_announced_order(events)
        self.sources = [e for e in events if e.type not in ignored] if ignored else list(events)
        #: The first index :meth:`reorder` has moved events at (past the end: none).
        self.reordered = len(self.sources)
        self.canonical: dict[int, CanonicalEvent] = {}
        # The grouping of itertools.groupby into a dict: a step that comes back after
        # another one keeps its last run of events.
        steps = [e.step for e in self.sources]
        changes = itertools.compress(range(1, len(steps)), map(operator.ne, steps[1:], steps))
        bounds = [0, *changes, len(steps)]
        self.groups = {steps[i]: range(i, j) for i, j in itertools.pairwise(bounds) if i < j}

    def reorder(self, span: range | None) -> None:
        """Put the tool events of the step at ``span`` in announcement order."""
        if span is None or len(span) < 2:
            return
        ordered = step_in_announced_order(self.sources[span.start : span.stop])
        if ordered is None:
            return
        self.sources[span.start : span.stop] = ordered
        for index in span:
            self.canonical.pop(index, None)
        self.reordered = min(self.reordered, span.start)

    def exact(self, index: int) -> CanonicalEvent:
        """The canonical form of event ``index`` (computed once)."""
        found = self.canonical.get(index)
        if found is None:
            found = self.canonical[index] = canonicalize_event(self.sources[index], self.options)
        return found


#: Whether two events are equal by the fast test of :func:`_fast_test` (``False`` decides
#: nothing: the canonical keys do).
FastTest = Callable[[Event, Event], bool]


def _fast_test(options: CanonicalOptions, shared: list[Event]) -> FastTest:
    """A test of two events that, when it says they are equal, implies equal canonical keys.

    Canonical keys (sorted keys, rounded floats) cost a walk of every event. The test looks
    at the keys of the data that are kept (the drop keys and ignore paths applied), in
    insertion order, then compares those keys' values with ``==``, then the orjson bytes,
    unrounded, of the step, the type and the values. Equal keys, ``==`` values *and* equal
    bytes imply equal canonical keys: equal bytes fix every value and its JSON kind (``1``,
    ``1.0`` and ``true`` encode differently) and so the result of rounding and of sorting
    keys; ``==`` rules out a tuple where the other side has a list (rounding descends into
    lists only) and a ``NaN`` where the other side has ``null`` (orjson writes both as
    ``null``), and the options of the encoding rule out the other look-alikes. Any other
    pair is decided by the exact canonical keys, so every outcome is that of comparing
    canonical keys throughout. (One look-alike is left, and no rollout file can hold it: a
    member of a float-valued Enum, which canonicalization does not round, facing the equal
    plain float. Such a pair is equal here, as their values are.)

    The two events are tested in one call, and nothing is kept: keeping 100k encodings
    costs more in memory traffic than making them.

    Two events of the same type and step whose data is the same object are equal without
    a look at it (runs loaded together share the data of their equal lines: see
    :func:`~pytest_rollout.format.loader.load_pair`). Such events are put in ``shared``,
    for :func:`compare` to check that they can be canonicalized.
    """
    kept_of = _kept_values(options.drop_keys | {"step"})
    with_paths = _WithPaths(options)
    dumps = orjson.dumps

    def same(x: Event, y: Event) -> bool:
        _, _, kind, data_x, step_x, _ = x
        _, _, kind_y, data_y, step_y, _ = y
        if kind != kind_y or step_x != step_y:
            return False
        if data_x is data_y:
            shared.append(x)
            return True
        if with_paths[kind]:
            compared_x, compared_y = _compared_data(x, options), _compared_data(y, options)
            if tuple(compared_x) != tuple(compared_y):
                return False
            values_x: Any = tuple(compared_x.values())
            values_y: Any = tuple(compared_y.values())
        else:
            keys = tuple(data_x)
            kept, read_x = kept_of(keys)
            other = tuple(data_y)
            if other == keys:
                read_y = read_x
            else:
                kept_y, read_y = kept_of(other)
                if kept_y != kept:
                    return False
            values_x, values_y = read_x(data_x), read_y(data_y)
        if values_x != values_y:
            return False
        try:
            return dumps((step_x, kind, values_x), option=_FAST_OPTION) == dumps(
                (step_y, kind_y, values_y), option=_FAST_OPTION
            )
        except TypeError:
            return False  # not all JSON: decided by the canonical keys

    return same


class _WithPaths(dict[str, bool]):
    """Whether ignore paths apply to each event type met (asked once a type, not once an
    event)."""

    def __init__(self, options: CanonicalOptions) -> None:
        super().__init__()
        self._paths_for = options.paths_for if options.ignore_paths else None

    def __missing__(self, kind: str) -> bool:
        found = self[kind] = self._paths_for is not None and bool(self._paths_for(kind))
        return found


def _kept_values(
    drop: frozenset[str],
) -> Callable[[tuple[str, ...]], tuple[tuple[str, ...], Callable[[Any], Any]]]:
    """For the keys of an event's data, in order: the keys kept (not in ``drop``) and a
    reader of their values. Events of one type share a few key orders, so each is worked
    out once; reading the kept values replaces a filtered copy of every event's data."""
    known: dict[tuple[str, ...], tuple[tuple[str, ...], Callable[[Any], Any]]] = {}

    def kept_of(keys: tuple[str, ...]) -> tuple[tuple[str, ...], Callable[[Any], Any]]:
        found = known.get(keys)
        if found is not None:
            return found
        if not all(type(k) is str for k in keys):  # not JSON: decided by the canonical keys
            found = (), lambda data: _UNENCODABLE
        else:
            kept = tuple(k for k in keys if k not in drop)
            if len(kept) == 1:
                only = kept[0]
                found = kept, lambda data: (data[only],)
            else:
                found = kept, operator.itemgetter(*kept) if kept else lambda data: ()
        known[keys] = found
        return found

    return kept_of


def _first_difference(ra: _Run, ia: range, rb: _Run, ib: range, same: FastTest) -> int | None:
    """The first position at which events ``ia`` of ``ra`` and ``ib`` of ``rb`` have different
    canonical keys, or ``None`` when they agree over the length of the shorter one."""
    # map() over two iterables stops with the shorter one, like zip().
    unequal = map(
        operator.not_, map(same, ra.sources[ia.start : ia.stop], rb.sources[ib.start : ib.stop])
    )
    for offset in itertools.compress(itertools.count(), unequal):
        i = ia.start + offset
        j = ib.start + offset
        if ra.exact(i).key != rb.exact(j).key:
            return offset
    return None


def compare(
    a: Sequence[Event],
    b: Sequence[Event],
    options: CanonicalOptions = DEFAULT_OPTIONS,
) -> Comparison:
    """Compare run ``a`` (reference) with run ``b`` step by step.

    Provider tool-call ids of ``b`` are first renamed to ``a``'s, matched by position
    (see :mod:`pytest_rollout.format.ids`): they are volatile names, not behaviour. Runs
    that differ as recorded are compared again with their volatile values renamed, when
    either holds one from the first step that differs (:mod:`.volatile_runs`).

    An event whose data cannot be canonicalized raises, as canonicalizing every event
    would. Events found equal because they share their data object are not canonicalized
    at all, so they are encoded to check it, unless both runs are the loader's
    (:class:`~pytest_rollout.format.events.JsonEvents`): data parsed from JSON text always
    encodes.
    """
    a, b = agent_pair(a, b)  # a run that names no agent is compared agent-blind
    from_json = isinstance(a, JsonEvents) and isinstance(b, JsonEvents)
    recorded_b = b
    b = align_call_ids(a, b)
    comparison = _compared(a, b, options, from_json)
    first = comparison.first
    if first is None or not options.volatile.active:
        return comparison  # equal as recorded: equal renamed, as each run renames alike
    if not (may_hold_volatile(a, first.step, options) or may_hold_volatile(b, first.step, options)):
        return comparison
    a, b, originals, renamings = renamed_pair(a, recorded_b, options)
    comparison = _compared(a, b, options, from_json)
    first = comparison.first
    if first is not None:
        first = replace(first, **shown_as_recorded(first, originals))
    return Comparison(comparison.steps, first, renamings)


def _compared(
    a: Sequence[Event], b: Sequence[Event], options: CanonicalOptions, from_json: bool
) -> Comparison:
    ra = _Run(a, options)
    rb = _Run(b, options)
    shared: list[Event] = []
    same = _fast_test(options, shared)
    na = len(ra.sources)
    nb = len(rb.sources)
    with collector_paused():
        differs = _first_difference(ra, range(na), rb, range(nb), same)
        if differs is None and na == nb:
            comparison = Comparison(
                tuple(StepResult(s, StepStatus.IDENTICAL) for s in ra.groups), None
            )
        else:
            # Events before `agreed` are equal pairwise, position by position.
            agreed = min(na, nb) if differs is None else differs
            comparison = _walk_steps(ra, rb, agreed, same)
            # Raise for an event that cannot be canonicalized, as canonicalizing every
            # event would: those before `agreed` have been through `exact` already if the
            # fast test could not encode them (and were not moved since).
            _canonicalize_unencodable(ra, min(agreed, ra.reordered))
            _canonicalize_unencodable(rb, min(agreed, rb.reordered))
        # The events found equal by their shared data were not encoded at all.
        for index in () if from_json else _unencodable(shared):
            canonicalize_event(shared[index], options)
    return comparison


def _walk_steps(ra: _Run, rb: _Run, agreed: int, same: FastTest) -> Comparison:
    """Every step of either run with its status, and the first divergent one described."""
    results: list[StepResult] = []
    first: FirstDivergence | None = None
    identical = StepStatus.IDENTICAL
    for step in sorted(ra.groups.keys() | rb.groups.keys()):
        ia = ra.groups.get(step)
        ib = rb.groups.get(step)
        if ia is not None and ia == ib and ia.stop <= agreed:
            results.append(StepResult(step, identical))  # inside the agreed prefix
            continue
        # Not known to agree: compared in announcement order.
        ra.reorder(ia)
        rb.reorder(ib)
        status = _step_status(ra, ia, rb, ib, same)
        results.append(StepResult(step, status))
        if first is None and status is not identical:
            ea = [ra.exact(i) for i in ia or ()]
            eb = [rb.exact(i) for i in ib or ()]
            first = _describe(step, status, ea, eb)
    return Comparison(tuple(results), first)


def _step_status(
    ra: _Run, ia: range | None, rb: _Run, ib: range | None, same: FastTest
) -> StepStatus:
    """How the events ``ia`` of ``ra`` and ``ib`` of ``rb`` at one step compare (``None``:
    the run has no such step)."""
    if ia is None:
        return StepStatus.ONLY_IN_B
    if ib is None:
        return StepStatus.ONLY_IN_A
    if len(ia) != len(ib):
        return StepStatus.DIVERGED
    if _first_difference(ra, ia, rb, ib, same) is None:
        return StepStatus.IDENTICAL
    return StepStatus.DIVERGED


def _canonicalize_unencodable(run: _Run, agreed: int) -> None:
    """Canonicalize the events from ``agreed`` on that the fast test cannot encode, so that
    one that cannot be canonicalized raises."""
    for offset in _unencodable(run.sources[agreed:]):
        run.exact(agreed + offset)


def _unencodable(events: Sequence[Event]) -> Iterator[int]:
    """The positions of the events that the fast test could not encode. It encodes part of
    an event (step, type, some of the data's values): when the step, type and whole data of
    every event encode, with the same options, none of them could fail it."""
    try:
        # Each encoding is dropped as it is made (a deque of no length consumes in C).
        parts = map(_ENCODED_PART, events)
        options = itertools.repeat(_FAST_OPTION)
        collections.deque(map(orjson.dumps, parts, itertools.repeat(None), options), maxlen=0)
        return
    except TypeError:
        pass
    for offset, event in enumerate(events):
        try:
            orjson.dumps(_ENCODED_PART(event), option=_FAST_OPTION)
        except TypeError:
            yield offset


def _describe(
    step: int, status: StepStatus, ea: list[CanonicalEvent], eb: list[CanonicalEvent]
) -> FirstDivergence:
    index = next(
        (i for i, (x, y) in enumerate(zip(ea, eb, strict=False)) if x.key != y.key),
        min(len(ea), len(eb)),
    )
    xa = ea[index] if index < len(ea) else None
    xb = eb[index] if index < len(eb) else None
    return FirstDivergence(
        step=step,
        status=status,
        index=index,
        a_events=tuple(e.source for e in ea),
        b_events=tuple(e.source for e in eb),
        a_event=xa.source if xa else None,
        b_event=xb.source if xb else None,
        changes=field_changes(xa, xb),
    )


def _view(event: CanonicalEvent | None) -> dict[str, Any]:
    return {} if event is None else {"type": event.type, "data": event.data}


def field_changes(a: CanonicalEvent | None, b: CanonicalEvent | None) -> tuple[FieldChange, ...]:
    """The field-level differences between two canonical events, via deepdiff.

    An event only one side has is one change at ``(event)``, ``added`` or ``removed``.
    """
    if a is None or b is None:
        if a is None and b is None:
            return ()
        if a is None:
            return (FieldChange("(event)", "added", _MISSING, _view(b)),)
        return (FieldChange("(event)", "removed", _view(a), _MISSING),)
    single = _single_change(_view(a), _view(b))
    if single is not None:
        return (single,)
    from deepdiff import DeepDiff  # noqa: PLC0415  (costs ~150 ms: only a failure needs it)

    diff = DeepDiff(_view(a), _view(b), view="tree", ignore_order=False)
    changes: list[FieldChange] = []
    for report, kind in _REPORTS:
        for level in diff.get(report, ()):
            path = _dotted(level.path(output_format="list"))
            left = _MISSING if kind == "added" else level.t1
            right = _MISSING if kind == "removed" else level.t2
            changes.append(FieldChange(path, kind, left, right))
    if not changes and a.key != b.key:
        # deepdiff matches list items by hash, and 1, 1.0 and True hash alike: find the
        # first difference in JSON kind or value by hand.
        found = _exact_difference(_view(a), _view(b), [])
        if found is not None:
            changes.append(found)
    changes.sort(key=lambda c: _PATH_ORDER.get(c.path.split(".", 1)[0], 9))
    return tuple(changes)


#: The leaf types :func:`_single_change` describes (``bool`` is a type of its own here).
_LEAVES: Final = frozenset({str, int, float, bool, type(None)})
#: Longer lists are left to deepdiff, which may pair their items another way.
_SHORT_LIST: Final = 64


def _single_change(x: Any, y: Any) -> FieldChange | None:
    """The one change between two views that differ in exactly one leaf, nothing else: the
    same keys, list lengths and JSON kinds everywhere, and one value of the same type that
    is unequal. Deepdiff describes such a pair with that one ``changed`` path, so it need
    not be imported; any other pair (``None``) is left to it."""
    found: list[FieldChange] = []
    if not _leaf_changes(x, y, [], found) or len(found) != 1:
        return None
    return found[0]


def _leaf_changes(x: Any, y: Any, path: list[str | int], found: list[FieldChange]) -> bool:
    """Collect in ``found`` the unequal leaves of ``x`` and ``y``; ``False`` as soon as the
    pair is not of the kind :func:`_single_change` describes (or has a second change)."""
    kind = type(x)
    if kind is not type(y):
        return False
    if kind is dict:
        if x.keys() != y.keys() or not all(type(k) is str for k in x):
            return False
        return all(_leaf_changes(v, y[k], [*path, k], found) for k, v in x.items())
    if kind is list:
        if len(x) != len(y) or len(x) > _SHORT_LIST:
            return False
        return all(
            _leaf_changes(p, q, [*path, i], found)
            for i, (p, q) in enumerate(zip(x, y, strict=True))
        )
    if kind not in _LEAVES or (kind is float and not (math.isfinite(x) and math.isfinite(y))):
        return False
    if x == y:
        # Equal floats of another sign (0.0, -0.0) differ in canonical form: left to deepdiff.
        return kind is not float or canonical_bytes(x) == canonical_bytes(y)
    found.append(FieldChange(_dotted(path), "changed", x, y))
    return len(found) == 1


def _same(x: Any, y: Any) -> bool:
    return type(x) is type(y) and canonical_bytes(x) == canonical_bytes(y)


def _exact_difference(x: Any, y: Any, path: list[str | int]) -> FieldChange | None:
    """The first place where ``x`` and ``y`` differ in value or JSON kind."""
    if type(x) is dict and type(y) is dict:
        return _dict_difference(x, y, path)
    if type(x) is list and type(y) is list:
        return _list_difference(x, y, path)
    return None if _same(x, y) else FieldChange(_dotted(path), "changed", x, y)


def _dict_difference(
    x: dict[Any, Any], y: dict[Any, Any], path: list[str | int]
) -> FieldChange | None:
    for key in [*x, *(k for k in y if k not in x)]:
        if key not in y:
            return FieldChange(_dotted([*path, key]), "removed", x[key], _MISSING)
        if key not in x:
            return FieldChange(_dotted([*path, key]), "added", _MISSING, y[key])
        if not _same(x[key], y[key]):
            return _exact_difference(x[key], y[key], [*path, key])
    return None


def _list_difference(x: list[Any], y: list[Any], path: list[str | int]) -> FieldChange | None:
    for index, (p, q) in enumerate(zip(x, y, strict=False)):
        if not _same(p, q):
            return _exact_difference(p, q, [*path, index])
    index = min(len(x), len(y))
    if len(x) > len(y):
        return FieldChange(_dotted([*path, index]), "removed", x[index], _MISSING)
    if len(y) > len(x):
        return FieldChange(_dotted([*path, index]), "added", _MISSING, y[index])
    return None


_REPORTS: Final = (
    ("type_changes", "changed"),
    ("values_changed", "changed"),
    ("dictionary_item_removed", "removed"),
    ("dictionary_item_added", "added"),
    ("iterable_item_removed", "removed"),
    ("iterable_item_added", "added"),
)
_PATH_ORDER: Final = {"type": 0, "data": 1}


def _dotted(parts: list[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(event)"


def is_missing(value: Any) -> bool:
    """True for the placeholder of a side that has no value at a changed path."""
    return value is _MISSING
