"""A replayed run is read like its golden: the lines it has in common with the golden but for
their time share the golden's data, and its verdict is the one two separate loads give."""

from __future__ import annotations

from pathlib import Path

from sessions import GOLDEN_PATH, Scripted, new_session, scripted_agent, scripted_turns
from test_loader_pair import EVENTS, START, recorded

from pytest_rollout.diff.drift import drift_report
from pytest_rollout.format.loader import loads
from pytest_rollout.format.pair import Reference
from pytest_rollout.session import Mode
from pytest_rollout.store.golden_store import LoadedGolden


def test_loads_like_a_reference_gives_the_events_loads_gives() -> None:
    changed = [*EVENTS]
    changed[4] = ("tool.call.completed", {"call_id": "c1", "name": "w", "output": "19C"})
    reference = Reference.loads(recorded(EVENTS), path="golden.jsonl")
    golden = reference.rollout
    assert reference.shares
    data = recorded(changed, START + 10**9)
    run = reference.read(data, path="run.jsonl")
    assert run == loads(data, path="run.jsonl")
    shared = [x.data is y.data for x, y in zip(golden.events, run.events, strict=True)]
    assert shared == [True, True, True, True, False, True, True, True]


def test_a_golden_read_line_by_line_shares_nothing() -> None:
    spaced = recorded(EVENTS).replace(b'{"ts":', b'{ "ts":')  # not as the recorder writes
    reference = Reference.loads(spaced, path="golden.jsonl")
    assert not reference.shares
    assert reference.rollout == loads(spaced, path="golden.jsonl")
    run = reference.read(recorded(EVENTS, START + 10**9), path="run.jsonl")
    pairs = zip(reference.rollout.events, run.events, strict=True)
    assert not any(x.data is y.data for x, y in pairs)


def test_a_replayed_run_shares_its_golden_s_data_and_gets_the_same_verdict() -> None:
    recording = new_session(Mode.RECORD)
    scripted_agent(recording, Scripted(scripted_turns()))
    reference = Reference.loads(recording.recorder.getvalue(), path="golden.jsonl")
    golden = reference.rollout
    replay = new_session(Mode.DRY, LoadedGolden(Path(GOLDEN_PATH), GOLDEN_PATH, reference))
    scripted_agent(replay)
    run = reference.read(replay.recorder.getvalue(), path="run.jsonl").events  # as judged
    plain = replay.recorder.rollout().events  # read on its own
    assert run == plain
    shared = {x.type for x, y in zip(golden.events, run, strict=True) if x.data is y.data}
    # What the replay redoes exactly is shared; durations and latencies make the rest differ,
    # except when two runs' durations happen to agree (then their lines are shared too).
    assert {"llm.turn.started", "usage.delta", "tool.call.started"} <= shared
    # What the test itself is given shares nothing with the golden: it may change it.
    mine = replay.events()
    assert mine == plain
    assert not any(x.data is y.data for x, y in zip(golden.events, mine, strict=True))
    verdict = replay.engine.verdict()
    assert verdict.matched
    assert not reference.shares  # let go of once the verdict is made
    assert verdict.report == drift_report(golden.events, plain, replay.engine.setup.options)
