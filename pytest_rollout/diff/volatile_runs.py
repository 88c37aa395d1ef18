"""The two runs of a comparison with their volatile values renamed (see :mod:`.volatile`).

Renaming numbers values by first appearance, so it walks a run in order, and runs that
hold no volatile value must not pay for the walk. Two runs are first compared as recorded:
equal, they are equal renamed too (each renames alike). Otherwise only the part of each run
from the first step that differs is looked at, its data encoded in one piece and scanned
once; only runs that may hold a volatile value there are walked, each event that holds one
replaced by its canonical form, renamed, and compared again. The first divergence then shows
the events as they were recorded.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..format.events import Event
from ..format.ids import align_call_ids
from .canonical import CanonicalOptions, canonicalize_event, in_announced_order, renamed
from .volatile import Renaming

__all__ = ["may_hold_volatile", "shown_as_recorded", "volatile_renamed"]

_STEP = operator.attrgetter("step")


def may_hold_volatile(events: Sequence[Event], step: int, options: CanonicalOptions) -> bool:
    """Whether a run may hold a volatile value from the first event at ``step`` or later on:
    that part's data encoded in one piece and scanned once (a run whose data cannot be
    encoded may hold one).

    The steps before are the same in both runs (they compared equal as recorded), so each
    run renames their values alike; only a value from ``step`` on can make the renamed
    runs compare otherwise than the recorded ones."""
    if options.volatile.paths:
        return True  # a value found by its place (epoch seconds) shows in no scan of text
    # The first event at ``step`` or later, found in C: this runs over every event.
    later = map(operator.ge, map(_STEP, events), itertools.repeat(step))
    start = next(itertools.compress(itertools.count(), later), len(events))
    try:
        encoded = orjson.dumps([e.data for e in itertools.islice(events, start, None)])
    except TypeError:
        return True
    return bool(options.volatile.matches(encoded))


def volatile_renamed(
    events: Sequence[Event], options: CanonicalOptions
) -> tuple[Sequence[Event], dict[int, Event], Renaming]:
    """A run with each event that holds a volatile value replaced by its canonical form,
    renamed (numbered in announcement order, as :func:`~.canonical.canonicalize` does); the
    event each replacement stands for, by the replacement's ``id``; and the renaming."""
    renaming = Renaming(options.volatile)
    ignored = options.ignore_types
    replaced: dict[int, Event] = {}
    for event in in_announced_order(events):
        if event.type in ignored:
            continue
        try:
            canonical = canonicalize_event(event, options)
        except TypeError:  # not JSON: the comparison decides, as it does without renaming
            continue
        found = renamed(canonical, options, renaming)
        if found is not canonical:
            replaced[id(event)] = event._replace(data=found.data)
    if not replaced:
        return events, {}, renaming
    run = [replaced.get(id(e), e) for e in events]
    return run, {id(r): e for e, r in zip(events, run, strict=True) if r is not e}, renaming


def renamed_pair(
    a: Sequence[Event], b: Sequence[Event], options: CanonicalOptions
) -> tuple[Sequence[Event], Sequence[Event], dict[int, Event], tuple[Renaming, Renaming]]:
    """Runs ``a`` and ``b`` (as recorded) with their volatile values renamed, ``b``'s call
    ids then aligned to ``a``'s; the event each replacement stands for, by its ``id``; and
    the two renamings.

    Renamed first, then aligned: an id the renaming knows gets the same placeholder in a
    call and in text that quotes it (an agent that writes the call into its next message),
    which aligning first would tell apart; the alignment is for the ids it does not know.
    """
    renamed_a, originals, renaming_a = volatile_renamed(a, options)
    renamed_b, _, renaming_b = volatile_renamed(b, options)
    aligned_b = align_call_ids(renamed_a, renamed_b)
    originals.update((id(r), e) for e, r in zip(b, aligned_b, strict=True) if r is not e)
    return renamed_a, aligned_b, originals, (renaming_a, renaming_b)


#: The fields of a first divergence that show events.
_SHOWN = ("a_events", "b_events", "a_event", "b_event")


def shown_as_recorded(first: Any, originals: Mapping[int, Event]) -> dict[str, Any]:
    """The events a first divergence shows (its ``a_events``, ``b_events``, ``a_event`` and
    ``b_event``) as they were recorded: each renamed replacement swapped for its event."""

    def recorded(value: Any) -> Any:
        if isinstance(value, tuple) and not isinstance(value, Event):
            return tuple(originals.get(id(e), e) for e in value)
        return None if value is None else originals.get(id(value), value)

    return {name: recorded(getattr(first, name)) for name in _SHOWN}
