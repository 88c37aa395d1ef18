"""Tolerant readers of event data, shared by the analyzers and their options.

Event data reaches the analyzers as the run emits it, so any value may have any type.
These helpers answer ``None`` (or an empty list) for what they cannot read, never raise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeGuard

from ..diff.canonical import canonical_bytes

__all__ = ["canonical_or_none", "finite", "tool_names", "whole"]


def whole(value: object, minimum: int) -> TypeGuard[int]:
    """``value`` is an int (not a bool) of ``minimum`` or more."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def finite(value: object) -> float | None:
    """``value`` as a finite float, or ``None`` when it is not a finite number (or a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return number if math.isfinite(number) else None


def canonical_or_none(value: Any) -> bytes | None:
    """The canonical bytes of ``value``, or ``None`` when it cannot be canonicalized."""
    try:
        return canonical_bytes(value)
    except TypeError:
        return None


def tool_names(tools: Any) -> list[str]:
    """The names of a request's tools, in order, whatever their shape: a name, a
    ``{"name": ...}`` object (Anthropic's ``input_schema`` tools, OpenAI Responses tools),
    or an OpenAI ``{"type": "function", "function": {"name": ...}}`` tool. Anything else,
    and anything in a ``tools`` that is not a list, is skipped."""
    if not isinstance(tools, list | tuple):
        return []
    names: list[str] = []
    for tool in tools:
        if isinstance(tool, str):
            names.append(tool)
        elif isinstance(tool, Mapping):
            name = tool.get("name")
            if not isinstance(name, str):
                function = tool.get("function")
                name = function.get("name") if isinstance(function, Mapping) else None
            if isinstance(name, str):
                names.append(name)
    return names
