"""The runs with several agents of ``test_framework_agents.py``, one per stack.

Each stack is a small support desk written the way its framework's users write one: a
first agent that routes (or delegates), and workers with tools of their own. Every stack
module (written into the pytester project under its own name) offers:

* ``API``: the fake service's API (``fake_models.py``);
* ``SCRIPT``: the model's answers, in the order the agents ask;
* ``BROKEN``: the same, but one worker calls its tool with other arguments;
* ``run_desk(rollout, transport, *, broken=False)``: the run's final answer, its model
  client built from ``rollout`` on the live ``transport`` (``broken``: what the hand-written
  loop changes itself, where the frameworks' models change the call).

The sources are text, not modules of the suite: they import frameworks the type checker
does not see through, and they run only inside the pytester projects.
"""

from __future__ import annotations

from typing import Final, NamedTuple

AGENTS_SDK: Final = '''
import asyncio

from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool
from fake_models import Call, Say

API = "openai.responses"
# Per run (the agent run as a tool makes a run of its own), so that no trace is uploaded.
NO_TRACING = RunConfig(tracing_disabled=True)


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


@function_tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"Order {order} refunded."


def script(order):
    return [
        Call("ask_weather", {"input": "Weather in Paris?"}),  # triage runs weather as a tool
        Call("get_weather", {"city": "Paris"}),  # weather
        Say("Sunny in Paris."),  # weather
        Call("transfer_to_billing", {}),  # triage hands off
        Call("refund", {"order": order}),  # billing
        Say("Refunded, and sunny in Paris."),  # billing
    ]


SCRIPT, BROKEN = script("A1"), script("B2")


def run_desk(rollout, transport, *, broken=False):
    client = rollout.async_openai(
        transport=transport, api_key="sk-test", base_url="http://fake.test/v1", max_retries=0
    )
    model = OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
    weather = Agent(
        name="weather", instructions="Look the weather up.", model=model,
        tools=rollout.tools([get_weather]),
    )
    billing = Agent(
        name="billing", instructions="Refund orders.", model=model,
        tools=rollout.tools([refund]),
    )
    ask_weather = weather.as_tool(
        tool_name="ask_weather", tool_description="Ask the weather agent.",
        run_config=NO_TRACING,
    )
    triage = Agent(
        name="triage", instructions="Route the customer.", model=model,
        tools=rollout.tools([ask_weather]), handoffs=[billing],
    )
    prompt = "Refund A1, and how is the weather in Paris?"
    return asyncio.run(Runner.run(triage, prompt, run_config=NO_TRACING)).final_output
'''

LANGGRAPH: Final = '''
from typing import Annotated

from fake_models import Call, Say
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

API = "openai.chat"


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"Order {order} refunded."


def handoff(agent):
    """A tool that passes control to ``agent``, a node of the supervisor's graph."""

    @tool(f"transfer_to_{agent}", description=f"Pass the customer to {agent}.")
    def transfer(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        done = ToolMessage(f"Passed to {agent}.", tool_call_id=tool_call_id)
        return Command(goto=agent, graph=Command.PARENT, update={"messages": [done]})

    return transfer


def script(city):
    return [
        Call("transfer_to_billing", {}),  # supervisor
        Call("refund", {"order": "A1"}),  # billing
        Say("Order A1 refunded."),  # billing
        Call("transfer_to_weather", {}),  # supervisor
        Call("get_weather", {"city": city}),  # weather
        Say("Sunny."),  # weather
        Say("Refunded, and sunny in Paris."),  # supervisor
    ]


SCRIPT, BROKEN = script("Paris"), script("Lyon")


def weather_graph(llm, tools):
    """A worker built by hand: a model node and a tool node (named by its parent's node)."""

    def model(state):
        return {"messages": [llm.bind_tools(tools).invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


def run_desk(rollout, transport, *, broken=False):
    llm = ChatOpenAI(
        model="gpt-4o-mini",
        api_key="sk-test",
        base_url="http://fake.test/v1",
        http_client=rollout.http_client(transport=transport),
        max_retries=0,
    )
    supervisor = create_agent(
        llm, tools=[handoff("billing"), handoff("weather")], name="supervisor",
        system_prompt="Route the customer to billing or weather, then answer.",
    )
    billing = create_agent(llm, tools=rollout.tools([refund]), name="billing")
    desk = StateGraph(MessagesState)
    desk.add_node(supervisor, destinations=("billing", "weather", END))
    desk.add_node(billing)
    desk.add_node("weather", weather_graph(llm, rollout.tools([get_weather])))
    desk.add_edge(START, "supervisor")
    desk.add_edge("billing", "supervisor")
    desk.add_edge("weather", "supervisor")
    state = desk.compile().invoke({"messages": [("user", "Refund A1; weather in Paris?")]})
    return state["messages"][-1].content
'''

