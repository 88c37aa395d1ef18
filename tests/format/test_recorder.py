"""Unit tests for the recorder: the file format, steps, and "never breaks the run"."""

from __future__ import annotations

import itertools
import os
import re
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from pytest_rollout.format.events import Event
from pytest_rollout.format.files import FILE_MODE
from pytest_rollout.format.loader import Limits, load, loads
from pytest_rollout.format.recorder import Recorder, RecorderStats, encode_payload
from pytest_rollout.safety.redact import Redactor

# 2026-06-28T12:34:56Z, in nanoseconds since the epoch.
T0 = 1_782_650_096 * 1_000_000_000
TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


def ticking(start: int = T0, step_ns: int = 1_000) -> Callable[[], int]:
    """A fake clock: ``start``, then ``step_ns`` later on each call."""
    now = start - step_ns

    def clock() -> int:
        nonlocal now
        now += step_ns
        return now

    return clock


def times(*values: int) -> Callable[[], int]:
    """A fake clock returning exactly ``values``, one per call."""
    it: Iterator[int] = iter(values)
    return lambda: next(it)


def lines_of(recorder: Recorder) -> list[dict[str, Any]]:
    raw = recorder.getvalue()
    assert raw.endswith(b"\n")
    return [orjson.loads(line) for line in raw.split(b"\n")[:-1]]


def start_run(recorder: Recorder) -> None:
    recorder.emit("run.started", {"run_id": "r1", "test_id": "t", "model": "m"})
    recorder.emit("llm.turn.started", {"messages": [{"role": "user", "content": "hi"}]})


# -- the line format --------------------------------------------------------------------


def test_exact_bytes_of_a_small_run() -> None:
    rec = Recorder(clock=ticking(T0 + 123_456_789, 250_000))
    rec.emit("run.started", {"run_id": "r1", "prompt": "<b>Rome & Paris</b> é 中"})
    rec.emit("llm.turn.started", {"messages": []})
    rec.emit("run.completed", {"outcome": "completed"})
    assert rec.getvalue() == (
        b'{"ts":"2026-06-28T12:34:56.123456Z","seq":0,"type":"run.started",'
        b'"data":{"run_id":"r1","prompt":"<b>Rome & Paris</b> \xc3\xa9 \xe4\xb8\xad","step":0}}\n'
        b'{"ts":"2026-06-28T12:34:56.123706Z","seq":1,"type":"llm.turn.started",'
        b'"data":{"messages":[],"step":1}}\n'
        b'{"ts":"2026-06-28T12:34:56.123956Z","seq":2,"type":"run.completed",'
        b'"data":{"outcome":"completed","step":1}}\n'
    )


def test_envelope_keys_in_order_and_no_html_escaping() -> None:
    rec = Recorder()
    rec.emit("run.started", {"prompt": "a<b>c&d", "tools": ["<script>"]})
    rec.emit("run.completed", {"output": "x > y && y < z"})
    raw = rec.getvalue()
    assert b"a<b>c&d" in raw
    assert b"x > y && y < z" in raw
    assert b"\\u003c" not in raw
    assert b"\\u0026" not in raw
    for line in lines_of(rec):
        assert list(line) == ["ts", "seq", "type", "data"]
        assert TS.match(line["ts"])
        # The real clock: a parseable UTC time.
        assert datetime.fromisoformat(line["ts"]).tzinfo == UTC


def test_timestamps_from_the_clock_across_a_second_boundary() -> None:
    second = 1_000_000_000
    rec = Recorder(
        clock=times(
            T0 + second - 1_000,  # 12:34:56.999999
            T0 + second - 1,  # 12:34:56.999999 (truncated, not rounded)
            T0 + second,  # 12:34:57.000000
            T0 + second + 1_999,  # 12:34:57.000001
            T0 + 61 * second + 500_000,  # 12:35:57.000500
            T0 + 3_600 * 24 * second,  # the next day
            T0 + 5 * second,  # a clock that went back
        )
    )
    rec.emit("run.started", {})
    for _ in range(5):
        rec.emit("note", {})
    rec.emit("run.completed", {})
    assert [line["ts"] for line in lines_of(rec)] == [
        "2026-06-28T12:34:56.999999Z",
        "2026-06-28T12:34:56.999999Z",
        "2026-06-28T12:34:57.000000Z",
        "2026-06-28T12:34:57.000001Z",
        "2026-06-28T12:35:57.000500Z",
        "2026-06-29T12:34:56.000000Z",
        "2026-06-28T12:35:01.000000Z",
    ]


