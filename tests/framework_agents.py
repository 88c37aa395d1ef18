"""The agents of the framework matrix (``test_framework_matrix.py``), one per stack.

Each stack is the same small weather agent written the way its framework's users write it:
the OpenAI Agents SDK (``Agent`` and ``Runner`` on ``OpenAIResponsesModel``), LangGraph
(``create_react_agent`` on ``langchain_openai.ChatOpenAI``), pydantic-ai (``Agent`` on
``OpenAIChatModel``) and two plain SDK loops (OpenAI Chat Completions; Anthropic Messages,
streamed). The tools are the framework's own tool objects, defined at module level with the
framework's decorator, and the test wraps them with ``rollout.tools([...])``; ``local_time``
is the tool a user forgot to wrap.

Every stack module (written into the pytester project as ``stack.py``) offers:

* ``API``: the fake service's API (``fake_models.py``);
* ``get_weather`` (slow: it finishes after ``get_time``), ``get_time``, ``forecast`` (returns
  a dataclass), ``station`` (returns a pydantic model), ``local_time`` (never wrapped);
  ``get_weather("Atlantis")`` raises ``CityNotFound``, which the stack turns into a tool
  message the way its framework does;
* ``run_agent(rollout, transport, tools, *, instructions, model, unwrapped=())``: the final
  answer of one run, its model client built from ``rollout`` on the live ``transport``.

The sources are text, not modules of the suite: they import frameworks the type checker does
not see through, and they run only inside the pytester projects.
"""

from __future__ import annotations

from typing import Final

#: What every stack shares (``shared.py`` in the project): the typed results and the agent's
#: defaults.
SHARED: Final = """
import dataclasses

import pydantic

PROMPT = "What is the weather in Paris?"
INSTRUCTIONS = "You are a weather assistant. Use the tools."
OPENAI_MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-haiku-4-5"
SLOW = 0.05  # get_weather's latency: parallel calls complete out of announcement order


@dataclasses.dataclass(frozen=True)
class Forecast:
    city: str
    sky: str
    celsius: int


class Station(pydantic.BaseModel):
    city: str
    code: str
    elevation_m: int


def weather(city):
    if city == "Atlantis":
        return None
    return f"sunny in {city}, 21 degrees"


def forecast_of(city):
    return Forecast(city=city, sky="cloudy", celsius=17)


def station_of(city):
    return Station(city=city, code="LFPG", elevation_m=119)
"""

AGENTS_SDK: Final = '''
import asyncio

from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool

import shared

API = "openai.responses"
DEFAULT_MODEL = shared.OPENAI_MODEL
# Per run, not set_tracing_disabled(True): that would turn tracing off for the whole process,
# and the pytest process runs other tests after this one. Else the SDK exports traces to
# api.openai.com on its own client.
NO_TRACING = RunConfig(tracing_disabled=True)


class CityNotFound(LookupError):
    pass


def tool_error(ctx, error):
    return f"{type(error).__name__}: {error}"


@function_tool(failure_error_function=tool_error)
async def get_weather(city: str) -> str:
    """The weather in a city."""
    await asyncio.sleep(shared.SLOW)
    answer = shared.weather(city)
    if answer is None:
        raise CityNotFound(f"no weather station in {city}")
    return answer


@function_tool
async def get_time(city: str) -> str:
    """The local time in a city."""
    return f"noon in {city}"


@function_tool
def forecast(city: str) -> shared.Forecast:
    """Tomorrow's forecast for a city."""
    return shared.forecast_of(city)


@function_tool
def station(city: str) -> shared.Station:
    """The weather station of a city."""
    return shared.station_of(city)


@function_tool
def local_time(city: str) -> str:
    """The local time in a city (a tool the test forgets to wrap)."""
    return f"12:00 in {city}"


def run_agent(rollout, transport, tools, *, instructions, model, unwrapped=()):
    client = rollout.async_openai(
        transport=transport, api_key="sk-test", base_url="http://fake.test/v1", max_retries=0
    )
    agent = Agent(
        name="weather",
        instructions=instructions,
        model=OpenAIResponsesModel(model=model, openai_client=client),
        tools=[*tools, *unwrapped],
    )
    return asyncio.run(Runner.run(agent, shared.PROMPT, run_config=NO_TRACING)).final_output
'''

