"""A small tool-using agent, with no dependencies, to show pytest-rollout at work.

``ScriptedModel`` stands in for a live LLM: it reads the conversation and decides, by
rules, which tool to call next, and reports token usage and cost like a real provider.
``run_agent`` is the agent loop under test. Set ``WEATHER_AGENT_BUG`` to break the agent
on purpose (see the README's tour):

* ``lowercase-city``: the agent lowercases tool arguments before calling a tool;
* ``skip-convert``: the agent never calls the conversion tool it was asked to call;
* ``new-system-prompt``: the agent's system prompt changes.
"""

from __future__ import annotations

import os
import re
from typing import Any

from pytest_rollout import ToolCall, Turn

SYSTEM_PROMPT = "You are a concise weather assistant. Use the tools; answer in one sentence."

TOOL_SCHEMAS = [
    {"name": "get_weather", "parameters": {"city": "string"}},
    {"name": "convert_temperature", "parameters": {"celsius": "number", "to": "string"}},
]

_WEATHER = {
    "paris": {"temp_c": 18.5, "sky": "light rain", "wind_kmh": 14},
    "lyon": {"temp_c": 21.0, "sky": "sunny", "wind_kmh": 6},
    "oslo": {"temp_c": 4.0, "sky": "overcast", "wind_kmh": 22},
}


def get_weather(city: str) -> dict[str, Any]:
    """The current weather in a city (a fixed table: the example runs offline)."""
    found = _WEATHER.get(city.lower())
    if found is None:
        raise LookupError(f"no weather station for {city!r}")
    return {"city": city, **found}


def convert_temperature(celsius: float, to: str = "fahrenheit") -> dict[str, Any]:
    if to != "fahrenheit":
        raise ValueError(f"cannot convert to {to!r}")
    return {"fahrenheit": round(celsius * 9 / 5 + 32, 1)}


class ScriptedModel:
    """A deterministic stand-in for a live model, priced like a small real one."""

    model = "scripted-weather-1"
    price_per_token = 0.000002

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, messages: list[dict[str, Any]], tools: Any = None, **params: Any) -> Turn:
        self.calls += 1
        question = next(m["content"] for m in messages if m["role"] == "user")
        results = [m for m in messages if m["role"] == "tool"]
        city = re.search(r"in ([A-Z][a-z]+)", question)
        wants_f = "fahrenheit" in question.lower()
        usage = {"input_tokens": 40 * len(messages), "output_tokens": 18}
        cost = round(sum(usage.values()) * self.price_per_token, 8)
        n = len(results)
        if city and n == 0:
            call = ToolCall(f"call_{n + 1}", "get_weather", {"city": city.group(1)})
            return Turn("Let me look that up.", [call], usage, cost, self.model)
        last = results[-1]["content"] if results else {}
        if wants_f and n == 1 and "temp_c" in last:
            call = ToolCall(f"call_{n + 1}", "convert_temperature", {"celsius": last["temp_c"]})
            return Turn("Converting to Fahrenheit.", [call], usage, cost, self.model)
        if "error" in last:
            return Turn(f"Sorry, I could not get the weather: {last['error']}.", [], usage, cost)
        weather = next((r["content"] for r in results if "sky" in r["content"]), None)
        if weather is None:
            return Turn("Which city do you mean?", [], usage, cost, self.model)
        temp = f"{weather['temp_c']}°C"
        if wants_f and n >= 2:
            temp = f"{results[-1]['content']['fahrenheit']}°F"
        answer = f"It is {temp} with {weather['sky']} in {weather['city']}."
        return Turn(answer, [], usage, cost, self.model)


def run_agent(llm: Any, tools: dict[str, Any], question: str, max_turns: int = 6) -> str:
    """The agent loop: ask the model, run the tools it asks for, until it answers."""
    bug = os.environ.get("WEATHER_AGENT_BUG", "")
    system = SYSTEM_PROMPT + (" Be cheerful." if bug == "new-system-prompt" else "")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": question},
    ]
    for _ in range(max_turns):
        turn = llm.complete(messages, tools=TOOL_SCHEMAS, temperature=0)
        messages.append(
            {
                "role": "assistant",
                "content": turn.content,
                "tool_calls": [c.to_json_obj() for c in turn.tool_calls],
            }
        )
        if not turn.tool_calls:
            return turn.content or ""
        for call in turn.tool_calls:
            if bug == "skip-convert" and call.name == "convert_temperature":
                continue
            arguments = dict(call.arguments)
            if bug == "lowercase-city" and "city" in arguments:
                arguments["city"] = arguments["city"].lower()
            try:
                result: Any = tools[call.name](**arguments)
            except Exception as exc:  # tool errors go back to the model, as in most agents
                result = {"error": str(exc)}
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "I could not finish in time."