def test_emit_without_data_records_an_empty_payload() -> None:
    rec = Recorder(clock=ticking())
    rec.emit("run.started")
    rec.emit("run.completed")
    assert [line["data"] for line in lines_of(rec)] == [{"step": 0}, {"step": 0}]
    assert rec.stats == RecorderStats(recorded=2, dropped=0, encode_errors=0, write_errors=0)


# -- seq under concurrency --------------------------------------------------------------


def test_concurrent_emitters_get_a_total_order(tmp_path: Path) -> None:
    threads_n, per_thread = 8, 2000
    path = tmp_path / "run.jsonl"
    rec = Recorder(path, flush_every=300)
    start_run(rec)
    barrier = threading.Barrier(threads_n)

    def work(thread: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            rec.emit("tool.call.started", {"name": f"t{thread}", "arguments": {"i": i}})

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads_n)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    rec.emit("run.completed", {"outcome": "completed"})
    rec.close()

    total = threads_n * per_thread + 3
    assert rec.stats == RecorderStats(recorded=total, dropped=0, encode_errors=0, write_errors=0)
    assert path.read_bytes() == rec.getvalue()
    events = load(path).events
    assert [e.seq for e in events] == list(range(total))
    # Each emitter's own events keep their order inside the total order.
    seen: dict[str, list[int]] = {}
    for event in events[2:-1]:
        seen.setdefault(event.data["name"], []).append(event.data["arguments"]["i"])
    assert seen == {f"t{t}": list(range(per_thread)) for t in range(threads_n)}


# -- steps ------------------------------------------------------------------------------


def test_steps_follow_the_turns() -> None:
    rec = Recorder(clock=ticking())
    calls: list[tuple[str, dict[str, Any]]] = [
        ("run.started", {}),
        ("hook.note", {}),
        ("llm.turn.started", {}),
        ("llm.turn.completed", {}),
        ("tool.call.started", {"name": "search"}),
        ("tool.call.completed", {"name": "search"}),
        ("usage.delta", {"cumulative_cost_usd": 0.1}),
        ("llm.turn.completed", {}),  # no start of its own: opens a step
        ("tool.call.started", {"name": "book"}),
        ("llm.turn.started", {}),
        ("llm.turn.completed", {}),
        ("run.completed", {"outcome": "completed"}),
    ]
    for kind, data in calls:
        rec.emit(kind, data)
    events = rec.rollout().events
    assert [(e.type, e.step) for e in events] == [
        ("run.started", 0),
        ("hook.note", 0),
        ("llm.turn.started", 1),
        ("llm.turn.completed", 1),
        ("tool.call.started", 1),
        ("tool.call.completed", 1),
        ("usage.delta", 1),
        ("llm.turn.completed", 2),
        ("tool.call.started", 2),
        ("llm.turn.started", 3),
        ("llm.turn.completed", 3),
        ("run.completed", 3),
    ]
    # Steps live in data.step for everything after run.started.
    assert all(e.data["step"] == e.step for e in events[1:])
    assert rec.step == 3


def test_explicit_step_wins() -> None:
    rec = Recorder(clock=ticking())
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", {"step": 4})
    rec.emit("llm.turn.completed", {})
    rec.emit("tool.call.started", {"step": 7, "name": "x"})
    rec.emit("usage.delta", {})
    rec.emit("llm.turn.started", {})
    rec.emit("run.completed", {})
    assert [e.step for e in rec.rollout().events] == [0, 4, 4, 7, 7, 8, 8]


def test_explicit_step_inside_an_open_turn_keeps_the_turn_open() -> None:
    # A hook that names the turn's own step must not make the turn's completion open step 2.
    rec = Recorder(clock=ticking())
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", {})
    rec.emit("hook.note", {"step": 1})
    rec.emit("llm.turn.completed", {})
    rec.emit("run.completed", {})
    assert [e.step for e in rec.rollout().events] == [0, 1, 1, 1, 1]


