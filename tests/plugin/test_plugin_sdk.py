"""End to end: a user's SDK agent recorded with ``--rollout-record`` and replayed by default.

One test per SDK and API shape (OpenAI Chat Completions, OpenAI Responses, Anthropic
Messages) and one per pydantic-ai provider. The scripted fake (``fake_models.py``) plays the
live service while recording; in replay the live side is switched off (any request to it
fails the test), and a changed prompt must fail with a prompt mismatch at step 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import orjson
import pydantic_ai.models.anthropic
import pydantic_ai.models.openai  # noqa: F401
import pytest
from plugin_agent import CLOSE_LEFTOVER_LOOP, IN_PROCESS, failure_sections, goldens

# The inner runs are in-process, and pytester forgets the modules each one imported; pydantic
# does not survive being imported twice into one process, so pydantic-ai is imported above,
# once, for all of them.

HERE: Final = Path(__file__).parent.parent  # the tests folder, where the helpers are

#: The test a user writes around an SDK agent; only the client line changes per SDK.
SDK_TEST: Final = """
import os

from fake_models import Call, FakeModel, Say, offline_transport
from sdk_agents import AGENTS, get_weather

PROMPT = os.environ.get("AGENT_PROMPT", "What is the weather in Paris?")


def live_model():
    if os.environ.get("MODEL_OFFLINE"):
        return offline_transport()  # replay must never reach it
    script = [Call("get_weather", {{"city": "Paris"}}), Say("Sunny in Paris, 21 degrees.")]
    return FakeModel("{api}", script).transport()


def test_agent(rollout, golden):
    client = rollout.{factory}(transport=live_model(), api_key="sk-test", base_url="{base}")
    tools = rollout.tools({{"get_weather": get_weather}})
    with rollout.run(prompt=PROMPT) as run:
        run.output = AGENTS["{api}"][{agent}](client, PROMPT, tools{extra})
    assert run.output == "Sunny in Paris, 21 degrees."
    assert rollout == golden
"""

#: A pydantic-ai Agent on a provider built from a rollout client, its tool wrapped.
PYDANTIC_AI_TEST: Final = """
import os

from fake_models import Call, FakeModel, Say, offline_transport
from pydantic_ai import Agent, Tool
{imports}
from sdk_agents import get_weather

PROMPT = os.environ.get("AGENT_PROMPT", "What is the weather in Paris?")


def live_model():
    if os.environ.get("MODEL_OFFLINE"):
        return offline_transport()
    script = [Call("get_weather", {{"city": "Paris"}}), Say("Sunny in Paris, 21 degrees.")]
    return FakeModel("{api}", script).transport()


def test_agent(rollout, golden):
    client = rollout.{factory}(transport=live_model(), api_key="sk-test", base_url="{base}")
    model = {model}
    tools = rollout.tools({{"get_weather": get_weather}})
    agent = Agent(model, instructions="Answer with the tools.", tools=[Tool(tools["get_weather"])])
    with rollout.run(prompt=PROMPT) as run:
        run.output = agent.run_sync(PROMPT).output
    assert run.output == "Sunny in Paris, 21 degrees."
    assert rollout == golden
