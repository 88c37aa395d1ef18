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


def chat_agent(client: Any, prompt: str, tools: Tools, *, stream: bool = False) -> str:
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt},
    ]
    for _ in range(MAX_TURNS):
        request = _chat_request(messages)
        if stream:
            with client.chat.completions.stream(
                **request, stream_options={"include_usage": True}
            ) as events:
                completion = events.get_final_completion()
        else:
            completion = client.chat.completions.create(**request)
        answer = _chat_step(completion.choices[0].message, messages, tools)
        if answer is not None:
            return answer
    raise RuntimeError("too many turns")


async def async_chat_agent(client: Any, prompt: str, tools: Tools, *, stream: bool = False) -> str:
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt},
    ]
    for _ in range(MAX_TURNS):
        request = _chat_request(messages)
        if stream:
            async with client.chat.completions.stream(
                **request, stream_options={"include_usage": True}
            ) as events:
                completion = await events.get_final_completion()
        else:
            completion = await client.chat.completions.create(**request)
        answer = _chat_step(completion.choices[0].message, messages, tools)
        if answer is not None:
            return answer
    raise RuntimeError("too many turns")


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


def responses_agent(client: Any, prompt: str, tools: Tools, *, stream: bool = False) -> str:
    items: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(MAX_TURNS):
        if stream:
            with client.responses.stream(**_responses_request(items)) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(**_responses_request(items))
        answer = _responses_step(response, items, tools)
        if answer is not None:
            return answer
    raise RuntimeError("too many turns")


async def async_responses_agent(
    client: Any, prompt: str, tools: Tools, *, stream: bool = False
) -> str:
    items: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(MAX_TURNS):
        if stream:
            async with client.responses.stream(**_responses_request(items)) as events:
                response = await events.get_final_response()
        else:
            response = await client.responses.create(**_responses_request(items))
        answer = _responses_step(response, items, tools)
        if answer is not None:
            return answer
    raise RuntimeError("too many turns")


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


def messages_agent(client: Any, prompt: str, tools: Tools, *, stream: bool = False) -> str:
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(MAX_TURNS):
        if stream:
            with client.messages.stream(**_messages_request(messages)) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**_messages_request(messages))
        answer = _messages_step(message, messages, tools)
        if answer is not None:
            return answer
    raise RuntimeError("too many turns")


async def async_messages_agent(
    client: Any, prompt: str, tools: Tools, *, stream: bool = False
) -> str:
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(MAX_TURNS):
        if stream:
            async with client.messages.stream(**_messages_request(messages)) as events:
                message = await events.get_final_message()
        else:
            message = await client.messages.create(**_messages_request(messages))
        answer = _messages_step(message, messages, tools)
        if answer is not None:
            return answer
    raise RuntimeError("too many turns")


#: For each API: the rollout client factory's name, the sync agent and the async agent.
AGENTS: dict[str, tuple[str, Callable[..., str], Callable[..., Any]]] = {
    "openai.chat": ("openai", chat_agent, async_chat_agent),
    "openai.responses": ("openai", responses_agent, async_responses_agent),
    "anthropic.messages": ("anthropic", messages_agent, async_messages_agent),
}
