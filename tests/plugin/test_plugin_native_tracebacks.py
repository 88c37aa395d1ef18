"""A failure whose report the plugin writes itself is drawn by pytest in the native style.

pytest builds a failed test's report before the plugin replaces it with its own text; in the
long style that meant reading and parsing the source of every frame of the agent's SDK or
framework (0.4-1.5 s a failure), only to throw it away.
"""

from __future__ import annotations

from typing import cast

import pytest
from plugin_agent import record, run, write_project

from pytest_rollout.plugin.runs import native_traceback


def _boom() -> None:
    raise ValueError("boom")


class _Item:
    """An item as far as drawing a failure goes."""

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
        return "drawn as configured"


def test_within_an_item_draws_failures_natively_then_as_before() -> None:
    item = cast(pytest.Item, _Item())
    with pytest.raises(ValueError, match="boom") as caught:
        _boom()
    with native_traceback(item):
        native = str(item.repr_failure(caught))
    assert native.startswith("Traceback (most recent call last):")
    assert native.rstrip().endswith("ValueError: boom")
    assert item.repr_failure(caught) == "drawn as configured"


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


def test_an_item_s_own_repr_failure_is_put_back() -> None:
    item = cast(pytest.Item, _Item())
    own = vars(item)
    own["repr_failure"] = _drawn_by_another_plugin
    with pytest.raises(ValueError, match="boom") as caught:
        _boom()
    with native_traceback(item):
        assert str(item.repr_failure(caught)).startswith("Traceback (most recent call last):")
    assert item.repr_failure(caught) == "drawn by another plugin"


def _drawn_by_another_plugin(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    return "drawn by another plugin"


#: An expected failure: the agent's changed tool call ends the run in a replay divergence.
XFAIL_TEST = """
import os

import pytest
from agent import TOOLS, ScriptedLLM, agent


@pytest.mark.xfail(reason="the agent is being changed")
def test_weather(rollout, golden):
    llm = rollout.provider(ScriptedLLM())
    tools = rollout.tools(TOOLS)
    with rollout.run(prompt="weather?") as run:
        run.output = agent(llm, tools, "weather?", os.environ.get("AGENT_CHANGE", ""))
    assert rollout == golden
"""

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
