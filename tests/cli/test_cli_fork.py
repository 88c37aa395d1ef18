"""Tests of ``rollout fork --out``: a fork written as a run of its own, and ``--json``'s report.

The written run loads, passes ``rollout check`` with its receipt, and compares with the
golden it came from as that golden's first steps; the command refuses a bad step and an
existing file without writing anything.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any, Final

import pytest
from hostile import assert_printable
from test_cli_diff import write_trip

from pytest_rollout.cli import main
from pytest_rollout.diff.compare import StepStatus, compare
from pytest_rollout.format.events import RUN_COMPLETED, TERMINAL_TYPES
from pytest_rollout.format.loader import load
from pytest_rollout.replay.fork import fork
from pytest_rollout.store.capture import is_run_id
from pytest_rollout.store.receipt import ReceiptStatus, receipt_path, verify

ROOT: Final = Path(__file__).resolve().parents[2]
#: One of the plugin's own goldens: three steps, two tool calls.
GOLDEN: Final = (
    ROOT / "golden/tests/examples/test_example_agent/test_weather_agent[paris-fahrenheit].jsonl"
)
#: What ``rollout fork`` printed before ``--out`` and ``--json`` existed.
CONVERSATION_FIELDS: Final = {
    "format",
    "from_step",
    "original_steps",
    "original_outcome",
    "restored",
    "messages",
}
REPORT_FIELDS: Final = {
    "run_id",
    "out",
    "events_replayed",
    "step_count",
    "original_step_count",
    "messages_restored",
}


def fork_cli(*args: str | Path) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["fork", *map(str, args)], out=out)
    return code, out.getvalue()


def pending(folder: Path) -> list[str]:
    """What a write left beside its targets."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("step", [0, 1, 2, 3])
def test_the_fork_is_a_run_that_loads_checks_and_is_the_goldens_prefix(
    tmp_path: Path, step: int
) -> None:
    original = load(GOLDEN)
    new = tmp_path / "forks" / "weather.jsonl"  # the folder is made

    code, out = fork_cli(GOLDEN, "--step", str(step), "--out", new)

    assert code == 0
    forked = load(new)
    started = forked.events[0].data
    run_id = started["run_id"]
    assert is_run_id(run_id)
    assert run_id != original.events[0].data["run_id"]
    assert started["forked_from"] == {
        "run_id": original.events[0].data["run_id"],
        "golden": "sha256:" + hashlib.sha256(GOLDEN.read_bytes()).hexdigest(),
        "step": step,
    }
    kept = [e for e in original.events if e.step <= step and e.type not in TERMINAL_TYPES]
    assert out == (
        f"forked {GOLDEN} at step {step} of 3 into {new}: run {run_id}, {len(kept)} "
        f"event{'' if len(kept) == 1 else 's'} kept, sealed with its receipt\n"
    )
    # The original's events, as recorded, then the fork's own end.
    assert [(e.ts, e.seq, e.type) for e in forked.events[:-1]] == [
        (e.ts, e.seq, e.type) for e in kept
    ]
    assert [e.data for e in forked.events[1:-1]] == [e.data for e in kept[1:]]
    end = forked.events[-1]
    assert (end.type, end.step, end.data["outcome"]) == (RUN_COMPLETED, step, "forked")
    assert forked.steps == step

    check = io.StringIO()
    assert main(["check", str(new)], out=check) == 0
    assert check.getvalue().splitlines()[0] == f"{new}: matched"
    assert verify(new, new.read_bytes()).status is ReceiptStatus.OK
    assert pending(new.parent) == []

    # Compared with the golden: every step before N identical; at step N every event of the
    # golden's, then the fork's own end is the first difference.
    comparison = compare(original.events, forked.events)
    assert [s.status for s in comparison.steps[:step]] == [StepStatus.IDENTICAL] * step
    first = comparison.first
    assert first is not None
    assert first.step == step
    assert first.index == len([e for e in kept if e.step == step])
    assert first.b_event == end
    diff = io.StringIO()
    assert main(["diff", str(GOLDEN), str(new)], out=diff) == 1
    assert f"First divergence at step {step} (diverged)" in diff.getvalue()
    assert "B forked where A completed" in diff.getvalue()


def test_json_reports_the_forks_fields_with_and_without_out(tmp_path: Path) -> None:
    new = tmp_path / "weather.jsonl"
    code, plain = fork_cli(GOLDEN, "--step", "2")
    assert code == 0
    conversation = json.loads(plain)
    # Without --out or --json, the output is what it always was.
    assert set(conversation) == CONVERSATION_FIELDS

    code, text = fork_cli(GOLDEN, "--step", "2", "--json")
    assert code == 0
    report: dict[str, Any] = json.loads(text)
    assert set(report) == CONVERSATION_FIELDS | REPORT_FIELDS
    assert {k: report[k] for k in CONVERSATION_FIELDS} == conversation
    assert {k: report[k] for k in REPORT_FIELDS} == {
        "run_id": None,
        "out": None,
        "events_replayed": 11,
        "step_count": 2,
        "original_step_count": 3,
        "messages_restored": conversation["restored"],
    }
    assert not new.exists()

    code, text = fork_cli(GOLDEN, "--step", "2", "--out", new, "--json")
    assert code == 0
    written = json.loads(text)
    assert {k: written[k] for k in CONVERSATION_FIELDS} == conversation
    assert written["run_id"] == load(new).events[0].data["run_id"]
    assert written["out"] == str(new)
    assert written["events_replayed"] == len(load(new).events) - 1 == 11
    assert (written["step_count"], written["original_step_count"]) == (2, 3)