def test_step_that_is_not_an_int_is_replaced() -> None:
    rec = Recorder(clock=ticking())
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", {"step": True})
    rec.emit("llm.turn.completed", {"step": "2"})
    rec.emit("run.completed", {})
    assert [line["data"].get("step") for line in lines_of(rec)] == [0, 1, 1, 1]


# -- never raising: encoding --------------------------------------------------------------

UNENCODABLE: list[Any] = [
    pytest.param(object(), id="object"),
    pytest.param(2**64, id="int-beyond-64-bits"),
    pytest.param(-(2**63) - 1, id="negative-int-beyond-64-bits"),
    pytest.param("a\ud800b", id="lone-surrogate"),
    pytest.param({"\udfff": 1}, id="lone-surrogate-key"),
]


@pytest.mark.parametrize("bad", UNENCODABLE)
def test_unencodable_payload_is_dropped_and_marked(bad: Any) -> None:
    rec = Recorder(clock=ticking())
    start_run(rec)
    rec.emit("tool.call.started", {"name": "x", "arguments": {"value": bad}})
    assert rec.stats == RecorderStats(recorded=2, dropped=1, encode_errors=1, write_errors=0)
    rec.emit("tool.call.completed", {"name": "x", "output": "ok"})
    rec.emit("run.completed", {"outcome": "completed"})
    events = rec.rollout().events
    assert [e.type for e in events] == [
        "run.started",
        "llm.turn.started",
        "recorder.drop_detected",
        "tool.call.completed",
        "run.completed",
    ]
    assert events[2].data == {"step": 1, "dropped": 1}
    assert rec.stats == RecorderStats(recorded=5, dropped=1, encode_errors=1, write_errors=0)


def test_largest_64_bit_integers_are_recorded() -> None:
    rec = Recorder(clock=ticking())
    rec.emit("run.started", {"big": 2**64 - 1, "small": -(2**63)})
    rec.emit("run.completed", {})
    assert rec.rollout().events[0].data == {"big": 2**64 - 1, "small": -(2**63), "step": 0}
    assert rec.stats.encode_errors == 0


def test_consecutive_drops_are_counted_in_one_marker() -> None:
    rec = Recorder(clock=ticking())
    start_run(rec)
    for _ in range(3):
        rec.emit("tool.call.started", {"arguments": object()})
    rec.emit("llm.turn.started", {})
    rec.emit("run.completed", {})
    events = rec.rollout().events
    assert [(e.type, e.data) for e in events[2:4]] == [
        ("recorder.drop_detected", {"step": 2, "dropped": 3}),
        ("llm.turn.started", {"step": 2}),
    ]
    assert rec.stats.dropped == 3
    assert rec.stats.encode_errors == 3


def test_payload_that_is_not_a_mapping_is_dropped_not_raised() -> None:
    rec = Recorder(clock=ticking())
    start_run(rec)
    rec.emit("hook.note", ["not", "a", "mapping"])  # type: ignore[arg-type]
    rec.emit("run.completed", {})
    events = rec.rollout().events
    assert [e.type for e in events][-2:] == ["recorder.drop_detected", "run.completed"]
    assert rec.stats.dropped == 1


@pytest.mark.parametrize("data", [{}, {"step": 1}, {"step": 7}])
def test_an_event_type_that_is_not_a_string_is_one_drop(data: dict[str, Any]) -> None:
    rec = Recorder(clock=ticking())
    start_run(rec)
    rec.emit(["not", "a", "type"], data)  # type: ignore[arg-type]
    rec.emit("run.completed", {})
    assert [e.type for e in rec.rollout().events][-2:] == [
        "recorder.drop_detected",
        "run.completed",
    ]
    assert rec.stats.dropped == 1


@pytest.mark.parametrize("bad", UNENCODABLE)
@pytest.mark.parametrize("terminal", ["run.completed", "run.failed"])
def test_terminal_event_with_unencodable_data_is_still_recorded(bad: Any, terminal: str) -> None:
    rec = Recorder(clock=ticking())
    start_run(rec)
    rec.emit(terminal, {"outcome": "completed", "error": {"class": "E", "message": bad}})
    events = rec.rollout().events  # loads: the file has its terminal event
    assert [e.type for e in events] == ["run.started", "llm.turn.started", terminal]
    assert events[-1].data["step"] == 1
    assert events[-1].data["outcome"] == "completed"
    assert rec.stats == RecorderStats(recorded=3, dropped=0, encode_errors=1, write_errors=0)


