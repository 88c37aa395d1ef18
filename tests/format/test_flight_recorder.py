"""The flight recorder: a run's file grows on disk as the run goes, so a hard crash leaves
every event up to the last turn boundary in ``.<name>.partial`` (docs/file-format.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

from pytest_rollout.format.loader import load
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.safety.redact import Redactor

KEY = "sk-proj-" + "Zq7Lm2Np4Rs6Tu8Vw0Xy1Ab3Cd5Ef7Gh9"


def partial_of(path: Path) -> Path:
    """Where a run's lines are while it is recorded: a predictable name beside its file."""
    return path.parent / f".{path.name}.partial"


def lines(path: Path) -> list[dict[str, Any]]:
    """Each line of a file, parsed on its own (a cut-short run has no terminal event)."""
    data = path.read_bytes()
    assert data.endswith(b"\n")  # whole lines only
    return [orjson.loads(line) for line in data.splitlines()]


def types(path: Path) -> list[str]:
    return [line["type"] for line in lines(path)]


def test_each_turn_boundary_writes_the_lines_out_and_batches_between(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    partial = partial_of(path)
    rec = Recorder(path)  # a batch of 512 events: only the boundaries write
    rec.emit("run.started", {})
    assert not partial.exists()
    rec.emit("llm.turn.started", {"messages": []})
    assert types(partial) == ["run.started", "llm.turn.started"]
    rec.emit("tool.call.started", {"call_id": "c1", "name": "t", "arguments": {}})
    rec.emit("tool.call.completed", {"call_id": "c1", "name": "t", "output": "ok"})
    assert len(lines(partial)) == 2  # between boundaries, events wait in memory
    rec.emit("llm.turn.completed", {"text": "done"})
    assert partial.read_bytes() == rec.getvalue()
    assert len(lines(partial)) == 5
    assert not path.exists()  # the run's file appears whole, at the end
    rec.emit("run.completed", {"outcome": "completed"})
    rec.close()
    assert not partial.exists()
    assert load(path).events[-1].type == "run.completed"


def test_a_run_in_memory_only_writes_nothing(tmp_path: Path) -> None:
    rec = Recorder()
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", {})
    rec.emit("run.completed", {})
    rec.close()
    assert list(tmp_path.iterdir()) == []
    assert len(rec.rollout().events) == 3


CRASHING_RUN = textwrap.dedent(
    """
    import os, signal, sys
    from pytest_rollout.format.recorder import Recorder
    from pytest_rollout.safety.redact import Redactor

    path, how, key = sys.argv[1:]
    rec = Recorder(path, redactor=Redactor(environ={}))
    rec.emit("run.started", {"run_id": "r", "test_id": "t"})
    for step in (1, 2):
        rec.emit("llm.turn.started", {"messages": [{"role": "user", "content": key}]})
        call = {"call_id": f"c{step}", "name": "vault"}
        rec.emit("tool.call.started", {**call, "arguments": {}})
        rec.emit("tool.call.completed", {**call, "output": "ok"})
        rec.emit("llm.turn.completed", {"text": f"turn {step}"})
    rec.emit("llm.turn.started", {"messages": []})
    rec.emit("tool.call.started", {"call_id": "c3", "name": "vault", "arguments": {}})
    if how == "exit":
        os._exit(3)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL and the file layout are POSIX")
@pytest.mark.parametrize("how", ["exit", "sigkill"])
def test_a_hard_crash_leaves_every_event_up_to_the_last_turn_boundary(
    tmp_path: Path, how: str
) -> None:
    path = tmp_path / "runs" / "test_agent.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_RUN, str(path), how, KEY],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == (3 if how == "exit" else -signal.SIGKILL), done.stderr
    assert not path.exists()  # no whole run to put in place
    partial = partial_of(path)
    found = lines(partial)
    assert [line["type"] for line in found] == [
        "run.started",
        *["llm.turn.started", "tool.call.started", "tool.call.completed", "llm.turn.completed"] * 2,
        "llm.turn.started",  # the last boundary; the tool call after it was still in memory
    ]
    assert [line["seq"] for line in found] == list(range(10))
    assert [line["data"].get("step", 0) for line in found] == [0, 1, 1, 1, 1, 2, 2, 2, 2, 3]
    # Redaction was applied before the lines were written.
    assert KEY.encode() not in partial.read_bytes()
    assert found[1]["data"]["messages"][0]["content"] == "[REDACTED:openai-key]"

    # The next run of the same test takes the name over and leaves only its own file.
    with Recorder(path) as rec:
        rec.emit("run.started", {})
        rec.emit("run.completed", {})
    assert not partial.exists()
    assert path.read_bytes() == rec.getvalue()


def test_a_stale_partial_file_is_started_afresh_by_the_next_run(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    partial = partial_of(path)
    partial.write_bytes(b'{"left": "by a run that crashed"}\n' * 100)
    rec = Recorder(path)
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", {})
    assert partial.read_bytes() == rec.getvalue()  # replaced, not appended to
    rec.emit("run.completed", {})
    rec.close()
    assert [p.name for p in tmp_path.iterdir()] == ["run.jsonl"]
    assert rec.stats.refused is None


def test_a_second_run_writing_the_same_file_at_once_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    first = Recorder(path)
    first.emit("run.started", {"who": "first"})
    first.emit("llm.turn.started", {})
    second = Recorder(path)
    second.emit("run.started", {"who": "second"})
    second.emit("llm.turn.started", {})
    second.emit("run.completed", {})
    second.close()
    assert second.stats.refused == (
        f"{partial_of(path)} is being written by another run of this test"
    )
    assert len(second.rollout().events) == 3  # its run in memory is whole
    assert not path.exists()
    first.emit("run.completed", {})
    first.close()
    assert first.stats.refused is None
    assert path.read_bytes() == first.getvalue()
    assert not partial_of(path).exists()


def test_a_secret_the_scan_finds_is_never_written_even_to_the_partial_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    rec = Recorder(path, redactor=Redactor(environ={}))
    rec.emit("run.started", {})
    rec.emit("llm.turn.started", {})
    partial = partial_of(path)
    assert len(lines(partial)) == 2
    rec.emit(f"note.{KEY}", {})  # event types are not redacted: only the scan sees it
    rec.emit("llm.turn.completed", {})
    assert KEY.encode() not in partial.read_bytes()
    assert len(lines(partial)) == 2  # nothing more is written
    rec.emit("run.completed", {})
    rec.close()
    assert rec.stats.leaked == "openai-key"
    assert list(tmp_path.iterdir()) == []
    assert len(rec.rollout().events) == 5  # the run in memory is unaffected


def test_a_size_capped_run_still_writes_its_turns_then_stops(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rec = Recorder(path, max_file_bytes=400)
    rec.emit("run.started", {})
    for i in range(20):
        rec.emit("llm.turn.started", {"i": i, "text": "x" * 50})
    written = partial_of(path).stat().st_size
    assert 0 < written <= 400
    rec.emit("run.completed", {})
    rec.close()
    events = load(path).events
    assert events[-2].type == "recorder.drop_detected"
    assert events[-1].type == "run.completed"
    assert rec.stats.cut_from_file > 0
