"""A fork inside a test: ``rollout.fork(step, override={...})`` answers the run from a golden up
to step N, with the test's replacements at N, and lets it go on live after N.

The project's agent researches a question in four turns (search, lookup, summarize, answer).
One test records the golden; the others fork it at step 2, naming it by path, with a live
model that counts its calls: the model is asked only after step 2, the tools after step 2 run
live, and the saved run shows the replacement at step 2 and where it was forked from.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

import pytest
from plugin_agent import IN_PROCESS, live_calls, record

AGENT: Final = '''
from pathlib import Path

from pytest_rollout import ToolCall, Turn

LOG = Path(__file__).with_name("calls.log")
QUESTION = "Who wrote the report?"


def log(what):
    with LOG.open("a", encoding="utf-8") as handle:
        handle.write(what + "\\n")


class Model:
    """Decides from the tool results so far; counts the turns it was asked for."""

    model = "fake-1"

    def __init__(self):
        self.calls = 0

    def complete(self, messages, tools=None, **params):
        self.calls += 1
        log("llm")
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if not results:
            return Turn(None, [ToolCall("call_s", "search", {"query": "report"})])
        if len(results) == 1:
            return Turn(None, [ToolCall("call_l", "lookup", {"doc": results[0]})])
        if len(results) == 2:
            return Turn(None, [ToolCall("call_m", "summarize", {"text": results[1]})])
        return Turn("answer: " + results[-1])


def search(query):
    log("search")
    return "doc-7"


def lookup(doc):
    log("lookup")
    return "written by Ada"


def summarize(text):
    log("summarize")
    return "in short, " + text


TOOLS = {"search": search, "lookup": lookup, "summarize": summarize}


def research(llm, tools, question):
    messages = [{"role": "user", "content": question}]
    while True:
        turn = llm.complete(messages)
        messages.append({"role": "assistant", "content": turn.content})
        if not turn.tool_calls:
            return turn.content
        for call in turn.tool_calls:
            try:
                result = tools[call.name](**call.arguments)
            except LookupError as exc:
                result = "failed: " + str(exc)
            messages.append({"role": "tool", "content": result})
'''

TESTS: Final = """
import os

import pytest
from pytest_rollout import Turn

from research import QUESTION, TOOLS, Model, research

GOLDEN = "golden/test_research/test_research.jsonl"


def test_research(rollout, golden):
    llm = rollout.provider(Model())
    with rollout.run(prompt=QUESTION) as run:
        run.output = research(llm, rollout.tools(TOOLS), QUESTION)
    assert rollout == golden
    if rollout.mode.value != "record":  # the golden's conversation, as before
        conversation = rollout.fork(1, format="openai")
        assert conversation.from_step == 1
        assert conversation.messages == [{"role": "user", "content": QUESTION}]


def fork_and_run(rollout, step, override):
    model = Model()
    llm = rollout.provider(model)
    conversation = rollout.fork(step, override=override)
    assert conversation.from_step == step
    with rollout.run(prompt=QUESTION) as run:
        run.output = research(llm, rollout.tools(TOOLS), QUESTION)
    return model, run.output


@pytest.mark.rollout(golden=GOLDEN)
def test_what_if_lookup_said_otherwise(rollout):
    model, output = fork_and_run(rollout, 2, {"lookup": "written by Grace"})
    assert output == "answer: in short, written by Grace"
    assert model.calls == 2  # turns 1 and 2 came from the golden
    assert [c.output for c in rollout.tool_calls["lookup"]] == ["written by Grace"]


@pytest.mark.rollout(golden=GOLDEN)
def test_what_if_lookup_failed(rollout):
    model, output = fork_and_run(rollout, 2, {"call_l": LookupError("archive offline")})
    assert output == "answer: in short, failed: archive offline"


@pytest.mark.rollout(golden=GOLDEN)
def test_what_if_the_model_answered_at_once(rollout):
    model, output = fork_and_run(rollout, 2, {"turn": Turn("answer: nobody knows")})
    assert output == "answer: nobody knows"
    assert model.calls == 0


@pytest.mark.rollout(golden=GOLDEN)
def test_a_fork_is_not_compared(rollout, golden):
    fork_and_run(rollout, 2, {})
    assert rollout == golden


@pytest.mark.rollout(golden=GOLDEN)
def test_unknown_call(rollout):
    fork_and_run(rollout, 2, {"summarize": "short"})


@pytest.mark.rollout(golden=GOLDEN)
def test_past_the_end(rollout):
    fork_and_run(rollout, 7, {"lookup": "x"})


@pytest.mark.rollout(golden=GOLDEN)
def test_fork_after_the_run_began(rollout):
    llm = rollout.provider(Model())
    with rollout.run(prompt=QUESTION):
        research(llm, rollout.tools(TOOLS), QUESTION)
    rollout.fork(2, override={"lookup": "written by Grace"})
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """The project, its golden recorded (by the one test that does not fork)."""
    pytester.makepyfile(research=AGENT, test_research=TESTS)
    record(pytester, "test_research.py::test_research").assert_outcomes(passed=1)
    assert (pytester.path / "golden" / "test_research" / "test_research.jsonl").is_file()
    return pytester


