"""A replayed tool result rebuilt as the type the tool returned when it was recorded.

A tool's result is recorded as JSON, with its type (``module:qualname``, see
:mod:`pytest_rollout.format.typed`) beside it when it was not plain JSON.
:func:`rebuild_result` gives the agent an object of that type again, so what a framework
shows the model (its ``str()`` or ``repr()``) is what it showed when recording.

A golden is untrusted input, and so is the type name in it: it decides nothing the test's
own code did not allow. A class is built only when the wrapped tool's return annotation
names it, directly or through the fields of a class it names (:func:`allowed_classes`), or
when it is a standard value type (``datetime``, ``date``, ``time``, ``UUID``, ``Decimal``
within bounds, ``tuple``, ``set``, ``frozenset``), or an enum, whose member is found by its
value without calling any of its code. A standard type is looked up, never imported: its
module must already be in ``sys.modules``, and its name is walked through the namespaces'
own dictionaries (no ``getattr`` hooks, no lazy imports, no dunder names). Only the kinds
below are built, each in its own way; anything else found under the name (a function such
as ``os:system``, an arbitrary class) is never called:

- dataclasses, attrs classes and ``NamedTuple`` classes, from their fields, each field
  rebuilt through its type hint when the hint is simple (a supported class, ``list[X]``,
  ``dict[str, X]``, ``tuple[X, ...]``, ``set[X]``, ``X | None``);
- pydantic models (``model_validate_json`` of the recorded JSON);
- enums, by value; ``datetime``, ``date``, ``time``, ``UUID`` and ``Decimal``, from the text
  the recorder wrote; ``tuple``, ``set`` and ``frozenset``, from a list.

A user hook (``hook(type_name, value)``, the ``pytest_rollout_rebuild_result`` hook) is
asked first and may rebuild any type. A value that cannot be rebuilt is handed back as its
JSON value with a :class:`~pytest_rollout.errors.RolloutWarning` naming the tool, the type
and why.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import decimal
import enum
import sys
import types
import typing
import uuid
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from ..errors import RolloutWarning
from ..format.typed import type_tag_of_class
from ..safety.sanitize import excerpt, sanitize

__all__ = [
    "RebuildHook",
    "UnrebuildableError",
    "allowed_classes",
    "rebuild_result",
    "resolve_class",
]

#: A user's rebuilder: ``(type_name, json_value)`` to an object, or ``None`` to decline.
RebuildHook = Callable[[str, Any], Any]

#: How deep nested fields are rebuilt; deeper values are left as they were recorded.
_MAX_DEPTH: Final = 32
#: The longest type name looked up (a golden's text, bounded before it is split).
_MAX_NAME: Final = 400
_COLLECTIONS: Final = (tuple, set, frozenset)
#: Built from the text the recorder wrote, by the class's own parser.
_FROM_TEXT: Final = (datetime.date, datetime.time)


class UnrebuildableError(Exception):
    """Why a recorded value cannot be rebuilt as its type (one clause); ``missing_module``
    names the module that is not imported, when that is why."""

    def __init__(self, reason: str, missing_module: str | None = None) -> None:
        super().__init__(reason)
        self.missing_module = missing_module


def resolve_class(type_name: str) -> type:
    """The class named ``module:qualname``, from modules already imported only.

    Raises :class:`UnrebuildableError` when the module is not imported, the name is not
    defined there, or what it names is not a class."""
    module_name, colon, qualname = type_name.partition(":")
    if not colon or not module_name or not qualname or len(type_name) > _MAX_NAME:
        raise UnrebuildableError("the recorded type name is not of the form module:qualname")
    module = sys.modules.get(module_name)
    if module is None:
        raise UnrebuildableError(f"its module {module_name} is not imported", module_name)
    found: Any = module
    for part in qualname.split("."):
        namespace = getattr(found, "__dict__", None)
        if part.startswith("__") or not isinstance(namespace, Mapping) or part not in namespace:
            raise UnrebuildableError(f"{module_name} defines no class named {qualname}")
        found = namespace[part]
    if not isinstance(found, type):
        raise UnrebuildableError(f"{qualname} in {module_name} is not a class")
    return found


def rebuild_result(
    value: Any,
    type_name: object,
    hook: RebuildHook | None = None,
    *,
    tool: str = "",
    allowed: Mapping[str, type] | None = None,
) -> Any:
    """``value`` (a recorded JSON value) as an object of the type named ``type_name``.

    ``None`` for ``type_name`` means a plain JSON value: it is returned as it is. A value
    that cannot be rebuilt is returned as it is too, with a warning naming ``tool``.
    ``allowed`` are the classes the tool's own code names (:func:`allowed_classes`), by
    their type name: one of them is built without a look-up, so a class defined inside a
    test function (``test_x.<locals>.Weather``, which no module holds) is rebuilt too.
    Otherwise only a standard value type or an enum is. The golden chooses nothing here
    that the tool's code did not name."""
    if type_name is None:
        return value
    if not isinstance(type_name, str):
        _warn(tool, repr(type_name), "the recorded type name is not text")
        return value
    if hook is not None:
        found = hook(type_name, value)
        if found is not None:
            return found
    try:
        named = None if allowed is None else allowed.get(type_name)
        if named is not None:
            return _build(named, value, 0)
        cls = resolve_class(type_name)
        if not _standard(cls):
            raise UnrebuildableError(
                "the tool's return annotation does not name it, nor a class whose fields do"
            )
        return _build(cls, value, 0)
    except UnrebuildableError as exc:
        module = exc.missing_module
        _warn(tool, type_name, str(exc), f"Import {module}" if module else "")
    return value