def test_the_message_options_shape_the_conversation_not_the_file(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert fork_cli(GOLDEN, "--step", "1", "--out", a)[0] == 0
    everything = ("--include-system", "--include-tool-calls", "--include-tool-results")
    code, text = fork_cli(
        GOLDEN, "--step", "1", "--out", b, "--json", "--format", "openai", *everything
    )
    assert code == 0
    events = load(GOLDEN).events
    assert (
        json.loads(text)["messages"]
        == fork(
            events,
            1,
            format="openai",
            include_system=True,
            include_tool_calls=True,
            include_tool_results=True,
        ).messages
    )
    assert [e.data for e in load(a).events[1:-1]] == [e.data for e in load(b).events[1:-1]]


@pytest.mark.parametrize("step", ["4", "-1"])
def test_a_step_outside_the_run_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], step: str
) -> None:
    new = tmp_path / "weather.jsonl"
    assert main(["fork", str(GOLDEN), "--step", step, "--out", str(new)]) == 2
    assert capsys.readouterr().err == (
        f"rollout: error: cannot fork at step {step}: "
        + ("steps start at 0\n" if step == "-1" else "the run has 3 step(s) (0 to 3)\n")
    )
    assert list(tmp_path.iterdir()) == []


def test_an_existing_out_is_replaced_only_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = tmp_path / "weather.jsonl"
    assert fork_cli(GOLDEN, "--step", "1", "--out", new)[0] == 0
    before = new.read_bytes(), receipt_path(new).read_bytes()

    assert main(["fork", str(GOLDEN), "--step", "2", "--out", str(new)]) == 2
    assert capsys.readouterr().err == (
        f"rollout: error: {new} exists: a rollout and its receipt are not replaced unasked; "
        "write the fork to another file, or pass --force to replace it\n"
    )
    assert (new.read_bytes(), receipt_path(new).read_bytes()) == before

    code, out = fork_cli(GOLDEN, "--step", "2", "--out", new, "--force")
    assert code == 0
    assert out.startswith(f"forked {GOLDEN} at step 2 of 3 into {new}: run ")
    replaced = load(new)
    assert replaced.steps == 2
    assert replaced.events[0].data["run_id"] != load_run_id(before[0])
    assert verify(new, new.read_bytes()).status is ReceiptStatus.OK
    assert pending(tmp_path) == []


def load_run_id(data: bytes) -> str:
    return str(json.loads(data.splitlines()[0])["data"]["run_id"])


def test_the_rollout_being_forked_is_never_written_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_trip(tmp_path / "trip.jsonl")
    data = source.read_bytes()
    assert main(["fork", str(source), "--step", "1", "--out", str(source), "--force"]) == 2
    assert capsys.readouterr().err == (
        f"rollout: error: {source} is the rollout being forked: write the fork to another file\n"
    )
    assert source.read_bytes() == data
    assert not receipt_path(source).exists()


def test_a_link_or_a_folder_is_not_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_trip(tmp_path / "trip.jsonl")
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(b"kept\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(elsewhere)
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    for target in (link, folder):
        assert main(["fork", str(source), "--step", "1", "--out", str(target), "--force"]) == 2
        assert capsys.readouterr().err == (
            f"rollout: error: {target} is not a regular file: write the fork to a file of its own\n"
        )
    assert elsewhere.read_bytes() == b"kept\n"
    assert list(folder.iterdir()) == []


def test_a_folder_that_cannot_be_made_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_bytes(b"")
    target = tmp_path / "file" / "fork.jsonl"
    assert main(["fork", str(GOLDEN), "--step", "1", "--out", str(target)]) == 2
    assert capsys.readouterr().err == f"rollout: error: cannot write {target}: File exists\n"


def test_force_needs_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fork", str(GOLDEN), "--step", "1", "--force"]) == 2
    assert capsys.readouterr().err == (
        "rollout fork: error: --force replaces the file that --out names: give --out NEW.jsonl\n"
    )


def test_the_fork_is_redacted_as_a_recorded_run_is(tmp_path: Path) -> None:
    source = write_trip(tmp_path / "trip.jsonl")
    secret = "sk-" + "A1b2C3d4" * 5
    leaky = tmp_path / "leaky.jsonl"
    leaky.write_bytes(
        source.read_bytes().replace(b'{"temp":21}', b'{"key":"%s"}' % secret.encode())
    )
    new = tmp_path / "fork.jsonl"

    assert fork_cli(leaky, "--step", "1", "--out", new)[0] == 0

    data = new.read_bytes()
    assert secret.encode() not in data
    assert b"[REDACTED:" in data
    receipt = verify(new, data).receipt
    assert receipt is not None
    assert receipt.redaction_mode == "redacted"


def test_a_fork_of_a_fork_names_the_run_it_came_from(tmp_path: Path) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    assert fork_cli(GOLDEN, "--step", "2", "--out", first)[0] == 0
    assert fork_cli(first, "--step", "1", "--out", second)[0] == 0
    origin = load(second).events[0].data["forked_from"]
    assert origin["run_id"] == load(first).events[0].data["run_id"]
    assert origin["golden"] == "sha256:" + hashlib.sha256(first.read_bytes()).hexdigest()
    assert origin["step"] == 1


def test_the_line_printed_is_terminal_safe(tmp_path: Path) -> None:
    hostile = tmp_path / "\x1b[2J\u202e::error::x.jsonl"
    source = write_trip(tmp_path / "trip.jsonl")
    hostile.write_bytes(source.read_bytes())
    code, out = fork_cli(hostile, "--step", "1", "--out", tmp_path / "\n::warning::y.jsonl")
    assert code == 0
    assert_printable(out)
    assert re.fullmatch(
        r"forked .* at step 1 of 2 into .*: run \S+, 6 events kept, sealed "
        r"with its receipt\n",
        out,
    )
