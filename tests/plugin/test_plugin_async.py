"""Async agents: ``await llm.acomplete(...)`` and async tools, recorded and replayed."""

from __future__ import annotations

import pytest
from plugin_agent import failure_sections, live_calls, record, run, write_project

ASYNC_TEST = """
import asyncio
import os

from agent import ASYNC_TOOLS, ScriptedLLM, aagent

QUESTION = "What is the weather in Oslo?"
APPLY = os.environ.get("APPLY_CHANGE") == "1"


def test_async_agent(rollout, golden):
    llm = rollout.provider(ScriptedLLM())
    tools = rollout.tools(ASYNC_TOOLS)
    with rollout.run(prompt=QUESTION) as run:
        run.output = asyncio.run(aagent(llm, tools, QUESTION))
    assert run.output == "It is 4.0 C with overcast in Oslo."
    assert rollout == golden


def test_async_agent_changed(rollout, golden):
    llm = rollout.provider(ScriptedLLM())
    tools = rollout.tools(ASYNC_TOOLS)
    with rollout.run(prompt=QUESTION) as run:
        run.output = asyncio.run(aagent(llm, tools, QUESTION, "argument" if APPLY else ""))
    assert rollout == golden
"""


def test_async_agent_records_and_replays(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In-process only (xdist costs seconds a run): an async agent runs in a worker as a sync one
    # does.
    write_project(pytester, test_async=ASYNC_TEST)
    recorded = record(pytester)
    recorded.assert_outcomes(passed=2)
    monkeypatch.setenv("APPLY_CHANGE", "1")

    result = run(pytester, ())

    result.assert_outcomes(passed=1, failed=1)
    sections = failure_sections(result)
    assert list(sections) == ["test_async_agent_changed"]
    result.stdout.fnmatch_lines(
        [
            "this run left its golden at step 1: tool_call_mismatch (attributed to the agent)",
            "Golden: golden/test_async/test_async_agent_changed.jsonl",
            'Divergence: call #1 of step 1: recorded get_weather(city="Oslo"), '
            'got get_weather(city="OSLO")',
        ],
        consecutive=True,
    )
    assert live_calls(pytester) == []
