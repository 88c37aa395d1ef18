"""Unit tests for canonicalization (docs/replay.md): what is compared and what is set aside."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rollout.diff.canonical import (
    DEFAULT_DROP_KEYS,
    CanonicalOptions,
    canonicalize,
    canonicalize_event,
)
from pytest_rollout.diff.ignore_paths import IgnorePath
from pytest_rollout.format.events import Event


def ev(
    kind: str = "tool.call.started",
    data: dict[str, Any] | None = None,
    *,
    step: int = 1,
    seq: int = 3,
    ts: str = "2026-06-28T12:34:56.000000Z",
) -> Event:
    payload = {} if data is None else data
    return Event(seq=seq, ts=ts, type=kind, data=payload, step=step)


def key(kind: str, data: dict[str, Any], options: CanonicalOptions | None = None) -> bytes:
    event = ev(kind, data)
    if options is None:
        return canonicalize_event(event).key
    return canonicalize_event(event, options).key


# -- the envelope and the default drop list -----------------------------------------------


def test_envelope_ts_and_seq_are_not_in_the_key() -> None:
    a = canonicalize_event(ev(data={"name": "x"}, seq=1, ts="2026-01-01T00:00:00.000000Z"))
    b = canonicalize_event(ev(data={"name": "x"}, seq=99, ts="2030-12-31T23:59:59.999999Z"))
    assert a.key == b.key
    assert b"2026" not in a.key
    assert orjson.loads(a.key) == [1, "tool.call.started", {"name": "x"}]


def test_step_and_type_are_in_the_key() -> None:
    base = canonicalize_event(ev(data={"name": "x"}, step=1)).key
    assert canonicalize_event(ev(data={"name": "x"}, step=2)).key != base
    assert canonicalize_event(ev("tool.call.completed", {"name": "x"})).key != base


def test_data_step_is_not_part_of_the_data() -> None:
    event = canonicalize_event(ev(data={"step": 1, "name": "x"}))
    assert event.data == {"name": "x"}
    assert event.step == 1


@pytest.mark.parametrize("dropped", sorted(DEFAULT_DROP_KEYS))
def test_default_drop_keys_are_dropped_at_the_top_level(dropped: str) -> None:
    with_key = {"name": "x", dropped: {"anything": 1.5}}
    assert key("llm.turn.completed", with_key) == key("llm.turn.completed", {"name": "x"})


def test_drop_list_covers_the_design() -> None:
    assert {
        "run_id",
        "event_id",
        "total_duration_ms",
        "ttft_ms",
        "latency_ms",
        "duration_ms",
        "provider",
        "prompt_hash",
        "model_version",
        "raw",
    } <= DEFAULT_DROP_KEYS


def test_nested_drop_keys_are_kept() -> None:
    # search(provider="google") and search(provider="bing") are different calls.
    google = {"name": "search", "arguments": {"provider": "google", "latency_ms": 5}}
    bing = {"name": "search", "arguments": {"provider": "bing", "latency_ms": 5}}
    assert key("tool.call.started", google) != key("tool.call.started", bing)
    assert canonicalize_event(ev(data=google)).data == google


# -- numbers and key order -------------------------------------------------------------------


def test_floats_are_rounded() -> None:
    assert key("x", {"v": 0.1 + 0.2}) == key("x", {"v": 0.3})
    assert key("x", {"v": [{"w": 1.0000000001}]}) == key("x", {"v": [{"w": 1.0}]})
    assert key("x", {"v": 1.00000001}) != key("x", {"v": 1.0})
    assert canonicalize_event(ev(data={"v": [0.1 + 0.2]})).data == {"v": [0.3]}


def test_float_digits_is_configurable() -> None:
    two = CanonicalOptions().extended(float_digits=2)
    assert key("x", {"v": 1.234}, two) == key("x", {"v": 1.2349}, two)
    assert key("x", {"v": 1.234}, two) != key("x", {"v": 1.244}, two)
    assert key("x", {"v": 1.234}) != key("x", {"v": 1.2349})


@pytest.mark.parametrize(
    ("left", "right"),
    [(1, 1.0), (1, True), (1.0, True), (0, False), (0, None), ("1", 1), ([1], [1.0])],
)
def test_numbers_of_different_kinds_differ(left: Any, right: Any) -> None:
    assert key("x", {"v": left}) != key("x", {"v": right})


def test_key_order_does_not_matter() -> None:
    a = key("x", {"b": 1, "a": {"z": 1, "y": 2}})
    b = key("x", {"a": {"y": 2, "z": 1}, "b": 1})
    assert a == b
    assert a == b'[1,"x",{"a":{"y":2,"z":1},"b":1}]'


def test_list_order_matters() -> None:
    assert key("x", {"v": [1, 2]}) != key("x", {"v": [2, 1]})


# -- options ---------------------------------------------------------------------------------


def test_extended_adds_to_the_defaults_and_copies() -> None:
    base = CanonicalOptions()
    more = base.extended(
        drop_keys=["call_id"],
        ignore_paths=["**.request_id"],
        ignore_types=["usage.delta"],
        float_digits=3,
    )
    assert more.drop_keys == DEFAULT_DROP_KEYS | {"call_id"}
    assert more.ignore_paths == (IgnorePath(None, ("**", "request_id")),)
    assert more.ignore_types == frozenset({"usage.delta"})
    assert more.float_digits == 3
    # The original is untouched, and extending again keeps what was added.
    assert base == CanonicalOptions()
    again = more.extended(drop_keys=["name"])
    assert {"call_id", "name"} <= again.drop_keys
    assert again.float_digits == 3
    assert again.ignore_types == frozenset({"usage.delta"})


def test_extra_drop_key() -> None:
    options = CanonicalOptions().extended(drop_keys=["call_id"])
    a = {"call_id": "c1", "name": "x"}
    b = {"call_id": "c2", "name": "x"}
    assert key("tool.call.started", a, options) == key("tool.call.started", b, options)
    assert key("tool.call.started", a) != key("tool.call.started", b)


def test_ignore_types_leave_events_out() -> None:
    events = [ev("hook.note", {"i": 1}), ev("usage.delta", {}), ev("hook.note", {"i": 2})]
    options = CanonicalOptions().extended(ignore_types=["usage.delta"])
    assert [c.type for c in canonicalize(events, options)] == ["hook.note", "hook.note"]
    assert [c.type for c in canonicalize(events)] == ["hook.note", "usage.delta", "hook.note"]
    assert [c.source for c in canonicalize(events, options)] == [events[0], events[2]]


# -- ignore paths ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "event_type", "segments"),
    [
        ("output", None, ("output",)),
        ("a.b", None, ("a", "b")),
        ("a.b[0].*", None, ("a", "b", 0, "*")),
        ("tool_calls[*].id", None, ("tool_calls", "*", "id")),
        ("**.request_id", None, ("**", "request_id")),
        ("a.**", None, ("a", "**")),
        ("tool.call.completed:output.fetched_at", "tool.call.completed", ("output", "fetched_at")),
        ("x:[2][3]", "x", (2, 3)),
    ],
)
def test_ignore_path_syntax(text: str, event_type: str | None, segments: tuple[Any, ...]) -> None:
    assert IgnorePath.parse(text) == IgnorePath(event_type, segments)


@pytest.mark.parametrize("text", ["", "tool.call.completed:"])
def test_empty_ignore_path_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="empty ignore path"):
        IgnorePath.parse(text)


@pytest.mark.parametrize("text", ["[", "a[0"])
def test_malformed_ignore_path_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="ignore path"):
        IgnorePath.parse(text)


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("a.b", ("a", "b"), True),
        ("a.b", ("a",), False),
        ("a.b", ("a", "b", "c"), False),
        ("a.*", ("a", "x"), True),
        ("a.*", ("a", 3), True),
        ("a.*", ("a",), False),
        ("a[0]", ("a", 0), True),
        ("a[0]", ("a", 1), False),
        ("a[0]", ("a", "0"), False),
        ("a[*].id", ("a", 7, "id"), True),
        ("**.request_id", ("request_id",), True),
        ("**.request_id", ("a", 0, "b", "request_id"), True),
        ("**.request_id", ("request_id", "x"), False),
        ("a.**", ("a",), True),
        ("a.**", ("a", "b", 0), True),
        ("a.**.z", ("a", "z"), True),
        ("a.**.z", ("a", "b", "c", "z"), True),
        ("a.**.z", ("b", "z"), False),
    ],
)
def test_ignore_path_matching(pattern: str, path: tuple[Any, ...], matches: bool) -> None:
    assert IgnorePath.parse(pattern).matches("any.type", path) is matches


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**.**.z", ("z",), True),
        ("**.**.z", ("a", "b", "z"), True),
        ("a.**.**", ("a",), True),
        ("a.**.**", ("a", 1, "b"), True),
        ("**.*", (), False),
        ("**.*", ("a",), True),
        ("*.**", ("a", "b", "c"), True),
        ("**.a.**.a", ("a",), False),
        ("**.a.**.a", ("a", "a"), True),
        ("**.a.**.a", ("x", "a", "y", "z", "a"), True),
        ("**.a.**.a", ("x", "a", "y", "z", "a", "b"), False),
        ("a.**.b.**.c", ("a", "b", "c"), True),
        ("a.**.b.**.c", ("a", "c", "b", "x", "c"), True),
        ("a.**.b.**.c", ("a", "c", "b"), False),
        ("**[0]", ("a", 0), True),
        ("**[0]", ("a", "0"), False),
        ("*.*.*", ("a", "b"), False),
        ("*.*.*", ("a", 1, "c"), True),
    ],
)
def test_ignore_path_matching_of_tricky_globs(
    pattern: str, path: tuple[Any, ...], matches: bool
) -> None:
    assert IgnorePath.parse(pattern).matches("any.type", path) is matches


def test_a_run_of_double_stars_is_one() -> None:
    assert IgnorePath.parse("x:**.**.**.a.**.**") == IgnorePath("x", ("**", "a", "**"))


def _reference(pattern: tuple[str | int, ...], path: tuple[str | int, ...]) -> bool:
    """The definition of a match, tried every way (exponential: small inputs only)."""
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_reference(rest, path[i:]) for i in range(len(path) + 1))
    return bool(path) and head in ("*", path[0]) and _reference(rest, path[1:])


_PATTERN_SEGMENTS = st.sampled_from(["**", "*", "a", "b", 0, 1])
_PATH_SEGMENTS = st.sampled_from(["a", "b", "c", 0, 1, "0"])


@settings(deadline=None, database=None)
@given(
    st.lists(_PATTERN_SEGMENTS, min_size=1, max_size=7),
    st.lists(_PATH_SEGMENTS, max_size=7),
)
def test_matching_agrees_with_the_definition(
    pattern: list[str | int], path: list[str | int]
) -> None:
    assert IgnorePath(None, tuple(pattern)).matches("t", tuple(path)) is _reference(
        tuple(pattern), tuple(path)
    )


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1, "z": 2}
    for i in range(depth):
        value = {f"k{i}": value, "items": [1, {"z": 3}]}
    return value


def test_many_double_stars_against_deep_paths_stay_cheap() -> None:
    # Tried every way, 200 "**" against 60 segments are more than 10^60 ways; the
    # matcher keeps at most one position per segment of the pattern instead.
    deep = tuple(f"k{i}" for i in range(60))
    stars = IgnorePath(None, ("**",) * 200 + ("nowhere",))
    assert not stars.matches("t", deep)
    assert stars.matches("t", (*deep, "nowhere"))
    alternating = IgnorePath.parse(".".join(["**.*"] * 100) + ".nowhere")
    assert not alternating.matches("t", deep * 2)
    assert alternating.matches("t", (*deep * 2, "nowhere"))


def _depths_of(value: Any, key: str, depth: int = 1) -> list[int]:
    """How many segments long the path to each ``key`` in ``value`` is."""
    if isinstance(value, dict):
        found = [depth] if key in value else []
        return found + [d for v in value.values() for d in _depths_of(v, key, depth + 1)]
    if isinstance(value, list):
        return [d for v in value for d in _depths_of(v, key, depth + 1)]
    return []


def test_many_double_stars_in_an_ignore_path_strip_deep_events() -> None:
    never = ".".join(["**"] * 200) + ".nowhere"
    thirty_deep = ".".join(["**.*"] * 30) + ".z"  # a "z" under 30 segments or more
    options = CanonicalOptions().extended(ignore_paths=[never, thirty_deep])
    data = _nested(40)
    assert sorted(_depths_of(data, "z")) == sorted([*range(3, 43), 41])
    compared = canonicalize([ev(data=data) for _ in range(15)], options)
    for event in compared:
        assert sorted(_depths_of(event.data, "z")) == list(range(3, 31))
        assert sorted(_depths_of(event.data, "leaf")) == [41]


def test_ignore_paths_strip_at_any_depth() -> None:
    options = CanonicalOptions().extended(ignore_paths=["**.request_id", "items[0]"])
    data = {
        "request_id": 1,
        "output": {"request_id": 2, "keep": 3, "list": [{"request_id": 4, "keep": 5}]},
        "items": ["first", "second"],
    }
    assert canonicalize_event(ev(data=data), options).data == {
        "output": {"keep": 3, "list": [{"keep": 5}]},
        "items": ["second"],
    }


def test_type_scoped_path_applies_to_that_type_only() -> None:
    options = CanonicalOptions().extended(ignore_paths=["tool.call.completed:output.fetched_at"])
    data = {"name": "clock", "output": {"fetched_at": "12:00", "value": 1}}
    scoped = canonicalize_event(ev("tool.call.completed", data), options)
    other = canonicalize_event(ev("llm.turn.completed", data), options)
    assert scoped.data == {"name": "clock", "output": {"value": 1}}
    assert other.data == data
    later = {"name": "clock", "output": {"fetched_at": "13:00", "value": 1}}
    assert scoped.key == canonicalize_event(ev("tool.call.completed", later), options).key
    assert other.key != canonicalize_event(ev("llm.turn.completed", later), options).key


def test_canonicalization_does_not_modify_the_event() -> None:
    data = {"run_id": "r", "step": 1, "output": {"request_id": 1, "v": 0.1 + 0.2}}
    snapshot = orjson.dumps(data)
    options = CanonicalOptions().extended(ignore_paths=["**.request_id"])
    canonicalize_event(ev(data=data), options)
    assert orjson.dumps(data) == snapshot


# -- idempotence -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        CanonicalOptions(),
        CanonicalOptions().extended(
            drop_keys=["call_id"], ignore_paths=["**.request_id", "x:a.*"], float_digits=2
        ),
    ],
    ids=["defaults", "extended"],
)
def test_canonicalization_is_idempotent(options: CanonicalOptions) -> None:
    data = {
        "step": 2,
        "run_id": "r1",
        "call_id": "c1",
        "latency_ms": 12.5,
        "content": "ok",
        "a": {"b": 1, "request_id": 9},
        "v": [0.1 + 0.2, 1.23456789123, True, 1, None, {"provider": "p", "request_id": 1}],
    }
    for kind in ("x", "llm.turn.completed"):
        first = canonicalize_event(ev(kind, data, step=2), options)
        rebuilt = Event(seq=0, ts="", type=first.type, data=first.data, step=first.step)
        second = canonicalize_event(rebuilt, options)
        assert second.key == first.key
        assert second.data == first.data
