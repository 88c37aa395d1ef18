"""The ``recorded_provider`` fixture: an agent that takes a provider directly is served the
golden's turns, in order, in compare mode."""

from __future__ import annotations

import pytest
from plugin_agent import live_calls, record, run, write_project

DIRECT_TEST = """
import pytest
from agent import {llm}, direct_agent

QUESTION = "What is the weather in Paris?"


def test_direct(request, rollout, golden):
    if request.config.getoption("rollout_record"):
        llm = rollout.provider({llm}())
    else:
        llm = request.getfixturevalue("recorded_provider")
    with rollout.run(prompt=QUESTION) as run:
        run.output = direct_agent(llm, QUESTION)
    assert run.output == "Let me look that up."
    assert rollout == golden
"""


def test_recorded_provider_replays_the_golden_turns(pytester: pytest.Pytester) -> None:
    # In-process only (xdist costs seconds a run): the recorded provider reads the golden the same
    # in a worker.
    write_project(pytester, test_direct=DIRECT_TEST.format(llm="UnnamedLLM"))
    record(pytester).assert_outcomes(passed=1)

    result = run(pytester, ())

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["1 golden(s) compared: 1/1 turns served, 0/0 tool calls matched, 0 diverged"]
    )
    assert live_calls(pytester) == []


def test_recorded_provider_replays_a_golden_of_a_named_model(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_direct=DIRECT_TEST.format(llm="ScriptedLLM"))
    record(pytester).assert_outcomes(passed=1)

    result = run(pytester, ())

    result.stdout.no_fnmatch_line("*first difference in data.model*")
    result.assert_outcomes(passed=1)


def test_recorded_provider_in_record_mode_says_what_to_use(pytester: pytest.Pytester) -> None:
    write_project(
        pytester,
        test_direct="""
def test_direct(recorded_provider):
    pass
""",
    )

    result = record(pytester)

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*recorded_provider replays a golden, and this test runs in record mode; "
            "wrap the live provider with rollout.provider(...)"
        ]
    )
