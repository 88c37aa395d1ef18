"""A run that stops early leaves recorded turns unconsumed: a failure, with a named opt-out.

The opt-out is the ``--rollout-allow-unconsumed`` flag, the ``rollout_allow_unconsumed`` ini
key, or ``@pytest.mark.rollout(allow_unconsumed=True)`` on one test.
"""

from __future__ import annotations

import pytest
from plugin_agent import failure_sections, live_calls, record, run, write_project

STOPS_EARLY_TEST = """
import os

import pytest
from agent import TOOLS, ScriptedLLM, agent

CHANGE = "stop-early" if os.environ.get("APPLY_CHANGE") == "1" else ""
QUESTION = "What is the weather in Paris?"


def ask(rollout):
    with rollout.run(prompt=QUESTION) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), rollout.tools(TOOLS), QUESTION, CHANGE)
    return run.output


def test_stops_early(rollout):
    assert ask(rollout)


@pytest.mark.rollout(allow_unconsumed=True)
def test_stops_early_allowed(rollout):
    assert ask(rollout)
"""


def test_unconsumed_turns_fail_the_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_early=STOPS_EARLY_TEST)
    record(pytester).assert_outcomes(passed=2)
    monkeypatch.setenv("APPLY_CHANGE", "1")

    result = run(pytester, ())

    # The marker lets one test through; the other fails though it asserts nothing on
    # the rollout.
    result.assert_outcomes(passed=1, failed=1)
    assert list(failure_sections(result)) == ["test_stops_early"]
    result.stdout.fnmatch_lines(
        [
            "this run left its golden at step 2: unconsumed_turn (attributed to the agent)",
            "Golden: golden/test_early/test_stops_early.jsonl",
            "Divergence: 1 recorded turn(s) from step 2 on were never asked for: "
            "the run stopped early",
        ],
        consecutive=True,
    )
    assert live_calls(pytester) == []


@pytest.mark.parametrize(
    ("args", "ini", "xdist"),
    [
        pytest.param(("--rollout-allow-unconsumed",), "", (), id="flag-serial"),
        pytest.param((), "[pytest]\nrollout_allow_unconsumed = true\n", (), id="ini-serial"),
    ],
)
def test_the_opt_out_lets_an_early_stop_pass(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    xdist: tuple[str, ...],
    args: tuple[str, ...],
    ini: str,
) -> None:
    write_project(pytester, test_early=STOPS_EARLY_TEST)
    if ini:
        pytester.makeini(ini)
    record(pytester).assert_outcomes(passed=2)
    monkeypatch.setenv("APPLY_CHANGE", "1")

    result = run(pytester, xdist, *args)

    result.assert_outcomes(passed=2)
    # Neither test asserts rollout == golden: both replayed, neither compared.
    result.stdout.fnmatch_lines(
        [
            "0 golden(s) compared: 2/4 turns served, 4/4 tool calls matched, 0 diverged, "
            "2 replayed without a comparison (no assert rollout == golden*"
        ]
    )