def test_terminal_placeholders_say_what_was_lost() -> None:
    rec = Recorder(clock=ticking())
    rec.emit("run.started", {})
    rec.emit("run.failed", {"error": object(), "big": 2**70, "text": "x\ud800"})
    data = rec.rollout().events[-1].data
    assert data["error"] == "<unrecordable object>"
    assert data["big"] == str(2**70)
    assert data["text"] == "x\\ud800"


# -- never raising: the event cap ------------------------------------------------------------


def test_events_past_max_events_are_dropped_with_a_marker() -> None:
    rec = Recorder(max_events=10, clock=ticking())
    start_run(rec)
    for i in range(50):
        rec.emit("tool.call.started", {"name": "t", "arguments": {"i": i}})
    rec.emit("run.completed", {"outcome": "completed"})
    run = loads(rec.getvalue(), limits=Limits(events=10))
    assert len(run.events) == 10
    assert [e.type for e in run.events[-2:]] == ["recorder.drop_detected", "run.completed"]
    assert run.events[-2].data["dropped"] == 44
    assert [e.data["arguments"]["i"] for e in run.events[2:8]] == list(range(6))
    assert rec.stats == RecorderStats(recorded=10, dropped=44, encode_errors=0, write_errors=0)


@pytest.mark.parametrize("max_events", [3, 4, 5, 6, 7])
@pytest.mark.parametrize("bad_at", [0, 1, 2, 3, 4])
def test_event_cap_holds_with_an_earlier_gap(max_events: int, bad_at: int) -> None:
    # A pending gap marker takes a place of its own: the cap still leaves room for the
    # terminal event and the file stays within the loader's event limit.
    rec = Recorder(max_events=max_events, clock=ticking())
    start_run(rec)
    for i in range(6):
        rec.emit("hook.note", {"bad": object()} if i == bad_at else {"i": i})
    rec.emit("run.completed", {"outcome": "completed"})
    run = loads(rec.getvalue(), limits=Limits(events=max_events))
    assert len(run.events) <= max_events
    assert run.events[-1].type == "run.completed"
    markers = [e.data["dropped"] for e in run.events if e.type == "recorder.drop_detected"]
    assert sum(markers) == rec.stats.dropped


# -- never raising: writing ---------------------------------------------------------------