#: The value types rebuilt whatever the tool's annotation says (enums too, by value).
_STANDARD: Final = frozenset(
    {
        datetime.datetime,
        datetime.date,
        datetime.time,
        uuid.UUID,
        decimal.Decimal,
        *(tuple, set, frozenset),
    }
)
#: The largest exponent of a rebuilt ``Decimal`` (``Decimal('1E+999999999')`` is 13 bytes).
_MAX_EXPONENT: Final = 10_000
#: How many classes a return annotation may reach through fields.
_MAX_REACHABLE: Final = 1_000


def _standard(cls: type) -> bool:
    return cls in _STANDARD or issubclass(cls, enum.Enum)


def allowed_classes(annotation: Any) -> dict[str, type]:
    """The classes a tool's return ``annotation`` names, and those the fields of each name,
    recursively (``list[Forecast]``, ``Forecast | None``, a dataclass whose field is another
    dataclass), by type name: the classes replay may build for its results."""
    found: dict[str, type] = {}
    seen: set[int] = set()
    pending = [annotation]
    while pending and len(found) < _MAX_REACHABLE:
        hint = pending.pop()
        if id(hint) in seen:
            continue
        seen.add(id(hint))
        if isinstance(hint, type):
            found[type_tag_of_class(hint)] = hint
            builder = _builder(hint)
            if builder in (_dataclass, _attrs, _named_tuple):
                pending.extend(_hints(hint).values())
            elif builder is _pydantic:
                fields = hint.__dict__.get("__pydantic_fields__") or {}
                pending.extend(getattr(f, "annotation", None) for f in fields.values())
            pending.extend(typing.get_args(hint))  # a generic alias's arguments
        else:
            pending.extend(typing.get_args(hint))
    return found


def _warn(tool: str, type_name: str, reason: str, fix: str = "") -> None:
    how = "rebuild the type in a pytest_rollout_rebuild_result hook"
    fix = f"{fix} before the tool is replayed, or {how}" if fix else how[0].upper() + how[1:]
    shown = excerpt(type_name, 200)
    warnings.warn(
        RolloutWarning(
            sanitize(
                f"tool {tool!r} returned an object of type {shown} when it was recorded, and "
                f"replay cannot rebuild it ({excerpt(reason, 200)}): the agent gets the "
                f"recorded JSON value instead. {fix} (docs/replay.md#typed-tool-results)."
            )
        ),
        stacklevel=3,
    )


_Builder = Callable[[Any, Any, int], Any]


def _build(cls: type, value: Any, depth: int) -> Any:
    """An instance of ``cls`` from its JSON value (raises for a kind not rebuilt)."""
    builder = _builder(cls)
    if builder is None:
        raise UnrebuildableError("it is not a kind of type that replay rebuilds")
    try:
        return builder(cls, value, depth)
    except UnrebuildableError:
        raise
    except Exception as exc:  # the class refused the recorded value
        name = type(exc).__name__
        raise UnrebuildableError(f"building it failed with {name}: {exc}") from None


def _builder(cls: type) -> _Builder | None:
    """How an instance of ``cls`` is built from its JSON value; ``None`` for a kind of
    class that is never built."""
    if cls in _COLLECTIONS:
        return _collection
    if issubclass(cls, enum.Enum | uuid.UUID | decimal.Decimal):
        return _by_value
    if issubclass(cls, _FROM_TEXT):
        return _from_text
    if dataclasses.is_dataclass(cls):
        return _dataclass
    if isinstance(cls.__dict__.get("__attrs_attrs__"), tuple):
        return _attrs
    if issubclass(cls, tuple) and isinstance(cls.__dict__.get("_fields"), tuple):
        return _named_tuple
    base = getattr(sys.modules.get("pydantic"), "BaseModel", None)
    if isinstance(base, type) and issubclass(cls, base):
        return _pydantic
    return None


def _collection(cls: Any, value: Any, depth: int) -> Any:
    return cls(_items(value))


def _by_value(cls: Any, value: Any, depth: int) -> Any:
    """An enum member by its value, found among its members (its ``_missing_`` and other
    code never run); a UUID or a Decimal from its text, a Decimal within bounds."""
    if issubclass(cls, enum.Enum):
        with contextlib.suppress(KeyError, TypeError):  # TypeError: an unhashable value
            return cls._value2member_map_[value]
        for member in cls.__members__.values():
            if member.value == value and type(member.value) is type(value):
                return member
        raise UnrebuildableError(f"{excerpt(repr(value), 80)} is not a valid {cls.__qualname__}")
    built = cls(_text(value))
    if (
        isinstance(built, decimal.Decimal)
        and built.is_finite()
        and abs(built.adjusted()) > _MAX_EXPONENT
    ):
        raise UnrebuildableError(f"its exponent is beyond {_MAX_EXPONENT}")
    return built


