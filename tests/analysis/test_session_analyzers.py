"""Analyzers, assertion helpers and the audit trail, through a session (below pytest).

The analyzers themselves are tested on hand-built streams in test_analyzers.py; here they
run live inside a recorded run, and a golden recorded with them must replay unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from sessions import Scripted, new_session, scripted_agent, scripted_turns

from pytest_rollout import AnalyzerOptions, RolloutError, ToolCall, Turn
from pytest_rollout.analysis.analyzers import parse_analyzers
from pytest_rollout.format.events import Event
from pytest_rollout.format.loader import Rollout
from pytest_rollout.session import Mode, RolloutSession
from pytest_rollout.store.audit import AuditTrailSink, verify_audit


def _session(
    mode: Mode,
    golden: Rollout | None = None,
    options: AnalyzerOptions | None = None,
    audit: AuditTrailSink | None = None,
) -> RolloutSession:
    return new_session(mode, golden, analyzers=options or AnalyzerOptions(), audit=audit)


ALL = AnalyzerOptions(enabled=parse_analyzers(["all"]))


def _types(events: Sequence[Event]) -> list[str]:
    return [e.type for e in events]


def test_analyzer_events_are_part_of_the_run_where_they_belong() -> None:
    session = _session(Mode.RECORD, options=ALL)
    assert scripted_agent(session, Scripted(scripted_turns())) == "done"
    events = session.recorder.rollout().events
    types = _types(events)
    # the third identical lookup is the anti-pattern, right after its call started
    [antipattern] = [e for e in events if e.type == "tool.antipattern"]
    assert antipattern.step == 3
    assert antipattern.data["name"] == "lookup"
    assert antipattern.data["steps"] == [1, 2, 3]
    assert types[types.index("tool.antipattern") - 1] == "tool.call.started"
    # step 3 cost 9x the mean of the steps before it
    [anomaly] = [e for e in events if e.type == "cost.anomaly"]
    assert anomaly.step == 3
    assert anomaly.data["step_cost_usd"] == pytest.approx(0.009)
    # every turn gets a snapshot, a decision and an envelope
    assert types.count("context.window.snapshot") == 5
    assert types.count("tool.decision") == 5
    assert types.count("llm.request.snapshot") == 5
    assert types.count("llm.response.meta") == 5
    [warning] = [e for e in events if e.type == "context.window.warning"]
    assert warning.step == 5  # 110010 of 128000 tokens
    decision = next(e for e in events if e.type == "tool.decision")
    assert decision.data["available"] == ["lookup", "delete_file"]
    assert decision.data["selected"] == ["lookup"]
    assert "error.context" not in types  # the run did not fail


def test_a_golden_recorded_with_analyzers_replays_unchanged() -> None:
    session = _session(Mode.RECORD, options=ALL)
    scripted_agent(session, Scripted(scripted_turns()))
    golden = session.recorder.rollout()
    replay = _session(Mode.DRY, golden, options=ALL)
    assert scripted_agent(replay) == "done"
    assert replay.verdict().matched, replay.verdict().divergences


def test_a_golden_recorded_without_analyzers_differs_from_a_run_with_them() -> None:
    session = _session(Mode.RECORD)
    scripted_agent(session, Scripted(scripted_turns()))
    replay = _session(Mode.DRY, session.recorder.rollout(), options=ALL)
    scripted_agent(replay)
    assert not replay.verdict().matched


def test_error_context_comes_right_before_run_failed_with_the_cause_chain() -> None:
    options = AnalyzerOptions(enabled=frozenset({"error_chain"}), error_chain_calls=2)
    session = _session(Mode.RECORD, options=options)
    tools = session.tools({"lookup": lambda city: {"city": city}})

    def broken(city: str) -> None:
        raise KeyError(city)

    failing = session.tools({"fetch": broken})
    calls = [ToolCall(f"c{i}", "lookup", {"city": c}) for i, c in enumerate(("Paris", "Oslo"))]
    llm = session.provider(Scripted([Turn(None, [*calls, ToolCall("c9", "fetch", {})])]))

    def agent() -> None:
        with session.run():
            llm.complete([{"role": "user", "content": "go"}])
            for city in ("Paris", "Oslo"):
                tools["lookup"](city=city)
            try:
                failing["fetch"](city="Nowhere")
            except KeyError as exc:
                raise RuntimeError("the agent gave up") from exc

    with pytest.raises(RuntimeError):
        agent()
    session.close()
    events = session.recorder.rollout().events
    assert _types(events)[-2:] == ["error.context", "run.failed"]
    context = events[-2].data
    assert context["error"] == {"class": "RuntimeError", "message": "the agent gave up"}
    assert context["causes"] == [{"class": "KeyError", "message": "'Nowhere'"}]
    assert [c["name"] for c in context["last_tool_calls"]] == ["lookup", "fetch"]
    error = {"class": "KeyError", "message": "'Nowhere'", "args": ["Nowhere"]}
    assert context["last_tool_calls"][-1]["error"] == error  # args: str() quotes the key
    assert "causes" not in events[-1].data["error"]  # run.failed keeps its contract


def test_rollout_analyze_turns_analyzers_on_before_the_run() -> None:
    session = _session(Mode.RECORD)
    session.analyze("antipatterns", antipattern_threshold=2)
    scripted_agent(session, Scripted(scripted_turns()))
    [found] = [e for e in session.recorder.rollout().events if e.type == "tool.antipattern"]
    assert found.step == 2
    with pytest.raises(RolloutError, match="before the run starts"):
        session.analyze("cost_anomaly")


def test_rollout_analyze_refuses_unknown_names_and_options() -> None:
    session = _session(Mode.RECORD)
    with pytest.raises(ValueError, match="unknown analyzer 'costs'"):
        session.analyze("costs")
    with pytest.raises(RolloutError, match="takes analyzer names and the options"):
        session.analyze("cost_anomaly", multiplier=3)


def test_assertion_helpers_read_the_finished_run() -> None:
    session = _session(Mode.RECORD)
    scripted_agent(session, Scripted(scripted_turns()))
    assert session.steps == 5
    assert session.cost_usd == pytest.approx(0.013)
    calls = session.tool_calls
    assert list(calls) == ["lookup", "delete_file"]
    assert [c.step for c in calls["lookup"]] == [1, 2, 3]
    assert calls["lookup"][0].arguments == {"city": "Paris"}
    assert calls["lookup"][0].output == {"city": "Paris", "sky": "sunny"}
    assert session.errors == ()
    [found] = session.antipatterns
    assert (found.name, found.count, found.steps) == ("lookup", 3, (1, 2, 3))


def test_assert_no_antipatterns_says_which_call_repeated_where() -> None:
    session = _session(Mode.RECORD)
    scripted_agent(session, Scripted(scripted_turns()))
    with pytest.raises(AssertionError) as raised:
        session.assert_no_antipatterns()
    assert str(raised.value) == (
        "rollout: 1 repeated tool call (the same tool with the same arguments, 3 or more "
        'times):\n  lookup(city="Paris") called 3 times, at steps 1, 2, 3'
    )


def test_assert_cost_below_names_the_most_expensive_step() -> None:
    session = _session(Mode.RECORD)
    scripted_agent(session, Scripted(scripted_turns()))
    session.assert_cost_below(0.02)
    with pytest.raises(AssertionError) as raised:
        session.assert_cost_below(0.01)
    assert str(raised.value) == (
        "rollout: this run cost $0.013, not below $0.01\n"
        '  most expensive: step 3, $0.009: the turn asked for lookup(city="Paris")\n'
        "  cost by step: 1: $0.001, 2: $0.001, 3: $0.009, 4: $0.001, 5: $0.001"
    )


def test_assertion_helpers_wait_for_the_run_to_end() -> None:
    session = _session(Mode.RECORD)
    with session.run(), pytest.raises(RolloutError, match="the run is still open"):
        session.assert_cost_below(1)


def test_the_audit_trail_holds_runs_and_state_modifying_calls(tmp_path: Path) -> None:
    problems: list[str] = []
    sink = AuditTrailSink(tmp_path, on_error=problems.append)
    session = _session(Mode.RECORD, audit=sink)
    scripted_agent(session, Scripted(scripted_turns()))
    [day] = list(tmp_path.iterdir())
    trail = day / "audit.jsonl"
    check = verify_audit(trail)
    assert check.ok
    assert check.entries == 3
    entries = [orjson.loads(line) for line in trail.read_bytes().splitlines()]
    assert [e["event_type"] for e in entries] == ["run.started", "audit.action", "run.completed"]
    action = entries[1]["payload"]
    assert action["name"] == "delete_file"
    assert action["arguments"] == {"path": "/tmp/x"}
    assert action["live"] is True
    assert {e["run_id"] for e in entries} == {session.recorder.rollout().events[0].data["run_id"]}
    assert action["step"] == 4
    # the run itself does not change: its golden is the same with or without the trail
    assert "audit.action" not in _types(session.recorder.rollout().events)
    assert problems == []

    replay = _session(Mode.DRY, session.recorder.rollout(), audit=sink)
    scripted_agent(replay)
    assert replay.verdict().matched
    entries = [orjson.loads(line) for line in trail.read_bytes().splitlines()]
    assert entries[4]["payload"]["live"] is False  # replayed, not run
    assert verify_audit(trail).entries == 6


def test_a_broken_audit_trail_never_fails_the_test(tmp_path: Path) -> None:
    problems: list[str] = []
    sink = AuditTrailSink(tmp_path, on_error=problems.append)
    session = _session(Mode.RECORD, audit=sink)
    scripted_agent(session, Scripted(scripted_turns()))
    [day] = list(tmp_path.iterdir())
    (day / "audit.jsonl").write_bytes(b"not an entry\n")
    again = _session(Mode.RECORD, audit=sink)
    assert scripted_agent(again, Scripted(scripted_turns())) == "done"
    assert len(problems) == 1
    assert problems[0].startswith("audit trail: entry not written: ")


def test_an_hmac_key_on_one_machine_only_does_not_decide_the_match() -> None:
    envelope = AnalyzerOptions(enabled=frozenset({"request_envelope"}))
    session = _session(Mode.RECORD, options=envelope)
    scripted_agent(session, Scripted(scripted_turns()))
    keyed = AnalyzerOptions(enabled=frozenset({"request_envelope"}), hmac_key=b"ci-secret")
    replay = _session(Mode.DRY, session.recorder.rollout(), options=keyed)
    scripted_agent(replay)
    algorithms = {e.data["algorithm"] for e in replay.events() if e.type == "llm.request.snapshot"}
    assert algorithms == {"hmac-sha256"}
    assert replay.verdict().matched


def test_a_users_own_field_named_like_an_analyzer_reading_is_still_compared() -> None:
    def run(session: RolloutSession, fraction: float) -> None:
        llm = session.provider(Scripted([Turn("done")]) if session.mode is Mode.RECORD else None)
        with session.run():
            llm.complete([{"role": "user", "content": "hi"}])
            session.emit("retrieval.quality", fraction=fraction)
        session.close()

    session = _session(Mode.RECORD)
    run(session, 0.9)
    replay = _session(Mode.DRY, session.recorder.rollout())
    run(replay, 0.1)
    assert not replay.verdict().matched


class Missing(Exception):
    """A tool's own exception class (replay cannot rebuild it as itself)."""