def test_write_failure_is_counted_and_memory_stays_complete(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a regular file")
    rec = Recorder(blocker / "sub" / "run.jsonl", flush_every=1, clock=ticking())
    start_run(rec)
    rec.emit("tool.call.started", {"name": "x"})
    rec.flush()
    rec.emit("run.completed", {"outcome": "completed"})
    rec.close()
    assert rec.stats == RecorderStats(recorded=4, dropped=0, encode_errors=0, write_errors=1)
    assert [e.type for e in rec.rollout().events] == [
        "run.started",
        "llm.turn.started",
        "tool.call.started",
        "run.completed",
    ]
    assert blocker.read_text() == "a regular file"


def test_write_to_a_directory_path_is_refused(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, clock=ticking())
    rec.emit("run.started", {})
    rec.emit("run.completed", {})
    rec.close()
    assert rec.stats.refused == f"{tmp_path} is a directory, not a regular file"
    assert rec.stats.write_errors == 0
    assert len(rec.rollout().events) == 2
    assert tmp_path.is_dir()


def test_missing_parent_directories_are_created(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "run.jsonl"
    with Recorder(path, clock=ticking()) as rec:
        rec.emit("run.started", {})
        rec.emit("run.completed", {})
    assert path.read_bytes() == rec.getvalue()
    assert rec.rollout().path == str(path)


def partial_of(path: Path) -> Path:
    """The hidden file a recorder writes while its run is open."""
    found = path.parent / f".{path.name}.partial"
    assert found.is_file()
    return found


def test_flush_every_batches_writes(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rec = Recorder(path, flush_every=3, clock=ticking())
    rec.emit("run.started", {})
    rec.emit("hook.note", {"i": 1})
    assert list(tmp_path.iterdir()) == []  # nothing written before the batch is full
    rec.emit("hook.note", {"i": 2})
    partial = partial_of(path)
    assert partial.read_bytes() == rec.getvalue()
    assert partial.read_bytes().count(b"\n") == 3
    rec.emit("hook.note", {"i": 3})
    assert partial.read_bytes().count(b"\n") == 3
    rec.flush()
    assert partial.read_bytes() == rec.getvalue()
    assert partial.read_bytes().count(b"\n") == 4
    assert not path.exists()  # the run's file appears whole, when the recorder closes
    rec.emit("run.completed", {})
    assert partial.read_bytes() == rec.getvalue()  # the terminal event is written at once
    rec.close()
    assert not partial.exists()
    assert path.read_bytes() == rec.getvalue()
    assert load(path).events[-1].type == "run.completed"


def test_the_file_is_created_like_any_other(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Recorder(path, clock=ticking()) as rec:
        rec.emit("run.started", {})
        rec.emit("run.completed", {})
    assert stat.S_IMODE(path.stat().st_mode) == FILE_MODE
    assert [p.name for p in tmp_path.iterdir()] == ["run.jsonl"]


def test_an_existing_file_is_replaced_only_when_the_run_closes(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"the previous run\n")
    rec = Recorder(path, flush_every=1, clock=ticking())
    start_run(rec)
    assert path.read_bytes() == b"the previous run\n"
    rec.emit("run.completed", {})
    rec.close()
    assert path.read_bytes() == rec.getvalue()


# -- the file size cap --------------------------------------------------------------------


def run_of(rec: Recorder, notes: int, size: int = 100) -> None:
    start_run(rec)
    for i in range(notes):
        rec.emit("hook.note", {"i": i, "text": "x" * size})
    rec.emit("run.completed", {"outcome": "completed"})
    rec.close()


@pytest.mark.parametrize("flush_every", [1, 7, 1000])
def test_a_capped_file_ends_with_a_gap_marker_and_the_terminal_event(
    tmp_path: Path, flush_every: int
) -> None:
    path = tmp_path / "run.jsonl"
    rec = Recorder(path, max_file_bytes=2000, flush_every=flush_every, clock=ticking())
    run_of(rec, 50)
    whole = rec.rollout().events
    assert len(whole) == 53  # the run in memory (what the comparison sees) is whole
    data = path.read_bytes()
    kept = load(path).events
    assert kept[-1] == whole[-1]._replace(line=len(kept))
    marker = kept[-2]
    assert marker.type == "recorder.drop_detected"
    assert len(data) - len(rec.getvalue().splitlines(keepends=True)[-1]) - 60 < 2000
    written = kept[:-2]
    assert [e.seq for e in written] == list(range(len(written)))
    assert marker.seq == len(written)
    assert marker.data == {"step": 1, "dropped": 53 - len(written) - 1}
    assert rec.stats.cut_from_file == marker.data["dropped"]
    assert rec.stats.dropped == 0


def test_a_run_under_the_cap_is_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rec = Recorder(path, max_file_bytes=1_000_000, clock=ticking())
    run_of(rec, 50)
    assert path.read_bytes() == rec.getvalue()
    assert rec.stats.cut_from_file == 0


def test_a_cap_smaller_than_one_line_keeps_the_first_and_last_lines(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rec = Recorder(path, max_file_bytes=10, flush_every=1, clock=ticking())
    run_of(rec, 3)
    kept = load(path).events
    assert [e.type for e in kept] == ["run.started", "recorder.drop_detected", "run.completed"]
    assert kept[1].data == {"step": 1, "dropped": 4}


def test_close_writes_the_rest_and_later_events_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rec = Recorder(path, flush_every=1000, clock=ticking())
    start_run(rec)
    rec.close()
    assert path.read_bytes() == rec.getvalue()
    before = rec.getvalue()
    rec.emit("hook.note", {})
    rec.emit("run.completed", {})
    rec.close()  # twice is fine
    assert rec.getvalue() == before
    assert path.read_bytes() == before
    assert rec.stats == RecorderStats(recorded=2, dropped=2, encode_errors=0, write_errors=0)


def test_events_after_the_terminal_event_are_dropped() -> None:
    rec = Recorder(clock=ticking())
    rec.emit("run.started", {})
    rec.emit("run.completed", {})
    rec.emit("hook.note", {})
    rec.emit("run.failed", {})
    assert [e.type for e in rec.rollout().events] == ["run.started", "run.completed"]
    assert rec.stats.dropped == 2


# -- the payload snapshot -------------------------------------------------------------------


def test_mutating_the_payload_after_emit_changes_nothing() -> None:
    rec = Recorder(clock=ticking())
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", {})
    arguments: dict[str, Any] = {"city": "Rome", "days": [1, 2]}
    data: dict[str, Any] = {"name": "search", "arguments": arguments}
    rec.emit("tool.call.started", data)
    arguments["city"] = "Paris"
    arguments["days"].append(3)
    data["name"] = "book"
    data["extra"] = True
    rec.emit("run.completed", {})
    event: Event = rec.rollout().events[2]
    assert event.data == {
        "name": "search",
        "arguments": {"city": "Rome", "days": [1, 2]},
        "step": 1,
    }
    assert "step" not in data  # the caller's dict is not modified either


# -- encode_payload -------------------------------------------------------------------------


class ModelLike:
    """Quacks like a pydantic v2 model."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        assert mode == "json"
        return dict(self.fields)


def test_encode_payload_handles_common_python_types() -> None:
    payload = {
        "set": {"b", "a", "c"},
        "frozenset": frozenset({3, 1, 2}),
        "bytes": b"caf\xc3\xa9",
        "bad_bytes": b"\xff",
        "bytearray": bytearray(b"xy"),
        "path": Path("/tmp/report.txt"),
        "model": ModelLike(city="Rome", when=ModelLike(day=1)),
        "tuple": (1, 2),
    }
    assert orjson.loads(encode_payload(payload)) == {
        "set": ["a", "b", "c"],
        "frozenset": [1, 2, 3],
        "bytes": "café",
        "bad_bytes": "\\xff",
        "bytearray": "xy",
        "path": "/tmp/report.txt",
        "model": {"city": "Rome", "when": {"day": 1}},
        "tuple": [1, 2],
    }


def test_encode_payload_allows_non_string_keys() -> None:
    assert orjson.loads(encode_payload({"m": {1: "one", 2: "two"}})) == {
        "m": {"1": "one", "2": "two"}
    }


def test_encode_payload_refuses_unknown_objects() -> None:
    with pytest.raises(TypeError):
        encode_payload({"x": object()})


def test_emit_records_common_python_types() -> None:
    rec = Recorder(clock=ticking())
    rec.emit("run.started", {"tools": {"search"}, "path": Path("a/b"), "ids": {1: "x"}})
    rec.emit("run.completed", {"output": ModelLike(answer=42)})
    events = rec.rollout().events
    assert events[0].data == {"tools": ["search"], "path": "a/b", "ids": {"1": "x"}, "step": 0}
    assert events[1].data == {"output": {"answer": 42}, "step": 0}
    assert rec.stats.encode_errors == 0


def test_closing_a_capped_file_twice_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rec = Recorder(path, max_file_bytes=400, clock=ticking())
    run_of(rec, 10)  # closes once
    first = path.read_bytes()
    rec.close()
    rec.flush()
    assert path.read_bytes() == first
    assert load(path).events[0].type == "run.started"
    assert [p.name for p in tmp_path.iterdir()] == ["run.jsonl"]


# -- batches: what emit does at once, and what waits ---------------------------------------


def test_lines_are_stamped_with_the_time_of_emit_not_of_the_batch() -> None:
    clock = ticking(step_ns=1_000)
    rec = Recorder(clock=clock)
    rec.emit("run.started", {})
    rec.emit("hook.note", {})
    for _ in range(5_000):  # time passes before the lines are made
        clock()
    rec.emit("run.completed", {})
    assert [line["ts"] for line in lines_of(rec)] == [
        "2026-06-28T12:34:56.000000Z",
        "2026-06-28T12:34:56.000001Z",
        "2026-06-28T12:34:56.005002Z",
    ]


def test_every_event_in_a_long_run_keeps_its_order_and_step() -> None:
    rec = Recorder(clock=ticking())
    rec.emit("run.started", {})
    for turn in range(1, 301):  # many batches, with and without explicit steps
        rec.emit("llm.turn.started", {"n": turn})
        rec.emit("tool.call.started", {"n": turn, "step": turn} if turn % 3 else {"n": turn})
        rec.emit("llm.turn.completed", {})
    rec.emit("run.completed", {})
    events = rec.rollout().events
    assert [e.seq for e in events] == list(range(902))
    assert [e.step for e in events[1:-1]] == [t for t in range(1, 301) for _ in range(3)]
    assert [e.data["n"] for e in events if "n" in e.data] == [
        t for t in range(1, 301) for _ in range(2)
    ]


class FailingRedactor(Redactor):
    """The default redactor, except that it raises on a payload that holds ``marker``."""

    def __init__(self, marker: bytes) -> None:
        super().__init__(environ={})
        self.marker = marker

    def redact_payload(self, payload: bytes) -> bytes | None:
        if self.marker in payload:
            raise RuntimeError("redactor bug")
        return super().redact_payload(payload)


def test_emitting_does_not_wait_while_another_thread_makes_lines() -> None:
    entered, release = threading.Event(), threading.Event()

    class SlowRedactor(Redactor):
        def redact_payload(self, payload: bytes) -> bytes | None:
            if b"slow" in payload:
                entered.set()
                release.wait(10)
            return super().redact_payload(payload)

    rec = Recorder(clock=ticking(), redactor=SlowRedactor(environ={}))
    rec.emit("run.started", {"slow": True})
    reader = threading.Thread(target=rec.getvalue)  # makes the line, held in the redactor
    reader.start()
    assert entered.wait(10)
    for i in range(10):
        rec.emit("hook.note", {"i": i})
    assert reader.is_alive()  # the emits returned while the reader still held its batch
    release.set()
    reader.join(10)
    rec.emit("run.completed", {})
    events = rec.rollout().events
    assert [e.data.get("i") for e in events[1:-1]] == list(range(10))
    assert rec.stats.dropped == 0


def test_a_failing_redactor_loses_only_the_event_it_failed_on() -> None:
    rec = Recorder(clock=ticking(), redactor=FailingRedactor(b"boom"))
    start_run(rec)
    rec.emit("tool.call.started", {"name": "boom"})
    rec.emit("tool.call.started", {"name": "fine"})
    rec.emit("run.completed", {})
    events = rec.rollout().events
    assert [(e.type, e.data) for e in events[2:4]] == [
        ("recorder.drop_detected", {"step": 1, "dropped": 1}),
        ("tool.call.started", {"name": "fine", "step": 1}),
    ]
    assert rec.stats.dropped == 1


@pytest.mark.skipif(sys.platform != "linux", reason="the writeback hint is given on Linux only")
def test_written_bytes_are_handed_to_writeback_as_they_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranges: list[tuple[int, int]] = []
    real = os.posix_fadvise

    def advise(fd: int, offset: int, length: int, advice: int) -> None:
        ranges.append((offset, length))
        real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", advise)
    # Advice is given once a megabyte was written: here, once a byte was.
    monkeypatch.setattr("pytest_rollout.format.partial._ADVISE_EVERY", 1)
    path = tmp_path / "run.jsonl"
    rec = Recorder(path, flush_every=4, clock=ticking())
    run_of(rec, 20)
    assert len(ranges) > 2  # in batches, not once at the end
    assert [offset for offset, _ in ranges] == [0] + [o + n for o, n in ranges[:-1]]
    assert sum(n for _, n in ranges) == path.stat().st_size == len(rec.getvalue())


@pytest.mark.skipif(sys.platform != "linux", reason="the writeback hint is given on Linux only")
def test_small_writes_are_handed_to_writeback_a_megabyte_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, offset, length, advice: calls.append(1))
    rec = Recorder(tmp_path / "run.jsonl", flush_every=1, clock=ticking())
    run_of(rec, 20)
    assert calls == []  # one system call a write would double the cost of a turn


def test_a_refused_writeback_hint_is_no_write_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object) -> None:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "posix_fadvise", refuse, raising=False)
    path = tmp_path / "run.jsonl"
    rec = Recorder(path, flush_every=2, clock=ticking())
    run_of(rec, 10)
    assert rec.stats.write_errors == 0
    assert path.read_bytes() == rec.getvalue()


# -- batches that go wrong -------------------------------------------------------------------


def test_a_clock_in_the_first_second_of_the_epoch_still_makes_json() -> None:
    rec = Recorder(clock=itertools.count(0, 1_000).__next__)
    rec.emit("run.started", {})
    rec.emit("run.completed", {})
    assert [e.ts for e in rec.rollout().events] == [
        "1970-01-01T00:00:00.000000Z",
        "1970-01-01T00:00:00.000001Z",
    ]


def test_a_clock_that_gives_floats_is_read_in_whole_nanoseconds() -> None:
    now = iter([T0 + 0.5, T0 + 1_500.0])
    rec = Recorder(clock=lambda: next(now))  # type: ignore[arg-type, return-value]
    rec.emit("run.started", {})
    rec.emit("run.completed", {})
    assert [e.ts for e in rec.rollout().events] == [
        "2026-06-28T12:34:56.000000Z",
        "2026-06-28T12:34:56.000001Z",
    ]


def test_a_type_that_is_no_json_string_leaves_one_gap_marker() -> None:
    rec = Recorder(clock=ticking())
    start_run(rec)
    rec.emit("hook.note", {"x": object()})  # lost as it is emitted
    rec.emit(object(), {})  # type: ignore[arg-type]  # lost when its line is made
    rec.emit("hook.note", {})
    rec.emit("run.completed", {})
    events = rec.rollout().events
    assert [(e.type, e.data.get("dropped")) for e in events[2:4]] == [
        ("recorder.drop_detected", 2),
        ("hook.note", None),
    ]


def test_a_redactor_that_returns_no_bytes_loses_only_that_event() -> None:
    class StrRedactor(Redactor):
        def redact_payload(self, payload: bytes) -> bytes | None:
            found = super().redact_payload(payload)
            return payload.decode() if b"odd" in payload else found  # type: ignore[return-value]

    rec = Recorder(clock=ticking(), redactor=StrRedactor(environ={}))
    start_run(rec)
    rec.emit("hook.note", {"odd": 1})
    rec.emit("hook.note", {"fine": 1})
    rec.emit("run.completed", {})
    events = rec.rollout().events
    assert [e.type for e in events[2:]] == ["recorder.drop_detected", "hook.note", "run.completed"]
    assert rec.stats.dropped == 1


def test_a_terminal_event_that_is_lost_lets_another_end_the_run() -> None:
    rec = Recorder(clock=ticking(), redactor=FailingRedactor(b"fussy"))
    start_run(rec)
    rec.emit("run.completed", {"output": "fussy"})
    rec.emit("run.failed", {"error": {"class": "E", "message": "the run could not end"}})
    assert [e.type for e in rec.rollout().events][-2:] == ["recorder.drop_detected", "run.failed"]
    rec.close()
    rec.emit("run.failed", {})  # once closed, the run stays as it is
    assert rec.stats.dropped == 2


def test_a_batch_that_cannot_be_kept_is_lost_whole_and_counted_once() -> None:
    class FailOnce(bytearray):
        failed = False

        def __iadd__(self, other: Any) -> FailOnce:  # type: ignore[misc]
            if not FailOnce.failed:
                FailOnce.failed = True
                raise MemoryError
            return super().__iadd__(other)

    rec = Recorder(clock=ticking())
    rec._buffer = FailOnce()  # the first batch (run.started, a gap, two notes) is lost
    rec.emit("run.started", {})
    rec.emit("hook.note", {"x": object()})
    rec.emit("hook.note", {"i": 1})
    rec.emit("hook.note", {"i": 2})
    rec.flush()
    assert rec.getvalue() == b""
    rec.emit("hook.note", {"i": 3})
    rec.emit("run.completed", {})
    lines = lines_of(rec)
    assert [line["seq"] for line in lines] == [0, 1, 2]
    assert lines[0]["data"] == {"step": 0, "dropped": 4}
    assert rec.stats.dropped == 4
