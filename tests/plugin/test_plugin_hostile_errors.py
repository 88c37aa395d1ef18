"""A golden cannot make a test skip: a recorded tool error that names a class steering the
test run (``unittest.SkipTest``, which pytest treats as a skip) is replayed as a plain
``RecordedToolError``, and the test fails as its agent's code says it should."""

from __future__ import annotations

from typing import Final

import pytest
from plugin_agent import IN_PROCESS

from pytest_rollout.cli import main as rollout_main

AGENT_TEST: Final = """
import pytest
from pytest_rollout import ToolCall, Turn


class LLM:
    model = "scripted"

    def complete(self, messages, tools=None, **params):
        return Turn("", tool_calls=[ToolCall("c1", "fetch", {"q": "orders"})])


def fetch(q):
    raise ValueError("the service is down")


def test_agent(rollout, golden):
    llm = rollout.provider(LLM())
    (tool,) = rollout.tools([fetch])
    with rollout.run(prompt="go") as run:
        turn = llm.complete([{"role": "user", "content": "go"}])
        with pytest.raises(ValueError, match="the service is down"):
            tool(**turn.tool_calls[0].arguments)
        run.output = "done"
    assert rollout == golden
"""


def test_a_golden_naming_skip_test_as_a_tool_error_fails_the_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_agent=AGENT_TEST)

    def inner(*args: str) -> pytest.RunResult:
        return pytester.runpytest_inprocess(*IN_PROCESS, "-p", "no:cacheprovider", *args)

    inner("--rollout-record").assert_outcomes(passed=1)
    golden = pytester.path / "golden" / "test_agent" / "test_agent.jsonl"
    recorded = b'"error":{"class":"ValueError","message":"the service is down"}'
    assert recorded in golden.read_bytes()
    hostile = (
        b'"error":{"class":"SkipTest","message":"the service is down",'
        b'"type":"unittest.case:SkipTest"}'
    )
    golden.write_bytes(golden.read_bytes().replace(recorded, hostile))
    assert rollout_main(["seal", str(golden)]) == 0  # a receipt proves integrity, not authorship

    result = inner()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*RecordedToolError: the service is down*"])


ESCAPING_TEST: Final = """
from pytest_rollout import ToolCall, Turn


class LLM:
    model = "scripted"

    def complete(self, messages, tools=None, **params):
        return Turn("", tool_calls=[ToolCall("c1", "fetch", {"q": "orders"})])


def fetch(q):
    raise ValueError("down \\x1b[2J\\x1b]8;;http://evil\\x07here\\u202e ##vso[task.complete]")


def test_agent(rollout, golden):
    llm = rollout.provider(LLM())
    (tool,) = rollout.tools([fetch])
    with rollout.run(prompt="go"):
        turn = llm.complete([{"role": "user", "content": "go"}])
        tool(**turn.tool_calls[0].arguments)
"""


def test_a_traceback_quoting_recorded_text_is_printed_defused(pytester: pytest.Pytester) -> None:
    """The native traceback and the short summary line quote the tool's error message;
    replayed, that is a golden's text: no escape, bidi control or workflow command gets out."""
    pytester.makepyfile(test_agent=ESCAPING_TEST)
    result = pytester.runpytest_inprocess(
        *IN_PROCESS, "-p", "no:cacheprovider", "-rf", "--rollout-record"
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    for raw in ("\x1b", "\x07", "\u202e", "##vso["):
        assert raw not in out
    result.stdout.fnmatch_lines(
        [
            "*ValueError: down \\x1b[[]2J\\x1b]8;;http://evil\\x07here\\u202e #\\x23vso[[]task*",
            "FAILED test_agent.py::test_agent - ValueError: down \\x1b*",
        ]
    )
