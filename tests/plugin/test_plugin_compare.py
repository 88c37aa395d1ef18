"""Compare mode (the default, and ``--rollout-compare``): replay from the golden (docs/replay.md).

Dry replay answers the provider and the tools from the golden and never calls the live
ones; ``--rollout-mode=full`` calls the live provider but still never the live tools.
"""

from __future__ import annotations

import pytest
from plugin_agent import (
    WEATHER_TEST,
    failure_sections,
    live_calls,
    record,
    run,
    write_project,
)


@pytest.mark.parametrize(
    ("flag", "xdist"),
    [
        pytest.param((), (), id="default-serial"),
        pytest.param(("--rollout-compare",), (), id="flag-serial"),
    ],
)
def test_unchanged_run_passes_without_live_calls(
    pytester: pytest.Pytester, xdist: tuple[str, ...], flag: tuple[str, ...]
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    recorded = record(pytester)
    recorded.assert_outcomes(passed=1)

    result = run(pytester, xdist, *flag)

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["rollout: compare against golden/ (dry replay)"])
    result.stdout.fnmatch_lines(
        [
            "*= rollout =*",
            "1 golden(s) compared: 2/2 turns served, 2/2 tool calls matched, 0 diverged",
        ]
    )
    assert live_calls(pytester) == []


FULL_MODE_TEST = """
import os

from agent import TOOLS, ScriptedLLM, agent

QUESTION = "What is the weather in Paris?"


def test_unchanged(rollout, golden):
    with rollout.run(prompt=QUESTION) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), rollout.tools(TOOLS), QUESTION)
    assert run.output == "It is 18.5 C with light rain in Paris."


def test_changed(rollout, golden):
    change = "argument" if os.environ.get("APPLY_CHANGE") == "1" else ""
    with rollout.run(prompt=QUESTION) as run:
        llm = rollout.provider(ScriptedLLM())
        run.output = agent(llm, rollout.tools(TOOLS), QUESTION, change)
    assert rollout == golden
"""


def test_full_mode_calls_the_live_provider_but_never_the_tools(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In-process only (xdist costs seconds a run): the mode reaches workers as the default mode does
    # in test_unchanged_run_passes_without_live_calls.
    write_project(pytester, test_full=FULL_MODE_TEST)
    record(pytester).assert_outcomes(passed=2)
    monkeypatch.setenv("APPLY_CHANGE", "1")

    result = run(pytester, (), "--rollout-mode=full")

    result.stdout.fnmatch_lines(["rollout: compare against golden/ (full replay)"])
    # test_unchanged replays its golden without asserting on it: said, not counted compared.
    result.stdout.fnmatch_lines(
        [
            "1 golden(s) compared: 3/4 turns served, 2/4 tool calls matched, 1 diverged, "
            "1 replayed without a comparison (no assert rollout == golden*"
        ]
    )
    # Two live turns for the unchanged agent, one for the changed agent, whose changed
    # tool call then fails the test and does not run live in place of the recording.
    assert sorted(live_calls(pytester)) == ["llm", "llm", "llm"]
    assert "test_changed" in failure_sections(result)
    result.stdout.fnmatch_lines(
        [
            "this run left its golden at step 1: tool_call_mismatch (attributed to the agent)",
            "Golden: golden/test_full/test_changed.jsonl",
        ],
        consecutive=True,
    )


def test_full_mode_passes_an_unchanged_run(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_full=FULL_MODE_TEST)
    record(pytester).assert_outcomes(passed=2)

    result = run(pytester, (), "--rollout-mode=full", "-k", "test_unchanged")

    result.stdout.no_fnmatch_line("*unconsumed_turn*")
    result.assert_outcomes(passed=1)


# Usage errors stop pytest while it configures, before xdist starts any worker.
@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param(
            ("--rollout-record", "--rollout-compare"),
            "ERROR: --rollout-record and --rollout-compare cannot be combined",
            id="record-and-compare",
        ),
        pytest.param(
            ("--rollout-compare", "test_weather.py"),
            "ERROR: --rollout-compare takes a golden directory, got 'test_weather.py'; "
            "write --rollout-compare=DIR, or put test paths before the flag",
            id="compare-then-test-file",
        ),
    ],
)
def test_flag_misuse_is_a_clear_usage_error(
    pytester: pytest.Pytester, args: tuple[str, ...], error: str
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)

    result = run(pytester, (), *args)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([error])
    assert live_calls(pytester) == []