PYDANTIC_AI: Final = '''
import asyncio

import pytest
from fake_models import Call, Say
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

API = "openai.chat"
# The delegating tool runs the billing agent: its answer is the billing agent's turns, which
# the golden holds, so it is left unwrapped and runs in replay too (the golden check counts
# a call answered by another agent's turns as answered).
MARKS: list[pytest.MarkDecorator] = []


def _refund(order: str) -> str:
    """Refund an order."""
    return f"Order {order} refunded."


def script(order):
    return [
        Call("ask_billing", {"request": "Refund order A1."}),  # triage delegates
        Call("refund", {"order": order}),  # billing
        Say("Order A1 refunded."),  # billing
        Say("Your order A1 is refunded."),  # triage
    ]


SCRIPT, BROKEN = script("A1"), script("B2")


def run_desk(rollout, transport, *, broken=False):
    provider = OpenAIProvider(
        base_url="http://fake.test/v1",
        api_key="sk-test",
        http_client=rollout.async_http_client(transport=transport),
    )
    model = OpenAIChatModel("gpt-4o-mini", provider=provider)
    billing = Agent(
        model, name="billing", instructions="Refund orders.",
        tools=rollout.tools([Tool(_refund, name="refund")]),
    )

    async def ask_billing(ctx: RunContext[None], request: str) -> str:
        """Ask the billing agent."""
        result = await billing.run(request, usage=ctx.usage)
        return result.output

    triage = Agent(
        model, name="triage", instructions="Help the customer.", tools=[Tool(ask_billing)]
    )
    return asyncio.run(triage.run("Please refund A1.")).output
'''

AUTOGEN: Final = '''
import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import Swarm
from autogen_ext.models.openai import OpenAIChatCompletionClient
from fake_models import Call, Say

API = "openai.chat"


async def refund(order: str) -> str:
    """Refund an order."""
    # Async: AutoGen awaits it in the agent's task. A sync tool runs on a thread of the
    # loop's executor, which does not carry the agent's context: its calls name nobody.
    return f"Order {order} refunded."


def script(order):
    return [
        Call("transfer_to_billing", {}),  # triage hands off
        Call("refund", {"order": order}),  # billing
        Say("Order A1 refunded. TERMINATE"),  # billing
    ]


SCRIPT, BROKEN = script("A1"), script("B2")


def run_desk(rollout, transport, *, broken=False):
    model_client = OpenAIChatCompletionClient(
        model="gpt-4o-mini-2024-07-18",
        api_key="sk-test",
        base_url="http://fake.test/v1",
        http_client=rollout.async_http_client(transport=transport),
        max_retries=0,
    )
    triage = AssistantAgent(
        "triage", model_client=model_client, handoffs=["billing"],
        system_message="Route refunds to billing.",
    )
    billing = AssistantAgent(
        "billing", model_client=model_client, tools=rollout.tools([refund]),
        system_message="Refund orders.", reflect_on_tool_use=True,
    )
    done = TextMentionTermination("TERMINATE") | MaxMessageTermination(8)
    team = Swarm([triage, billing], termination_condition=done)
    result = asyncio.run(team.run(task="Please refund A1."))
    return result.messages[-1].content
'''

