"""How an exception raised in a run is written into its events."""

from __future__ import annotations

from typing import Any

import orjson

from ..format.typed import type_tag_of_class
from ..replay.tool_errors import RECORDED_ERROR

__all__ = ["causes", "error_data", "tool_error_data"]


def error_data(exc: BaseException) -> dict[str, str]:
    """The ``{class, message}`` of an error event (a replayed error: as it was recorded)."""
    recorded = getattr(exc, RECORDED_ERROR, None)
    if isinstance(recorded, dict):
        return {"class": str(recorded.get("class")), "message": str(recorded.get("message"))}
    return {"class": type(exc).__name__, "message": str(exc)}


def tool_error_data(exc: BaseException) -> dict[str, Any]:
    """The error of a failed tool call, as replay needs it to raise it again: its
    ``{class, message}``, and, for a class that is not built in, its ``type``
    (``module:qualname``) and its ``args`` when they are JSON and not just the message.

    A replayed error is written as it was recorded."""
    recorded = getattr(exc, RECORDED_ERROR, None)
    if isinstance(recorded, dict):
        return dict(recorded)
    data: dict[str, Any] = {"class": type(exc).__name__, "message": str(exc)}
    cls = type(exc)
    if cls.__module__ != "builtins":
        data["type"] = type_tag_of_class(cls)
    args = _json_args(exc.args)
    if args is not None and args != [data["message"]]:
        data["args"] = args
    return data


def _json_args(args: tuple[Any, ...]) -> list[Any] | None:
    """``args`` as JSON data, when they are plain JSON (strings, numbers, lists, ...)."""
    try:
        plain = orjson.loads(orjson.dumps(args))
    except (TypeError, orjson.JSONEncodeError):
        return None
    return plain if plain == list(args) else None


def causes(error: BaseException, limit: int = 10) -> list[dict[str, str]]:
    """The exceptions behind ``error`` (``raise ... from``, or raised while handling)."""
    found: list[dict[str, str]] = []
    current = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    seen = {id(error)}
    while current is not None and id(current) not in seen and len(found) < limit:
        seen.add(id(current))
        found.append(error_data(current))
        suppressed = current.__suppress_context__
        current = current.__cause__ or (None if suppressed else current.__context__)
    return found
