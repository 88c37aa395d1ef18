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


def unsupported(obj: Any, framework: str) -> TypeError:
    """The error for an object of a known framework that is not one of its tools."""
    return TypeError(
        f"rollout.tools() does not know how to wrap a {framework} "
        f"{type(obj).__module__}.{type(obj).__qualname__}; it takes {ACCEPTED}"
    )
