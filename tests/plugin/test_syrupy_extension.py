"""``RolloutSnapshotExtension`` on its own: what it stores, how it compares, what it reports,
and that ``import pytest_rollout`` leaves syrupy unimported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension

import pytest_rollout
from pytest_rollout import CanonicalOptions, RolloutError, load, loads
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.plugin.snapshot import RolloutSnapshotExtension, serialize_events
from pytest_rollout.session import Mode, RolloutSession
from pytest_rollout.session.setup import RunSetup

GOLDEN = (
    Path(__file__).resolve().parents[2]
    / "examples/weather/golden/test_weather_agent/test_weather_question[paris].jsonl"
)


def test_importing_the_package_does_not_import_syrupy() -> None:
    code = "import pytest_rollout, sys; assert 'syrupy' not in sys.modules, 'syrupy imported'"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_extension_is_a_lazy_attribute_of_the_package() -> None:
    assert pytest_rollout.RolloutSnapshotExtension is RolloutSnapshotExtension
    assert "RolloutSnapshotExtension" in pytest_rollout.__all__
    assert issubclass(RolloutSnapshotExtension, SingleFileSnapshotExtension)
    assert RolloutSnapshotExtension.file_extension == "jsonl"
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = pytest_rollout.nothing_here


def serialized(data: object) -> bytes:
    out = RolloutSnapshotExtension().serialize(data)
    assert isinstance(out, bytes)
    return out


def test_serialization_is_canonical_loadable_and_idempotent() -> None:
    golden = load(GOLDEN)

    data = serialized(golden)

    assert data == serialized(list(golden.events)) == serialized(tuple(golden.events))
    snapshot = loads(data, path="snapshot")
    assert [(e.type, e.step) for e in snapshot.events] == [(e.type, e.step) for e in golden.events]
    assert all(e.ts == "1970-01-01T00:00:00Z" for e in snapshot.events)
    assert serialized(snapshot) == data  # a snapshot is its own canonical form
    first = orjson.loads(data.splitlines()[0])
    assert list(first) == ["ts", "seq", "type", "data"]
    assert "run_id" not in first["data"]
    assert "provider" not in first["data"]


def test_the_test_options_apply_to_what_is_stored() -> None:
    golden = load(GOLDEN)
    options = CanonicalOptions().extended(
        ignore_paths=["tool.call.completed:output.wind_kmh"], ignore_types=["usage.delta"]
    )

    data = serialize_events(golden.events, options)

    assert b"wind_kmh" not in data.split(b"tool.call.completed", 1)[1].split(b"\n", 1)[0]
    assert b"usage.delta" not in data
    assert [e.seq for e in loads(data).events] == list(range(data.count(b"\n")))


def test_matching_is_canonical_not_bytewise() -> None:
    ext = RolloutSnapshotExtension()
    ours = serialized(load(GOLDEN))
    # The same run written with other timestamps and key order: the same canonical run.
    lines = [orjson.loads(line) for line in ours.splitlines()]
    for n, line in enumerate(lines):
        line["ts"] = f"2030-01-01T00:00:{n:02d}Z"
        line["data"] = dict(reversed(line["data"].items()))
    rewritten = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    changed = ours.replace(b'"city":"Paris"', b'"city":"paris"', 1)

    assert rewritten != ours
    assert ext.matches(serialized_data=ours, snapshot_data=rewritten)
    assert not ext.matches(serialized_data=changed, snapshot_data=ours)
    assert not ext.matches(serialized_data=ours, snapshot_data=b"<<<<<<< HEAD\n")


def test_the_failure_lines_are_the_first_divergence_report() -> None:
    ext = RolloutSnapshotExtension()
    ours = serialized(load(GOLDEN))
    call = b'"type":"tool.call.started","data":{"arguments":{"city":"Paris"}'
    changed = ours.replace(call, call.replace(b"Paris", b"paris"))

    lines = list(ext.diff_lines(changed, ours))

    assert lines[0] == (
        "this run left its snapshot at step 1: tool_call_mismatch (attributed to the agent)"
    )
    assert '    data.arguments.city: "Paris" -> "paris"' in lines
    assert any(line.startswith("Score: ") for line in lines)
    assert not any(line.startswith("Cost: ") for line in lines)  # a snapshot keeps no cost
    # Not read from a file: nothing names a file, or a command that would take one.
    assert not any(line.startswith(("Snapshot:", "Fork", "  rollout")) for line in lines)
    assert list(ext.diff_lines(ours, b"")) == ["Create it with: pytest --snapshot-update"]
    stored_diff = ext.diff_snapshots(changed, ours)  # snapshot(diff=...) stores the report
    assert isinstance(stored_diff, bytes)
    assert stored_diff.decode().splitlines() == lines
    broken = list(ext.diff_lines(ours, b"not json\n"))
    assert broken[0].startswith("the stored snapshot cannot be read: ")
    assert "invalid JSON" in broken[0]


def test_only_a_finished_run_can_be_snapshotted() -> None:
    ext = RolloutSnapshotExtension()
    session = RolloutSession(RunSetup(test_id="t.py::test", mode=Mode.LIVE), Recorder(None))
    with pytest.raises(RolloutError, match="the rollout recorded nothing"):
        ext.serialize(session)
    with pytest.raises(TypeError, match="not dict"):
        ext.serialize({"a": 1})
    with pytest.raises(TypeError, match="no include/exclude filters"):
        ext.serialize(load(GOLDEN), exclude=lambda **_: False)
    with pytest.raises(RolloutError, match=r"cannot be snapshotted: .* the first event must be"):
        ext.serialize(list(load(GOLDEN).events[1:]))


def test_a_run_left_open_is_closed_first() -> None:
    session = RolloutSession(RunSetup(test_id="t.py::test", mode=Mode.LIVE), Recorder(None))
    session.emit("custom.note", text="hello")  # opens the run, never closed by the test

    events = loads(serialized(session)).events

    assert [e.type for e in events] == ["run.started", "custom.note", "run.completed"]


def test_the_failure_lines_name_the_snapshot_file_read(tmp_path: Path) -> None:
    ext = RolloutSnapshotExtension()
    path = tmp_path / "test_weather.jsonl"
    path.write_bytes(serialized(load(GOLDEN)))
    stored = ext.read_snapshot_data_from_location(
        snapshot_location=str(path), snapshot_name="test_weather", session_id="1"
    )
    assert isinstance(stored, bytes)
    *head, last = serialized(load(GOLDEN)).splitlines(keepends=True)
    changed = b"".join(head) + last.replace(b'"output":"', b'"output":"Well: ')

    lines = list(ext.diff_lines(changed, stored))

    assert lines[0].startswith("this run left its snapshot at step 2: response_mismatch")
    assert lines[1].startswith("Snapshot: ")  # (cut at 100 columns, as a golden's path is)
    # The model's last turn matched, only the answer changed: the fork keeps that turn.
    assert f"  rollout fork {path} --step 2" in lines
