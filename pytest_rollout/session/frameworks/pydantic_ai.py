"""pydantic-ai tools: a ``Tool`` and a ``FunctionToolset`` recorded (plain functions, with or
without a ``RunContext`` first, are wrapped as any function is).

A ``Tool`` is copied with its function wrapped, in the tool and in its function schema, so
the copy keeps its name, description, JSON schema and settings. pydantic-ai calls the
function with the run context first (when it takes one), then the arguments the schema
passes by position, then the rest by keyword: the call is recorded with the arguments
named as the schema names them, as the turn announced them, never with the context. A
``FunctionToolset`` is copied with each of its tools wrapped.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Callable
from functools import wraps
from typing import Any

from ..tools import ToolRecorder, acall_recorded, call_recorded
from .accepted import unsupported

__all__ = ["wrap"]


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
