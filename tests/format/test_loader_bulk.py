"""The loader's bulk path: a file as the recorder writes it is checked all at once, and
accepts exactly what the line-by-line path accepts, with the same events.

Every file the bulk path declines goes line by line, which names what is wrong; so the
property checked here is that the bulk path either declines, or agrees event for event.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_loader_fuzz import mutated_rollouts, valid_rollouts

from pytest_rollout import Limits, Recorder, RolloutFormatError, loads
from pytest_rollout.format import loader
from pytest_rollout.format.bulk import bulk_parse, parsed_events
from pytest_rollout.format.events import LLM_TURN_COMPLETED, LLM_TURN_STARTED, Event

TS = "2026-06-28T12:34:56.000000Z"
SMALL = Limits(line_bytes=400, events=8, total_bytes=3000, depth=5, elements=25, max_step=6)
BOUNDED = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def line_by_line(data: bytes, limits: Limits = loader.DEFAULT_LIMITS) -> tuple[Event, ...]:
    return loader._parse_events(data, None, "run.jsonl", limits, False)


def cut(data: bytes, limits: Limits) -> list[bytes]:
    """``data`` cut into lines as the loader cuts it for the bulk path."""
    lines = data.split(b"\n", limits.events + 1)
    return lines[:-1] if lines[-1] == b"" else lines


def bulk(data: bytes, limits: Limits = loader.DEFAULT_LIMITS, tolerant: bool = False) -> Any:
    """The events the fast path gives for ``data``, or ``None`` where it declines."""
    bounds = loader._bounds(limits)
    parsed = bulk_parse(data, cut(data, limits), bounds)
    return None if parsed is None else parsed_events(parsed, bounds, tolerant)


def recorded() -> bytes:
    r = Recorder(clock=lambda: 1_782_650_096_000_000_000)
    r.emit("run.started", {"model": "gpt-4o-mini", "tools": ["weather"]})
    r.emit("llm.turn.started", {"messages": [{"role": "user", "content": "?"}]})
    call = {"id": "c1", "name": "weather", "arguments": {"city": "Paris", "days": 3}}
    r.emit("llm.turn.completed", {"content": None, "tool_calls": [call], "cost_usd": 0.01})
    r.emit("tool.call.started", {"call_id": "c1", "name": "weather", "arguments": {"city": "P"}})
    r.emit("tool.call.completed", {"call_id": "c1", "name": "weather", "output": [1.5, "x"]})
    r.emit("my.custom", {"anything": {"goes": [None, True]}})
    r.emit("run.completed", {"outcome": "completed", "output": "18C"})
    r.close()
    return r.getvalue()


def test_a_file_as_the_recorder_writes_it_takes_the_bulk_path() -> None:
    data = recorded()
    events = bulk(data)
    assert events is not None
    assert events == line_by_line(data)
    assert loads(data).events == events
    assert [e.line for e in events] == list(range(1, len(events) + 1))


def _line(seq: int, etype: str, data: dict[str, Any]) -> bytes:
    return orjson.dumps({"ts": TS, "seq": seq, "type": etype, "data": data})


def _file(*lines: bytes) -> bytes:
    return b"".join(line + b"\n" for line in lines)


START = _line(0, "run.started", {})
END = _line(9, "run.completed", {"step": 1})
TURN = _line(1, "llm.turn.started", {"step": 1})

#: Files the bulk path must leave to the line-by-line path: what it would refuse, and
#: what it accepts only after a closer look.
DECLINED = {
    "duplicate key": _file(START, b'{"ts":"t","seq":1,"type":"x","data":{},"data":{}}', END),
    "integer beyond 64 bits": _file(
        START, _line(1, "x", {"n": 1}).replace(b"1}", b"9" * 21 + b"}"), END
    ),
    "spaced line": _file(START, b'{"ts": "t", "seq": 1, "type": "x", "data": {}}', END),
    "blank line": _file(START, b"", END),
    "carriage return": _file(START, _line(1, "x", {}) + b"\r", END),
    "first event": _file(_line(0, "x", {}), END),
    "run.started twice": _file(START, _line(1, "run.started", {}), END),
    "run.started at a step": _file(_line(0, "run.started", {"step": 2}), END),
    "seq does not increase": _file(START, _line(0, "x", {}), END),
    "step goes back": _file(START, _line(1, "x", {"step": 2}), _line(2, "x", {"step": 1}), END),
    "turn without a step": _file(START, _line(1, "llm.turn.started", {}), END),
    "turn at step 0": _file(START, _line(1, "llm.turn.started", {"step": 0}), END),
    "step is not an integer": _file(START, _line(1, "x", {"step": True}), END),
    "step is null": _file(START, _line(1, "x", {"step": None}), END),
    "event after the end": _file(START, END, _line(10, "x", {})),
    "no terminal event": _file(START, TURN),
    "schema": _file(START, TURN, _line(2, "llm.turn.completed", {"step": 1, "content": 3}), END),
    "envelope": _file(START, b'{"ts":1,"seq":1,"type":"x","data":{}}', END),
    "empty type": _file(START, _line(1, "", {}), END),
    "not an object": _file(START, b"[1]", END),
    "deep": _file(START, _line(1, "x", {"v": [[[[[[[[[[[[]]]]]]]]]]]]}), END),
}


@pytest.mark.parametrize("name", list(DECLINED))
def test_what_needs_a_closer_look_goes_line_by_line(name: str) -> None:
    data = DECLINED[name]
    limits = Limits(depth=10) if name == "deep" else loader.DEFAULT_LIMITS
    assert bulk(data, limits) is None
    try:
        expected: Any = line_by_line(data, limits)
    except RolloutFormatError as exc:
        expected = str(exc)
    try:
        got: Any = loads(data, path="run.jsonl", limits=limits).events
    except RolloutFormatError as exc:
        got = str(exc)
    assert got == expected


def test_a_run_without_its_end_is_taken_in_bulk_only_when_tolerant() -> None:
    data = _file(START, TURN)
    assert bulk(data) is None
    events = bulk(data, tolerant=True)
    assert events is not None
    assert [e.type for e in events] == ["run.started", "llm.turn.started"]


def test_a_file_over_the_event_limit_goes_line_by_line() -> None:
    data = recorded()
    limits = Limits(events=3)
    assert bulk(data, limits) is None
    with pytest.raises(RolloutFormatError, match="more than 3 events"):
        loads(data, limits=limits)


@pytest.mark.parametrize("blank", [b"", b"\n", b"\n\n"])
def test_the_event_limit_is_the_line_by_line_one_at_its_edge(blank: bytes) -> None:
    data = recorded() + blank  # blank lines after the last: more pieces, not more events
    count = recorded().count(b"\n")
    for limit in range(count - 2, count + 3):
        _agree(data, Limits(events=limit))
        if not blank:
            assert (bulk(data, Limits(events=limit)) is None) is (limit < count)


def _agree(data: bytes, limits: Limits = loader.DEFAULT_LIMITS) -> None:
    try:
        expected: Any = line_by_line(data, limits)
    except RolloutFormatError:
        expected = None
    found = bulk(data, limits)
    assert found is None or found == expected


@st.composite
def compact(draw: st.DrawFn, files: st.SearchStrategy[Any]) -> bytes:
    """A drawn rollout rewritten as the recorder writes it: orjson lines, each ending in
    ``\\n``, no blank line (lines that do not parse are kept as they are)."""
    drawn = draw(files)
    data = drawn[0] if isinstance(drawn, tuple) else drawn
    lines = []
    for line in data.split(b"\n"):
        raw = line.strip(b" \t\r")
        if not raw:
            continue
        try:
            lines.append(orjson.dumps(orjson.loads(raw)))
        except (orjson.JSONDecodeError, orjson.JSONEncodeError):
            lines.append(raw)
    return b"".join(line + b"\n" for line in lines)


@BOUNDED
@given(data=compact(valid_rollouts()))
def test_valid_compact_files_agree(data: bytes) -> None:
    assert bulk(data) is not None  # these are the bulk path's files
    _agree(data)


@BOUNDED
@given(data=st.one_of(compact(mutated_rollouts()), mutated_rollouts()))
def test_mutated_files_agree(data: bytes) -> None:
    _agree(data)
    _agree(data, SMALL)


@pytest.mark.parametrize("position", ["first", "middle", "last"])
def test_a_line_not_written_back_is_found_wherever_it_is(position: str) -> None:
    """Every line is written back: a duplicate key is found wherever it is."""
    lines = [START] + [_line(seq, "x", {"n": seq}) for seq in range(1, 1200)]
    index = {"first": 1, "middle": 600, "last": 1199}
    duplicated = b'{"ts":"t","seq":%d,"type":"x","data":{},"data":{}}' % index[position]
    lines[index[position]] = duplicated
    data = _file(*lines, _line(1200, "run.completed", {}))
    assert bulk(data) is None
    with pytest.raises(RolloutFormatError) as refused:
        loads(data, path="run.jsonl")
    assert str(refused.value) == f'run.jsonl:{index[position] + 1}: duplicate key "data"'


@pytest.mark.parametrize("path", ["bulk", "line by line"])
def test_events_share_their_core_type_and_step_objects(path: str) -> None:
    """Later passes over a run read every event's type and step: one string object per
    core type and one int per step keep those reads in cache (docs/performance.md)."""
    r = Recorder(clock=lambda: 1_782_650_096_000_000_000)
    r.emit("run.started", {})
    for step in (300, 301):  # beyond the ints Python shares itself
        r.emit("llm.turn.started", {"step": step, "messages": []})
        r.emit("llm.turn.completed", {"step": step, "content": "ok"})
        r.emit("my.custom", {"step": step})
    r.emit("run.completed", {"outcome": "completed"})
    r.close()
    data = r.getvalue()
    events = bulk(data) if path == "bulk" else line_by_line(data)
    assert events is not None
    assert events[1].type is LLM_TURN_STARTED
    assert events[5].type is LLM_TURN_COMPLETED
    assert events[3].type == "my.custom"
    assert events[1].step is events[2].step is events[3].step == 300
    assert events[4].step is events[5].step is events[6].step == 301
