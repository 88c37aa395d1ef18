"""Per-test settings: the ``rollout`` marker, the ``pytest_rollout_ignore`` hook, ini keys.

Each way of leaving a field out of the comparison is tried on a field that really differs
from run to run (a session id, a request id); a control test that ignores nothing fails on
that same field, so each pass is the mechanism's doing.
"""

from __future__ import annotations

import pytest
from plugin_agent import failure_sections, goldens, live_calls, record, run, write_project

CONFTEST = """
def pytest_rollout_ignore(config, item):
    if item.name == "test_hook":
        return ["agent.note:hook_token"]
    return None
"""

INI = """
[pytest]
rollout_ignore =
    agent.note:ini_token
"""

MARKER_TEST = """
import uuid

import pytest
from agent import TOOLS, ScriptedLLM, agent

QUESTION = "What is the weather in Paris?"


def ask(rollout, field):
    with rollout.run(prompt=QUESTION) as run:
        # Something that changes on every run, as request ids and session ids do.
        rollout.emit("agent.note", **{field: uuid.uuid4().hex})
        run.output = agent(rollout.provider(ScriptedLLM()), rollout.tools(TOOLS), QUESTION)


def test_control(rollout, golden):
    ask(rollout, "request_id")
    assert rollout == golden


@pytest.mark.rollout(ignore=["agent.note:request_id"])
def test_marker_ignore(rollout, golden):
    ask(rollout, "request_id")
    assert rollout == golden


@pytest.mark.rollout(drop_keys=["request_id"])
def test_marker_drop_keys(rollout, golden):
    ask(rollout, "request_id")
    assert rollout == golden


def test_hook(rollout, golden):
    ask(rollout, "hook_token")
    assert rollout == golden


def test_ini(rollout, golden):
    ask(rollout, "ini_token")
    assert rollout == golden


@pytest.mark.rollout(golden="paris_weather")
def test_marker_golden_name(rollout, golden):
    with rollout.run(prompt=QUESTION) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), rollout.tools(TOOLS), QUESTION)
    assert rollout == golden


@pytest.mark.rollout(mode="full", allow_unconsumed=True)
def test_marker_mode_full(rollout, golden):
    with rollout.run(prompt=QUESTION) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), rollout.tools(TOOLS), QUESTION)
    assert run.output == "It is 18.5 C with light rain in Paris."
"""


def test_marker_hook_and_ini_settings_apply_per_test(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_marker=MARKER_TEST)
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    record(pytester).assert_outcomes(passed=7)
    assert goldens(pytester) == [
        "test_marker/paris_weather.jsonl",
        "test_marker/test_control.jsonl",
        "test_marker/test_hook.jsonl",
        "test_marker/test_ini.jsonl",
        "test_marker/test_marker_drop_keys.jsonl",
        "test_marker/test_marker_ignore.jsonl",
        "test_marker/test_marker_mode_full.jsonl",
    ]

    result = run(pytester, (), "-v")

    result.assert_outcomes(passed=6, failed=1)
    sections = failure_sections(result)
    assert list(sections) == ["test_control"]
    control = "\n".join(sections["test_control"])
    assert "this run left its golden at step 0: " in control
    assert "data.request_id" in control
    # Only the full-mode test called the live provider; no test called a live tool.
    assert live_calls(pytester) == ["llm", "llm"]


def test_marker_with_an_unknown_mode_is_an_error(pytester: pytest.Pytester) -> None:
    write_project(
        pytester,
        test_bad="""
import pytest


@pytest.mark.rollout(mode="wet")
def test_bad(rollout):
    pass
""",
    )

    result = run(pytester, ())

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*@pytest.mark.rollout(mode=...) must be 'dry' or 'full', got 'wet'*"]
    )


def test_marker_with_an_unknown_keyword_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_project(
        pytester,
        test_typo="""
import pytest


@pytest.mark.rollout(ignroe=["data.output"])
def test_typo(rollout):
    pass


def test_other():
    pass
""",
    )

    result = run(pytester, ())

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: test_typo.py::test_typo: @pytest.mark.rollout does not take ignroe; "
            "its keywords are golden, ignore, drop_keys, mode, allow_unconsumed, replay, "
            "redact, analyzers, network, volatile, exact, unrecorded_tools, model_calls"
        ]
    )


ERROR_TYPES_TEST = """
import os

from agent import TOOLS, ScriptedLLM, agent

QUESTION = "What is the weather in Paris?"


def test_retry_counts_as_an_error(rollout, golden):
    llm = rollout.provider(ScriptedLLM())
    tools = rollout.tools(TOOLS)
    with rollout.run(prompt=QUESTION) as run:
        if os.environ.get("APPLY_CHANGE"):
            rollout.emit("agent.retry", reason="timeout")
        run.output = agent(llm, tools, QUESTION, "")
    assert rollout == golden
"""

ERROR_TYPES_CONFTEST = """
def pytest_rollout_error_types(config):
    return ["agent.retry"]
"""


def test_error_types_hook_feeds_the_score(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In-process only (xdist costs seconds a run): a conftest hook runs in a worker as in
    # test_marker_hook_and_ini_settings_apply_per_test.
    write_project(pytester, test_errors=ERROR_TYPES_TEST)
    pytester.makeconftest(ERROR_TYPES_CONFTEST)
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("APPLY_CHANGE", "1")

    result = run(pytester, ())

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "this run left its golden at step 0: event_mismatch (attributed to the agent)",
            "Score: golden wins 1-0: errors (golden 0 vs this run 1)",
        ]
    )
