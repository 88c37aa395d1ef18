"""The example agent's regression tests: recorded once, replayed from golden/ ever after."""

from __future__ import annotations

import pytest
from weather_agent import ScriptedModel, convert_temperature, get_weather, run_agent

TOOLS = {"get_weather": get_weather, "convert_temperature": convert_temperature}


@pytest.mark.parametrize(
    "question",
    ["What is the weather in Paris?", "What is the weather in Oslo in fahrenheit?"],
    ids=["paris", "oslo-fahrenheit"],
)
def test_weather_question(rollout, golden, question):
    llm = rollout.provider(ScriptedModel())
    tools = rollout.tools(TOOLS)
    with rollout.run(prompt=question) as run:
        run.output = run_agent(llm, tools, question)
    assert rollout == golden


def test_unknown_city_is_reported(rollout, golden):
    question = "What is the weather in Atlantis?"
    llm = rollout.provider(ScriptedModel())
    with rollout.run(prompt=question) as run:
        run.output = run_agent(llm, rollout.tools(TOOLS), question)
    assert "could not get the weather" in run.output
    assert rollout == golden
