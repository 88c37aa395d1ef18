"""Two rollouts loaded to be compared (``load_pair``): the events are those ``load`` gives,
and a line of ``b`` that is ``a``'s line but for its timestamp shares ``a``'s data."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rollout import Recorder, RolloutFormatError, load
from pytest_rollout.diff.compare import compare
from pytest_rollout.diff.drift import drift_report
from pytest_rollout.format.events import Event, JsonEvents
from pytest_rollout.format.loader import loads
from pytest_rollout.format.pair import Reference, load_pair

START = 1_782_650_096_000_000_000  # 2026-06-28T12:34:56Z, in nanoseconds
EVENTS: list[tuple[str, dict[str, Any]]] = [
    ("run.started", {"run_id": "r1", "model": "gpt-4o-mini"}),
    ("llm.turn.started", {"messages": [{"role": "user", "content": "Weather?"}]}),
    ("llm.turn.completed", {"content": None, "tool_calls": [{"id": "c1", "name": "w"}]}),
    ("tool.call.started", {"call_id": "c1", "name": "w", "arguments": {"city": "Paris"}}),
    ("tool.call.completed", {"call_id": "c1", "name": "w", "output": "18C"}),
    ("llm.turn.started", {"messages": [{"role": "tool", "content": "18C"}]}),
    ("llm.turn.completed", {"content": "18C", "tool_calls": [], "latency_ms": 12.5}),
    ("run.completed", {"outcome": "completed", "output": "18C"}),
]


def recorded(events: list[tuple[str, dict[str, Any]]], start: int = START) -> bytes:
    now = iter(range(start, start + 10**12, 1_234_567))
    recorder = Recorder(clock=lambda: next(now))
    for event_type, data in events:
        recorder.emit(event_type, data)
    recorder.close()
    return recorder.getvalue()


def loaded_both(a: bytes, b: bytes, load_two: Callable[[Path], Any]) -> Any:
    """What ``load_two`` gives for a folder holding ``a.jsonl`` and ``b.jsonl``: their
    events, or the refusal's message."""
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "a.jsonl").write_bytes(a)
        Path(folder, "b.jsonl").write_bytes(b)
        try:
            first, second = load_two(Path(folder))
        except RolloutFormatError as exc:
            return "refused", str(exc).replace(folder, "<folder>")
        return first.events, second.events


def paired(folder: Path) -> tuple[Any, Any]:
    return load_pair(folder / "a.jsonl", folder / "b.jsonl")


def separately(folder: Path) -> tuple[Any, Any]:
    return load(folder / "a.jsonl"), load(folder / "b.jsonl")


