"""A small tool-using agent written straight against the google-genai SDK.

What a user's Gemini agent looks like without a framework: ask the model, run the functions
it called (all of them, when it calls several in one turn), send their responses back, until
it answers in text. Sync or async (``client.aio``), streamed or not. ``change`` breaks it the
four ways a golden must catch: ``argument`` (a tool gets another argument), ``system`` (the
system instruction changed), ``drop-tool`` (a tool is no longer offered) and ``model``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from google.genai import types

SYSTEM = "You are a weather assistant. Use the tools."
MODEL = "gemini-2.5-flash"
OTHER_MODEL = "gemini-2.5-pro"
MAX_TURNS = 6

Tools = Mapping[str, Callable[..., Any]]

_CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
DECLARATIONS = [
    types.FunctionDeclaration(
        name="get_weather", description="The weather in a city.", parameters_json_schema=_CITY
    ),
    types.FunctionDeclaration(
        name="get_time", description="The local time in a city.", parameters_json_schema=_CITY
    ),
]


def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city (deterministic, so that a replay can be compared)."""
    if city == "Atlantis":
        raise LookupError(f"no weather station in {city}")
    return {"city": city, "sky": "sunny", "celsius": 21}


def get_time(city: str) -> dict[str, Any]:
    """The local time in a city."""
    return {"city": city, "time": "12:00"}


TOOLS: dict[str, Callable[..., Any]] = {"get_weather": get_weather, "get_time": get_time}


def _config(change: str) -> types.GenerateContentConfig:
    declarations = DECLARATIONS[:1] if change == "drop-tool" else DECLARATIONS
    system = SYSTEM + " Answer in French." if change == "system" else SYSTEM
    return types.GenerateContentConfig(
        system_instruction=system,
        tools=[types.Tool(function_declarations=declarations)],
        temperature=0,
    )


def _responses(calls: list[types.FunctionCall], tools: Tools, change: str) -> types.Content:
    """The function responses to a turn's calls, in the order they were called."""
    parts = []
    for call in calls:
        args = dict(call.args or {})
        if change == "argument":
            args["city"] = str(args.get("city", "")).upper()
        try:
            response: dict[str, Any] = {"output": tools[str(call.name)](**args)}
        except Exception as exc:  # the model is told, as agents do
            response = {"error": f"{type(exc).__name__}: {exc}"}
        parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=call.id, name=call.name, response=response
                )
            )
        )
    return types.Content(role="user", parts=parts)


def _joined(chunks: list[types.GenerateContentResponse]) -> tuple[types.Content, str]:
    """A streamed answer's parts and text, joined from its chunks."""
    parts: list[types.Part] = []
    for chunk in chunks:
        if chunk.candidates and chunk.candidates[0].content:
            parts.extend(chunk.candidates[0].content.parts or [])
    text = "".join(p.text for p in parts if p.text)
    return types.Content(role="model", parts=parts), text


def _calls(content: types.Content) -> list[types.FunctionCall]:
    return [p.function_call for p in content.parts or [] if p.function_call is not None]


def agent(client: Any, prompt: str, tools: Tools, *, stream: bool = False, change: str = "") -> str:
    """The sync agent (``client`` is a ``google.genai.Client``)."""
    model = OTHER_MODEL if change == "model" else MODEL
    config = _config(change)
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=prompt)])]
    for _ in range(MAX_TURNS):
        if stream:
            chunks = list(
                client.models.generate_content_stream(model=model, contents=contents, config=config)
            )
            content, text = _joined(chunks)
        else:
            reply = client.models.generate_content(model=model, contents=contents, config=config)
            content = reply.candidates[0].content
            text = "".join(p.text for p in content.parts or [] if p.text)
        calls = _calls(content)
        if not calls:
            return text
        contents += [content, _responses(calls, tools, change)]
    raise RuntimeError("too many turns")


async def async_agent(
    client: Any, prompt: str, tools: Tools, *, stream: bool = False, change: str = ""
) -> str:
    """The async agent (``client`` is the ``.aio`` client)."""
    model = OTHER_MODEL if change == "model" else MODEL
    config = _config(change)
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=prompt)])]
    for _ in range(MAX_TURNS):
        if stream:
            answer = await client.models.generate_content_stream(
                model=model, contents=contents, config=config
            )
            content, text = _joined([chunk async for chunk in answer])
        else:
            reply = await client.models.generate_content(
                model=model, contents=contents, config=config
            )
            content = reply.candidates[0].content
            text = "".join(p.text for p in content.parts or [] if p.text)
        calls = _calls(content)
        if not calls:
            return text
        contents += [content, _responses(calls, tools, change)]
    raise RuntimeError("too many turns")