LANGGRAPH: Final = '''
import time

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import ToolNode, create_react_agent

import shared

API = "openai.chat"
DEFAULT_MODEL = shared.OPENAI_MODEL


class CityNotFound(LookupError):
    pass


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    time.sleep(shared.SLOW)
    answer = shared.weather(city)
    if answer is None:
        raise CityNotFound(f"no weather station in {city}")
    return answer


@tool
def get_time(city: str) -> str:
    """The local time in a city."""
    return f"noon in {city}"


@tool
def forecast(city: str) -> shared.Forecast:
    """Tomorrow's forecast for a city."""
    return shared.forecast_of(city)


@tool
def station(city: str) -> shared.Station:
    """The weather station of a city."""
    return shared.station_of(city)


@tool
def local_time(city: str) -> str:
    """The local time in a city (a tool the test forgets to wrap)."""
    return f"12:00 in {city}"


def run_agent(rollout, transport, tools, *, instructions, model, unwrapped=()):
    llm = ChatOpenAI(
        model=model,
        api_key="sk-test",
        base_url="http://fake.test/v1",
        http_client=rollout.http_client(transport=transport),
        max_retries=0,
    )
    # handle_tool_errors=True: the tool's exception becomes a ToolMessage for the model.
    node = ToolNode([*tools, *unwrapped], handle_tool_errors=True)
    agent = create_react_agent(llm, node, prompt=instructions)
    state = agent.invoke({"messages": [("user", shared.PROMPT)]})
    return state["messages"][-1].content
'''

PYDANTIC_AI: Final = '''
import asyncio
import time

from pydantic_ai import Agent, ModelRetry, Tool
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import shared

API = "openai.chat"
DEFAULT_MODEL = shared.OPENAI_MODEL


class CityNotFound(ModelRetry):
    """pydantic-ai sends a ModelRetry's message back to the model as the tool's answer."""


def _get_weather(city: str) -> str:
    """The weather in a city."""
    time.sleep(shared.SLOW)
    answer = shared.weather(city)
    if answer is None:
        raise CityNotFound(f"no weather station in {city}")
    return answer


def _get_time(city: str) -> str:
    """The local time in a city."""
    return f"noon in {city}"


def _forecast(city: str) -> shared.Forecast:
    """Tomorrow's forecast for a city."""
    return shared.forecast_of(city)


def _station(city: str) -> shared.Station:
    """The weather station of a city."""
    return shared.station_of(city)


def _local_time(city: str) -> str:
    """The local time in a city (a tool the test forgets to wrap)."""
    return f"12:00 in {city}"


get_weather = Tool(_get_weather, name="get_weather", max_retries=2)
get_time = Tool(_get_time, name="get_time")
forecast = Tool(_forecast, name="forecast")
station = Tool(_station, name="station")
local_time = Tool(_local_time, name="local_time")


def run_agent(rollout, transport, tools, *, instructions, model, unwrapped=()):
    provider = OpenAIProvider(
        base_url="http://fake.test/v1",
        api_key="sk-test",
        http_client=rollout.async_http_client(transport=transport),
    )
    agent = Agent(
        OpenAIChatModel(model, provider=provider),
        instructions=instructions,
        tools=[*tools, *unwrapped],
    )
    return asyncio.run(agent.run(shared.PROMPT)).output
'''

