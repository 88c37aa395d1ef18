"""An OpenAI Agents SDK guardrail handed to ``rollout.hook()``: its decision is part of the
record, served in a dry replay, and a guardrail that now blocks is named in the failure
(docs/agents.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import orjson
import pytest
from plugin_agent import IN_PROCESS, failure_sections, goldens

pytest.importorskip("agents")

FAKE_MODELS: Final = (Path(__file__).parent.parent / "fake_models.py").read_text(encoding="utf-8")

GUARDED_TEST: Final = """
import asyncio
import os

from agents import (
    Agent, GuardrailFunctionOutput, OpenAIResponsesModel, RunConfig, Runner, input_guardrail,
)
from fake_models import FakeModel, Say, offline_transport


@input_guardrail(run_in_parallel=False)
def no_refunds(ctx, agent, text):
    strict = os.environ.get("GUARD_STRICT") == "1"
    blocked = strict and "refund" in str(text)
    return GuardrailFunctionOutput(output_info={"strict": strict}, tripwire_triggered=blocked)


def test_guarded(rollout, golden):
    if os.environ.get("MODEL_OFFLINE"):
        transport = offline_transport()
    else:
        transport = FakeModel("openai.responses", [Say("Your refund is on its way.")]).transport()
    client = rollout.async_openai(
        transport=transport, api_key="sk-test", base_url="http://fake.test/v1", max_retries=0
    )
    agent = Agent(
        name="desk",
        instructions="Help with orders.",
        model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
        input_guardrails=[rollout.hook(no_refunds)],
    )
    with rollout.run(prompt="I want a refund") as run:
        result = Runner.run(agent, "I want a refund", run_config=RunConfig(tracing_disabled=True))
        run.output = asyncio.run(result).final_output
    assert rollout == golden
"""


@pytest.fixture
def guarded(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(fake_models=FAKE_MODELS, test_guarded=GUARDED_TEST)
    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record")
    result.assert_outcomes(passed=1)
    return pytester


def _compare(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-compare=golden/", *args)


def test_the_guardrails_decision_is_in_the_golden(guarded: pytest.Pytester) -> None:
    (path,) = goldens(guarded)
    lines = [
        orjson.loads(line) for line in (guarded.path / "golden" / path).read_bytes().splitlines()
    ]
    (checked,) = (e["data"] for e in lines if e["type"] == "guardrail.checked")
    assert checked == {
        "name": "no_refunds",
        "kind": "input",
        "action": "allow",
        "reason": None,
        "output": {"output_info": {"strict": False}, "tripwire_triggered": False},
        "agent": "desk",
        "step": 0,
    }


def test_a_dry_replay_serves_the_recorded_decision_offline(
    guarded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODEL_OFFLINE", "1")
    monkeypatch.setenv("GUARD_STRICT", "1")  # would block, but does not run
    _compare(guarded).assert_outcomes(passed=1)


def test_a_guardrail_that_now_blocks_fails_naming_it_in_a_full_replay(
    guarded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GUARD_STRICT", "1")
    result = _compare(guarded, "--rollout-mode=full")
    result.assert_outcomes(failed=1)
    report = failure_sections(result)["test_guarded"]
    # The agent's own error leads (the tripwire), and the verdict stands beside it.
    assert "agents.exceptions.InputGuardrailTripwireTriggered" in "\n".join(report)
    beside = report[
        report.index(
            "this run left its golden at step 0: guardrail_mismatch "
            "(attributed to the harness: the agent's prompt, model or tools)"
        ) :
    ]
    assert beside[2] == "Divergence: guardrail 'no_refunds' now says block (the recording: allow)"
