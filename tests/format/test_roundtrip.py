"""Property tests: record then load, compare a run with itself, canonicalize twice."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rollout.diff.canonical import CanonicalOptions, canonicalize, canonicalize_event
from pytest_rollout.diff.compare import StepStatus, compare
from pytest_rollout.format.events import Event
from pytest_rollout.format.loader import loads
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.format.schema import SCHEMA

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
    max_leaves=12,
)
#: Keys of free-form fields: not the step, and none that the typed schema gives a type
#: (generated values for those are refused by the loader, as they should be).
TYPED_KEYS = frozenset(f.key for fields in SCHEMA.values() for f in fields)
free_keys = text.filter(lambda k: k != "step" and k not in TYPED_KEYS)
payloads = st.dictionaries(free_keys, json_values, max_size=5)

# Types after run.started; the first one is always a turn start, so tool calls are at step >= 1.
BODY_TYPES = [
    "llm.turn.started",
    "llm.turn.completed",
    "tool.call.started",
    "tool.call.completed",
    "usage.delta",
    "hook.note",
]
bodies = st.lists(st.tuples(st.sampled_from(BODY_TYPES), payloads), max_size=12)
terminals = st.tuples(st.sampled_from(["run.completed", "run.failed"]), payloads)


def expected_steps(types: list[str]) -> list[int]:
    """docs/file-format.md's step rule, written out independently of the recorder."""
    steps, step, turn_open = [], 0, False
    for kind in types:
        if kind == "llm.turn.started":
            step, turn_open = step + 1, True
        elif kind == "llm.turn.completed":
            if not turn_open:
                step += 1
            turn_open = False
        steps.append(step)
    return steps


def record(
    start: dict[str, Any],
    body: list[tuple[str, dict[str, Any]]],
    terminal: tuple[str, dict[str, Any]],
    origin: int = 1_782_650_096_000_000_000,
) -> tuple[Recorder, list[tuple[str, dict[str, Any]]]]:
    ticks = itertools.count()
    rec = Recorder(clock=lambda: origin + next(ticks) * 1_000_003)
    emitted = [("run.started", start), ("llm.turn.started", {}), *body, terminal]
    for kind, data in emitted:
        rec.emit(kind, data)
    return rec, emitted


@SETTINGS
@given(payloads, bodies, terminals)
def test_record_then_load_gives_back_what_was_emitted(
    start: dict[str, Any],
    body: list[tuple[str, dict[str, Any]]],
    terminal: tuple[str, dict[str, Any]],
) -> None:
    rec, emitted = record(start, body, terminal)
    assert rec.stats.dropped == rec.stats.encode_errors == rec.stats.write_errors == 0
    events = loads(rec.getvalue()).events
    assert [e.type for e in events] == [kind for kind, _ in emitted]
    assert [e.seq for e in events] == list(range(len(emitted)))
    assert [e.step for e in events] == expected_steps([kind for kind, _ in emitted])
    for event, (_, data) in zip(events, emitted, strict=True):
        assert event.data == {**data, "step": event.step}
    assert rec.rollout().events == events


@SETTINGS
@given(payloads, bodies, terminals)
def test_a_run_compares_identical_to_itself_and_to_a_rerecording(
    start: dict[str, Any],
    body: list[tuple[str, dict[str, Any]]],
    terminal: tuple[str, dict[str, Any]],
) -> None:
    events = record(start, body, terminal)[0].rollout().events
    result = compare(events, events)
    assert result.identical
    assert result.first is None
    assert {s.status for s in result.steps} == {StepStatus.IDENTICAL}
    assert [s.step for s in result.steps] == sorted({e.step for e in events})
    # Recorded again later: every ts differs, the comparison does not.
    again = record(start, body, terminal, origin=1_900_000_000_123_456_789)[0].rollout().events
    assert again[0].ts != events[0].ts
    assert compare(events, again).identical


