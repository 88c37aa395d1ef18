"""One step number for the first divergence, and step counts that say which steps they count.

A changed model is the realistic case: the golden's ``run.started`` names the model at step
0, and replay refuses the first request at step 1. The failure report, ``rollout diff`` and
the fork hint must all name the same step, and the "Steps" line must count the steps the
"Run A/B" lines name.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Final

import pytest
from plugin_agent import IN_PROCESS, failure_sections

from pytest_rollout.cli import main

HERE: Final = Path(__file__).parent.parent  # the tests folder, where the helpers are

#: A Responses API agent whose model a variable picks, as a user's config would. It is set
#: with monkeypatch, for the test only: ``sdk_agents`` may be the module this process has
#: imported already, and a model set for good would reach the tests that run after this one.
MODEL_TEST: Final = """
import os

import pytest
import sdk_agents
from fake_models import Call, FakeModel, Say
from sdk_agents import AGENTS, get_weather

PROMPT = "What is the weather in Paris?"


@pytest.fixture(autouse=True)
def agent_model(monkeypatch):
    monkeypatch.setattr(sdk_agents, "OPENAI_MODEL", os.environ.get("AGENT_MODEL", "gpt-4o-mini"))


def test_agent(rollout, golden):
    script = [Call("get_weather", {"city": "Paris"}), Say("Sunny in Paris, 21 degrees.")]
    live = FakeModel("openai.responses", script).transport()
    client = rollout.openai(transport=live, api_key="sk-test", base_url="http://fake.test/v1")
    tools = rollout.tools({"get_weather": get_weather})
    with rollout.run(prompt=PROMPT) as run:
        run.output = AGENTS["openai.responses"][1](client, PROMPT, tools)
    assert rollout == golden
"""

GOLDEN: Final = "golden/test_model_agent/test_agent.jsonl"
SAVED: Final = ".pytest_cache/d/rollout/runs/test_model_agent/test_agent.jsonl"


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*IN_PROCESS, *args)


def test_a_changed_model_is_reported_at_one_step_everywhere(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        fake_models=(HERE / "fake_models.py").read_text(encoding="utf-8"),
        sdk_agents=(HERE / "sdk_agents.py").read_text(encoding="utf-8"),
        test_model_agent=MODEL_TEST,
    )
    _run(pytester, "--rollout-record").assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_MODEL", "gpt-4o")

    result = _run(pytester)

    result.assert_outcomes(failed=1)
    report = failure_sections(result)["test_agent"]
    assert report[:4] == [
        "this run left its golden at step 0: setup_mismatch "
        "(attributed to the harness: the agent's prompt, model or tools)",
        f"Golden: {GOLDEN}",
        "Divergence: first difference in data.model",
        report[3],
    ]
    # Replay's own refusal of the first request follows the headline, at its own step.
    then = report.index(
        "  then prompt_mismatch at step 1: the request differs from the recorded one at "
        "params.model:"
    )
    assert report[then + 1] == '      recorded "gpt-4o-mini", got "gpt-4o"'
    assert "First divergence at step 0 (diverged)" in report
    assert '    data.model: "gpt-4o-mini" -> "gpt-4o"' in report
    assert "Steps 0-2: 0 identical, 2 diverged, 1 only in golden, 0 only in this run" in report
    # Nothing before step 0 is good: no fork hint points past the divergence.
    assert not any(line.startswith("Fork the conversation") for line in report)

    out = io.StringIO()
    assert main(["diff", str(pytester.path / GOLDEN), str(pytester.path / SAVED)], out=out) == 1
    lines = out.getvalue().splitlines()
    # The same report, the same step, in the command's words.
    assert (
        lines[0] == "B left A at step 0: setup_mismatch "
        "(attributed to the harness: the agent's prompt, model or tools)"
    )
    assert "Steps 0-2: 0 identical, 2 diverged, 1 only in A, 0 only in B" in lines
    assert "First divergence at step 0 (diverged)" in lines


def test_a_changed_answer_names_its_step_and_forks_keeping_its_model_turn(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        fake_models=(HERE / "fake_models.py").read_text(encoding="utf-8"),
        sdk_agents=(HERE / "sdk_agents.py").read_text(encoding="utf-8"),
        test_model_agent=MODEL_TEST.replace(
            "run.output = AGENTS", 'run.output = os.environ.get("PREFIX", "") + AGENTS'
        ),
    )
    _run(pytester, "--rollout-record").assert_outcomes(passed=1)
    monkeypatch.setenv("PREFIX", "Answer: ")

    result = _run(pytester)

    result.assert_outcomes(failed=1)
    report = failure_sections(result)["test_agent"]
    assert report[0] == (
        "this run left its golden at step 2: response_mismatch (attributed to the agent)"
    )
    assert "First divergence at step 2 (diverged)" in report
    assert "Steps 0-2: 2 identical, 1 diverged, 0 only in golden, 0 only in this run" in report
    # The model's last turn matched; only the answer the agent made of it changed: the fork
    # keeps that turn.
    fork = report.index("Fork the conversation from the last good event (step 2's model turn):")
    assert report[fork + 1] == f"  rollout fork {GOLDEN} --step 2"


@pytest.mark.parametrize(
    ("steps", "shown"),
    [
        (range(4), "0-3"),
        (range(2, 3), "2"),
        (range(0), ""),
        # A 400-byte file whose steps jump to a million is still one run of numbers: the
        # range is read as such, never spread into a million numbers.
        (range(1, 1_000_001), "1-1000000"),
        ([0, 1, 2, 5], "0-2, 5"),
        ([3, 1, 2, 2], "1-3"),
    ],
)
def test_step_numbers_are_shown_as_runs(steps: Any, shown: str) -> None:
    from pytest_rollout.diff.render import step_numbers

    assert step_numbers(steps) == shown
