"""We eat our own cooking: the example agent, replayed from the goldens in golden/."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from weather_agent import ScriptedModel, convert_temperature, get_weather, run_agent

from pytest_rollout import RolloutSession, Turn

TOOLS: dict[str, Callable[..., Any]] = {
    "get_weather": get_weather,
    "convert_temperature": convert_temperature,
}


@pytest.mark.parametrize(
    "question",
    [
        "What is the weather in Lyon?",
        "What is the weather in Paris in fahrenheit?",
        "What is the weather in Atlantis?",
    ],
    ids=["lyon", "paris-fahrenheit", "unknown-city"],
)
def test_weather_agent(rollout: RolloutSession, golden: Any, question: str) -> None:
    llm = rollout.provider(ScriptedModel())
    tools = rollout.tools(TOOLS)
    with rollout.run(prompt=question) as run:
        run.output = run_agent(llm, tools, question)
    assert rollout == golden


def test_async_agent_replays(rollout: RolloutSession, golden: Any) -> None:
    async def get_weather_async(city: str) -> dict[str, Any]:
        return get_weather(city)

    async def agent(llm: Any, tools: Any, question: str) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
        turn: Turn = await llm.acomplete(messages)
        for call in turn.tool_calls:
            result = await tools[call.name](**call.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        turn = await llm.acomplete(messages)
        return turn.content or ""

    llm = rollout.provider(ScriptedModel())
    tools = rollout.tools({"get_weather": get_weather_async})
    with rollout.run(prompt="What is the weather in Oslo?") as run:
        run.output = asyncio.run(agent(llm, tools, "What is the weather in Oslo?"))
    assert run.output == "It is 4.0°C with overcast in Oslo."
    assert rollout == golden