#: The tools of the plain SDK loops: plain functions, wrapped with the mapping form.
_PLAIN_TOOLS: Final = '''
import json
import time
from concurrent.futures import ThreadPoolExecutor

import shared


class CityNotFound(LookupError):
    pass


def get_weather(city: str) -> str:
    """The weather in a city."""
    time.sleep(shared.SLOW)
    answer = shared.weather(city)
    if answer is None:
        raise CityNotFound(f"no weather station in {city}")
    return answer


def get_time(city: str) -> str:
    """The local time in a city."""
    return f"noon in {city}"


def forecast(city: str) -> shared.Forecast:
    """Tomorrow's forecast for a city."""
    return shared.forecast_of(city)


def station(city: str) -> shared.Station:
    """The weather station of a city."""
    return shared.station_of(city)


def local_time(city: str) -> str:
    """The local time in a city (a tool the test forgets to wrap)."""
    return f"12:00 in {city}"


def _schema(fn):
    return {
        "name": fn.__name__,
        "description": fn.__doc__,
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }


def _answer(fn, arguments):
    """What the loop shows the model: the result's str(), or the error's class and text."""
    try:
        result = fn(**arguments)
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return result if isinstance(result, str) else str(result)


def run_tools(tools, calls):
    """Run a turn's calls in parallel (name, arguments): their answers in call order."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(_answer, tools[name], arguments) for name, arguments in calls]
        return [future.result() for future in futures]
'''

OPENAI_CHAT: Final = (
    _PLAIN_TOOLS
    + """
PLAIN = True  # tools wrapped as a mapping of plain functions
API = "openai.chat"
DEFAULT_MODEL = shared.OPENAI_MODEL


def run_agent(rollout, transport, tools, *, instructions, model, unwrapped=()):
    client = rollout.openai(
        transport=transport, api_key="sk-test", base_url="http://fake.test/v1", max_retries=0
    )
    tools = {**tools, **{fn.__name__: fn for fn in unwrapped}}
    schemas = [{"type": "function", "function": _schema(fn)} for fn in tools.values()]
    messages = [
        {"role": "system", "content": instructions},
        {"role": "user", "content": shared.PROMPT},
    ]
    for _ in range(6):
        reply = client.chat.completions.create(model=model, messages=messages, tools=schemas)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.to_dict())
        calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]
        for c, answer in zip(message.tool_calls, run_tools(tools, calls), strict=True):
            messages.append({"role": "tool", "tool_call_id": c.id, "content": answer})
    raise RuntimeError("too many turns")
"""
)

ANTHROPIC: Final = (
    _PLAIN_TOOLS
    + """
PLAIN = True
API = "anthropic.messages"
DEFAULT_MODEL = shared.ANTHROPIC_MODEL


def run_agent(rollout, transport, tools, *, instructions, model, unwrapped=()):
    client = rollout.anthropic(
        transport=transport, api_key="sk-ant-test", base_url="http://fake.test", max_retries=0
    )
    tools = {**tools, **{fn.__name__: fn for fn in unwrapped}}
    schemas = []
    for fn in tools.values():
        schema = _schema(fn)
        schema["input_schema"] = schema.pop("parameters")
        schemas.append(schema)
    messages = [{"role": "user", "content": shared.PROMPT}]
    for _ in range(6):
        request = {"model": model, "max_tokens": 1024, "system": instructions, "tools": schemas}
        with client.messages.stream(messages=messages, **request) as events:
            reply = events.get_final_message()
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in reply.content if block.type == "text")
        messages.append({"role": "assistant", "content": reply.content})
        answers = run_tools(tools, [(use.name, use.input) for use in uses])
        results = [
            {"type": "tool_result", "tool_use_id": use.id, "content": answer}
            for use, answer in zip(uses, answers, strict=True)
        ]
        messages.append({"role": "user", "content": results})
    raise RuntimeError("too many turns")
"""
)

#: By stack: its agent's source and the modules to import once, before any inner run
#: (pytester forgets what an inner run imported, and pydantic does not survive a second
#: import into one process), with the pip line that installs them.
STACKS: Final = {
    "agents-sdk": (AGENTS_SDK, ("agents",), "pip install 'openai-agents>=0.24'"),
    "langgraph": (
        LANGGRAPH,
        ("langgraph.prebuilt", "langchain_openai", "langchain_core.tools"),
        "pip install 'langgraph>=1.0' 'langchain-openai>=1.0'",
    ),
    "pydantic-ai": (
        PYDANTIC_AI,
        ("pydantic_ai", "pydantic_ai.models.openai", "pydantic_ai.providers.openai"),
        "pip install 'pydantic-ai-slim[openai]>=1.0'",
    ),
    "openai-chat": (OPENAI_CHAT, ("openai",), "pip install openai"),
    "anthropic-stream": (ANTHROPIC, ("anthropic",), "pip install anthropic"),
}

