"""``--rollout-record`` leaves a golden alone when the new run compares equal to it.

A live service names each tool call with a fresh id, stamps each response with the time and
its own request ids; none of that is what the agent did. Re-recording an unchanged agent must
leave its golden and receipt byte-identical, by the same notion of equal that replay and
``rollout diff`` use, while a real change to the agent is still written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import anthropic
import openai  # noqa: F401
import pytest
from plugin_agent import IN_PROCESS, write_project

import pytest_rollout

# pydantic (under the SDKs) does not survive being imported twice into one process, and
# pytester forgets what each in-process run imported: the SDKs are imported here, once.
assert anthropic

HERE: Final = Path(__file__).parent.parent  # the tests folder, where the helpers are
FRESH_IDS_AGENT: Final = (HERE / "data" / "fresh_ids_agent.py.txt").read_text(encoding="utf-8")

#: Three tests of an agent whose model names its tool calls with a new uuid every time.
PROVIDER_TEST: Final = """
import os

import pytest
from agent import TOOLS, agent
from fresh_ids_agent import FreshIdsLLM


@pytest.mark.parametrize("city", ["Paris", "Oslo", "Nowhere"])
def test_weather(rollout, golden, city):
    llm = rollout.provider(FreshIdsLLM())
    tools = rollout.tools(TOOLS)
    question = f"What is the weather in {city}?"
    with rollout.run(prompt=question) as run:
        run.output = agent(llm, tools, question, os.environ.get("AGENT_CHANGE", ""))
"""
PROVIDER_TESTS: Final = 3

#: An SDK agent against the fake service: fresh call, response and request ids and a fresh
#: ``created`` timestamp in every response, as the real services send.
SDK_TEST: Final = """
import os

import pytest
from fake_models import Call, FakeModel, Say
from sdk_agents import AGENTS, get_weather


@pytest.mark.parametrize(
    ("api", "factory", "base"),
    [
        ("openai.chat", "openai", "http://fake.test/v1"),
        ("openai.responses", "openai", "http://fake.test/v1"),
        ("anthropic.messages", "anthropic", "http://fake.test"),
    ],
)
def test_agent(rollout, api, factory, base):
    city = os.environ.get("AGENT_CITY", "Paris")
    script = [Call("get_weather", {"city": city}), Say(f"Sunny in {city}, 21 degrees.")]
    transport = FakeModel(api, script).transport()
    client = getattr(rollout, factory)(transport=transport, api_key="sk-test", base_url=base)
    tools = rollout.tools({"get_weather": get_weather})
    prompt = f"What is the weather in {city}?"
    with rollout.run(prompt=prompt) as run:
        run.output = AGENTS[api][1](client, prompt, tools)
"""
SDK_TESTS: Final = 3


def _record(pytester: pytest.Pytester) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*IN_PROCESS, "-p", "no:cacheprovider", "--rollout-record")


def _pairs(pytester: pytest.Pytester) -> dict[str, bytes]:
    """Every golden and receipt under ``golden/``, by path: their bytes."""
    root = pytester.path / "golden"
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _summary(written: int, created: int, updated: int, unchanged: int) -> str:
    return (
        f"{written} golden(s) written ({created} created, {updated} updated), {unchanged} unchanged"
    )


def test_fresh_tool_call_ids_leave_goldens_and_receipts_byte_identical(
    pytester: pytest.Pytester,
) -> None:
    write_project(pytester, fresh_ids_agent=FRESH_IDS_AGENT, test_fresh=PROVIDER_TEST)
    first = _record(pytester)
    first.assert_outcomes(passed=PROVIDER_TESTS)
    first.stdout.fnmatch_lines([_summary(PROVIDER_TESTS, PROVIDER_TESTS, 0, 0)])
    before = _pairs(pytester)
    assert len(before) == 2 * PROVIDER_TESTS  # a golden and its receipt per test

    again = _record(pytester)

    again.assert_outcomes(passed=PROVIDER_TESTS)
    again.stdout.fnmatch_lines([_summary(0, 0, 0, PROVIDER_TESTS)])
    assert _pairs(pytester) == before


def test_a_real_change_is_still_written_beside_fresh_ids(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, fresh_ids_agent=FRESH_IDS_AGENT, test_fresh=PROVIDER_TEST)
    _record(pytester).assert_outcomes(passed=PROVIDER_TESTS)
    before = _pairs(pytester)

    # The agent now upper-cases the city it asks about: the two tests with a known city
    # call get_weather differently; the unknown city fails the same way in upper case.
    monkeypatch.setenv("AGENT_CHANGE", "argument")
    changed = _record(pytester)

    changed.assert_outcomes(passed=PROVIDER_TESTS)
    changed.stdout.fnmatch_lines([_summary(PROVIDER_TESTS, 0, PROVIDER_TESTS, 0)])
    after = _pairs(pytester)
    assert sorted(after) == sorted(before)
    for name in after:
        assert after[name] != before[name], name
    golden = pytester.path / "golden" / "test_fresh" / "test_weather[Paris].jsonl"
    calls = [e for e in pytest_rollout.load(golden).events if e.type == "tool.call.started"]
    assert {"city": "PARIS"} in [c.data.get("arguments") for c in calls]


def test_an_sdk_agent_against_a_service_with_fresh_ids_and_timestamps_rerecords_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        fake_models=(HERE / "fake_models.py").read_text(encoding="utf-8"),
        sdk_agents=(HERE / "sdk_agents.py").read_text(encoding="utf-8"),
        test_sdk_agents_fresh=SDK_TEST,
    )
    _record(pytester).assert_outcomes(passed=SDK_TESTS)
    before = _pairs(pytester)

    again = _record(pytester)

    again.assert_outcomes(passed=SDK_TESTS)
    again.stdout.fnmatch_lines([_summary(0, 0, 0, SDK_TESTS)])
    assert _pairs(pytester) == before

    monkeypatch.setenv("AGENT_CITY", "Oslo")
    changed = _record(pytester)

    changed.assert_outcomes(passed=SDK_TESTS)
    changed.stdout.fnmatch_lines([_summary(SDK_TESTS, 0, SDK_TESTS, 0)])
