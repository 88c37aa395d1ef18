"""Short, safe renderings of recorded values: costs, JSON values, tool calls, string changes.

Every string that came from a rollout is sanitized as
:func:`~pytest_rollout.safety.sanitize.excerpt` does it, so what these return can be printed
to a terminal or a CI log as it is. A timeline renders a few values of every event of a
run, so :func:`value_text` and :func:`call_text` skip the work that cannot change them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from ..safety.sanitize import MARKER_ROOM, cut_marker, excerpt, sanitize

__all__ = [
    "VALUE_LIMIT",
    "call_text",
    "format_cost",
    "format_cost_change",
    "is_absent",
    "string_change",
    "value_text",
]

#: How many characters of a value a report shows.
VALUE_LIMIT: Final = 60
#: How many characters of each argument of a tool call, and of its name, a call shows.
_ARGUMENT_LIMIT: Final = 30
_NAME_LIMIT: Final = 40

_dumps: Final = orjson.dumps
_SORT_KEYS: Final = orjson.OPT_SORT_KEYS


def format_cost(cost: float | None) -> str:
    if cost is None:
        return "cost unknown"
    text = f"{cost:.6f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def format_cost_change(delta: float) -> str:
    """A change of cost with its sign: ``+$0.0003``, ``-$0.00055``."""
    return ("+" if delta >= 0 else "-") + format_cost(abs(delta))


def is_absent(value: Any) -> bool:
    """Whether ``value`` is the comparison's marker for a value one side lacks
    (:func:`~pytest_rollout.diff.compare.is_missing`).

    The marker is a bare ``object()``, which no recorded value is: only such a value is put
    to the comparison, so rendering a run does not import it."""
    if type(value) is not object:
        return False
    from .compare import is_missing  # noqa: PLC0415

    return is_missing(value)


def value_text(value: Any, limit: int = VALUE_LIMIT) -> str:
    """A JSON rendering of ``value``, sanitized and capped."""
    try:
        text = _dumps(value, option=_SORT_KEYS).decode()
    except TypeError:  # what JSON cannot hold (orjson's own error is a TypeError)
        if is_absent(value):
            return "(absent)"
        return excerpt(repr(value), limit)
    # excerpt(text, limit), for less. Compact JSON holds no control character (its strings
    # escape them) and starts with its value, never with a space or a ":". So sanitizing a
    # part of it from its start can change nothing but DEL, a character outside ASCII or a
    # "##": an ASCII part without those is shown as it is, with no look at each character.
    size = len(text)
    if size > limit + MARKER_ROOM:
        head = text[:limit]
        if not head.isascii() or "\x7f" in head or "##" in head:
            head = sanitize(head)
        return head + cut_marker(size - limit)
    if text.isascii() and "\x7f" not in text and "##" not in text:
        return text
    return sanitize(text)


def call_text(name: Any, arguments: Any, limit: int = VALUE_LIMIT) -> str:
    """``name(key=value, ...)`` for a tool call."""
    if type(arguments) is dict or isinstance(arguments, Mapping):
        keys = _KEYS
        pairs = []
        for key, value in arguments.items():
            shown = (type(key) is str and keys.get(key)) or _key_text(key)
            pairs.append(f"{shown}={value_text(value, _ARGUMENT_LIMIT)}")
        args = ", ".join(pairs)
    elif arguments is None:
        args = ""
    else:
        args = value_text(arguments, _ARGUMENT_LIMIT)
    called = (type(name) is str and _NAMES.get(name)) or _name_text(name)
    return f"{called}({args if len(args) <= limit else args[:limit] + '…'})"


#: Tool names and argument names as shown, each sanitized once: a run calls a few tools, with
#: a few arguments each, many times over. Only so many are kept, whatever a file holds.
_NAMES: Final[dict[str, str]] = {}
_KEYS: Final[dict[str, str]] = {}
_KEPT: Final = 1024


def _name_text(name: Any) -> str:
    shown = excerpt(f"{name}", _NAME_LIMIT)
    if type(name) is str and len(_NAMES) < _KEPT:
        _NAMES[name] = shown
    return shown


def _key_text(key: Any) -> str:
    shown = sanitize(str(key))
    if type(key) is str and len(_KEYS) < _KEPT:
        _KEYS[key] = shown
    return shown


def string_change(a: str, b: str, limit: int = VALUE_LIMIT) -> tuple[str, str]:
    """Both strings as JSON excerpts around where they start to differ.

    Long strings that differ near their end would otherwise show identical excerpts. The two
    excerpts share twice ``limit``: a short side leaves its room to the other, so a value
    that grew is not cut where the old one ended.
    """
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    start = max(0, common - limit // 3)
    a, b = a[start:], b[start:]
    # A side shorter than the limit (its quotes counted) gives the other what it leaves.
    limit_a = max(limit, 2 * limit - min(limit, len(b) + 2))
    limit_b = max(limit, 2 * limit - min(limit, len(a) + 2))
    if start == 0:
        return value_text(a, limit_a), value_text(b, limit_b)
    return "…" + value_text(a, limit_a)[1:], "…" + value_text(b, limit_b)[1:]
