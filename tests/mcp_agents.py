"""Weather agents whose tools come from the suite's MCP server (``mcp_server.py``, over
stdio), one per client: the ``mcp`` package's ``Client`` in a loop of our own on Chat
Completions, the Agents SDK (``MCPServerStdio`` on ``OpenAIResponsesModel``) and pydantic-ai
(``MCPToolset`` on ``OpenAIChatModel``). Each wraps its server with ``rollout.mcp(...)`` and
its model client with ``rollout.async_openai(...)`` on the given transport (the fake model
service when recording, an offline one in replay).

``change`` makes the agent differ from the recorded one: ``"argument"`` (the city of each
call upper-cased: the ``mcp`` client and pydantic-ai), ``"drop-tool"`` (``lookup_order`` is
not offered to the model). The server writes a line to ``marker`` whenever it starts;
``variant="v2"`` serves another schema of ``get_weather``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Final

from fake_models import OPENAI_BASE_URL, Call, Say

SERVER: Final = Path(__file__).with_name("mcp_server.py")
PROMPT: Final = "Weather in Paris and Oslo?"
INSTRUCTIONS: Final = "Answer in one line."
MODEL: Final = "gpt-4o-mini"
ANSWER: Final = "Sunny in Paris and in Oslo."
#: How long a client waits for the server (it starts slowly on a busy machine).
STARTUP_S: Final = 60.0
#: Two calls of the server's tool in one turn, then the answer.
SCRIPT: Final[list[Any]] = [
    [Call("get_weather", {"city": "Paris"}), Call("get_weather", {"city": "Oslo"})],
    Say(ANSWER),
]
#: A call the server answers with an ``isError`` result, then the answer.
ERROR_SCRIPT: Final[list[Any]] = [Call("get_weather", {"city": "Atlantis"}), Say("No such city.")]


def server_env(marker: Path, variant: str | None = None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", ""), "MCP_SERVER_MARKER": str(marker)}
    if variant:
        env["MCP_SERVER_VARIANT"] = variant
    return env


def _openai(rollout: Any, transport: Any) -> Any:
    return rollout.async_openai(
        transport=transport, api_key="sk-test", base_url=OPENAI_BASE_URL, max_retries=0
    )


def _changed(arguments: dict[str, Any], change: str) -> dict[str, Any]:
    if change == "argument" and "city" in arguments:
        return {**arguments, "city": arguments["city"].upper()}
    return arguments


async def client_agent(
    rollout: Any, transport: Any, *, marker: Path, change: str = "", variant: str | None = None
) -> tuple[str, list[Any]]:
    """The final answer, and each ``CallToolResult`` the agent got."""
    from mcp import StdioServerParameters
    from mcp.client import Client

    params = StdioServerParameters(
        command=sys.executable, args=[str(SERVER)], env=server_env(marker, variant)
    )
    openai = _openai(rollout, transport)
    results: list[Any] = []
    async with rollout.mcp(Client(params), name="weather") as client:
        listed = await client.list_tools()
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.input_schema,
                },
            }
            for t in listed.tools
            if not (change == "drop-tool" and t.name == "lookup_order")
        ]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": PROMPT},
        ]
        while True:
            response = await openai.chat.completions.create(
                model=MODEL, messages=messages, tools=tools
            )
            message = response.choices[0].message
            if not message.tool_calls:
                return message.content, results
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [c.model_dump() for c in message.tool_calls],
                }
            )
            for call in message.tool_calls:
                arguments = _changed(json.loads(call.function.arguments), change)
                result = await client.call_tool(call.function.name, arguments)
                results.append(result)
                text = "".join(b.text for b in result.content if b.type == "text")
                content = f"error: {text}" if result.is_error else text
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


async def agents_sdk_agent(
    rollout: Any, transport: Any, *, marker: Path, change: str = "", variant: str | None = None
) -> str:
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner
    from agents.mcp import MCPServerStdio, create_static_tool_filter

    params: Any = {
        "command": sys.executable,
        "args": [str(SERVER)],
        "env": server_env(marker, variant),
    }
    tool_filter = None
    if change == "drop-tool":
        tool_filter = create_static_tool_filter(blocked_tool_names=["lookup_order"])
    stdio = MCPServerStdio(
        params=params,
        name="weather",
        tool_filter=tool_filter,
        client_session_timeout_seconds=STARTUP_S,
    )
    server = rollout.mcp(stdio)
    async with server:
        agent = Agent(
            name="weather",
            instructions=INSTRUCTIONS,
            model=OpenAIResponsesModel(model=MODEL, openai_client=_openai(rollout, transport)),
            mcp_servers=[server],
        )
        config = RunConfig(tracing_disabled=True)
        result = await Runner.run(agent, PROMPT, run_config=config)
    return str(result.final_output)


async def pydantic_ai_agent(
    rollout: Any, transport: Any, *, marker: Path, change: str = "", variant: str | None = None
) -> str:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    stdio = StdioTransport(
        command=sys.executable, args=[str(SERVER)], env=server_env(marker, variant)
    )

    async def upper_cased(ctx: Any, call_tool: Any, name: str, arguments: Any) -> Any:
        return await call_tool(name, _changed(arguments, "argument"))

    hook = upper_cased if change == "argument" else None
    toolset: Any = rollout.mcp(
        MCPToolset(stdio, id="weather", process_tool_call=hook, init_timeout=STARTUP_S)
    )
    if change == "drop-tool":
        toolset = toolset.filtered(lambda ctx, tool: tool.name != "lookup_order")
    model = OpenAIChatModel(
        MODEL, provider=OpenAIProvider(openai_client=_openai(rollout, transport))
    )
    agent = Agent(model, instructions=INSTRUCTIONS, toolsets=[toolset])
    result = await agent.run(PROMPT)
    return str(result.output)
