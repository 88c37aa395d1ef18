"""A failure whose report the plugin writes itself is drawn by pytest at its last frame only.

pytest builds a failed test's report before the plugin's text stands in for its traceback;
drawing every frame of the agent's SDK or framework meant reading and parsing their source
(0.4-1.5 s a failure), only to throw it away.
"""

from __future__ import annotations

import pytest
from plugin_agent import WEATHER_TEST, record, run, write_project

#: Notes how many frames pytest had to draw of each failure it reported.
COUNT_FRAMES = """
import pytest

DRAWN = []


def pytest_exception_interact(node, call, report):
    DRAWN.append(f"{node.name} {len(call.excinfo.traceback)}")


def pytest_sessionfinish(session):
    with open("drawn.txt", "w", encoding="utf-8") as out:
        out.write("\\n".join(DRAWN))
"""


def test_a_failure_the_plugin_reports_itself_is_drawn_at_its_last_frame_only(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_diverging_agent=WEATHER_TEST)  # a changed call diverges
    pytester.makeconftest(COUNT_FRAMES)
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_CHANGE", "argument")
    result = run(pytester, ())
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["this run left its golden at step *: tool_call_mismatch*"])
    drawn = (pytester.path / "drawn.txt").read_text(encoding="utf-8")
    assert drawn == "test_weather 1"


#: A plain failure of a test that uses the fixture keeps pytest's own long traceback.
PLAIN_FAILURE = """
def test_plain(rollout):
    with rollout.run(prompt="p"):
        pass
    value = 1
    assert value == 2
"""


def test_a_failure_the_plugin_does_not_report_keeps_pytest_s_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_plain_failure=PLAIN_FAILURE)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([">       assert value == 2", "E       assert 1 == 2"])


#: An expected failure: the agent's changed tool call ends the run in a replay divergence.
XFAIL_MARK = '\nimport pytest\n\n\n@pytest.mark.xfail(reason="the agent is being changed")'
XFAIL_TEST = WEATHER_TEST.replace("\ndef test_weather", XFAIL_MARK + "\ndef test_weather")
assert XFAIL_TEST != WEATHER_TEST

#: Keeps the long representation of each xfailed report, as a reporter that shows it would.
KEEP_XFAIL_REPR = """
import pytest

SEEN = []


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.when == "call" and hasattr(report, "wasxfail"):
        SEEN.append(str(report.longrepr))


def pytest_sessionfinish(session):
    with open("xfail_repr.txt", "w", encoding="utf-8") as out:
        out.write("\\n".join(SEEN))
"""


def test_an_expected_failure_keeps_pytest_s_traceback(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_xfail_agent=XFAIL_TEST)
    pytester.makeconftest(KEEP_XFAIL_REPR)
    record(pytester).assert_outcomes(xpassed=1)
    monkeypatch.setenv("AGENT_CHANGE", "argument")
    result = run(pytester, ())
    result.assert_outcomes(xfailed=1)
    drawn = (pytester.path / "xfail_repr.txt").read_text(encoding="utf-8")
    assert "ReplayDivergenceError" in drawn
    assert not drawn.startswith("Traceback (most recent call last):")  # pytest's long style
