"""pydantic-ai tools: a ``Tool`` and a ``FunctionToolset`` recorded (plain functions, with or
without a ``RunContext`` first, are wrapped as any function is).

A ``Tool`` is copied with its function wrapped, in the tool and in its function schema, so
the copy keeps its name, description, JSON schema and settings. pydantic-ai calls the
function with the run context first (when it takes one), then the arguments the schema
passes by position, then the rest by keyword: the call is recorded with the arguments
named as the schema names them, as the turn announced them, never with the context. A
``FunctionToolset`` is copied with each of its tools wrapped.

Who is acting (:func:`resolver`): the agent of the run context pydantic-ai keeps current
while an agent runs (its ``Agent(name=...)``, or the name pydantic-ai gives it from the
variable that holds it). An agent that delegates to another inside a tool (``await
other.run(..., usage=ctx.usage)``) hands over to it for the other's turns and calls.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from functools import wraps
from importlib import import_module
from typing import Any

from ..tools import ToolRecorder, acall_recorded, call_recorded
from .accepted import unsupported

__all__ = ["resolver", "wrap"]


def _binder(schema: Any) -> Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    """How the schema's call of the function maps back to the announced arguments."""
    skip = 1 if schema.takes_ctx else 0
    positional = list(schema.positional_fields)
    rest = schema.var_positional_field

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        values = args[skip:]
        found = dict(zip(positional, values, strict=False))
        if rest:
            found[rest] = list(values[len(positional) :])
        found.update(kwargs)
        return found

    return arguments


def _recorded_function(recorder: ToolRecorder, tool: Any) -> Callable[..., Any]:
    name, fn = tool.name, tool.function
    bind = _binder(tool.function_schema)
    recorder.expect_return(name, fn)
    if inspect.iscoroutinefunction(fn):

        @wraps(fn)
        async def recorded_async(*args: Any, **kwargs: Any) -> Any:
            arguments = bind(args, kwargs)
            return await acall_recorded(recorder, name, arguments, lambda: fn(*args, **kwargs))

        return recorded_async

    @wraps(fn)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        return call_recorded(recorder, name, bind(args, kwargs), lambda: fn(*args, **kwargs))

    return recorded


def _wrap_tool(recorder: ToolRecorder, tool: Any) -> Any:
    function = _recorded_function(recorder, tool)
    wrapped = copy.copy(tool)
    wrapped.function = function
    wrapped.function_schema = dataclasses.replace(tool.function_schema, function=function)
    return wrapped


def wrap(recorder: ToolRecorder, obj: Any) -> tuple[Any, list[str]]:
    """A copy of a pydantic-ai ``Tool`` or ``FunctionToolset`` whose calls are recorded,
    and the names of its tools."""
    tools = getattr(obj, "tools", None)
    if isinstance(tools, dict) and all(hasattr(t, "function_schema") for t in tools.values()):
        toolset = copy.copy(obj)
        toolset.tools = {key: _wrap_tool(recorder, t) for key, t in tools.items()}
        return toolset, [t.name for t in tools.values()]
    if hasattr(obj, "function_schema") and callable(getattr(obj, "function", None)):
        return _wrap_tool(recorder, obj), [obj.name]
    raise unsupported(obj, "pydantic-ai")


@functools.cache
def resolver() -> Callable[[], str | None] | None:
    """Who is acting in a pydantic-ai run (``None``: this release keeps no current run
    context)."""
    try:
        module = import_module("pydantic_ai._run_context")
        current_context: Callable[[], Any] = module.get_current_run_context
    except (ImportError, AttributeError):
        return None
    # The context variable behind get_current_run_context(), read at the cost of one lookup
    # on every event outside an agent run.
    var = getattr(module, "_CURRENT_RUN_CONTEXT", None)
    if isinstance(var, ContextVar):
        current_context = var.get

    def acting() -> str | None:
        try:
            context = current_context()
            if context is None:
                return None
            agent = context.agent
            name = None if agent is None else agent.name
        except Exception:  # naming the agent never breaks the run
            return None
        return name if isinstance(name, str) and name else None

    return acting
