"""Small tool-using agents written straight against the OpenAI and Anthropic SDKs.

They are what a user's agent looks like when it has no provider class: a loop that calls the
SDK, runs the tools the model asked for and sends their results back, until the model
answers in text. One agent per API shape (Chat Completions, Responses, Messages), each sync
and async, streamed (through the SDKs' own stream helpers) or not. The SDK tests record and
replay them through ``rollout.openai()`` and its siblings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

SYSTEM = "You are a weather assistant. Use the tools."
OPENAI_MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-haiku-4-5"
MAX_TURNS = 6

_WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": _WEATHER_SCHEMA,
        },
    }
]
RESPONSES_TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": _WEATHER_SCHEMA,
    }
]
ANTHROPIC_TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather in a city.",
        "input_schema": _WEATHER_SCHEMA,
    }
]

Tools = Mapping[str, Callable[..., Any]]


def get_weather(city: str) -> dict[str, Any]:
    """The tool the agents call (deterministic, so a replay can be compared)."""
    return {"city": city, "sky": "sunny", "celsius": 21}


# -- OpenAI Chat Completions ----------------------------------------------------------------


def _chat_request(messages: list[Any]) -> dict[str, Any]:
    return {"model": OPENAI_MODEL, "messages": messages, "tools": CHAT_TOOLS}


def _chat_step(message: Any, messages: list[Any], tools: Tools) -> str | None:
    """Append the assistant turn and its tool results; the answer when there were no calls."""
    if not message.tool_calls:
        return str(message.content)
    messages.append(
        {
            "role": "assistant",
            "content": message.content,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in message.tool_calls
            ],
        }
    )
    for c in message.tool_calls:
        result = tools[c.function.name](**json.loads(c.function.arguments))
        messages.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps(result)})
    return None


def _chat_call(client: Any, messages: list[Any], stream: bool) -> Any:
    if not stream:
        return client.chat.completions.create(**_chat_request(messages)).choices[0].message
    options = {"stream_options": {"include_usage": True}}
    with client.chat.completions.stream(**_chat_request(messages), **options) as events:
        return events.get_final_completion().choices[0].message


async def _async_chat_call(client: Any, messages: list[Any], stream: bool) -> Any:
    if not stream:
        completion = await client.chat.completions.create(**_chat_request(messages))
        return completion.choices[0].message
    options = {"stream_options": {"include_usage": True}}
    async with client.chat.completions.stream(**_chat_request(messages), **options) as events:
        return (await events.get_final_completion()).choices[0].message


# -- OpenAI Responses -----------------------------------------------------------------------


def _responses_request(items: list[Any]) -> dict[str, Any]:
    return {
        "model": OPENAI_MODEL,
        "instructions": SYSTEM,
        "input": items,
        "tools": RESPONSES_TOOLS,
    }


def _responses_step(response: Any, items: list[Any], tools: Tools) -> str | None:
    calls = [item for item in response.output if item.type == "function_call"]
    if not calls:
        return str(response.output_text)
    for c in calls:
        result = tools[c.name](**json.loads(c.arguments))
        items.append(
            {
                "type": "function_call",
                "call_id": c.call_id,
                "name": c.name,
                "arguments": c.arguments,
            }
        )
        items.append(
            {"type": "function_call_output", "call_id": c.call_id, "output": json.dumps(result)}
        )
    return None


def _responses_call(client: Any, items: list[Any], stream: bool) -> Any:
    if not stream:
        return client.responses.create(**_responses_request(items))
    with client.responses.stream(**_responses_request(items)) as events:
        return events.get_final_response()


async def _async_responses_call(client: Any, items: list[Any], stream: bool) -> Any:
    if not stream:
        return await client.responses.create(**_responses_request(items))
    async with client.responses.stream(**_responses_request(items)) as events:
        return await events.get_final_response()


# -- Anthropic Messages ---------------------------------------------------------------------


def _messages_request(messages: list[Any]) -> dict[str, Any]:
    return {
        "model": ANTHROPIC_MODEL,
        "max_tokens": 1024,
        "system": SYSTEM,
        "messages": messages,
        "tools": ANTHROPIC_TOOLS,
    }


def _messages_step(message: Any, messages: list[Any], tools: Tools) -> str | None:
    uses = [block for block in message.content if block.type == "tool_use"]
    if not uses:
        return "".join(block.text for block in message.content if block.type == "text")
    messages.append(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": block.text}
                if block.type == "text"
                else {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                for block in message.content
            ],
        }
    )
    results = [
        {
            "type": "tool_result",
            "tool_use_id": use.id,
            "content": json.dumps(tools[use.name](**use.input)),
        }
        for use in uses
    ]
    messages.append({"role": "user", "content": results})
    return None


def _messages_call(client: Any, messages: list[Any], stream: bool) -> Any:
    if not stream:
        return client.messages.create(**_messages_request(messages))
    with client.messages.stream(**_messages_request(messages)) as events:
        return events.get_final_message()


async def _async_messages_call(client: Any, messages: list[Any], stream: bool) -> Any:
    if not stream:
        return await client.messages.create(**_messages_request(messages))
    async with client.messages.stream(**_messages_request(messages)) as events:
        return await events.get_final_message()


# -- the loop -------------------------------------------------------------------------------

Call = Callable[[Any, list[Any], bool], Any]
Step = Callable[[Any, list[Any], Tools], "str | None"]


def _opening(api: str, prompt: str) -> list[Any]:
    if api == "openai.chat":
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
    return [{"role": "user", "content": prompt}]


def _agent(api: str, call: Call, step: Step) -> Callable[..., str]:
    """A sync agent: ask the model, run the tools it asked for, until it answers in text."""

    def agent(client: Any, prompt: str, tools: Tools, *, stream: bool = False) -> str:
        conversation = _opening(api, prompt)
        for _ in range(MAX_TURNS):
            answer = step(call(client, conversation, stream), conversation, tools)
            if answer is not None:
                return answer
        raise RuntimeError("too many turns")

    return agent


def _async_agent(api: str, call: Callable[..., Any], step: Step) -> Callable[..., Any]:
    """The async counterpart of :func:`_agent`."""

    async def agent(client: Any, prompt: str, tools: Tools, *, stream: bool = False) -> str:
        conversation = _opening(api, prompt)
        for _ in range(MAX_TURNS):
            answer = step(await call(client, conversation, stream), conversation, tools)
            if answer is not None:
                return answer
        raise RuntimeError("too many turns")

    return agent


#: For each API: the rollout client factory's name, the sync agent and the async agent.
AGENTS: dict[str, tuple[str, Callable[..., str], Callable[..., Any]]] = {
    "openai.chat": (
        "openai",
        _agent("openai.chat", _chat_call, _chat_step),
        _async_agent("openai.chat", _async_chat_call, _chat_step),
    ),
    "openai.responses": (
        "openai",
        _agent("openai.responses", _responses_call, _responses_step),
        _async_agent("openai.responses", _async_responses_call, _responses_step),
    ),
    "anthropic.messages": (
        "anthropic",
        _agent("anthropic.messages", _messages_call, _messages_step),
        _async_agent("anthropic.messages", _async_messages_call, _messages_step),
    ),
}
