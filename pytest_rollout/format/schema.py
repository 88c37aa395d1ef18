"""The typed schema of the core vocabulary (docs/file-format.md), checked by the loader.

Each core event type names the ``data`` fields that code reading a rollout relies on, with
their JSON types and, for numbers, their ranges; :func:`schema_problem` says what is wrong
with one event's data, or ``None``. A field that is absent passes (readers look fields up
with a default); a field that is present has the type the table gives. Fields the table does
not name, and every custom event type, stay free-form.

The loader runs this on every event of a file of up to 100,000 events, so the common event
costs a dictionary lookup and, per typed field, a ``.get`` and a set lookup on its exact type;
nothing is walked but the short lists the table types item by item (a turn's tool calls, the
run's tool names). Messages say where the problem is, e.g. ``data.tool_calls[0].name must
be a string, got an array``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final, NamedTuple

from .events import (
    DROP_DETECTED,
    LLM_TURN_COMPLETED,
    LLM_TURN_FAILED,
    LLM_TURN_STARTED,
    MCP_TOOLS_LISTED,
    REPLAY_DIVERGENCE,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    USAGE_DELTA,
)

__all__ = [
    "CHECKS",
    "MAX_COST_USD",
    "MAX_COUNT",
    "MAX_DURATION_MS",
    "MAX_RUN_COST_USD",
    "SCHEMA",
    "Field",
    "agent_problem",
    "fields_problem",
    "json_kind",
    "schema_problem",
]

#: Token counts and other counters: integers from 0 to 2**53 (exact as a JavaScript number).
MAX_COUNT: Final = 2**53
#: The cost of one turn, in US dollars, is within plus or minus this.
MAX_COST_USD: Final = 1e9
#: A run's cumulative cost and totals: one turn's bound times the 100,000 events of a file.
MAX_RUN_COST_USD: Final = 1e14
#: Latencies and durations, in milliseconds (about 31 years).
MAX_DURATION_MS: Final = 1e12

#: A check of a list or dict value past its type: the rest of the reason it is refused, its
#: path relative to the value first (``"[0].name must be a string, got an array"``), or
#: ``None``.
Nested = Callable[[Any], "str | None"]


class _Absent:
    """The type of the value of a field that is not there: any field may be absent."""


_ABSENT: Final = _Absent()
_NULL: Final[type] = type(None)


class Field(NamedTuple):
    """One typed field of an event's data: its key, the exact Python types its JSON value
    may have (the absent marker's among them), those types in words, the range of a number
    (``low``, ``high``, in words; no range when the words are empty) and a further check of
    a list or dict value (or ``None``)."""

    key: str
    types: frozenset[type]
    expected: str
    low: float = 0
    high: float = 0
    range_text: str = ""
    nested: Nested | None = None


def field(
    key: str,
    types: frozenset[type],
    expected: str,
    *,
    within: tuple[float, float, str] = (0, 0, ""),
    nested: Nested | None = None,
) -> Field:
    """A :class:`Field` that may also be absent; ``within``: a number's range."""
    return Field(key, types | {_Absent}, expected, *within, nested)


_KIND_NAMES: Final[Mapping[type, str]] = {
    _NULL: "null",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "an array",
    dict: "an object",
}


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in words ("an array", "null", ...)."""
    return _KIND_NAMES.get(type(value), type(value).__name__)


def _number_text(value: float) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:21]}..."


def fields_problem(fields: tuple[Field, ...], obj: Mapping[str, Any]) -> str | None:
    """What is wrong with ``obj`` for ``fields``, its path relative to ``obj`` first
    (``".usage.input_tokens must be ..."``), or ``None``.

    The hot loop of the schema: per field a lookup, its exact type and a set membership;
    a number is compared with its range, a list or dict goes to its nested check.
    """
    get = obj.get
    for key, types, low, high, range_text, nested in _PLAIN[id(fields)]:
        value = get(key, _ABSENT)
        kind = type(value)
        if kind not in types:
            expected = next(f.expected for f in fields if f.key == key)
            return f".{key} must be {expected}, got {json_kind(value)}"
        if kind is int or kind is float:
            if range_text and not low <= value <= high:
                return f".{key} must be {range_text}, got {_number_text(value)}"
        elif nested is not None and (kind is list or kind is dict):
            problem = nested(value)
            if problem is not None:
                return f".{key}{problem}"
    return None


#: Each table of fields (by id) as plain tuples without the words: the hot loop's form.
_PLAIN: Final[dict[int, tuple[tuple[str, frozenset[type], float, float, str, Any], ...]]] = {}


def fields_of(*fields: Field) -> tuple[Field, ...]:
    """A table of fields, made ready for :func:`fields_problem`."""
    _PLAIN[id(fields)] = tuple(
        (f.key, f.types, f.low, f.high, f.range_text, f.nested) for f in fields
    )
    return fields


def _tool_calls(items: Any) -> str | None:
    """A turn's tool calls: objects with a string ``name``, an ``id`` that is a string or
    null and ``arguments`` that are an object or null (a hot path: checked inline first)."""
    for item in items if type(items) is list else ():
        if (
            type(item) is not dict
            or type(item.get("name")) is not str
            or type(item.get("id", "")) not in _STRING_OR_NULL
            or type(item.get("arguments")) not in _OBJECT_OR_NULL
        ):
            return _tool_calls_problem(items)
    return None


def _tool_calls_problem(items: list[Any]) -> str | None:
    for index, item in enumerate(items):
        if type(item) is not dict:
            return f"[{index}] must be an object, got {json_kind(item)}"
        if "name" not in item:
            return f'[{index}] must have a "name" field'
        problem = fields_problem(_TOOL_CALL, item)
        if problem is not None:
            return f"[{index}]{problem}"
    return None


def _each_tool(items: Any) -> str | None:
    """An MCP server's tools: objects with a string ``name``."""
    for index, item in enumerate(items if type(items) is list else ()):
        if type(item) is not dict:
            return f"[{index}] must be an object, got {json_kind(item)}"
        if type(item.get("name")) is not str:
            return f"[{index}].name must be a string, got {json_kind(item.get('name'))}"
    return None


def _each_string(items: Any) -> str | None:
    for index, item in enumerate(items if type(items) is list else ()):
        if type(item) is not str:
            return f"[{index}] must be a string, got {json_kind(item)}"
    return None


def _checker(fields: tuple[Field, ...]) -> Callable[[Mapping[str, Any]], str | None]:
    """The check of one event type's data: the problem, ``data`` first, or ``None``."""
    return _compiled(fields, partial(_problem, fields))


def _compiled(
    fields: tuple[Field, ...], problem: Callable[[Mapping[str, Any]], str | None]
) -> Callable[[Mapping[str, Any]], str | None]:
    """The check of an object against a table of fields, as straight-line code: per
    field a lookup, a set membership on its exact type and, for a number with a range or a
    nested value, one comparison (the loader runs it on every event; a loop over the table
    costs half as much again). An object that fails goes to ``problem``, which says what is
    wrong (:func:`fields_problem`). Only the table's own constants go into the code."""
    names: dict[str, Any] = {"ABSENT": _ABSENT, "problem": problem}
    lines = ["def check(data):", "    get = data.get"]
    for index, f in enumerate(fields):
        names[f"T{index}"], names[f"N{index}"] = f.types, f.nested
        lines += [
            f"    value = get({f.key!r}, ABSENT)",
            "    kind = type(value)",
            f"    if kind not in T{index}: return problem(data)",
        ]
        if f.range_text:
            bounds = f"{float(f.low)!r} <= value <= {float(f.high)!r}"
            lines.append(
                f"    if (kind is int or kind is float) and not {bounds}: return problem(data)"
            )
        if f.nested is not None:
            lines.append(
                f"    if (kind is list or kind is dict) and N{index}(value) is not None:"
                " return problem(data)"
            )
    lines.append("    return None")
    exec(compile("\n".join(lines), f"<schema check of {len(fields)} fields>", "exec"), names)
    check: Callable[[Mapping[str, Any]], str | None] = names["check"]
    return check


def _problem(fields: tuple[Field, ...], data: Mapping[str, Any]) -> str | None:
    problem = fields_problem(fields, data)
    return None if problem is None else f"data{problem}"


def _object(fields: tuple[Field, ...]) -> Nested:
    fits = _compiled(fields, partial(fields_problem, fields))

    def check(obj: Any) -> str | None:
        return fits(obj) if type(obj) is dict else None

    return check


def _every_value(low: float, high: float, range_text: str) -> Nested:
    """Every value of a dict is a number within the range, or null."""

    def check(obj: Any) -> str | None:
        for key, value in obj.items() if type(obj) is dict else ():
            kind = type(value)
            if value is not None and kind is not int and kind is not float:
                return f".{key} must be a number or null, got {json_kind(value)}"
            if value is not None and not low <= value <= high:
                return f".{key} must be {range_text}, got {_number_text(value)}"
        return None

    return check


# -- the building blocks --------------------------------------------------------------------

_STRING: Final[frozenset[type]] = frozenset({str})
_STRING_OR_NULL: Final[frozenset[type]] = frozenset({str, _NULL})
_OBJECT_OR_NULL: Final[frozenset[type]] = frozenset({dict, _NULL})
_ARRAY: Final[frozenset[type]] = frozenset({list})
_ARRAY_OR_NULL: Final[frozenset[type]] = frozenset({list, _NULL})
_NUMBER_OR_NULL: Final[frozenset[type]] = frozenset({int, float, _NULL})
_INTEGER: Final[frozenset[type]] = frozenset({int})
_INTEGER_OR_NULL: Final[frozenset[type]] = frozenset({int, _NULL})
#: A value the agent gave, which is recorded as the placeholder text ``<unrecordable TYPE>``
#: when part of it cannot be.
_RECORDED_OBJECT: Final[frozenset[type]] = frozenset({dict, str, _NULL})
_RECORDED_ARRAY: Final[frozenset[type]] = frozenset({list, str, _NULL})


def _text(key: str) -> Field:
    return field(key, _STRING, "a string")


def _text_or_null(key: str) -> Field:
    return field(key, _STRING_OR_NULL, "a string or null")


def _count(key: str, types: frozenset[type] = _INTEGER_OR_NULL) -> Field:
    expected = "an integer" if _NULL not in types else "an integer or null"
    return field(key, types, expected, within=(0, MAX_COUNT, "an integer from 0 to 2**53"))


def _within(bound: float, unit: str) -> tuple[float, float, str]:
    return (-bound, bound, f"a number of {unit} within plus or minus {bound:g}")


def _cost(key: str, bound: float = MAX_COST_USD) -> Field:
    return field(key, _NUMBER_OR_NULL, "a number or null", within=_within(bound, "US dollars"))


def _duration(key: str) -> Field:
    within = _within(MAX_DURATION_MS, "milliseconds")
    return field(key, _NUMBER_OR_NULL, "a number or null", within=within)


#: ``{class, message}`` of a failed call; readers take both as text whatever they hold.
_CALL_ERROR: Final = field("error", _OBJECT_OR_NULL, "an object or null")
#: The error of a failed turn or run: an object, or the recorder's placeholder text for an
#: error that could not be recorded (the terminal event is always recorded).
_RUN_ERROR: Final = field("error", _RECORDED_OBJECT, "an object, a string or null")
_TOOL_CALL: Final = fields_of(
    _text_or_null("id"),
    _text("name"),
    field("arguments", _OBJECT_OR_NULL, "an object or null"),
)
_USAGE: Final = field(
    "usage",
    _OBJECT_OR_NULL,
    "an object or null",
    nested=_object(fields_of(_count("input_tokens"), _count("output_tokens"))),
)
_COST_TOTALS: Final = field(
    "cost_totals",
    _OBJECT_OR_NULL,
    "an object or null",
    nested=_every_value(*_within(MAX_RUN_COST_USD, "US dollars")),
)

#: A ``forked_from`` digest: the sha256 of the file a run was forked from.
_GOLDEN_DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}")
#: The highest step a forked run may name (the loader's default limit on steps).
_MAX_FORK_STEP: Final = 1_000_000
_FORK_FIELDS: Final = ("run_id", "golden", "step")


