"""A test with no golden fails in compare mode, naming the file and the command that makes it."""

from __future__ import annotations

import pytest
from plugin_agent import WEATHER_TEST, goldens, live_calls, run, write_project

PARAMETRIZED_TEST = """
import pytest
from agent import TOOLS, ScriptedLLM, agent


@pytest.mark.parametrize("city", ["Oslo"], ids=["two words"])
def test_city(rollout, golden, city):
    question = f"What is the weather in {city}?"
    with rollout.run(prompt=question) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), rollout.tools(TOOLS), question)
    assert rollout == golden
"""


def test_missing_golden_names_the_file_and_the_record_command(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_weather=WEATHER_TEST, test_params=PARAMETRIZED_TEST)

    result = run(pytester, ())

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "no golden file for this test: golden/test_weather/test_weather.jsonl does not "
            "exist. Record it with: pytest --rollout-record test_weather.py::test_weather",
        ]
    )
    # The command is quoted for the shell when the test id needs it.
    result.stdout.fnmatch_lines(
        [
            "no golden file for this test: golden/test_params/test_city[[]two_words[]]-*.jsonl "
            "does not exist. Record it with: "
            "pytest --rollout-record 'test_params.py::test_city[[]two words[]]'",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    assert live_calls(pytester) == []
    assert not (pytester.path / "golden").exists()


def test_the_named_command_creates_the_golden(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_params=PARAMETRIZED_TEST)

    recorded = run(pytester, (), "--rollout-record", "test_params.py::test_city[two words]")

    recorded.assert_outcomes(passed=1)
    assert len(goldens(pytester)) == 1
    run(pytester, ()).assert_outcomes(passed=1)
