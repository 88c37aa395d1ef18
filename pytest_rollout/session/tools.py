"""Wrapped tools: each call recorded through the engine, answered from the golden in replay."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["bind_arguments", "wrap_tool"]


def bind_arguments(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """A tool call's arguments as one object, positional ones named by the signature."""
    if signature is None:
        return {"args": list(args), **kwargs} if args else dict(kwargs)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return {"args": list(args), **kwargs} if args else dict(kwargs)
    arguments: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(value)
        else:
            arguments[name] = list(value) if kind is inspect.Parameter.VAR_POSITIONAL else value
    return arguments


def wrap_tool(engine: Engine, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` recorded as tool ``name``: sync or async, as ``fn`` is."""
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None

    if inspect.iscoroutinefunction(fn):

        @wraps(fn)
        async def async_tool(*args: Any, **kwargs: Any) -> Any:
            arguments = bind_arguments(signature, args, kwargs)
            call_id, step, replayed = engine.tool_started(name, arguments)
            if replayed is not None:
                return engine.replayed_result(name, call_id, step, replayed)
            t0 = time.perf_counter()
            try:
                result = await fn(*args, **kwargs)
            except Exception as exc:
                engine.tool_completed(name, call_id, t0, error=exc)
                raise
            engine.tool_completed(name, call_id, t0, output=result)
            return result

        return async_tool

    @wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> Any:
        arguments = bind_arguments(signature, args, kwargs)
        call_id, step, replayed = engine.tool_started(name, arguments)
        if replayed is not None:
            return engine.replayed_result(name, call_id, step, replayed)
        t0 = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            engine.tool_completed(name, call_id, t0, error=exc)
            raise
        engine.tool_completed(name, call_id, t0, output=result)
        return result

    return tool
