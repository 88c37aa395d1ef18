"""How an agent's model client goes through the plugin, said where it did not.

A recorded run whose model calls went around the plugin (a tool called before any model
turn, or a run that completed with no model turn at all) cannot become a golden: replaying
it would reach the live service. The test fails with :func:`unwired_lines`, which say what
happened and how to wire the client, naming the framework most likely at fault: the ones
this process has imported, read from ``sys.modules`` (nothing is imported here).
"""

from __future__ import annotations

import sys
import textwrap
from typing import Final

from ..safety.sanitize import sanitize

__all__ = ["likely_frameworks", "unwired_lines"]

#: The width the explanation is wrapped at (a CI log's, not the terminal's).
_WIDTH: Final = 92

#: For each framework, by the top-level module that says it is in use: how its model
#: client is handed the plugin's (docs/frameworks.md has a complete test for each).
_WIRING: Final = (
    ("agents", "Agents SDK: OpenAIResponsesModel(..., openai_client=rollout.async_openai())"),
    (
        "langchain_openai",
        "langchain-openai: ChatOpenAI(..., http_client=rollout.http_client(), "
        "http_async_client=rollout.async_http_client())",
    ),
    ("pydantic_ai", "pydantic-ai: OpenAIProvider(openai_client=rollout.async_openai())"),
    ("smolagents", "smolagents: OpenAIServerModel(..., client=rollout.openai())"),
    (
        "autogen_ext",
        "AutoGen: OpenAIChatCompletionClient(..., http_client=rollout.async_http_client())",
    ),
    ("agno", 'Agno: OpenAIChat(..., http_client=rollout.http_client(library="httpx"))'),
    ("strands", "Strands: OpenAIModel(client=rollout.async_openai(), ...), not client_args"),
    (
        "llama_index",
        "LlamaIndex: OpenAI(..., http_client=rollout.http_client(), "
        "async_http_client=rollout.async_http_client())",
    ),
    ("crewai", "CrewAI: a BaseLLM of your own over rollout.openai() (docs/frameworks.md)"),
    ("instructor", "instructor: instructor.from_openai(rollout.openai())"),
)


def likely_frameworks() -> list[str]:
    """How to wire each framework this process has imported, most specific first."""
    return [hint for module, hint in _WIRING if module in sys.modules]


def unwired_lines(tool: str | None) -> tuple[str, ...]:
    """Why a recorded run whose model calls went around the plugin fails: ``tool`` is the
    tool it called before any model turn (``None``: it completed with no model turn)."""
    if tool is not None:
        what = (
            f"this run called the tool {sanitize(tool)} before pytest-rollout saw any model "
            "turn: the agent's model calls do not go through the plugin,"
        )
    else:
        what = (
            "this run completed without a single model call through pytest-rollout: the "
            "agent's model calls, if it made any, do not go through the plugin,"
        )
    text = (
        f"{what} so they were made live and cannot be replayed (no golden is written from "
        "this run). Build the model client with rollout.openai(), rollout.anthropic(), "
        "rollout.http_client() or rollout.provider() (docs/sdk-agents.md), and check that "
        "the framework uses the client it is given (docs/frameworks.md)."
    )
    lines = textwrap.wrap(text, _WIDTH)
    hints = likely_frameworks()
    if hints:
        lines.append("Frameworks imported here, and how each takes the client:")
        lines.extend(f"  {hint}" for hint in hints)
    if tool is None:
        lines.append(
            "An agent that answers without a model on purpose: "
            "@pytest.mark.rollout(model_calls=False)."
        )
    return tuple(lines)