def _run(pytester: pytest.Pytester, test: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(
        *IN_PROCESS, "--rollout-dir", "runs", f"test_research.py::{test}"
    )


def _saved_run(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    (path,) = (pytester.path / "runs").glob("*/*.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_fork_goes_on_live_after_its_step_with_the_replacement_at_it(
    project: pytest.Pytester,
) -> None:
    result = _run(project, "test_what_if_lookup_said_otherwise")
    result.assert_outcomes(passed=1)
    # Counted as a fork in the summary, not as a golden replayed without a comparison.
    result.stdout.fnmatch_lines(
        [
            "0 golden(s) compared: 0/0 turns served, 0/0 tool calls matched, 0 diverged, "
            "1 forked from a golden (run on live, not compared)"
        ]
    )
    # The model was asked for turns 3 and 4 only; the tools of steps 1 and 2 were answered
    # from the golden (the replacement among them), the summary after step 2 ran live.
    assert live_calls(project) == ["llm", "summarize", "llm"]
    events = _saved_run(project)
    golden_path = project.path / "golden" / "test_research" / "test_research.jsonl"
    golden_bytes = golden_path.read_bytes()
    golden_run_id = json.loads(golden_bytes.splitlines()[0])["data"]["run_id"]
    assert events[0]["data"]["forked_from"] == {
        "run_id": golden_run_id,
        "golden": "sha256:" + hashlib.sha256(golden_bytes).hexdigest(),
        "step": 2,
    }
    completed = [e["data"] for e in events if e["type"] == "tool.call.completed"]
    assert [(d["name"], d["output"]) for d in completed] == [
        ("search", "doc-7"),
        ("lookup", "written by Grace"),
        ("summarize", "in short, written by Grace"),
    ]
    assert [e["data"]["step"] for e in events if e["type"] == "tool.call.completed"] == [1, 2, 3]
    assert events[-1]["type"] == "run.completed"
    assert events[-1]["data"]["output"] == "answer: in short, written by Grace"


def test_a_replacement_may_be_an_error_or_the_model_turn(project: pytest.Pytester) -> None:
    _run(project, "test_what_if_lookup_failed").assert_outcomes(passed=1)
    assert live_calls(project) == ["llm", "summarize", "llm"]
    (project.path / "runs").rename(project.path / "runs-before")
    _run(project, "test_what_if_the_model_answered_at_once").assert_outcomes(passed=1)
    assert live_calls(project) == []
    turns = [e["data"] for e in _saved_run(project) if e["type"] == "llm.turn.completed"]
    assert [t["content"] for t in turns] == [None, "answer: nobody knows"]


FAILURES: Final = {
    "test_a_fork_is_not_compared": "E * pytest_rollout.RolloutError: a fork is not compared "
    "with its golden: this run follows it up to step 2 and goes its own way after it, by "
    "design (rollout.fork(2, override=...)). Assert on the run itself (rollout.tool_calls, "
    "rollout.events()); a divergence up to step 2 still fails the test",
    "test_unknown_call": "E * pytest_rollout.ForkError: rollout.fork(2, override=...) "
    "replaces 'summarize', which names no tool call of step 2 in "
    "golden/test_research/test_research.jsonl: its calls at step 2 are lookup (call_l). "
    'Name a call by its id or its tool\'s name, or the model turn itself by "turn"',
    "test_past_the_end": "E * pytest_rollout.ForkError: rollout.fork(7, override=...) "
    "cannot fork golden/test_research/test_research.jsonl at step 7: a fork goes on from one "
    "of its model turns, and it has 4 (steps 1 to 4). Fork at a step from 1 to 4",
    "test_fork_after_the_run_began": "E * pytest_rollout.ForkError: rollout.fork(2, "
    "override=...) comes after the run began: a run becomes a fork before it records "
    "anything. Call it before the agent's first model turn or tool call (before the "
    "rollout.run() block, or first thing in it)",
}


def test_a_test_that_does_not_fork_replays_and_gets_the_conversation(
    project: pytest.Pytester,
) -> None:
    _run(project, "test_research").assert_outcomes(passed=1)
    assert live_calls(project) == []
    assert "forked_from" not in _saved_run(project)[0]["data"]


@pytest.mark.parametrize("test", FAILURES)
def test_a_fork_that_cannot_be_made_fails_saying_why(project: pytest.Pytester, test: str) -> None:
    result = _run(project, test)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([FAILURES[test]])
    if test in ("test_unknown_call", "test_past_the_end"):  # refused before the agent ran
        assert live_calls(project) == []


def test_a_record_run_replays_a_fork_test_from_the_golden_it_names(
    project: pytest.Pytester,
) -> None:
    golden = project.path / "golden" / "test_research" / "test_research.jsonl"
    before = golden.read_bytes()

    result = record(
        project,
        "test_research.py::test_research",
        "test_research.py::test_what_if_lookup_said_otherwise",
    )

    # The golden's own test is recorded again (unchanged); the fork test names that golden by
    # path, which a record run never writes, so it replays it rather than failing for want
    # of a golden.
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "0 golden(s) written (0 created, 0 updated), 1 unchanged",
            "0 golden(s) compared: 0/0 turns served, 0/0 tool calls matched, 0 diverged, "
            "1 forked from a golden (run on live, not compared)",
        ]
    )
    assert golden.read_bytes() == before