def _forked_from(obj: Any) -> str | None:
    """A forked run's origin: ``{"run_id": string or null, "golden": "sha256:<64 hex>",
    "step": integer}``, all three present (other keys are free-form)."""
    if type(obj) is not dict:
        return None
    for key in _FORK_FIELDS:
        if key not in obj:
            return f' must have a "{key}" field'
    run_id, golden, step = obj["run_id"], obj["golden"], obj["step"]
    if type(run_id) not in _STRING_OR_NULL:
        return f".run_id must be a string or null, got {json_kind(run_id)}"
    if type(golden) is not str or not _GOLDEN_DIGEST.fullmatch(golden):
        kind = "another string" if type(golden) is str else json_kind(golden)
        return f'.golden must be "sha256:" and 64 lowercase hex digits, got {kind}'
    if type(step) is not int or not 0 <= step <= _MAX_FORK_STEP:
        got = _number_text(step) if type(step) in (int, float) else json_kind(step)
        return f".step must be an integer from 0 to 1,000,000, got {got}"
    return None


#: Each core event type's typed fields (see :data:`SCHEMA`).
_TABLE: Final[Mapping[str, tuple[Field, ...]]] = {
    RUN_STARTED: (
        _text_or_null("run_id"),
        _text_or_null("test_id"),
        _text_or_null("model"),
        _text_or_null("provider"),
        field("tools", _ARRAY_OR_NULL, "an array of strings or null", nested=_each_string),
        field("meta", _RECORDED_OBJECT, "an object, a string or null"),
        field("forked_from", _OBJECT_OR_NULL, "an object or null", nested=_forked_from),
    ),
    LLM_TURN_STARTED: (
        field("messages", _RECORDED_ARRAY, "an array, a string or null"),
        field("params", _RECORDED_OBJECT, "an object, a string or null"),
        _text_or_null("messages_hash"),
    ),
    LLM_TURN_COMPLETED: (
        _text_or_null("content"),
        field(
            "tool_calls",
            _ARRAY_OR_NULL,
            "an array of tool calls or null",
            nested=_tool_calls,
        ),
        _USAGE,
        _cost("cost_usd"),
        _text_or_null("model_version"),
        _duration("latency_ms"),
        _duration("ttft_ms"),
        field("remote", frozenset({bool}), "true or false"),
    ),
    LLM_TURN_FAILED: (_RUN_ERROR,),
    TOOL_CALL_STARTED: (_text_or_null("call_id"), _text_or_null("name")),
    TOOL_CALL_COMPLETED: (
        _text_or_null("call_id"),
        _text_or_null("name"),
        _CALL_ERROR,
        _duration("duration_ms"),
    ),
    USAGE_DELTA: (_cost("cumulative_cost_usd", MAX_RUN_COST_USD),),
    RUN_COMPLETED: (_text_or_null("outcome"), _COST_TOTALS, _duration("total_duration_ms")),
    RUN_FAILED: (_RUN_ERROR,),
    DROP_DETECTED: (_count("dropped", _INTEGER),),
    REPLAY_DIVERGENCE: (_text_or_null("kind"), _text_or_null("detail")),
    MCP_TOOLS_LISTED: (
        _text("server"),
        field("tools", _ARRAY, "an array of tools", nested=_each_tool),
        _text_or_null("cursor"),
        _text_or_null("next_cursor"),
    ),
}

