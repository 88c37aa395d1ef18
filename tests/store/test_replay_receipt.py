"""Replay receipts (docs/replay.md): a receipt written for a replayed run proves which golden
it replayed and how much matched; any edit of the receipt, the run or the golden, or a
receipt held up against another golden, is refused."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from pytest_rollout.diff.canonical import DEFAULT_OPTIONS
from pytest_rollout.diff.compare import compare
from pytest_rollout.format.loader import load
from pytest_rollout.store.receipt import make_receipt, receipt_path, write_receipt
from pytest_rollout.store.replay_receipt import (
    ReplayDivergence,
    ReplayRecord,
    check_replay,
    options_fingerprint,
    recorded_counts,
    trajectory_digests,
    write_replay_receipt,
)

SOURCE = Path(__file__).parents[2] / "golden/tests/examples/test_example_agent"
GOLDEN = SOURCE / "test_weather_agent[lyon].jsonl"
OTHER = SOURCE / "test_weather_agent[unknown-city].jsonl"


def seal(path: Path) -> str:
    """Seal ``path`` and give its receipt's body digest."""
    receipt = make_receipt(path.read_bytes(), redaction_mode="redacted", rules_sha256="")
    write_receipt(path, receipt)
    return receipt.digest(path.name)


def replayed(tmp_path: Path, run_bytes: bytes | None = None) -> tuple[Path, Path]:
    """A golden (sealed) and a run replayed from it, with the run's replay receipt."""
    golden = tmp_path / "golden.jsonl"
    shutil.copyfile(GOLDEN, golden)
    replay_of = seal(golden)
    run = tmp_path / "run.jsonl"
    run.write_bytes(GOLDEN.read_bytes() if run_bytes is None else run_bytes)
    golden_events, run_events = load(golden).events, load(run).events
    turns, calls = recorded_counts(golden_events)
    identical = compare(golden_events, run_events, DEFAULT_OPTIONS).identical
    digests = trajectory_digests(golden_events, run_events, DEFAULT_OPTIONS, identical=identical)
    record = ReplayRecord(
        mode="dry",
        golden=str(golden),
        golden_sha256=hashlib.sha256(golden.read_bytes()).hexdigest(),
        verified=True,
        turns_served=turns,
        turns_recorded=turns,
        calls_matched=calls,
        calls_recorded=calls,
        divergences=(),
        identical=identical,
        canonical_golden=digests[0],
        canonical_run=digests[1],
        options=options_fingerprint(DEFAULT_OPTIONS),
    )
    write_replay_receipt(
        run,
        run.read_bytes(),
        record,
        replay_of=replay_of,
        redaction_mode="redacted",
        rules_sha256="",
    )
    return golden, run


