"""``--rollout-record-new``: record the tests that have no golden yet, replay the others.

The habit of pytest-recording's ``once`` / ``new_episodes`` users: adding a test records its
golden without re-recording (and paying for) every other test's run. It is a flag of its own,
not ``--rollout-record=new``: an optional value would swallow a test path written after
``--rollout-record``.
"""

from __future__ import annotations

import pytest
from plugin_agent import IN_PROCESS, WEATHER_TEST, live_calls, record, write_project


def test_only_tests_without_a_golden_are_recorded(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    old = pytester.path / "golden/test_weather/test_weather.jsonl"
    before = old.read_bytes(), (old.parent / (old.name + ".receipt")).read_bytes()
    pytester.makepyfile(test_added=WEATHER_TEST)

    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record-new")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "rollout: record new goldens to golden/, replay the others (dry replay)",
            "*= rollout =*",
            "1 golden(s) written (1 created, 0 updated), 0 unchanged",
            "1 golden(s) compared: 2/2 turns served, 2/2 tool calls matched, 0 diverged",
        ]
    )
    assert (pytester.path / "golden/test_added/test_weather.jsonl").is_file()
    assert (old.read_bytes(), (old.parent / (old.name + ".receipt")).read_bytes()) == before
    # Only the new test ran live: one model call per turn, two turns, two tool calls.
    assert live_calls(pytester) == ["llm", "get_weather", "get_time", "llm"]


def test_a_test_with_a_golden_still_fails_on_drift(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_CHANGE", "argument")

    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record-new")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*this run left its golden at step 1: tool_call_mismatch*"])


def test_it_does_not_combine_with_a_full_record(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)

    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record", "--rollout-record-new")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --rollout-record and --rollout-record-new cannot be combined"]
    )