HAND_WRITTEN: Final = """
import json

from fake_models import Call, Say

API = "openai.chat"
TOOLS = [
    {"type": "function", "function": {
        "name": "transfer_to_billing", "description": "Pass the customer to billing.",
        "parameters": {"type": "object", "properties": {}},
    }},
]
BILLING_TOOLS = [
    {"type": "function", "function": {
        "name": "refund", "description": "Refund an order.",
        "parameters": {
            "type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"],
        },
    }},
]
SCRIPT = [
    Call("transfer_to_billing", {}),  # triage
    Call("refund", {"order": "A1"}),  # billing
    Say("Order A1 refunded."),  # billing
]
BROKEN = SCRIPT  # the loop itself changes the call


def refund(order: str) -> str:
    return f"Order {order} refunded."


def run_desk(rollout, transport, *, broken=False):
    client = rollout.openai(
        transport=transport, api_key="sk-test", base_url="http://fake.test/v1", max_retries=0
    )
    tools = rollout.tools({"refund": refund})
    messages = [{"role": "user", "content": "Please refund A1."}]
    with rollout.agent("triage"):
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS
        ).choices[0].message
    messages.append(reply.to_dict())
    messages.append(
        {"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": "Passed to billing."}
    )
    with rollout.agent("billing"):
        for _ in range(4):
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=BILLING_TOOLS
            ).choices[0].message
            if not reply.tool_calls:
                return reply.content
            messages.append(reply.to_dict())
            for call in reply.tool_calls:
                arguments = json.loads(call.function.arguments)
                if broken:
                    arguments["order"] = "B2"
                answer = tools[call.function.name](**arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": answer})
    raise RuntimeError("too many turns")
"""


CREWAI: Final = '''
import os

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # before crewai is imported

import httpx  # noqa: E402
import httpx2  # noqa: E402
from crewai import Agent, BaseLLM, Crew, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402
from fake_models import Call, Say  # noqa: E402

API = "openai.chat"


class RecordedOpenAI(BaseLLM):
    """A CrewAI model on an OpenAI SDK client of your choosing (docs/frameworks.md)."""

    def __init__(self, client, model):
        super().__init__(model=model)
        self._openai = client

    def call(self, messages, tools=None, callbacks=None, available_functions=None, **_):
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        options = {"tools": tools} if tools else {}
        reply = self._openai.chat.completions.create(model=self.model, messages=messages, **options)
        message = reply.choices[0].message
        return list(message.tool_calls) if message.tool_calls else message.content

    def supports_function_calling(self):
        return True


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}, 21 degrees."


def script(city):
    return [
        Call("get_weather", {"city": city}),  # Weather reporter
        Say("Sunny in Paris, 21 degrees."),  # Weather reporter
        Say("Paris: sunny, 21 degrees."),  # Editor
    ]


SCRIPT, BROKEN = script("Paris"), script("Lyon")


def on_httpx(transport):
    """The fake behind an httpx transport: CrewAI pins the OpenAI SDK's 2.x line, on httpx."""

    def handle(request):
        answer = transport.handle_request(
            httpx2.Request(
                request.method, str(request.url), headers=request.headers.raw,
                content=request.read(),
            )
        )
        return httpx.Response(answer.status_code, headers=answer.headers.raw, content=answer.read())

    return httpx.MockTransport(handle)


def run_desk(rollout, transport, *, broken=False):
    client = rollout.openai(
        transport=on_httpx(transport), api_key="sk-test", base_url="http://fake.test/v1",
        max_retries=0,
    )
    llm = RecordedOpenAI(client, model="gpt-4o-mini")
    reporter = Agent(
        role="Weather reporter", goal="Look the weather up.", backstory="You check first.",
        llm=llm, tools=[tool(fn) for fn in rollout.tools([get_weather])],
    )
    editor = Agent(role="Editor", goal="Write one line.", backstory="You are terse.", llm=llm)
    look = Task(description="Weather in Paris?", expected_output="The weather.", agent=reporter)
    write = Task(description="Write it up in one line.", expected_output="One line.", agent=editor)
    return Crew(agents=[reporter, editor], tasks=[look, write]).kickoff().raw
'''


