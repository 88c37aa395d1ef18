"""A forked run's origin: the events a fork starts from, and ``run.started``'s ``forked_from``
as the loader reads it (optional, exactly shaped, hostile values refused)."""

from __future__ import annotations

from typing import Any, Final

import orjson
import pytest
from test_fork import EVENTS

from pytest_rollout import RolloutFormatError, loads
from pytest_rollout.diff.compare import compare
from pytest_rollout.format.events import RUN_COMPLETED, TERMINAL_TYPES
from pytest_rollout.replay.fork import ForkError, fork_prefix, forked_from, original_run_id

DIGEST: Final = "ab" * 32


def rollout_bytes(started: dict[str, Any]) -> bytes:
    lines = [
        {"ts": "2026-06-28T12:34:56.000000Z", "seq": 0, "type": "run.started", "data": started},
        {"ts": "2026-06-28T12:34:57.000000Z", "seq": 1, "type": RUN_COMPLETED, "data": {}},
    ]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


@pytest.mark.parametrize("step", [0, 1, 2, 3])
def test_the_prefix_is_every_event_up_to_the_step_without_the_end(step: int) -> None:
    prefix = fork_prefix(EVENTS, step)
    assert prefix == tuple(e for e in EVENTS if e.step <= step and e.type not in TERMINAL_TYPES)
    assert prefix[-1].step <= step
    assert EVENTS[len(prefix)].step > step or EVENTS[len(prefix)].type in TERMINAL_TYPES


@pytest.mark.parametrize("step", [-1, 4])
def test_the_prefix_of_a_step_outside_the_run_is_refused(step: int) -> None:
    with pytest.raises(ForkError, match=f"cannot fork at step {step}"):
        fork_prefix(EVENTS, step)


def test_forked_from_has_one_shape() -> None:
    assert original_run_id(EVENTS) == "r"
    assert forked_from("r", DIGEST, 2) == {"run_id": "r", "golden": f"sha256:{DIGEST}", "step": 2}
    assert forked_from(None, DIGEST, 0)["run_id"] is None
    with pytest.raises(ValueError, match="not a sha256 hex digest"):
        forked_from("r", DIGEST.upper(), 2)
    with pytest.raises(ValueError, match="not a step"):
        forked_from("r", DIGEST, -1)


@pytest.mark.parametrize(
    "started",
    [
        {"run_id": "old"},  # a run that is no fork, as every file written before forks were
        {"forked_from": None},
        {"forked_from": {"run_id": None, "golden": f"sha256:{DIGEST}", "step": 0}},
        {"forked_from": {"run_id": "r", "golden": f"sha256:{DIGEST}", "step": 1_000_000}},
        {"forked_from": {"run_id": "r", "golden": f"sha256:{DIGEST}", "step": 3, "by": "x"}},
    ],
)
def test_a_run_with_or_without_an_origin_loads(started: dict[str, Any]) -> None:
    assert loads(rollout_bytes(started)).events[0].data == started


HOSTILE: Final = {
    "a string": ("x", "data.forked_from must be an object or null, got a string"),
    "an array": ([], "data.forked_from must be an object or null, got an array"),
    "no golden": (
        {"run_id": "r", "step": 1},
        'data.forked_from must have a "golden" field',
    ),
    "no step": (
        {"run_id": "r", "golden": f"sha256:{DIGEST}"},
        'data.forked_from must have a "step" field',
    ),
    "no run id": ({"golden": f"sha256:{DIGEST}", "step": 1}, 'must have a "run_id" field'),
    "run id": (
        {"run_id": ["r"], "golden": f"sha256:{DIGEST}", "step": 1},
        "data.forked_from.run_id must be a string or null, got an array",
    ),
    "digest without its kind": (
        {"run_id": "r", "golden": DIGEST, "step": 1},
        'data.forked_from.golden must be "sha256:" and 64 lowercase hex digits, got another string',
    ),
    "short digest": ({"run_id": "r", "golden": "sha256:ab", "step": 1}, "got another string"),
    "escapes in the digest": (
        {"run_id": "r", "golden": "sha256:\x1b[2J" + DIGEST[:60], "step": 1},
        "got another string",
    ),
    "digest of another type": ({"run_id": "r", "golden": 7, "step": 1}, "got an integer"),
    "negative step": (
        {"run_id": "r", "golden": f"sha256:{DIGEST}", "step": -1},
        "data.forked_from.step must be an integer from 0 to 1,000,000, got -1",
    ),
    "huge step": ({"run_id": "r", "golden": f"sha256:{DIGEST}", "step": 2**62}, "got 46116"),
    "float step": ({"run_id": "r", "golden": f"sha256:{DIGEST}", "step": 1.0}, "got 1.0"),
    "boolean step": ({"run_id": "r", "golden": f"sha256:{DIGEST}", "step": True}, "a boolean"),
}


@pytest.mark.parametrize(("value", "reason"), HOSTILE.values(), ids=list(HOSTILE))
def test_a_hostile_origin_is_refused_naming_the_file_and_line(value: Any, reason: str) -> None:
    with pytest.raises(RolloutFormatError) as info:
        loads(rollout_bytes({"forked_from": value}), path="fork.jsonl")
    assert (info.value.path, info.value.line) == ("fork.jsonl", 1)
    assert reason in info.value.reason


def test_the_origin_is_not_what_a_comparison_compares() -> None:
    plain = loads(rollout_bytes({"run_id": "a"})).events
    fork = loads(rollout_bytes({"run_id": "b", "forked_from": forked_from("a", DIGEST, 0)})).events
    assert compare(plain, fork).identical