@pytest.mark.parametrize("error", [KeyError("Nowhere"), Missing("no such city")])
def test_a_failure_caused_by_a_tool_error_replays_with_its_error_chain(
    error: Exception,
) -> None:
    options = AnalyzerOptions(enabled=frozenset({"error_chain"}))

    def agent(session: RolloutSession) -> None:
        def fetch(city: str) -> None:
            raise error

        tools = session.tools({"fetch": fetch})
        live = Scripted([Turn(None, [ToolCall("c1", "fetch", {"city": "Nowhere"})])])
        llm = session.provider(live if session.mode is Mode.RECORD else None)

        def run() -> None:
            with session.run():
                llm.complete([{"role": "user", "content": "go"}])
                try:
                    tools["fetch"](city="Nowhere")
                except Exception as exc:
                    raise RuntimeError("the agent gave up") from exc

        with pytest.raises(RuntimeError):
            run()
        session.close()

    session = _session(Mode.RECORD, options=options)
    agent(session)
    replay = _session(Mode.DRY, session.recorder.rollout(), options=options)
    agent(replay)
    assert replay.verdict().matched, replay.verdict().divergences


def test_threads_that_start_recording_at_once_never_precede_run_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading
    import time

    import pytest_rollout.session.engine as session_module
    from pytest_rollout.format.jsonable import to_json_data_or_placeholder as plain

    def slow(value: Any) -> Any:  # widens the gap between taking the start and writing it
        time.sleep(0.005)
        return plain(value)

    # engine.py looks ``plain`` up in its own namespace, so that is the name to patch.
    monkeypatch.setattr(session_module, "plain", slow)
    session = _session(Mode.RECORD)
    with session.run():  # run.started is written with the first event: the threads race
        workers = [
            threading.Thread(target=session.emit, args=("agent.note",), kwargs={"i": i})
            for i in range(4)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    session.close()
    events = session.recorder.rollout().events
    assert events[0].type == "run.started"
    assert [e.type for e in events].count("agent.note") == 4