@SETTINGS
@given(
    st.sampled_from([*BODY_TYPES, "run.started", "run.completed"]),
    st.integers(min_value=0, max_value=1000),
    payloads,
    st.integers(min_value=0, max_value=12),
    st.lists(st.sampled_from(["**.a", "b", "x.*", "hook.note:**.c", "[*]"]), max_size=3),
)
def test_canonicalization_is_idempotent(
    kind: str, step: int, data: dict[str, Any], digits: int, ignore: list[str]
) -> None:
    options = CanonicalOptions().extended(float_digits=digits, ignore_paths=ignore)
    first = canonicalize_event(Event(seq=0, ts="t", type=kind, data=data, step=step), options)
    rebuilt = Event(seq=7, ts="other", type=first.type, data=first.data, step=first.step)
    second = canonicalize_event(rebuilt, options)
    assert second.key == first.key
    assert second.data == first.data


# -- compare against its definition -----------------------------------------------------------
# compare() may take shortcuts; its answer must be the one canonical keys give. Values come
# from a small pool so that equal, look-alike (1, 1.0, true; 0.1 + 0.2 and 0.3) and dropped
# (latency_ms, run_id) values meet often.

small_values = st.recursive(
    st.sampled_from([0, 1, 1.0, True, False, None, 0.3, 0.1 + 0.2, "a"]),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2),
        st.lists(inner, max_size=2).map(tuple),  # in memory only: a tuple is not its list
        st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
    ),
    max_leaves=3,
)
small_data = st.dictionaries(
    st.sampled_from(["a", "b", "latency_ms", "run_id"]), small_values, max_size=2
)
small_runs = st.lists(
    st.tuples(st.sampled_from(["x", "y"]), st.integers(min_value=0, max_value=1), small_data),
    max_size=5,
)


def as_events(spec: list[tuple[str, int, dict[str, Any]]]) -> tuple[Event, ...]:
    steps = itertools.accumulate(bump for _, bump, _ in spec)
    return tuple(
        Event(seq=i, ts=str(i), type=kind, data=data, step=step)
        for i, ((kind, _, data), step) in enumerate(zip(spec, steps, strict=True))
    )


def reference(a: tuple[Event, ...], b: tuple[Event, ...]) -> list[tuple[int, StepStatus]]:
    def keys_by_step(events: tuple[Event, ...]) -> dict[int, list[bytes]]:
        grouped: dict[int, list[bytes]] = {}
        for event in canonicalize(events):
            grouped.setdefault(event.step, []).append(event.key)
        return grouped

    ka, kb = keys_by_step(a), keys_by_step(b)
    out = []
    for step in sorted(ka.keys() | kb.keys()):
        if step not in ka:
            status = StepStatus.ONLY_IN_B
        elif step not in kb:
            status = StepStatus.ONLY_IN_A
        else:
            status = StepStatus.IDENTICAL if ka[step] == kb[step] else StepStatus.DIVERGED
        out.append((step, status))
    return out


@settings(SETTINGS, max_examples=200)
@given(small_runs, small_runs)
def test_compare_agrees_with_canonical_keys(
    spec_a: list[tuple[str, int, dict[str, Any]]], spec_b: list[tuple[str, int, dict[str, Any]]]
) -> None:
    a, b = as_events(spec_a), as_events(spec_b)
    result = compare(a, b)
    expected = reference(a, b)
    assert [(s.step, s.status) for s in result.steps] == expected
    differing = [step for step, status in expected if status is not StepStatus.IDENTICAL]
    assert result.identical is (not differing)
    if differing:
        first = result.first
        assert first is not None
        assert first.step == differing[0]
        ka = [c.key for c in canonicalize(a) if c.step == first.step]
        kb = [c.key for c in canonicalize(b) if c.step == first.step]
        pairs = zip(ka, kb, strict=False)
        same = sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], pairs))
        assert first.index == same
