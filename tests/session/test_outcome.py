"""What a test's report says of its run, decided once from the session and the exception
(``outcome_of``), and the run's two audiences: the test (``rollout == golden``, the
properties it reads) and the SDK clients (the port), below pytest."""

from __future__ import annotations

import dataclasses
import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
from sessions import (
    GOLDEN_PATH,
    TOOLS_SCHEMA,
    Scripted,
    new_session,
    scripted_agent,
    scripted_turns,
)

from pytest_rollout import GoldenMissingError, RolloutError, RolloutWarning, ToolCall, Turn
from pytest_rollout.diff.divergence import ReplayDivergenceError
from pytest_rollout.format.loader import Rollout
from pytest_rollout.replay.mode import Mode
from pytest_rollout.session.outcome import How, outcome_of
from pytest_rollout.session.rollout import RolloutSession
from pytest_rollout.store.golden import GoldenRef
from pytest_rollout.store.golden_store import LoadedGolden

GOLDEN = GoldenRef(GOLDEN_PATH)


def recorded(turns: list[Turn] | None = None) -> Rollout:
    session = new_session(Mode.RECORD)
    scripted_agent(session, Scripted(turns or scripted_turns()))
    return session.recorder.rollout()


def changed_turns() -> list[Turn]:
    """The recorded script, with another final answer."""
    turns = scripted_turns()
    return [*turns[:-1], dataclasses.replace(turns[-1], content="not done")]


def full_replay(golden: Rollout, turns: list[Turn]) -> RolloutSession:
    """A full replay of ``golden`` whose live model answers ``turns``."""
    session = new_session(Mode.FULL, golden)
    scripted_agent(session, Scripted(turns))
    return session


def failed_assert(session: RolloutSession) -> AssertionError:
    try:
        assert session == GOLDEN
    except AssertionError as exc:
        return exc
    raise AssertionError("the comparison passed")


def test_a_failed_comparison_is_the_report_of_the_assert_that_failed_on_it() -> None:
    session = full_replay(recorded(), changed_turns())
    error = failed_assert(session)
    outcome = outcome_of(session, error)
    assert outcome is not None
    assert (outcome.how, outcome.asserted) == (How.REPLACES, True)
    assert outcome.lines[0] == (
        "this run left its golden at step 5: response_mismatch (attributed to the agent)"
    )
    assert f"Golden: {GOLDEN_PATH}" in outcome.lines


def test_another_assert_failing_after_it_is_not_the_comparison_s_to_report() -> None:
    session = full_replay(recorded(), changed_turns())
    assert session != GOLDEN  # compared, and the test went on

    def elsewhere(answer: str) -> AssertionError:
        try:
            assert answer == "done"
        except AssertionError as exc:
            return exc
        raise AssertionError("unreachable")

    outcome = outcome_of(session, elsewhere("not done"))
    assert outcome is not None
    assert (outcome.how, outcome.asserted) == (How.BESIDE, False)


def test_a_swallowed_divergence_fails_a_passing_test() -> None:
    golden = recorded()
    session = new_session(Mode.DRY, golden)
    llm = session.provider()
    tools = session.tools({"lookup": lambda city: None, "delete_file": lambda path: None})
    with session.run(prompt="Weather in Paris?"):
        llm.complete([{"role": "user", "content": "Weather in Paris?"}], TOOLS_SCHEMA)
        with pytest.raises(ReplayDivergenceError):
            tools["lookup"](city="Oslo")  # the agent catches it and goes on
    session.close()
    outcome = outcome_of(session, None)
    assert outcome is not None
    assert outcome.how is How.FAILS
    assert outcome.lines[0].startswith("this run left its golden at step 1: tool_call_mismatch")


@pytest.mark.parametrize("mode", [Mode.RECORD, Mode.LIVE])
def test_a_tool_called_before_any_model_turn_fails_the_test_and_names_the_cause(
    mode: Mode,
) -> None:
    session = new_session(mode)
    tools = session.tools({"lookup": lambda city: {"city": city}})
    with session.run(prompt="Weather in Paris?") as run:
        run.output = tools["lookup"](city="Paris")  # the model was asked around the plugin
    session.close()
    assert session.engine.model_bypassed == "lookup"
    outcome = outcome_of(session, None)
    assert outcome is not None
    assert outcome.how is How.FAILS
    assert outcome.lines[0] == (
        "this run called the tool lookup before pytest-rollout saw any model turn: the agent's "
        "model"
    )


def test_a_tool_called_after_a_model_turn_is_the_usual_run() -> None:
    session = new_session(Mode.RECORD)
    scripted_agent(session, Scripted(scripted_turns()))
    session.close()
    assert session.engine.model_bypassed is None
    assert outcome_of(session, None) is None


def test_a_run_that_matches_its_golden_has_nothing_to_say() -> None:
    session = new_session(Mode.DRY, recorded())
    scripted_agent(session)
    assert session == GOLDEN
    assert outcome_of(session, None) is None