#: Each core event type's typed fields; a type not in the table is free-form.
SCHEMA: Final[Mapping[str, tuple[Field, ...]]] = {
    kind: fields_of(*fields) for kind, fields in _TABLE.items()
}


#: Each core event type's check of its data: the problem (``"data.tool_calls[0].name must
#: be a string, got an array"``) or ``None``. The loader calls these directly.
CHECKS: Final[Mapping[str, Callable[[Mapping[str, Any]], str | None]]] = {
    kind: _checker(fields) for kind, fields in SCHEMA.items()
}


def agent_problem(data: Mapping[str, Any]) -> str | None:
    """What is wrong with the ``agent`` any event may name (docs/agents.md), or ``None``."""
    agent = data.get("agent")
    if agent is None or type(agent) is str:
        return None
    return f"data.agent must be a string or null, got {json_kind(agent)}"


def schema_problem(event_type: str, data: Mapping[str, Any]) -> str | None:
    """What is wrong with ``data`` for an event of ``event_type`` (e.g. ``data.tool_calls[0]
    .name must be a string, got an array``), or ``None`` when it fits the schema."""
    check = CHECKS.get(event_type)
    problem = None if check is None else check(data)
    if problem is None and "agent" in data:  # in the loader's order: the type's fields first
        problem = agent_problem(data)
    return problem
