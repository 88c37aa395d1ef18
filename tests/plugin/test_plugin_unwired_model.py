"""A run whose model calls go around the plugin (a client it did not build, a framework that
ignores the one it was given) fails the test in words, and writes no golden that could
never replay: before, recording died at teardown with the loader's internal error."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
from plugin_agent import IN_PROCESS


def _record(pytester: pytest.Pytester, **test_files: str) -> pytest.RunResult:
    """Record the goldens of a project made of ``test_files``, in-process."""
    pytester.makepyfile(**test_files)
    return pytester.runpytest_inprocess(*IN_PROCESS, "-p", "no:cacheprovider", "--rollout-record")


#: The agent's model is asked outside the plugin; only its tool is wrapped.
UNWIRED_TEST: Final = """
def lookup(q):
    return {"answer": q.upper()}


def ask_the_model_directly(question):
    return "lookup"  # a client the plugin never saw


def test_agent(rollout, golden):
    tools = rollout.tools({"lookup": lookup})
    with rollout.run(prompt="hi") as run:
        ask_the_model_directly("hi")
        run.output = tools["lookup"](q="paris")
    assert rollout == golden
"""


def test_a_tool_called_before_any_model_turn_fails_and_writes_no_golden(
    pytester: pytest.Pytester,
) -> None:
    result = _record(pytester, test_unwired=UNWIRED_TEST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "this run called the tool lookup before pytest-rollout saw any model turn: the "
            "agent's model",
            "calls do not go through the plugin, so they were made live and cannot be replayed "
            "(no golden",
            "is written from this run). Build the model client with rollout.openai(),",
            "rollout.anthropic(), rollout.http_client() or rollout.provider() "
            "(docs/sdk-agents.md), and",
            "check that the framework uses the client it is given (docs/frameworks.md).",
            "0 golden(s) written (0 created, 0 updated), 0 unchanged, 1 not recorded (test failed)",
        ]
    )
    assert "RolloutFormatError" not in result.stdout.str()
    assert not Path(pytester.path, "golden").exists()


#: An agent with no tools whose model is asked outside the plugin: its run has no turn.
SILENT_TEST: Final = """
import pytest


def ask_the_model_directly(question):
    return "Sunny."  # a client the plugin never saw


def test_agent(rollout, golden):
    with rollout.run(prompt="Weather in Paris?") as run:
        run.output = ask_the_model_directly("Weather in Paris?")
    assert rollout == golden


@pytest.mark.rollout(model_calls=False)
def test_canned(rollout, golden):
    with rollout.run(prompt="") as run:
        run.output = "Ask me about the weather."  # an empty prompt is answered without a model
    assert rollout == golden
"""


def test_a_recorded_run_without_a_model_turn_fails_unless_the_test_says_so(
    pytester: pytest.Pytester,
) -> None:
    result = _record(pytester, test_silent=SILENT_TEST)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "this run completed without a single model call through pytest-rollout: the agent's "
            "model",
            "calls, if it made any, do not go through the plugin, so they were made live and "
            "cannot be",
            "replayed (no golden is written from this run). Build the model client with "
            "rollout.openai(),",
            "*",
            "*",
            "An agent that answers without a model on purpose: "
            "@pytest.mark.rollout(model_calls=False).",
            "1 golden(s) written (1 created, 0 updated), 0 unchanged, 1 not recorded (test failed)",
        ]
    )
    assert [p.name for p in Path(pytester.path, "golden").rglob("*.jsonl")] == ["test_canned.jsonl"]
    # The golden of the agent that answers on its own replays.
    pytester.runpytest_inprocess(
        *IN_PROCESS, "-p", "no:cacheprovider", "-k", "canned"
    ).assert_outcomes(passed=1)
