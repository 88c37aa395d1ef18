"""A replayed run is read like its golden: the lines it has in common with the golden but for
their time share the golden's data, and its verdict is the one two separate loads give."""

from __future__ import annotations

from pathlib import Path

from sessions import GOLDEN_PATH, Scripted, new_session, scripted_agent, scripted_turns
from test_loader_pair import EVENTS, START, recorded

from pytest_rollout.diff.drift import drift_report
from pytest_rollout.format.loader import loads, loads_reference
from pytest_rollout.session import Mode
from pytest_rollout.store.golden_store import LoadedGolden


def test_loads_like_a_reference_gives_the_events_loads_gives() -> None:
    changed = [*EVENTS]
    changed[4] = ("tool.call.completed", {"call_id": "c1", "name": "w", "output": "19C"})
    golden, lines = loads_reference(recorded(EVENTS), path="golden.jsonl")
    assert lines is not None
    data = recorded(changed, START + 10**9)
    run = loads(data, path="run.jsonl", like=lines)
    assert run == loads(data, path="run.jsonl")
    shared = [x.data is y.data for x, y in zip(golden.events, run.events, strict=True)]
    assert shared == [True, True, True, True, False, True, True, True]


def test_a_golden_read_line_by_line_keeps_no_lines() -> None:
    spaced = recorded(EVENTS).replace(b'{"ts":', b'{ "ts":')  # not as the recorder writes
    golden, lines = loads_reference(spaced, path="golden.jsonl")
    assert lines is None
    assert golden == loads(spaced, path="golden.jsonl")


def test_a_replayed_run_shares_its_golden_s_data_and_gets_the_same_verdict() -> None:
    recording = new_session(Mode.RECORD)
    scripted_agent(recording, Scripted(scripted_turns()))
    golden, lines = loads_reference(recording.recorder.getvalue(), path="golden.jsonl")
    replay = new_session(Mode.DRY, LoadedGolden(Path(GOLDEN_PATH), GOLDEN_PATH, golden, lines))
    scripted_agent(replay)
    run = loads(replay.recorder.getvalue(), path="run.jsonl", like=lines).events  # as judged
    plain = replay.recorder.rollout().events  # read on its own
    assert run == plain
    shared = {x.type for x, y in zip(golden.events, run, strict=True) if x.data is y.data}
    # What the replay redoes exactly is shared; durations and latencies make the rest differ.
    assert shared == {"llm.turn.started", "usage.delta", "tool.call.started"}
    # What the test itself is given shares nothing with the golden: it may change it.
    mine = replay.events()
    assert mine == plain
    assert not any(x.data is y.data for x, y in zip(golden.events, mine, strict=True))
    verdict = replay.engine.verdict()
    assert verdict.matched
    assert verdict.report == drift_report(golden.events, plain, replay.engine.setup.options)