def leaves(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(obj, dict):
        return [p for key, value in obj.items() for p in leaves(value, (*path, key))]
    return [path]


def edited(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value[:-1] + ("0" if value[-1:] != "0" else "1")
    return "changed"


def test_a_replay_receipt_of_an_identical_replay_checks(tmp_path: Path) -> None:
    _, run = replayed(tmp_path)

    check = check_replay(run)

    assert check.ok, check.problems
    assert check.record is not None
    assert check.record.identical
    assert check.record.canonical_golden == check.record.canonical_run
    assert check.checked[-1] == "canonical trajectories recomputed: identical=True"


def test_every_field_of_the_receipt_is_vouched_for(tmp_path: Path) -> None:
    _, run = replayed(tmp_path)
    original = orjson.loads(receipt_path(run).read_bytes())
    paths = [p for p in leaves(original) if p != ("body_sha256",)]
    assert ("replay", "turns", "served") in paths
    assert ("replay_of",) in paths
    for path in paths:
        receipt = orjson.loads(receipt_path(run).read_bytes())
        node = receipt
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = edited(node[path[-1]])
        receipt_path(run).write_bytes(orjson.dumps(receipt))
        check = check_replay(run)
        assert not check.ok, path
        receipt_path(run).write_bytes(orjson.dumps(original))
    assert check_replay(run).ok


def test_a_run_edited_in_one_byte_is_refused(tmp_path: Path) -> None:
    _, run = replayed(tmp_path)
    data = bytearray(run.read_bytes())
    data[data.index(b"Lyon")] = ord("l")
    run.write_bytes(bytes(data))

    check = check_replay(run)

    assert check.problems[0].startswith(f"the run {run} does not match its receipt: MISMATCH")


def test_a_receipt_held_against_another_golden_is_refused(tmp_path: Path) -> None:
    _, run = replayed(tmp_path)
    other = tmp_path / "other.jsonl"
    shutil.copyfile(OTHER, other)
    seal(other)

    check = check_replay(run, other)

    assert check.problems[0].startswith(f"the golden {other} is not the file this run replayed")


def test_a_golden_sealed_anew_is_not_the_one_the_replay_names(tmp_path: Path) -> None:
    golden, run = replayed(tmp_path)
    write_receipt(golden, make_receipt(golden.read_bytes(), redaction_mode="full", rules_sha256=""))

    check = check_replay(run)

    assert check.problems == (
        f"the receipt is not of a replay of {golden}'s receipt (replay_of differs)",
    )


def reforged(run: Path, change: dict[str, Any]) -> None:
    """Edit the replay record and recompute the receipt's own digest, as someone who knows
    the format could: what is checked against the files still catches it."""
    receipt = orjson.loads(receipt_path(run).read_bytes())
    receipt["replay"].update(change)
    del receipt["body_sha256"]
    receipt["body_sha256"] = hashlib.sha256(
        orjson.dumps(receipt, option=orjson.OPT_SORT_KEYS)
    ).hexdigest()
    receipt_path(run).write_bytes(orjson.dumps(receipt))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            {"turns": {"served": 1, "recorded": 1}},
            "the golden holds 2 turn(s) and 1 tool call(s), the receipt says 1 and 1",
        ),
        (
            {"canonical": {"golden": "0" * 64, "run": "0" * 64, "options": "x"}},
            None,
        ),
        ({"identical": False}, "the receipt says identical=False, the runs say True"),
    ],
)
def test_a_reforged_record_is_caught_by_the_files(
    tmp_path: Path, change: dict[str, Any], problem: str | None
) -> None:
    _, run = replayed(tmp_path)
    if "canonical" in change:
        # Another canonical form: the digests cannot be recomputed, and the check says so.
        reforged(run, change)
        check = check_replay(run)
        assert check.ok
        assert check.checked[-1].startswith("canonical digests not recomputed")
        return
    reforged(run, change)

    check = check_replay(run)

    assert check.problems == (problem,)


def test_a_reforged_digest_under_the_same_options_is_caught(tmp_path: Path) -> None:
    _, run = replayed(tmp_path)
    fingerprint = options_fingerprint(DEFAULT_OPTIONS)
    reforged(run, {"canonical": {"golden": "1" * 64, "run": "1" * 64, "options": fingerprint}})

    check = check_replay(run)

    assert check.problems == ("the canonical trajectories are not the ones the receipt names",)


def test_a_diverged_run_keeps_its_divergences_in_the_receipt(tmp_path: Path) -> None:
    changed = GOLDEN.read_bytes().replace(b'"Lyon"', b'"LYON"', 1)
    _, run = replayed(tmp_path, changed)

    check = check_replay(run)

    assert check.ok, check.problems
    assert check.record is not None
    assert not check.record.identical
    lines = check.record.lines()
    assert lines[2].endswith("identical=False")
    record = check.record
    shown = ReplayRecord(
        **{
            **{f: getattr(record, f) for f in record.__dataclass_fields__},
            "divergences": (ReplayDivergence("tool_call_mismatch", 1, "agent"),),
        }
    )
    assert "  divergence: tool_call_mismatch at step 1 (agent)" in shown.lines()


def test_a_golden_receipt_is_not_a_replay_receipt(tmp_path: Path) -> None:
    golden, _ = replayed(tmp_path)

    assert check_replay(golden).problems == (f"{golden}'s receipt is not a replay receipt",)


def test_a_replay_receipt_without_its_own_digest_is_refused(tmp_path: Path) -> None:
    _, run = replayed(tmp_path)
    receipt = orjson.loads(receipt_path(run).read_bytes())
    del receipt["body_sha256"]
    receipt_path(run).write_bytes(orjson.dumps(receipt))

    check = check_replay(run)

    assert "a replay receipt must carry its body_sha256" in check.problems[0]
