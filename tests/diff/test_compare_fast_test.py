"""The comparison's fast test of two events never calls a pair equal that canonical keys call
different: every status ``compare`` gives is the status that comparing the canonical key of
every event gives (docs/replay.md, "What is compared").

The values drawn are the look-alikes the fast test must tell apart: ``1``, ``1.0`` and
``true``; a tuple and the equal list; ``NaN`` and ``null``; ``0.0`` and ``-0.0``; floats equal
to the compared digits; keys in another order; keys that the default options drop.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rollout.diff.canonical import DEFAULT_OPTIONS, CanonicalOptions, canonicalize_event
from pytest_rollout.diff.compare import StepStatus, compare
from pytest_rollout.format.events import Event

LEAVES = st.sampled_from(
    [0, 1, 1.0, True, False, None, 0.0, -0.0, math.nan, 0.1 + 0.2, 0.3, 1e-12, 2e-12, "1", "a"]
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from(["x", "y", "latency_ms"]), inner, max_size=3),
    ),
    max_leaves=6,
)
#: The data of one event: keys the comparison keeps, and ``latency_ms``, which it drops.
DATA = st.dictionaries(st.sampled_from(["a", "b", "latency_ms"]), VALUES, max_size=3)


def _reshaped(value: Any, leaf: Any) -> Any:
    """``value`` with each list made a tuple and each tuple a list, each dict's keys in
    reverse order, and each leaf passed through ``leaf``."""
    if isinstance(value, dict):
        return {k: _reshaped(v, leaf) for k, v in reversed(value.items())}
    if isinstance(value, list):
        return tuple(_reshaped(v, leaf) for v in value)
    if isinstance(value, tuple):
        return [_reshaped(v, leaf) for v in value]
    return leaf(value)


#: For each leaf, one that is equal (``==``) or encodes alike, and is not the same JSON.
_TWIN: dict[Any, Any] = {1: 1.0, 0: False, None: math.nan, 0.3: 0.1 + 0.2, 1e-12: 2e-12}
#: Ways to make data that look like ``data`` to some shortcut.
LOOK_ALIKES: list[Callable[[dict[str, Any]], Any]] = [
    lambda data: _reshaped(data, lambda v: v),
    lambda data: _reshaped(data, lambda v: _TWIN.get(v, v) if type(v) is not bool else v),
    lambda data: {k: _reshaped(v, lambda x: x) if k == "a" else v for k, v in data.items()},
]


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[Event], list[Event]]:
    """Two runs of custom events over the same steps, ``b`` a copy of ``a`` with some data
    replaced, reordered or reshaped."""
    steps = draw(st.lists(st.integers(1, 3), min_size=1, max_size=6).map(sorted))
    a: list[Event] = [Event(0, "t", "run.started", {}, 0, 1)]
    b: list[Event] = [Event(0, "t", "run.started", {}, 0, 1)]
    for seq, step in enumerate(steps, 1):
        data = draw(DATA)
        change = draw(st.integers(0, len(LOOK_ALIKES) + 1))  # the same, a look-alike, another
        if change < len(LOOK_ALIKES):
            other = LOOK_ALIKES[change](data)
        else:
            other = data if change == len(LOOK_ALIKES) else draw(DATA)
        a.append(Event(seq, "t", "hook.note", {**data, "step": step}, step, seq + 1))
        b.append(Event(seq, "t", "hook.note", {**other, "step": step}, step, seq + 1))
    return a, b


def by_canonical_keys(
    a: list[Event], b: list[Event], options: CanonicalOptions
) -> list[tuple[int, StepStatus]]:
    """The status of each step as comparing every event's canonical key gives it."""
    keys_a: dict[int, list[bytes]] = {}
    keys_b: dict[int, list[bytes]] = {}
    for events, keys in ((a, keys_a), (b, keys_b)):
        for event in events:
            keys.setdefault(event.step, []).append(canonicalize_event(event, options).key)
    statuses = []
    for step in sorted(keys_a.keys() | keys_b.keys()):
        if step not in keys_b:
            statuses.append((step, StepStatus.ONLY_IN_A))
        elif step not in keys_a:
            statuses.append((step, StepStatus.ONLY_IN_B))
        elif keys_a[step] == keys_b[step]:
            statuses.append((step, StepStatus.IDENTICAL))
        else:
            statuses.append((step, StepStatus.DIVERGED))
    return statuses


OPTIONS = [DEFAULT_OPTIONS, DEFAULT_OPTIONS.extended(ignore_paths=["hook.note:a.x"])]


@settings(max_examples=150, deadline=None)
@given(pair=runs(), options=st.sampled_from(OPTIONS))
def test_every_status_is_that_of_the_canonical_keys(
    pair: tuple[list[Event], list[Event]], options: CanonicalOptions
) -> None:
    a, b = pair
    got = [(s.step, s.status) for s in compare(a, b, options).steps]
    assert got == by_canonical_keys(a, b, options)


def test_a_nan_is_not_taken_for_null() -> None:
    # orjson writes NaN as null: the bytes alone would call these two equal.
    a = [Event(0, "t", "run.started", {}, 0, 1), Event(1, "t", "hook.note", {"v": None}, 0, 2)]
    b = [Event(0, "t", "run.started", {}, 0, 1), Event(1, "t", "hook.note", {"v": math.nan}, 0, 2)]
    reference: Any = canonicalize_event(a[1]).key == canonicalize_event(b[1]).key
    assert compare(a, b).identical is reference
