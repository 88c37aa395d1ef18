"""The terminal summary says what happened to each golden and nothing else, and
``rollout == golden`` compares with the golden the test replays, or says why it cannot."""

from __future__ import annotations

import io

import pytest
from plugin_agent import WEATHER_TEST, failure_sections, record, run, write_project

from pytest_rollout.cli import main

#: A second test, added after the goldens were recorded.
NEW_TEST = """
from agent import TOOLS, ScriptedLLM, agent


def test_new(rollout, golden):
    with rollout.run(prompt="Rome?") as run:
        run.output = agent(rollout.provider(ScriptedLLM()), rollout.tools(TOOLS), "Rome?", "")
    assert rollout == golden
"""

#: A test that names another file on the right of ``rollout == ...``.
OTHER_REF_TEST = """
from agent import TOOLS, ScriptedLLM, agent

from pytest_rollout.store.golden import GoldenRef


def test_weather(rollout):
    with rollout.run(prompt="Paris?") as run:
        run.output = agent(rollout.provider(ScriptedLLM()), rollout.tools(TOOLS), "Paris?", "")
    assert rollout == GoldenRef("/nonexistent/x.jsonl")
"""


def test_a_test_with_no_golden_is_said_and_not_counted_compared(
    pytester: pytest.Pytester,
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    pytester.makepyfile(test_new=NEW_TEST)

    result = run(pytester, ())

    result.assert_outcomes(passed=1, failed=1)
    summary = result.outlines[result.outlines.index("=" * 35 + " rollout " + "=" * 36) + 1 :]
    assert (
        summary[0] == "1 golden(s) compared: 2/2 turns served, 2/2 tool calls matched, 0 diverged, "
        "1 test(s) had no golden"
    )


def test_a_golden_ref_of_another_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_other=OTHER_REF_TEST)

    result = run(pytester, (), "--rollout-record")

    result.assert_outcomes(failed=1)
    report = "\n".join(failure_sections(result)["test_weather"])
    assert (
        "RolloutError: rollout == golden(/nonexistent/x.jsonl) names another file than this "
        "test's golden" in report
    )
    assert not (pytester.path / "golden").exists()


def test_the_score_reads_the_same_in_the_report_and_in_rollout_diff(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_CHANGE", "argument")

    result = run(pytester, ())

    reported = score_of(failure_sections(result)["test_weather"])
    out = io.StringIO()
    golden = pytester.path / "golden" / "test_weather" / "test_weather.jsonl"
    saved = pytester.path / ".pytest_cache" / "d" / "rollout" / "runs" / "test_weather"
    assert main(["diff", str(golden), str(saved / "test_weather.jsonl")], out=out) == 1
    diffed = score_of(out.getvalue().splitlines())
    assert reported.startswith("Score: golden wins 4-2: outcome (this run failed where golden")
    assert diffed == reported.replace("this run", "B").replace("golden", "A")


def score_of(lines: list[str]) -> str:
    """The score sentence of a report, its wrapped lines joined."""
    start = next(n for n, line in enumerate(lines) if line.startswith("Score: "))
    end = next(n for n in range(start + 1, len(lines)) if not lines[n].startswith("    "))
    return " ".join(line.strip() for line in lines[start:end])