#: The user's tests of every stack (``test_stack.py`` in the project). ``MODEL_OFFLINE``
#: switches the live service off (replay must not reach it). ``test_break`` records the
#: unchanged agent and replays it changed: the model's two changes come from a live model
#: with the tools replayed (``mode="full"``), the agent's three are replayed dry.
USER_TESTS: Final = """
import os

import pytest
from fake_models import Call, FakeModel, Say, offline_transport

import shared
import stack

PARALLEL = [
    [Call("get_weather", {"city": "Paris"}), Call("get_time", {"city": "Paris"})],
    Say("Sunny in Paris, it is noon."),
]
MODEL_CHANGES = {
    "argument": [
        [Call("get_weather", {"city": "Lyon"}), Call("get_time", {"city": "Paris"})],
        Say("Sunny in Paris, it is noon."),
    ],
    "skipped-call": [[Call("get_weather", {"city": "Paris"})], Say("Sunny in Paris.")],
}
AGENT_CHANGES = ("instructions", "model", "dropped-tool")
FULL = pytest.mark.rollout(mode="full")


def live(script):
    if os.environ.get("MODEL_OFFLINE"):
        return offline_transport()  # replay must never reach it
    return FakeModel(stack.API, script).transport()


def wrap(rollout, *tools):
    if getattr(stack, "PLAIN", False):
        return rollout.tools({fn.__name__: fn for fn in tools})
    return rollout.tools(list(tools))


def run(rollout, transport, tools, **changes):
    options = {"instructions": shared.INSTRUCTIONS, "model": stack.DEFAULT_MODEL, **changes}
    with rollout.run(prompt=shared.PROMPT) as handle:
        handle.output = stack.run_agent(rollout, transport, tools, **options)
    return handle.output


def test_parallel(rollout, golden):
    tools = wrap(rollout, stack.get_weather, stack.get_time)
    assert run(rollout, live(PARALLEL), tools) == "Sunny in Paris, it is noon."
    assert rollout == golden


def test_typed_results(rollout, golden):
    script = [Call("forecast", {"city": "Paris"}), Call("station", {"city": "Paris"}), "Cloudy."]
    tools = wrap(rollout, stack.forecast, stack.station)
    assert run(rollout, live(script), tools) == "Cloudy."
    assert rollout == golden


def test_tool_error(rollout, golden):
    script = [Call("get_weather", {"city": "Atlantis"}), Say("There is no station there.")]
    tools = wrap(rollout, stack.get_weather)
    assert run(rollout, live(script), tools) == "There is no station there."
    assert rollout == golden


def test_unwrapped_tool(rollout, golden):
    script = [Call("local_time", {"city": "Paris"}), Say("It is noon in Paris.")]
    tools = wrap(rollout, stack.get_weather)
    output = run(rollout, live(script), tools, unwrapped=(stack.local_time,))
    assert output == "It is noon in Paris."
    assert rollout == golden


@pytest.mark.parametrize(
    "change",
    [*(pytest.param(c, marks=FULL) for c in MODEL_CHANGES), *AGENT_CHANGES],
)
def test_break(rollout, golden, change):
    applied = "" if rollout.mode.value == "record" else change
    if applied in MODEL_CHANGES:  # the live model answers differently
        transport = FakeModel(stack.API, MODEL_CHANGES[applied]).transport()
    else:
        transport = live(PARALLEL)
    kept = [stack.get_weather] if applied == "dropped-tool" else [stack.get_weather, stack.get_time]
    changes = {}
    if applied == "instructions":
        changes["instructions"] = "You are a terse weather assistant."
    if applied == "model":
        changes["model"] = "gpt-4o" if stack.API.startswith("openai") else "claude-sonnet-4-5"
    run(rollout, transport, wrap(rollout, *kept), **changes)
    assert rollout == golden
"""
