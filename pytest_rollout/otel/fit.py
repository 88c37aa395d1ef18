"""An imported event's payload made to fit the loader's schema.

A trace is foreign input: a tool call's name may be a number, its arguments a JSON array,
a token count a float or a string. The loader refuses a rollout whose core events do not
have the types of :mod:`pytest_rollout.format.schema`, so the importer never writes one:
:func:`fit` converts what converts without guessing (a count ``12.0`` or ``"12"`` is
``12``, a name ``7`` is ``"7"``, other values that must be text are their JSON text,
arguments given as JSON text are parsed) and leaves out what does not (a call with no
name, arguments that are not an object, a count out of range), each with a note saying
what and how, for a warning that names the span.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

import orjson

from ..format.schema import MAX_COUNT, SCHEMA, Field, schema_problem
from . import conventions as c

__all__ = ["fit", "fit_arguments", "fit_count"]

_KEY: Final = re.compile(r"data\.(\w+)")
_NULL: Final[type] = type(None)
_DROP: Final = object()


def fit_count(value: Any) -> int | None:
    """A token count as an integer from 0 to 2**53, or ``None`` when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = c.parse_json_text(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    return None


def fit_arguments(value: Any) -> dict[str, Any] | None:
    """A tool call's arguments as a JSON object, or ``None`` when they are not one."""
    value = c.parse_json_text(value)
    return value if isinstance(value, dict) else None


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _tool_calls(value: Any, notes: list[str]) -> Any:
    if not isinstance(value, list):
        notes.append("not a list of calls: left out")
        return None
    calls: list[dict[str, Any]] = []
    for index, call in enumerate(value):
        if not isinstance(call, dict) or call.get("name") is None:
            notes.append(f"call [{index}] has no name: left out")
            continue
        fixed = dict(call)
        fixed["name"] = _as_text(call["name"])
        if call.get("id") is not None:
            fixed["id"] = _as_text(call["id"])
        if "arguments" in call:
            fixed["arguments"] = fit_arguments(call["arguments"])
            if fixed["arguments"] is None and call["arguments"] is not None:
                notes.append(f"call [{index}]: its arguments are not a JSON object: left out")
        calls.append(fixed)
    return calls


def _usage(value: Any, notes: list[str]) -> Any:
    if not isinstance(value, dict):
        notes.append("left out")
        return None
    fixed = dict(value)
    for key in ("input_tokens", "output_tokens"):
        if fixed.get(key) is not None:
            fixed[key] = fit_count(fixed[key])
            if fixed[key] is None:
                notes.append(f"{key} {_as_text(value[key])[:40]}: left out")
    return fixed


def _tools(value: Any, notes: list[str]) -> Any:
    if not isinstance(value, list):
        notes.append("left out")
        return None
    notes.append("names given as text")
    return [_as_text(v) for v in value if v is not None]


def _messages(value: Any, notes: list[str]) -> Any:
    if isinstance(value, dict):
        notes.append("one message: made a list")
        return [value]
    notes.append("written as its JSON text")
    return _as_text(value)


_REPAIRS: Final[dict[str, Callable[[Any, list[str]], Any]]] = {
    "tool_calls": _tool_calls,
    "usage": _usage,
    "tools": _tools,
    "messages": _messages,
}


def _field(event_type: str, key: str) -> Field | None:
    return next((f for f in SCHEMA.get(event_type, ()) if f.key == key), None)


def _repair(field: Field, value: Any, notes: list[str]) -> Any:
    """A value of ``field``'s types for ``value``, or ``_DROP``."""
    special = _REPAIRS.get(field.key)
    if special is not None:
        return special(value, notes)
    if int in field.types and float not in field.types:
        count = fit_count(value)
        if count is not None:
            notes.append(f"converted to {count}")
            return count
    elif str in field.types and value is not None and not isinstance(value, list | dict):
        notes.append("written as text")
        return _as_text(value)
    elif str in field.types and value is not None:
        notes.append("written as its JSON text")
        return _as_text(value)
    elif dict in field.types and isinstance(value, str):
        parsed = c.parse_json_text(value)
        if isinstance(parsed, dict):
            notes.append("parsed as JSON")
            return parsed
    notes.append("left out")
    return None if _NULL in field.types else _DROP


def fit(event_type: str, data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` made to fit the schema of ``event_type``, and what was changed."""
    notes: list[str] = []
    tried: set[str] = set()
    while (problem := schema_problem(event_type, data)) is not None:
        match = _KEY.match(problem)
        key = match.group(1) if match else ""
        field = _field(event_type, key)
        if field is None or key not in data:  # cannot happen with the schema's messages
            break
        changes: list[str] = []
        value = _DROP if key in tried else _repair(field, data[key], changes)
        tried.add(key)
        if value is _DROP:
            del data[key]
            changes = changes or ["left out"]
        else:
            data[key] = value
        notes.append(f"{event_type} {problem}: {'; '.join(changes)}")
    return data, notes
