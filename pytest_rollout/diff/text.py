"""Short, safe renderings of recorded values: costs, JSON values, tool calls, string changes.

Every string that came from a rollout passes through
:func:`~pytest_rollout.safety.sanitize.excerpt`, so what these return can be printed to a
terminal or a CI log as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from ..safety.sanitize import excerpt, sanitize
from .compare import is_missing

__all__ = ["VALUE_LIMIT", "call_text", "format_cost", "string_change", "value_text"]

#: How many characters of a value a report shows.
VALUE_LIMIT: Final = 60


def format_cost(cost: float | None) -> str:
    if cost is None:
        return "cost unknown"
    text = f"{cost:.6f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def value_text(value: Any, limit: int = VALUE_LIMIT) -> str:
    """A JSON rendering of ``value``, sanitized and capped."""
    if is_missing(value):
        return "(absent)"
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        text = repr(value)
    return excerpt(text, limit)


def call_text(name: Any, arguments: Any, limit: int = VALUE_LIMIT) -> str:
    """``name(key=value, ...)`` for a tool call."""
    if isinstance(arguments, Mapping):
        args = ", ".join(f"{sanitize(str(k))}={value_text(v, 30)}" for k, v in arguments.items())
    elif arguments is None:
        args = ""
    else:
        args = value_text(arguments, 30)
    return excerpt(f"{name}", 40) + "(" + (args if len(args) <= limit else args[:limit] + "…") + ")"


def string_change(a: str, b: str, limit: int = VALUE_LIMIT) -> tuple[str, str]:
    """Both strings as JSON excerpts around where they start to differ.

    Long strings that differ near their end would otherwise show identical excerpts.
    """
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    start = max(0, common - limit // 3)
    if start == 0:
        return value_text(a, limit), value_text(b, limit)
    return "…" + value_text(a[start:], limit)[1:], "…" + value_text(b[start:], limit)[1:]
