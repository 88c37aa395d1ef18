"""Plain JSON data from Python values, the way the recorder records them.

An agent hands the recorder whatever it has: dicts with integer keys, sets, bytes, paths,
pydantic models. This module owns how those become JSON, in two flavours:

- strict (:func:`encode_payload`, :func:`to_json_data`): the common non-JSON types are
  converted (sets become sorted lists, bytes become text, paths become strings, pydantic
  models become their ``model_dump``) and anything else raises ``TypeError``;
- with placeholders (:func:`encode_with_placeholders`, :func:`to_json_data_or_placeholder`):
  what cannot be recorded becomes the text ``<unrecordable TYPE>`` instead, so the value is
  recorded whatever it holds.

Everything that compares live values with recorded ones (replay, the session) goes through
here, so both sides see the same data (docs/file-format.md).

A value on its way to the recorder is encoded once (:func:`snapshot`): orjson encodes it
(calling :func:`json_default` for the common non-JSON types only), and its bytes go into the
event's payload as an ``orjson.Fragment``, which the recorder copies verbatim. Those are the
bytes the value's plain data would encode to, so the line is the same; the plain data is read
back from them only when something asks for it (:func:`snapshot_value`). Only a value orjson
refuses that way goes through :func:`to_json_data_or_placeholder`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

import orjson

from .typed import json_form

__all__ = [
    "encode_event",
    "encode_payload",
    "encode_with_placeholders",
    "json_copy",
    "json_default",
    "snapshot",
    "snapshot_value",
    "text_default",
    "to_json_data",
    "to_json_data_or_placeholder",
]

#: Nesting past which :func:`encode_with_placeholders` stops descending.
_MAX_DEPTH: Final = 100


def json_default(value: Any) -> Any:
    """orjson's ``default`` for the common non-JSON types agents pass around; refuses
    everything else with ``TypeError``."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    dump = getattr(value, "model_dump", None)  # pydantic v2 models
    if callable(dump):
        return dump(mode="json")
    return json_form(value)  # NamedTuple, Decimal, attrs; raises TypeError for the rest


def text_default(value: Any) -> Any:
    """orjson's ``default`` for records that keep everything readable (the audit trail):
    any mapping as a dict, anything else JSON cannot hold as its ``str()``."""
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def _placeholder(value: Any) -> str:
    return f"<unrecordable {type(value).__name__}>"


def _default_or_placeholder(value: Any) -> Any:
    try:
        return json_default(value)
    except Exception:
        return _placeholder(value)


def _scrubbed(value: Any, depth: int) -> Any:
    """A copy of ``value`` that orjson can encode: strings with lone surrogates escaped,
    integers beyond 64 bits as text, anything else unencodable as a placeholder (a
    :func:`snapshot`'s bytes are kept as they are)."""
    if isinstance(value, orjson.Fragment):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, bool | float) or value is None:
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else str(value)
    if depth >= _MAX_DEPTH:
        return _placeholder(value)
    if isinstance(value, Mapping):
        return {_scrubbed(str(k), depth): _scrubbed(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(v, depth + 1) for v in value]
    return _scrubbed(_default_or_placeholder(value), depth + 1)


def encode_payload(data: Mapping[str, Any]) -> bytes:
    """Encode an event payload the way the recorder does (raises on unencodable data)."""
    try:
        return orjson.dumps(data, default=json_default)
    except TypeError:
        # Non-string keys make orjson several times slower, so allow them only when needed.
        return orjson.dumps(data, default=json_default, option=orjson.OPT_NON_STR_KEYS)


def encode_with_placeholders(data: Mapping[str, Any]) -> bytes:
    """Encode an event payload whatever it holds: what cannot be recorded is replaced by a
    placeholder naming its type, a string with a lone surrogate is escaped and an integer
    beyond 64 bits becomes text."""
    try:
        return orjson.dumps(data, default=_default_or_placeholder, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # a lone surrogate or an integer beyond 64 bits
        return orjson.dumps(_scrubbed(data, 0))


def to_json_data(value: Any) -> Any:
    """``value`` as plain JSON data, the way it is recorded (objects become dicts, ...);
    raises ``TypeError`` when it cannot be recorded."""
    return orjson.loads(encode_payload({"v": value}))["v"]


def to_json_data_or_placeholder(value: Any) -> Any:
    """``value`` as :func:`to_json_data` gives it, or, when any part of it cannot be
    recorded, the placeholder ``<unrecordable TYPE>`` naming the type of the whole value."""
    try:
        return to_json_data(value)
    except Exception:
        return _placeholder(value)


def encode_event(data: dict[str, Any], key: str) -> bytes | None:
    """An event's ``data``, whose ``data[key]`` is a value from the agent, encoded once: the
    bytes the recorder makes of ``data`` once that value is plain data (encoding plain data
    again gives the same bytes), for :meth:`~.recorder.Recorder.emit_payload`. ``None`` when
    orjson with :func:`json_default` refuses it (keys that are not strings, a value that
    cannot be recorded): ``data[key]`` is then made plain (or its placeholder) in place,
    and ``data`` is for :meth:`~.recorder.Recorder.emit`, as before."""
    try:
        return orjson.dumps(data, default=json_default)
    except Exception:
        data[key] = to_json_data_or_placeholder(data[key])
        return None


#: What wraps a value for :func:`snapshot`: the value is encoded at the depth (and with the
#: checks) of :func:`to_json_data`, and its bytes are those between the two ends.
_HEAD: Final = len(b'{"v":')


def snapshot(value: Any) -> tuple[Any, bytes | None]:
    """``value`` as it goes into an event's payload, encoded once.

    Returns what to put in the payload and the bytes it was read from: an
    ``orjson.Fragment`` of the bytes of :func:`to_json_data` of ``value`` (the recorder
    copies them as they are), or, when that takes more than orjson with
    :func:`json_default` (keys that are not strings, a placeholder), the plain data of
    :func:`to_json_data_or_placeholder` and ``None``. Either way the payload encodes to the
    same bytes as one holding the plain data. :func:`snapshot_value` gives the plain data.
    """
    try:
        wrapped = orjson.dumps({"v": value}, default=json_default)
    except Exception:
        return to_json_data_or_placeholder(value), None
    return orjson.Fragment(wrapped[_HEAD:-1]), wrapped


def snapshot_value(part: Any, wrapped: bytes | None) -> Any:
    """The plain data of a :func:`snapshot` (what :func:`to_json_data_or_placeholder`
    gives for the value), read back from its bytes."""
    return part if wrapped is None else orjson.loads(wrapped)["v"]


def json_copy(value: Any) -> Any:
    """A copy of ``value`` as JSON would hold it (what a recorded run gives back), or
    ``value`` itself when JSON cannot hold it (a set, an integer beyond 64 bits, ...)."""
    try:
        return orjson.loads(orjson.dumps(value))
    except TypeError:  # orjson.JSONEncodeError
        return value