def _from_text(cls: Any, value: Any, depth: int) -> Any:
    return cls.fromisoformat(_text(value))


def _dataclass(cls: Any, value: Any, depth: int) -> Any:
    fields = [(f.name, f.name, f.init) for f in dataclasses.fields(cls)]
    return _from_fields(cls, fields, value, depth)


def _attrs(cls: Any, value: Any, depth: int) -> Any:
    found = cls.__dict__["__attrs_attrs__"]
    fields = [(f.name, getattr(f, "alias", None) or f.name, f.init) for f in found]
    return _from_fields(cls, fields, value, depth)


def _pydantic(cls: Any, value: Any, depth: int) -> Any:
    """A pydantic model from its ``model_dump(mode="json")``: its fields rebuilt by their
    annotations first (a datetime keeps its own ``tzinfo``, a tuple stays a tuple), else
    the JSON as pydantic itself reads it."""
    if isinstance(value, dict):
        fields = cls.__dict__.get("__pydantic_fields__") or {}
        data = {
            k: _typed(v, getattr(fields.get(k), "annotation", None), depth + 1)
            for k, v in value.items()
        }
        with contextlib.suppress(Exception):
            return cls.model_validate(data, by_name=True)
    return cls.model_validate_json(orjson.dumps(value))


def _items(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise UnrebuildableError(f"the recorded value is not a list but {type(value).__name__}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise UnrebuildableError(f"the recorded value is not text but {type(value).__name__}")
    return value


def _fields_of(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise UnrebuildableError(f"the recorded value is not an object but {type(value).__name__}")
    return value


def _hints(cls: type) -> Mapping[str, Any]:
    """``cls``'s field type hints; none when they cannot be worked out."""
    try:
        return typing.get_type_hints(cls)
    except Exception:
        return {}


def _from_fields(cls: type, fields: list[tuple[str, str, bool]], value: Any, depth: int) -> Any:
    """A dataclass or attrs instance: ``fields`` are (name, init argument, in ``__init__``);
    fields left out of ``__init__`` are set afterwards, as ``__init__`` would have."""
    recorded = _fields_of(value)
    unknown = set(recorded) - {name for name, _, _ in fields}
    if unknown:
        raise UnrebuildableError(f"the class has no field {sorted(unknown)[0]!r}")
    hints = _hints(cls)
    arguments: dict[str, Any] = {}
    later: dict[str, Any] = {}
    for name, argument, init in fields:
        if name in recorded:
            field_value = _typed(recorded[name], hints.get(name), depth + 1)
            if init:
                arguments[argument] = field_value
            else:
                later[name] = field_value
    built = cls(**arguments)
    for name, field_value in later.items():
        object.__setattr__(built, name, field_value)
    return built


def _named_tuple(cls: Any, value: Any, depth: int) -> Any:
    hints = _hints(cls)
    if isinstance(value, list):
        names: tuple[str, ...] = cls.__dict__["_fields"]
        return cls(
            *(_typed(v, hints.get(n), depth + 1) for n, v in zip(names, value, strict=False))
        )
    recorded = _fields_of(value)
    return cls(**{k: _typed(v, hints.get(k), depth + 1) for k, v in recorded.items()})


def _typed(value: Any, hint: Any, depth: int) -> Any:
    """A field's recorded value rebuilt by its type hint, when the hint is simple and
    names a supported kind somewhere; otherwise the value as it was recorded."""
    if hint is None or value is None or depth > _MAX_DEPTH:
        return value
    if isinstance(hint, type):
        return value if _builder(hint) is None else _build(hint, value, depth)
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin is typing.Annotated:
        return _typed(value, arguments[0], depth)
    if origin in (typing.Union, types.UnionType):
        others = [a for a in arguments if a is not type(None)]
        return _typed(value, others[0], depth) if len(others) == 1 else value
    if origin in (list, tuple, set, frozenset) and isinstance(value, list):
        return _sequence(origin, arguments, value, depth)
    if origin is dict and isinstance(value, dict) and len(arguments) == 2:
        return {k: _typed(v, arguments[1], depth + 1) for k, v in value.items()}
    return value


def _sequence(origin: type, arguments: tuple[Any, ...], value: list[Any], depth: int) -> Any:
    if origin is tuple and arguments and arguments[-1] is not Ellipsis:
        hints = list(arguments)  # tuple[X, Y]: one hint per position
    else:
        hints = [arguments[0] if arguments else None] * len(value)
    items = [_typed(v, h, depth + 1) for v, h in zip(value, hints, strict=False)]
    return items if origin is list else origin(items)