def test_a_run_recorded_again_shares_the_data_of_its_equal_lines(tmp_path: Path) -> None:
    changed = [*EVENTS]
    changed[4] = ("tool.call.completed", {"call_id": "c1", "name": "w", "output": "19C"})
    (tmp_path / "a.jsonl").write_bytes(recorded(EVENTS))
    (tmp_path / "b.jsonl").write_bytes(recorded(changed, START + 3_600 * 10**9))
    run_a, run_b = load_pair(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert (run_a.events, run_b.events) == (
        load(tmp_path / "a.jsonl").events,
        load(tmp_path / "b.jsonl").events,
    )
    shared = [x.data is y.data for x, y in zip(run_a.events, run_b.events, strict=True)]
    assert shared == [True, True, True, True, False, True, True, True]
    assert [x.ts == y.ts for x, y in zip(run_a.events, run_b.events, strict=True)] == [False] * 8
    # The comparison and its report are those of runs loaded one by one.
    report = drift_report(run_a.events, run_b.events)
    assert report == drift_report(*(run.events for run in separately(tmp_path)))
    assert report.comparison.first is not None
    assert report.comparison.first.step == 1


def test_a_refusal_names_the_first_file_before_the_second_is_read(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(b'{"ts":"x"}\n')
    with pytest.raises(RolloutFormatError) as refused:
        load_pair(tmp_path / "a.jsonl", tmp_path / "missing.jsonl")
    assert refused.value.path == str(tmp_path / "a.jsonl")


@pytest.mark.parametrize(
    "stamp",
    [
        b"2026-06-28T13:34:\\u00356.0Z",  # an escape: JSON, read as "...:56.0Z"
        b'2026-06-28T13:34:56.00058"Z',  # a quote: not JSON
        b"2026-06-28T13:34:56.000583\x01",  # a control character: not JSON
        b"2026-06-28T13:34:56{000583Z",  # a bracket: JSON, though no timestamp
    ],
)
def test_a_line_with_an_unusual_timestamp_is_read_on_its_own(stamp: bytes) -> None:
    a = recorded(EVENTS)
    lines = recorded(EVENTS, START + 10**9).split(b"\n")
    assert len(stamp) == 27
    lines[3] = lines[3][:7] + stamp + lines[3][34:]
    b = b"\n".join(lines)
    assert loaded_both(a, b, paired) == loaded_both(a, b, separately)


def around(middle: bytes, second: int) -> bytes:
    """A run of three events whose middle line is ``middle``, the others stamped at
    ``second`` past 12:34."""
    stamp = b"2026-06-28T12:34:%02d.000000Z" % second
    start = b'{"ts":"%b","seq":0,"type":"run.started","data":{}}\n' % stamp
    end = b'{"ts":"%b","seq":2,"type":"run.completed","data":{}}\n' % stamp
    return start + middle + b"\n" + end


@pytest.mark.parametrize(
    ("middle_a", "middle_b"),
    [
        # a's line opens with another key: b's repeats "ts" where a's does not...
        (
            b'{"a":"2026-06-28T12:34:56.000000Z1","seq":1,"ts":"t","type":"note","data":{}}',
            b'{"ts":"2026-06-28T12:34:57.000000Z","seq":1,"ts":"t","type":"note","data":{}}',
        ),
        # ...and b's: it has no timestamp at all.
        (
            b'{"ts":"2026-06-28T12:34:56.000000Z","seq":1,"type":"note","data":{}}',
            b'{"a":"2026-06-28T12:34:57.000000Z1","seq":1,"type":"note","data":{}}',
        ),
        # a's timestamp is no plain one: it hides a key (data) that b's line lacks.
        (
            b'{"ts":"x","data":{},"k":"zzzzzzzzz","seq":1,"type":"note"}',
            b'{"ts":"2026-06-28T12:34:57.000000Z","seq":1,"type":"note"}',
        ),
        # Timestamps a digit longer: the seq key is not where a recorder writes it.
        (
            b'{"ts":"2026-06-28T12:34:56.0000001Z","seq":1,"type":"note","data":{}}',
            b'{"ts":"2026-06-28T12:34:57.0000001Z","seq":1,"type":"note","data":{}}',
        ),
    ],
)
def test_a_line_is_taken_from_a_only_where_both_start_as_a_recorder_writes(
    middle_a: bytes, middle_b: bytes
) -> None:
    assert middle_a[34:] == middle_b[34:]
    a, b = around(middle_a, 56), around(middle_b, 57)
    assert loaded_both(a, b, paired) == loaded_both(a, b, separately)


def test_a_reference_is_compared_as_it_is_now_not_as_it_was_read() -> None:
    # The reference keeps its objects, not a copy of its file: a line of b is matched with
    # what the reference's object writes now. An object changed since it was read (which
    # nothing should do) is not handed to b: b's line is read on its own.
    changed = [*EVENTS]
    changed[4] = ("tool.call.completed", {"call_id": "c1", "name": "w", "output": "19C"})
    golden = Reference.loads(recorded(EVENTS), path="a.jsonl")
    assert golden.shares
    reference = golden.rollout
    data = recorded(EVENTS, START + 10**9)
    reference.events[3].data["arguments"]["city"] = "Lyon"
    reference.events[5].data["messages"] = {"not", "JSON"}  # orjson cannot write a set
    run = golden.read(data, path="b.jsonl")
    assert run == loads(data, path="b.jsonl")
    shared = [x.data is y.data for x, y in zip(reference.events, run.events, strict=True)]
    assert shared == [False] * 8  # the set sends the whole file line by line


def test_a_reference_shares_what_is_unchanged_after_another_line_was_changed() -> None:
    golden = Reference.loads(recorded(EVENTS), path="a.jsonl")
    assert golden.shares
    reference = golden.rollout
    data = recorded(EVENTS, START + 10**9)
    reference.events[3].data["arguments"]["city"] = "Lyon"
    run = golden.read(data, path="b.jsonl")
    assert run == loads(data, path="b.jsonl")
    shared = [x.data is y.data for x, y in zip(reference.events, run.events, strict=True)]
    assert shared == [True, True, True, False, True, True, True, True]


def test_a_line_of_its_own_in_b_is_checked_against_the_schema() -> None:
    # Its neighbours are copies of a's lines, whose data a's load checked; this one is not.
    changed = [*EVENTS]
    changed[6] = ("llm.turn.completed", {"content": "18C", "tool_calls": [], "latency_ms": "x"})
    a, b = recorded(EVENTS), recorded(changed, START + 10**9)
    refused = loaded_both(a, b, paired)
    assert refused == loaded_both(a, b, separately)
    assert "data.latency_ms must be a number" in refused[1]


def test_a_line_of_its_own_in_b_is_checked_for_depth() -> None:
    deep: dict[str, Any] = {}
    for _ in range(120):
        deep = {"x": deep}
    changed = [*EVENTS]
    changed[4] = ("tool.call.completed", {"call_id": "c1", "name": "w", "output": deep})
    a, b = recorded(EVENTS), recorded(changed, START + 10**9)
    refused = loaded_both(a, b, paired)
    assert refused == loaded_both(a, b, separately)
    assert "nesting deeper than 100 levels" in refused[1]


def test_runs_that_share_data_are_compared_as_canonicalization_would() -> None:
    # Shared data that cannot be canonicalized is refused, as canonicalizing it refuses.
    data: dict[Any, Any] = {1: "not a JSON key"}
    a = (Event(0, "t", "run.started", {}, 0, 1), Event(1, "t", "hook.note", data, 0, 2))
    b = (Event(0, "u", "run.started", {}, 0, 1), Event(1, "u", "hook.note", data, 0, 2))
    with pytest.raises(TypeError):
        compare(a, b)
    # Data parsed from JSON cannot hold it: the loader's events are not made to pay for
    # the check (rollout diff's runs and a test's verdict come from the loader).
    assert compare(JsonEvents(a), JsonEvents(b)).identical


# -- any pair of files loads as two loads do -----------------------------------------------

BOUNDED = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DATA = st.dictionaries(
    st.sampled_from(["a", "b", "step", "ts"]),
    st.one_of(st.integers(-3, 3), st.text(max_size=4), st.booleans(), st.none()),
    max_size=3,
)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A recorded run ``a``; ``b`` recorded again at another time, with some events
    changed, then some lines edited as a hand or another writer would."""
    events = [*EVENTS]
    changed = list(events)
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(1, len(changed) - 2))
        changed[i] = ("hook.note", draw(DATA)) if draw(st.booleans()) else changed[i]
        if draw(st.booleans()):
            changed.insert(i, ("hook.note", draw(DATA)))
    a = recorded(events)
    lines = recorded(changed, START + draw(st.integers(0, 10**12))).split(b"\n")
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        edit = draw(st.sampled_from(["restamp", "space", "drop", "dup", "garble", "a line"]))
        if edit == "restamp":
            lines[i] = lines[i][:7] + draw(st.binary(min_size=27, max_size=27)) + lines[i][34:]
        elif edit == "space":
            lines[i] = lines[i].replace(b",", b", ", 1)
        elif edit == "drop" and len(lines) > 1:
            del lines[i]
        elif edit == "dup":
            lines.insert(i, lines[i])
        elif edit == "garble":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif edit == "a line":
            lines[i] = a.split(b"\n")[min(i, a.count(b"\n") - 1)]
    return a, b"\n".join(lines)


@BOUNDED
@given(pair=pairs())
def test_the_events_are_those_of_two_loads(pair: tuple[bytes, bytes]) -> None:
    a, b = pair
    assert loaded_both(a, b, paired) == loaded_both(a, b, separately)