"""

OPENAI_BASE: Final = "http://fake.test/v1"
ANTHROPIC_BASE: Final = "http://fake.test"

SDK_CASES: Final = {
    "openai-chat": SDK_TEST.format(
        api="openai.chat", factory="openai", base=OPENAI_BASE, agent=1, extra=""
    ),
    "openai-responses-stream": SDK_TEST.format(
        api="openai.responses", factory="openai", base=OPENAI_BASE, agent=1, extra=", stream=True"
    ),
    "anthropic-messages": SDK_TEST.format(
        api="anthropic.messages", factory="anthropic", base=ANTHROPIC_BASE, agent=1, extra=""
    ),
    "pydantic-ai-openai": PYDANTIC_AI_TEST.format(
        api="openai.chat",
        factory="async_openai",
        base=OPENAI_BASE,
        imports="from pydantic_ai.models.openai import OpenAIChatModel\n"
        "from pydantic_ai.providers.openai import OpenAIProvider",
        model='OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))',
    ),
    "pydantic-ai-anthropic": PYDANTIC_AI_TEST.format(
        api="anthropic.messages",
        factory="async_anthropic",
        base=ANTHROPIC_BASE,
        imports="from pydantic_ai.models.anthropic import AnthropicModel\n"
        "from pydantic_ai.providers.anthropic import AnthropicProvider",
        model='AnthropicModel("claude-haiku-4-5", '
        "provider=AnthropicProvider(anthropic_client=client))",
    ),
}


def _project(pytester: pytest.Pytester, case: str) -> None:
    pytester.makepyfile(
        fake_models=(HERE / "fake_models.py").read_text(encoding="utf-8"),
        sdk_agents=(HERE / "sdk_agents.py").read_text(encoding="utf-8"),
        test_agent=SDK_CASES[case],
        conftest=CLOSE_LEFTOVER_LOOP,
    )


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*IN_PROCESS, "-p", "no:cacheprovider", *args)


@pytest.mark.parametrize("case", list(SDK_CASES))
def test_an_sdk_agent_records_replays_offline_and_reports_a_changed_prompt(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    _project(pytester, case)
    _run(pytester, "--rollout-record").assert_outcomes(passed=1)
    assert goldens(pytester) == ["test_agent/test_agent.jsonl"]

    monkeypatch.setenv("MODEL_OFFLINE", "1")
    _run(pytester).assert_outcomes(passed=1)

    monkeypatch.setenv("AGENT_PROMPT", "What is the weather in Oslo?")
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    report = failure_sections(result)["test_agent"]
    # The run started with another prompt: step 0 leads, replay's refusal follows it.
    assert (
        report[0] == "this run left its golden at step 0: setup_mismatch "
        "(attributed to the harness: the agent's prompt, model or tools)"
    )
    assert report[2] == "Divergence: first difference in data.prompt"
    assert report[3].startswith("  then prompt_mismatch at step 1: the request differs")
    assert "First divergence at step 0 (diverged)" in report
    assert "the live model was called during replay" not in result.stdout.str()


def test_the_failure_report_of_a_changed_prompt(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester, "openai-chat")
    _run(pytester, "--rollout-record").assert_outcomes(passed=1)
    monkeypatch.setenv("MODEL_OFFLINE", "1")
    monkeypatch.setenv("AGENT_PROMPT", "What is the weather in Oslo?")
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    assert failure_sections(result)["test_agent"] == [
        "this run left its golden at step 0: setup_mismatch "
        "(attributed to the harness: the agent's prompt, model or tools)",
        "Golden: golden/test_agent/test_agent.jsonl",
        "Divergence: first difference in data.prompt",
        "  then prompt_mismatch at step 1: the request differs from the recorded one at "
        "messages[1].content:",
        '      recorded …t is the weather in Paris?", got …t is the weather in Oslo?"',
        "First divergence at step 0 (diverged)",
        "  golden did:",
        '  > run.started  model="gpt-4o-mini" prompt="What is the weather in Paris?"',
        "  this run did:",
        '  > run.started  model="gpt-4o-mini" prompt="What is the weather in Oslo?"',
        "  Difference (event 1 of the step):",
        '    data.prompt: …t is the weather in Paris?" -> …t is the weather in Oslo?"',
        "  After it: 2 more steps differ (1 diverged, 1 only in golden)",
        "Steps 0-2: 0 identical, 2 diverged, 1 only in golden, 0 only in this run",
        "Score: golden wins 4-1: outcome (this run failed where golden completed), errors "
        "(golden 0 vs this",
        "    run 2); this run takes steps (golden 2 vs this run 1)",
        "Cost: golden $0.000052, this run cost unknown",
    ]


def test_rollout_prices_set_the_cost_of_sdk_turns(pytester: pytest.Pytester) -> None:
    _project(pytester, "openai-chat")
    pytester.makeini("[pytest]\nrollout_prices =\n    gpt-4o-mini=1000,2000\n")
    _run(pytester, "--rollout-record").assert_outcomes(passed=1)
    golden = pytester.path / "golden" / "test_agent" / "test_agent.jsonl"
    turns = [
        orjson.loads(line)["data"]
        for line in golden.read_bytes().splitlines()
        if b'"llm.turn.completed"' in line
    ]
    for data in turns:
        usage = data["usage"]
        expected = (usage["input_tokens"] * 1000 + usage["output_tokens"] * 2000) / 1e6
        assert data["cost_usd"] == pytest.approx(expected)


def test_a_bad_price_line_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _project(pytester, "openai-chat")
    pytester.makeini("[pytest]\nrollout_prices =\n    gpt-4o-mini=cheap\n")
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: rollout_prices: *"])
