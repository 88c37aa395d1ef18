"""An incident imported from a trace replays in a test: ``@pytest.mark.rollout(golden=...)``
points the test at the imported file, and the test fails at the first step where the agent
decides otherwise (docs/otel.md#replaying-an-incident)."""

from __future__ import annotations

import os

import pytest
from plugin_agent import IN_PROCESS, WEATHER_TEST, write_project
from test_otel_import import run_cli

INCIDENT_TEST = """
import os

import pytest
from agent import TOOLS, ScriptedLLM, agent


@pytest.mark.rollout(golden="incidents/ticket-123.jsonl")
def test_ticket_123(rollout, golden):
    llm = rollout.provider(ScriptedLLM())
    tools = rollout.tools(TOOLS)
    question = "What is the weather in Paris?"
    with rollout.run(prompt=question) as run:
        run.output = agent(llm, tools, question, os.environ.get("AGENT_CHANGE", ""))
    assert rollout == golden
"""


def test_an_imported_trace_replays_as_a_golden(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Production: a run, seen as a trace.
    write_project(pytester, test_weather=WEATHER_TEST)
    args = (*IN_PROCESS, "-p", "no:cacheprovider")
    pytester.runpytest_inprocess(*args, "--rollout-record").assert_outcomes(passed=1)
    golden = next(pytester.path.glob("**/test_weather.jsonl"))
    trace = pytester.path / "trace.jsonl"
    assert run_cli("export", "otel", str(golden), "-o", str(trace))[0] == 0
    golden.unlink()
    # The incident becomes a golden in one command, and a test replays it.
    incident = pytester.path / "incidents" / "ticket-123.jsonl"
    assert run_cli("import", "otel", str(trace), "-o", str(incident))[0] == 0
    pytester.makepyfile(test_incident=INCIDENT_TEST)
    os.remove(pytester.path / "test_weather.py")
    pytester.runpytest_inprocess(*args).assert_outcomes(passed=1)
    # Today's agent decides otherwise: the test fails at that step.
    monkeypatch.setenv("AGENT_CHANGE", "argument")
    failed = pytester.runpytest_inprocess(*args)
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*step 1*"])
    # A record run never rewrites the incident: it replays it, and the change still fails.
    before = incident.read_bytes()
    recorded = pytester.runpytest_inprocess(*args, "--rollout-record")
    recorded.assert_outcomes(failed=1)
    recorded.stdout.fnmatch_lines(["*step 1*"])
    monkeypatch.delenv("AGENT_CHANGE")
    pytester.runpytest_inprocess(*args, "--rollout-record").assert_outcomes(passed=1)
    assert incident.read_bytes() == before