def test_a_refused_golden_is_reported_in_its_own_words() -> None:
    error = GoldenMissingError(GOLDEN_PATH, "Record it with: pytest --rollout-record t.py")
    missing = LoadedGolden(Path(GOLDEN_PATH), GOLDEN_PATH, error=error)
    session = new_session(Mode.DRY, missing)
    with pytest.raises(GoldenMissingError) as caught:
        session.provider()
    outcome = outcome_of(session, caught.value)
    assert outcome is not None
    assert (outcome.how, outcome.text) == (How.REPLACES, str(error))


def test_a_golden_ref_of_another_file_is_a_usage_error_in_every_mode() -> None:
    for session in (new_session(Mode.RECORD), new_session(Mode.DRY, recorded())):
        with pytest.raises(RolloutError, match=r"names another file than this test's golden"):
            assert session == GoldenRef("/nonexistent/x.jsonl")
    record = new_session(Mode.RECORD)
    scripted_agent(record, Scripted(scripted_turns()))
    assert record == GOLDEN  # a run being recorded is its own golden


def test_the_finished_run_is_read_once_whatever_the_test_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = new_session(Mode.RECORD)
    scripted_agent(session, Scripted(scripted_turns()))
    reads: list[str] = []
    rollout = session.recorder.rollout

    def counted(*args: Any) -> Rollout:
        reads.append("read")
        return rollout(*args)

    monkeypatch.setattr(session.recorder, "rollout", counted)
    assert session.steps == 5
    assert set(session.tool_calls) == {"lookup", "delete_file"}
    assert session.errors == ()
    assert session.cost_usd == pytest.approx(0.013)
    assert reads == ["read"]


def test_an_analyzer_that_fails_is_named_once_the_run_is_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_rollout.analysis.analyzers import Analysis

    def broken(self: Any, *args: Any) -> Any:
        raise KeyError("usage")

    monkeypatch.setattr(Analysis, "after", broken)
    session = new_session(Mode.RECORD)
    session.analyze("cost_anomaly")
    llm = session.provider(Scripted([Turn("done", [])]))
    with session.run(prompt="p"):
        llm.complete([{"role": "user", "content": "p"}])  # the agent is never interrupted
    with pytest.warns(RolloutWarning, match=r"an analyzer failed on a [a-z.]+ event") as seen:
        session.close()
    assert "KeyError: 'usage'" in str(seen[0].message)


def test_an_sdk_test_s_engine_is_freed_with_its_session() -> None:
    """Every engine of a test that made an SDK client used to live to the end of the
    process (a module-level map from each engine to a log that held it)."""
    from fake_models import OPENAI_CHAT, FakeModel, Say

    fake = FakeModel(OPENAI_CHAT, (Say("hello"),))
    session = new_session(Mode.RECORD)
    client = session.openai(transport=fake.transport(), api_key="k", base_url="http://fake.test/v1")
    with session.run():
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    session.close()
    engine = weakref.ref(session.engine)
    del session, client, fake
    gc.collect()
    assert engine() is None


def test_the_port_names_the_run_from_the_first_request_only() -> None:
    session = new_session(Mode.RECORD)
    session.engine.identify("openai", "gpt-4o")
    session.engine.identify("anthropic", "claude")
    llm = session.provider(Scripted([Turn(None, [ToolCall("c1", "lookup", {})]), Turn("ok", [])]))
    with session.run():
        llm.complete([])
    started = session.events()[0].data
    assert (started["provider"], started["model"]) == ("openai", "gpt-4o")


def test_a_recorded_run_without_a_model_turn_fails_and_names_the_frameworks_in_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys
    import types

    monkeypatch.setitem(sys.modules, "langchain_openai", types.ModuleType("langchain_openai"))
    session = new_session(Mode.RECORD)
    with session.run(prompt="Weather in Paris?") as run:
        run.output = "Sunny."  # the model was asked around the plugin
    session.close()
    assert session.engine.unfit_for_golden
    outcome = outcome_of(session, None)
    assert outcome is not None
    assert outcome.how is How.FAILS
    assert "Frameworks imported here, and how each takes the client:" in outcome.lines
    assert any(line.startswith("  langchain-openai: ChatOpenAI(") for line in outcome.lines)
    # A test that failed on its own error keeps it first: the explanation goes beside.
    outcome = outcome_of(session, ValueError("boom"))
    assert outcome is not None
    assert outcome.how is How.BESIDE


@pytest.mark.parametrize("mode", [Mode.LIVE, Mode.DRY])
def test_only_a_recording_needs_a_model_turn(mode: Mode) -> None:
    golden = None
    if mode is Mode.DRY:
        recording = new_session(Mode.RECORD, expects_model=False)
        with recording.run(prompt="hi") as run:
            run.output = "hello"
        recording.close()
        golden = recording.recorder.rollout()
    session = new_session(mode, golden)
    with session.run(prompt="hi") as run:
        run.output = "hello"
    session.close()
    assert not session.engine.unfit_for_golden
