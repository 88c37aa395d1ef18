"""Framework tools wrapped by ``rollout.tools([...])``: each comes back as an object of its
own class, with the same name, description and argument schema, whose calls are recorded
and replayed like any wrapped tool's.

Which framework a tool belongs to is read from the modules of its class and their bases,
never by importing the framework: a module here is imported only when a tool of its
framework is passed. One module per framework: ``agents_sdk`` (OpenAI Agents SDK
``FunctionTool``), ``langchain`` (LangChain ``BaseTool``, what ``@tool`` makes) and
``pydantic_ai`` (pydantic-ai ``Tool`` and ``FunctionToolset``). Plain functions are wrapped
under their ``__name__``.

The framework modules also say which of their agents is acting (``naming``: the Agents SDK,
LangGraph, pydantic-ai, AutoGen and CrewAI), for runs with several agents.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from functools import partial
from importlib import import_module
from typing import Any, Final

from ..tools import ToolRecorder, wrap_tool
from .accepted import ACCEPTED, unsupported
from .naming import name_framework_agents

__all__ = ["ACCEPTED", "name_framework_agents", "wrap_tools"]

#: The framework modules by the top-level package a tool's class comes from.
_FRAMEWORKS: Final = {
    "agents": ".agents_sdk",
    "langchain_core": ".langchain",
    "pydantic_ai": ".pydantic_ai",
}


def _framework(obj: Any) -> str | None:
    """The framework module for ``obj``'s class, from the packages of its class and bases."""
    for cls in type(obj).__mro__:
        module = _FRAMEWORKS.get(cls.__module__.partition(".")[0])
        if module is not None:
            return module
    return None


def _plain(recorder: ToolRecorder, obj: Any) -> tuple[Any, list[str]]:
    __tracebackhide__ = True  # a usage error: the traceback ends in the test
    name = getattr(obj, "__name__", None)
    if isinstance(obj, partial):
        name = getattr(obj.func, "__name__", None)
    if not isinstance(name, str) or name == "<lambda>":
        raise TypeError(
            f"rollout.tools() cannot name the callable {obj!r}: give it as a mapping, "
            f"rollout.tools({{'name': function}})"
        )
    return wrap_tool(recorder, name, obj), [name]


def wrap_one(recorder: ToolRecorder, obj: Any) -> tuple[Any, list[str]]:
    """``obj`` wrapped, and the names of the tools it holds (a toolset holds several)."""
    __tracebackhide__ = True  # a usage error: the traceback ends in the test
    module = _framework(obj)
    if module is not None:
        wrap: Callable[[ToolRecorder, Any], tuple[Any, list[str]]] = import_module(
            module, __name__
        ).wrap
        return wrap(recorder, obj)
    if _is_plain(obj):
        return _plain(recorder, obj)
    raise unsupported(obj)


def _is_plain(obj: Any) -> bool:
    """Whether ``obj`` is a function, a method, a built-in or a partial: what is wrapped as
    itself. An object of another library that only acts like one (Strands' decorated tools
    are method descriptors) is not: wrapped as a function, it would come back as one, and
    its framework would drop it as an unknown tool."""
    if inspect.isfunction(obj) or inspect.ismethod(obj) or isinstance(obj, partial):
        return True
    return inspect.isroutine(obj) and type(obj).__module__ == "builtins"


def wrap_tools(recorder: ToolRecorder, tools: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """Each of ``tools`` wrapped, in order, and the names of every tool they hold."""
    __tracebackhide__ = True  # a usage error: the traceback ends in the test
    wrapped: list[Any] = []
    names: list[str] = []
    for obj in tools:
        one, held = wrap_one(recorder, obj)
        wrapped.append(one)
        names.extend(held)
    return wrapped, names
