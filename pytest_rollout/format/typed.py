"""The type of a tool result that is not plain JSON, recorded beside its JSON value.

A tool may return a dataclass, a pydantic model, an attrs class, a ``NamedTuple``, an enum
member, a date or time, a UUID, a ``Decimal`` or a tuple. Its JSON value is what the
recorder writes; its type, as ``module:qualname`` (:func:`type_tag`), goes beside it, so
that replay can give the agent an object of the same type back
(:mod:`pytest_rollout.replay.rebuild`): the ``str()`` a framework shows the model is then
the one it showed when recording.

:func:`type_tag` is on the recording path of every tool call: a plain value costs one set
lookup of its type, and any other costs two attribute reads.
:func:`json_form` is the JSON form of the kinds orjson does not encode itself
(``NamedTuple`` by field name, ``Decimal`` as text, attrs classes by field), for the
recorder's ``default``.
"""

from __future__ import annotations

import decimal
from typing import Any, Final

__all__ = ["PLAIN_TYPES", "json_form", "type_tag", "type_tag_of_class"]

#: The types whose values are JSON as they are: no tag.
PLAIN_TYPES: Final[frozenset[type]] = frozenset({dict, list, str, int, float, bool, type(None)})


def type_tag(value: object) -> str | None:
    """``module:qualname`` of ``value``'s type, or ``None`` for a plain JSON value."""
    cls = type(value)
    if cls in PLAIN_TYPES:
        return None
    return type_tag_of_class(cls)


def type_tag_of_class(cls: type) -> str:
    """``module:qualname`` of a class."""
    return f"{cls.__module__}:{cls.__qualname__}"


def json_form(value: Any) -> Any:
    """The JSON form of a ``NamedTuple`` (its fields by name), another tuple subclass (a
    list), a ``Decimal`` (its text) or an attrs instance (its fields by name, each encoded
    in turn); raises ``TypeError`` for anything else, as orjson's ``default`` must."""
    if isinstance(value, tuple):
        as_dict = getattr(value, "_asdict", None)
        return as_dict() if callable(as_dict) else list(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    fields = getattr(type(value), "__attrs_attrs__", None)
    if isinstance(fields, tuple):
        return {f.name: getattr(value, f.name) for f in fields}
    raise TypeError(f"cannot record a value of type {type(value).__name__}")
