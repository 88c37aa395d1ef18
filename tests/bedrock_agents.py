"""A tool-using agent written straight against Bedrock's Converse API (boto3), as a user's
would be: it calls ``converse`` (or ``converse_stream``, assembling the streamed message),
runs every tool use of a turn (a tool that raises is sent back as a ``toolResult`` with
``status: "error"``) and sends the results back, until the model answers in text."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

SYSTEM = "You are a weather assistant. Use the tools."
MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
MAX_TURNS = 6

_CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
SPECS = {
    "get_weather": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "inputSchema": {"json": _CITY},
    },
    "get_time": {
        "name": "get_time",
        "description": "The local time in a city.",
        "inputSchema": {"json": _CITY},
    },
}


class UnknownCity(ValueError):
    """A city the weather service has no station for."""


def get_weather(city: str) -> dict[str, Any]:
    if city == "Atlantis":
        raise UnknownCity(f"no weather station in {city}")
    return {"city": city, "sky": "sunny", "celsius": 21}


def get_time(city: str) -> dict[str, Any]:
    return {"city": city, "time": "12:00"}


TOOLS = {"get_weather": get_weather, "get_time": get_time}


def _streamed(response: Mapping[str, Any]) -> dict[str, Any]:
    """The assistant message a ConverseStream response's events make."""
    blocks: dict[int, dict[str, Any]] = {}
    for event in response["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            use = start["start"]["toolUse"]
            blocks[start["contentBlockIndex"]] = {"toolUse": {**use, "input": ""}}
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]
            block = blocks.setdefault(delta["contentBlockIndex"], {"text": ""})
            if "text" in delta["delta"]:
                block["text"] += delta["delta"]["text"]
            else:
                block["toolUse"]["input"] += delta["delta"]["toolUse"]["input"]
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"] or "{}")
    return {"role": "assistant", "content": [blocks[i] for i in sorted(blocks)]}


def _results(uses: list[dict[str, Any]], tools: Mapping[str, Callable[..., Any]]) -> list[Any]:
    results = []
    for use in uses:
        try:
            output = tools[use["name"]](**use["input"])
        except Exception as exc:
            content, status = [{"text": str(exc)}], "error"
        else:
            content, status = [{"json": output}], "success"
        result = {"toolUseId": use["toolUseId"], "content": content, "status": status}
        results.append({"toolResult": result})
    return results


def weather_agent(
    client: Any,
    tools: Mapping[str, Callable[..., Any]],
    question: str,
    *,
    model: str = MODEL,
    system: str = SYSTEM,
    stream: bool = False,
) -> str:
    """Ask ``question``, offering the tools named in ``tools``; the model's final text."""
    messages: list[Any] = [{"role": "user", "content": [{"text": question}]}]
    config = {"tools": [{"toolSpec": SPECS[name]} for name in tools]}
    for _ in range(MAX_TURNS):
        request = {
            "modelId": model,
            "system": [{"text": system}],
            "messages": messages,
            "toolConfig": config,
            "inferenceConfig": {"maxTokens": 512},
        }
        if stream:
            reply = _streamed(client.converse_stream(**request))
        else:
            reply = client.converse(**request)["output"]["message"]
        messages.append(reply)
        uses = [block["toolUse"] for block in reply["content"] if "toolUse" in block]
        if not uses:
            return "".join(block.get("text", "") for block in reply["content"])
        messages.append({"role": "user", "content": _results(uses, tools)})
    raise AssertionError("the agent did not finish")
