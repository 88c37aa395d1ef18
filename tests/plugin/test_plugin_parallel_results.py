"""Parallel tool calls whose results enter the next request in the order they completed.

An agent that runs a turn's calls side by side and appends each result as it lands (as
LlamaIndex does) sends results in an order set by the tools' latencies. Re-recording must
not rewrite the golden for that, and replay (whose tools answer at once, in another order)
must still match the recorded requests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
from plugin_agent import IN_PROCESS, N2, goldens, run_subprocess

HERE: Final = Path(__file__).parent.parent  # the tests folder, where the helpers are

pytestmark = pytest.mark.slow  # seven inner pytest runs, one of them under xdist

AGENT_TEST: Final = """
import asyncio
import json
import os
import random

import pytest
from fake_models import Call, FakeModel, Say, offline_transport

SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


async def get_weather(city):
    slow = os.environ.get("SLOW_CITY")
    delay = random.uniform(0, 0.08) if slow is None else (0.06 if city == slow else 0.0)
    await asyncio.sleep(delay)
    return {"city": city, "sky": "sunny" if city == "Paris" else "cold"}


async def agent(client, tools, prompt):
    messages = [{"role": "user", "content": prompt}]
    while True:
        reply = await client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=SCHEMAS
        )
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))

        async def answer(call):
            result = await tools[call.function.name](**json.loads(call.function.arguments))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )

        await asyncio.gather(*(answer(call) for call in message.tool_calls))


@pytest.mark.parametrize("question", ["Paris and Oslo?", "Oslo and Paris?"])
def test_two_cities(rollout, golden, question):
    if os.environ.get("MODEL_OFFLINE"):
        live = offline_transport()
    else:
        cities = question.rstrip("?").split(" and ")
        script = [[Call("get_weather", {"city": c}) for c in cities], Say("Sunny, then cold.")]
        live = FakeModel("openai.chat", script).transport()
    client = rollout.async_openai(
        transport=live, base_url="http://fake.test/v1", api_key="sk-test"
    )
    tools = rollout.tools({"get_weather": get_weather})
    with rollout.run(prompt=question) as run:
        run.output = asyncio.run(agent(client, tools, question))
    assert rollout == golden
"""


def _files(pytester: pytest.Pytester) -> dict[str, bytes]:
    return {name: (pytester.path / "golden" / name).read_bytes() for name in goldens(pytester)}


def test_completion_order_neither_churns_goldens_nor_breaks_replay(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        fake_models=(HERE / "fake_models.py").read_text(encoding="utf-8"),
        test_parallel_agent=AGENT_TEST,
    )

    def inner(*args: str) -> pytest.RunResult:
        return pytester.runpytest_inprocess(*IN_PROCESS, "-p", "no:cacheprovider", *args)

    # Paris's result lands last, then first, then as the jitter has it.
    monkeypatch.setenv("SLOW_CITY", "Paris")
    inner("--rollout-record").assert_outcomes(passed=2)
    first = _files(pytester)
    for slow in ("Oslo", None):
        if slow is None:
            monkeypatch.delenv("SLOW_CITY")
        else:
            monkeypatch.setenv("SLOW_CITY", slow)
        result = inner("--rollout-record")
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(["0 golden(s) written (0 created, 0 updated), 2 unchanged"])
        assert _files(pytester) == first

    monkeypatch.setenv("MODEL_OFFLINE", "1")
    for slow in ("Paris", "Oslo", None):
        if slow is None:
            monkeypatch.delenv("SLOW_CITY", raising=False)
        else:
            monkeypatch.setenv("SLOW_CITY", slow)
        inner("-o", "rollout_network=sealed").assert_outcomes(passed=2)
    run_subprocess(pytester, *N2, "-o", "rollout_network=sealed").assert_outcomes(passed=2)
