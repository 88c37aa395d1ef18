"""Each divergence kind, produced by a realistic change to a recorded agent (docs/replay.md).

One golden per change is recorded from the unchanged agent; the changed agent is then
replayed against it, and each failure must name the right step, kind, attribution and score.
The report reaches the user whether replay's error propagates, or the agent swallows it and
the test asserts, or the agent swallows it and the test asserts nothing.
"""

from __future__ import annotations

import pytest
from plugin_agent import failure_sections, live_calls, record, run, write_project

KINDS_TEST = """
import os

import pytest
from agent import TOOLS, ScriptedLLM, agent

CHANGES = ["argument", "extra-call", "skip-call", "system-prompt", "extra-turn", "post-process"]


@pytest.mark.parametrize("change", CHANGES)
def test_agent(rollout, golden, change):
    applied = change if os.environ.get("APPLY_CHANGE") == "1" else ""
    llm = rollout.provider(ScriptedLLM())
    tools = rollout.tools(TOOLS)
    question = "What is the weather in Paris?"
    with rollout.run(prompt=question) as run:
        run.output = agent(llm, tools, question, applied)
    assert rollout == golden
"""

# The change, then what the report must say: headline, the divergence, and the score.
# The run failed, and its replay divergence counts among its errors too.
GOLDEN_FAILED = "outcome (this run failed where golden completed), errors (golden 0 vs this run 2)"
EXPECTED = {
    "argument": (
        "at step 1: tool_call_mismatch (attributed to the agent)",
        'Divergence: call #1 of step 1: recorded get_weather(city="Paris"), '
        'got get_weather(city="PARIS")',
        f"Score: golden wins 4-2: {GOLDEN_FAILED}; this run takes cost "
        "(golden $0.0008 vs this run $0.00025), steps (golden 2 vs this run 1)",
    ),
    "extra-call": (
        "at step 1: unrecorded_call (attributed to the agent)",
        'Divergence: call #3 of step 1, get_time(city="Paris"), is not in the recording '
        "(it holds 2 call(s) at this step)",
        f"Score: golden wins 4-2: {GOLDEN_FAILED}; this run takes cost "
        "(golden $0.0008 vs this run $0.00025), steps (golden 2 vs this run 1)",
    ),
    "skip-call": (
        "at step 1: missing_call (attributed to the agent)",
        'Divergence: the recording has call #2 of step 1, get_time(city="Paris"), '
        "but the agent moved on to the next turn without making it",
        f"Score: golden wins 4-1: {GOLDEN_FAILED}; this run takes cost "
        "(golden $0.0008 vs this run $0.00025)",
    ),
    "system-prompt": (
        "at step 1: prompt_mismatch "
        "(attributed to the harness: the agent's prompt, model or tools)",
        "Divergence: the request differs from the recorded one at messages[0].content: ",
        f"Score: golden wins 4-1: {GOLDEN_FAILED}; this run takes steps (golden 2 vs this run 1)",
    ),
    "extra-turn": (
        "at step 3: unrecorded_turn "
        "(attributed to the harness: the agent's prompt, model or tools)",
        "Divergence: the agent asked for turn 3 but ",
        f"Score: golden wins 5-0: {GOLDEN_FAILED}, steps (golden 2 vs this run 3)",
    ),
    "post-process": (
        "at step 2: response_mismatch (attributed to the agent)",
        "Divergence: first difference in data.output",
        "Score: tie 0-0",
    ),
}

# pytest shortens assertion explanations outside CI; these runs read the whole report.
NO_TRUNCATION = ("-o", "truncation_limit_lines=0", "-o", "truncation_limit_chars=0")


def report_text(lines: list[str]) -> str:
    """A failure section as one line: wrapped report lines joined, ``E`` prefixes gone."""
    return " ".join(line.removeprefix("E").strip() for line in lines)


def test_each_kind_is_reported_with_step_attribution_and_score(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In-process only (xdist costs seconds a run): a kind's report reaches the controller as in
    # test_report_reaches_the_user_however_the_agent_handles_the_error.
    write_project(pytester, test_kinds=KINDS_TEST)
    record(pytester).assert_outcomes(passed=len(EXPECTED))
    monkeypatch.setenv("APPLY_CHANGE", "1")

    result = run(pytester, (), *NO_TRUNCATION)

    result.assert_outcomes(failed=len(EXPECTED))
    sections = failure_sections(result)
    assert sorted(sections) == sorted(f"test_agent[{change}]" for change in EXPECTED)
    for change, (headline, divergence, score) in EXPECTED.items():
        text = report_text(sections[f"test_agent[{change}]"])
        assert f"this run left its golden {headline}" in text, change
        assert divergence in text, change
        assert score in text, change
    assert live_calls(pytester) == []


THREE_WAYS_TEST = """
import os

from agent import TOOLS, ScriptedLLM, agent

CHANGE = "argument" if os.environ.get("APPLY_CHANGE") == "1" else ""
QUESTION = "What is the weather in Paris?"


def test_error_propagates(rollout, golden):
    tools = rollout.tools(TOOLS)
    with rollout.run(prompt=QUESTION) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), tools, QUESTION, CHANGE)
    assert rollout == golden


def test_error_swallowed_then_asserted(rollout, golden):
    tools = rollout.tools(TOOLS)
    with rollout.run(prompt=QUESTION) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), tools, QUESTION, CHANGE, True)
    assert rollout == golden


def test_error_swallowed_not_asserted(rollout):
    tools = rollout.tools(TOOLS)
    with rollout.run(prompt=QUESTION) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), tools, QUESTION, CHANGE, True)
    assert run.output
"""

TOOL_CALL_MISMATCH = (
    "this run left its golden at step 1: tool_call_mismatch (attributed to the agent)",
    'Divergence: call #1 of step 1: recorded get_weather(city="Paris"), '
    'got get_weather(city="PARIS")',
)


def test_report_reaches_the_user_however_the_agent_handles_the_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_three_ways=THREE_WAYS_TEST)
    record(pytester).assert_outcomes(passed=3)
    monkeypatch.setenv("APPLY_CHANGE", "1")

    result = run(pytester, (), "-v", *NO_TRUNCATION)

    result.assert_outcomes(failed=3)
    sections = failure_sections(result)
    assert sorted(sections) == [
        "test_error_propagates",
        "test_error_swallowed_not_asserted",
        "test_error_swallowed_then_asserted",
    ]
    for name, lines in sections.items():
        text = report_text(lines)
        for expected in TOOL_CALL_MISMATCH:
            assert expected in text, name
        # The headline is the first divergence, not what the swallowed error led to.
        assert text.count("this run left its golden at") == 1, name
        assert "Golden: golden/test_three_ways/" in text, name
        assert "rollout diff golden/test_three_ways/" in text, name
    # Swallowed, the error leads the agent on to a request the recording does not hold.
    swallowed = report_text(sections["test_error_swallowed_then_asserted"])
    assert "then prompt_mismatch at step 2: the request differs" in swallowed
    # A run whose agent swallowed its divergences and answered anyway never wins.
    assert (
        "Score: golden wins 4-1: outcome (this run diverged where golden completed), errors "
        "(golden 0 vs this run 2); this run takes cost (golden $0.0008 vs this run $0.00025)"
    ) in swallowed
    assert live_calls(pytester) == []
