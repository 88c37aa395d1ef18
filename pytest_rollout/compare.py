"""The step-aligned comparison of two runs (DESIGN 4).

Both runs are canonicalized and grouped by step; steps are walked in order and each is
``identical``, ``diverged``, ``only_in_a`` or ``only_in_b``. Equal steps are recognised by
comparing lists of canonical bytes, so two identical runs cost one pass and no diff. Only
the first differing event of the first divergent step is described field by field, with
deepdiff; everything after it is counted as downstream damage.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from deepdiff import DeepDiff

from .canonical import DEFAULT_OPTIONS, CanonicalEvent, CanonicalOptions, canonicalize
from .events import Event

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


def _group(events: Sequence[CanonicalEvent]) -> dict[int, list[CanonicalEvent]]:
    return {step: list(group) for step, group in itertools.groupby(events, key=lambda e: e.step)}


def compare(
    a: Sequence[Event], b: Sequence[Event], options: CanonicalOptions = DEFAULT_OPTIONS
) -> Comparison:
    """Compare run ``a`` (reference) with run ``b`` step by step."""
    ca = canonicalize(a, options)
    cb = canonicalize(b, options)
    by_a = _group(ca)
    by_b = _group(cb)
    if [e.key for e in ca] == [e.key for e in cb]:
        return Comparison(tuple(StepResult(s, StepStatus.IDENTICAL) for s in by_a), None)
    results: list[StepResult] = []
    first: FirstDivergence | None = None
    for step in sorted(by_a.keys() | by_b.keys()):
        ea = by_a.get(step)
        eb = by_b.get(step)
        if ea is None:
            status = StepStatus.ONLY_IN_B
        elif eb is None:
            status = StepStatus.ONLY_IN_A
        elif [e.key for e in ea] == [e.key for e in eb]:
            status = StepStatus.IDENTICAL
        else:
            status = StepStatus.DIVERGED
        results.append(StepResult(step, status))
        if first is None and status is not StepStatus.IDENTICAL:
            first = _describe(step, status, ea or [], eb or [])
    return Comparison(tuple(results), first)


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
    """The field-level differences between two canonical events, via deepdiff."""
    diff = DeepDiff(_view(a), _view(b), view="tree", ignore_order=False)
    changes: list[FieldChange] = []
    for report, kind in _REPORTS:
        for level in diff.get(report, ()):
            path = _dotted(level.path(output_format="list"))
            left = _MISSING if kind == "added" else level.t1
            right = _MISSING if kind == "removed" else level.t2
            changes.append(FieldChange(path, kind, left, right))
    changes.sort(key=lambda c: _PATH_ORDER.get(c.path.split(".", 1)[0], 9))
    return tuple(changes)


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
