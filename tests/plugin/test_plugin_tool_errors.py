"""A tool that raises while recording: the agent sees the exception, the golden keeps it,
and replay raises the same built-in exception class again (never the live tool)."""

from __future__ import annotations

import pytest
from plugin_agent import goldens, live_calls, record, run, write_project

import pytest_rollout

ATLANTIS_TEST = """
from agent import TOOLS, ScriptedLLM, agent

QUESTION = "What is the weather in Atlantis?"


def test_atlantis(rollout, golden):
    with rollout.run(prompt=QUESTION) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), rollout.tools(TOOLS), QUESTION)
    assert run.output == "Sorry: LookupError: no weather station for 'Atlantis'"
    assert rollout == golden
"""


def test_a_tool_error_is_recorded_and_raised_again_in_replay(pytester: pytest.Pytester) -> None:
    # In-process only (xdist costs seconds a run): a tool error's report reaches the controller as
    # any report does.
    write_project(pytester, test_atlantis=ATLANTIS_TEST)
    record(pytester).assert_outcomes(passed=1)
    assert goldens(pytester) == ["test_atlantis/test_atlantis.jsonl"]
    golden = pytest_rollout.load(pytester.path / "golden" / "test_atlantis" / "test_atlantis.jsonl")
    errors = [e.data["error"] for e in golden.events if "error" in e.data]
    assert errors == [{"class": "LookupError", "message": "no weather station for 'Atlantis'"}]

    result = run(pytester, ())

    # The agent caught LookupError in replay too: the same answer, from no live call.
    result.assert_outcomes(passed=1)
    assert live_calls(pytester) == []
