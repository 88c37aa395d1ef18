"""Which announced call a wrapped tool's call claims, and what its completion records."""

from __future__ import annotations

from pathlib import Path

from pytest_rollout.format.recorder import Recorder
from pytest_rollout.replay.turns import ToolCall, Turn
from pytest_rollout.session.mode import Mode
from pytest_rollout.session.rollout import RolloutSession
from pytest_rollout.session.tools import AnnouncedCalls


def test_first_call_with_equal_arguments_is_claimed_even_if_later_bytes_match() -> None:
    calls = AnnouncedCalls()
    calls.announce(
        [
            ToolCall("first", "lookup", {"b": 2, "a": 1}),  # equal as data, other key order
            ToolCall("second", "lookup", {"a": 1, "b": 2}),  # the very same bytes
        ]
    )
    assert calls.started("lookup", {"a": 1, "b": 2})["call_id"] == "first"
    assert calls.started("lookup", {"a": 1, "b": 2})["call_id"] == "second"
    assert calls.started("lookup", {"a": 1, "b": 2})["call_id"] is None


def test_changed_arguments_still_claim_the_call_of_that_name() -> None:
    calls = AnnouncedCalls()
    calls.announce([ToolCall("only", "lookup", {"a": 1})])
    assert calls.started("lookup", {"a": 2})["call_id"] == "only"


class _Provider:
    model = "m"

    def complete(self, messages: object, tools: object = None, **params: object) -> Turn:
        return Turn(None, [ToolCall("call_1", "add", {"x": 1, "y": 2})])


def test_completed_call_records_its_duration_in_ms_to_the_microsecond(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    session = RolloutSession(
        test_id="t::claims",
        mode=Mode.RECORD,
        recorder=Recorder(path),
        golden_path=str(tmp_path / "golden.jsonl"),
    )
    provider = session.provider(_Provider())
    tools = session.tools({"add": lambda x, y: x + y})
    with session.run(prompt="p"):
        provider.complete([{"role": "user", "content": "go"}])
        assert tools["add"](x=1, y=2) == 3
    session.close()
    (done,) = [e for e in session.recorder.rollout().events if e.type == "tool.call.completed"]
    assert done.data["call_id"] == "call_1"
    assert done.data["output"] == 3
    duration = done.data["duration_ms"]
    assert type(duration) is float
    assert duration >= 0
    assert round(duration, 3) == duration