class Stack(NamedTuple):
    """A stack's desk: its source, the modules to import before any inner run (pytester
    forgets what an inner run imported), the line that installs them, the agents in the
    order they first act, the handoffs, and the agent whose tool call the break changes
    (``full``: by a live model answering otherwise, with the tools replayed); ``env``: what
    the environment says before the framework is imported (no telemetry)."""

    source: str
    modules: tuple[str, ...]
    pip: str
    agents: tuple[str, ...]
    handoffs: tuple[tuple[str, str], ...]
    broken_agent: str
    full: bool = True
    #: What the environment says before the framework is imported.
    env: tuple[tuple[str, str], ...] = ()


STACKS: Final = {
    "agents_sdk": Stack(
        AGENTS_SDK,
        ("agents",),
        "pip install 'openai-agents>=0.24'",
        ("triage", "weather", "billing"),
        (("triage", "weather"), ("weather", "triage"), ("triage", "billing")),
        "billing",
    ),
    "langgraph": Stack(
        LANGGRAPH,
        ("langchain.agents", "langgraph.graph", "langgraph.prebuilt", "langchain_openai"),
        "pip install langchain langgraph langchain-openai",
        ("supervisor", "billing", "weather"),
        (
            ("supervisor", "billing"),
            ("billing", "supervisor"),
            ("supervisor", "weather"),
            ("weather", "supervisor"),
        ),
        "weather",
    ),
    "pydantic_ai": Stack(
        PYDANTIC_AI,
        ("pydantic_ai", "pydantic_ai.models.openai", "pydantic_ai.providers.openai"),
        "pip install 'pydantic-ai-slim[openai]'",
        ("triage", "billing"),
        (("triage", "billing"), ("billing", "triage")),
        "billing",
    ),
    "autogen": Stack(
        AUTOGEN,
        ("autogen_agentchat", "autogen_ext.models.openai"),
        "pip install autogen-agentchat 'autogen-ext[openai]'",
        ("triage", "billing"),
        (("triage", "billing"),),
        "billing",
    ),
    # On the OpenAI SDK's 2.x line: .ci/frameworks runs it, beside LlamaIndex and instructor.
    "crewai": Stack(
        CREWAI,
        ("crewai",),
        "pip install crewai",
        ("Weather reporter", "Editor"),
        (("Weather reporter", "Editor"),),
        "Weather reporter",
        env=(("CREWAI_DISABLE_TELEMETRY", "true"),),
    ),
    "hand_written": Stack(
        HAND_WRITTEN,
        ("openai",),
        "pip install openai",
        ("triage", "billing"),
        (("triage", "billing"),),
        "billing",
        full=False,
    ),
}

#: The user's tests of every stack (``test_<stack>.py`` in the project, the stack module as
#: ``desk_<stack>``). ``MODEL_OFFLINE`` switches the live service off (a dry replay must not
#: reach it). ``test_<stack>_break`` is recorded unchanged and replayed broken.
USER_TESTS: Final = """
import os

import pytest
from fake_models import FakeModel, offline_transport

import {module} as desk

FULL = {full}
BREAK = [pytest.mark.rollout(mode="full")] if FULL else []
pytestmark = getattr(desk, "MARKS", [])


def live(script):
    if os.environ.get("MODEL_OFFLINE"):
        return offline_transport()  # replay must never reach it
    return FakeModel(desk.API, script).transport()


def test_{stack}_desk(rollout, golden):
    with rollout.run(prompt="desk") as run:
        run.output = desk.run_desk(rollout, live(desk.SCRIPT))
    assert rollout == golden


@pytest.mark.parametrize("change", [pytest.param("tool_call", marks=BREAK)])
def test_{stack}_break(rollout, golden, change):
    broken = rollout.mode.value != "record"
    if broken and FULL:  # the live model calls the tool otherwise
        transport = FakeModel(desk.API, desk.BROKEN).transport()
    else:
        transport = live(desk.SCRIPT)
    with rollout.run(prompt="desk") as run:
        run.output = desk.run_desk(rollout, transport, broken=broken)
    assert rollout == golden
"""
