"""What ``rollout.tools([...])`` accepts, and the error for anything else."""

from __future__ import annotations

from typing import Any, Final

__all__ = ["ACCEPTED", "unsupported"]

#: What ``rollout.tools([...])`` accepts, for its error message.
ACCEPTED: Final = (
    "plain functions, OpenAI Agents SDK FunctionTool (@function_tool), LangChain tools "
    "(BaseTool, @tool), pydantic-ai Tool and FunctionToolset, or a mapping of names to "
    "functions"
)


#: What to do with a tool some other framework's decorator made.
DECORATED: Final = (
    "A tool made by another framework's decorator (Strands, Agno, smolagents, AutoGen, "
    "CrewAI, the Anthropic SDK's @beta_tool): wrap the plain function, then decorate what "
    "comes back, [tool(f) for f in rollout.tools([get_weather])] (docs/frameworks.md)"
)


def unsupported(obj: Any, framework: str | None = None) -> TypeError:
    """The error for an object ``rollout.tools`` cannot wrap: of a known ``framework`` but
    not one of its tools, or of no framework it knows."""
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    what = f"{framework} {kind}" if framework else kind
    return TypeError(
        f"rollout.tools() does not know how to wrap objects of type {what}; it takes "
        f"{ACCEPTED}. {DECORATED}"
    )
