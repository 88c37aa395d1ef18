"""OTLP/JSON trace files: reading and writing ``ExportTraceServiceRequest`` lines (docs/otel.md).

The OpenTelemetry Collector's file exporter writes one ``ExportTraceServiceRequest`` JSON
object per line: ``resourceSpans`` -> ``scopeSpans`` -> ``spans``, each attribute a typed
``{"key", "value": {"stringValue" | "intValue" | ...}}``. :func:`read_spans` reads such a
file as untrusted input, as strictly and as bounded as the rollout loader (file and line
size, span and attribute counts, value depth): anything outside the format is one
:class:`~pytest_rollout.RolloutFormatError` naming the file, the line and the span.
:func:`encode_trace` writes one trace as one such line.

Ids are read as the OTLP/JSON hex strings, or as the base64 strings of protobuf's own JSON
mapping (what ``google.protobuf.json_format`` gives); enums as numbers or as their names;
64-bit integers as numbers or decimal strings.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from ..errors import RolloutFormatError
from ..format.files import Unreadable, read_regular

__all__ = [
    "DEFAULT_TRACE_LIMITS",
    "STATUS_ERROR",
    "STATUS_OK",
    "STATUS_UNSET",
    "Span",
    "SpanEvent",
    "TraceLimits",
    "decode_value",
    "encode_trace",
    "encode_value",
    "read_spans",
    "spans_from_bytes",
]

STATUS_UNSET: Final = 0
STATUS_OK: Final = 1
STATUS_ERROR: Final = 2
_STATUS_NAMES: Final = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_KIND_NAMES: Final = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
_HEX: Final = re.compile(r"[0-9a-f]*")
_INT64: Final = 2**63


@dataclass(frozen=True, slots=True)
class TraceLimits:
    """The bounds a trace file is read within (the defaults mirror the rollout loader's)."""

    file_bytes: int = 256 * 1024 * 1024
    line_bytes: int = 64 * 1024 * 1024
    spans: int = 50_000
    attributes: int = 1_000  # per span, per event, per resource
    events: int = 10_000  # span events per span
    depth: int = 32  # nesting of one attribute value (arrays, kvlists)


DEFAULT_TRACE_LIMITS: Final = TraceLimits()


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """One span event: a name, a time and its attributes."""

    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Span:
    """One span, with its attributes decoded to plain Python values."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: tuple[SpanEvent, ...] = ()
    status_code: int = STATUS_UNSET
    status_message: str = ""
    kind: int = 0
    scope: str = ""
    resource: dict[str, Any] = field(default_factory=dict)
    line: int = 0

    @property
    def label(self) -> str:
        """How an error or a warning names this span."""
        return f"span {self.name!r} ({self.span_id or 'no id'})"


class _Refusal(Exception):
    """What is wrong, raised inside the reader and turned into one RolloutFormatError."""


# -- values ---------------------------------------------------------------------------


def _int(value: Any, what: str) -> int:
    if type(value) is int:
        number = value
    elif type(value) is str and re.fullmatch(r"-?[0-9]{1,20}", value):
        number = int(value)
    else:
        raise _Refusal(f"{what} is not an integer: {_short(value)}")
    if not -_INT64 <= number < 2 * _INT64:
        raise _Refusal(f"{what} is out of the 64-bit range")
    return number


def _float(value: Any, what: str) -> float:
    if type(value) in (int, float):
        return float(value)
    if value in ("NaN", "Infinity", "-Infinity"):
        raise _Refusal(f"{what} is {value}, which a rollout cannot hold")
    raise _Refusal(f"{what} is not a number: {_short(value)}")


_SCALARS: Final = frozenset({"stringValue", "bytesValue", "boolValue", "intValue", "doubleValue"})


def _scalar(kind: str, inner: Any) -> Any:
    if kind == "intValue":
        return _int(inner, "an intValue")
    if kind == "doubleValue":
        return _float(inner, "a doubleValue")
    wanted = bool if kind == "boolValue" else str
    if type(inner) is not wanted:
        raise _Refusal(f"a {kind} is not a {wanted.__name__}: {_short(inner)}")
    return inner


def decode_value(value: Any, depth: int = 32) -> Any:
    """A typed ``AnyValue`` as a plain value (``None`` for an empty one).

    ``bytesValue`` stays the base64 text it was written as (a rollout holds JSON)."""
    if type(value) is not dict:
        raise _Refusal(f"an attribute value is not an object: {_short(value)}")
    if not value:
        return None
    if len(value) != 1:
        raise _Refusal(f"an attribute value has several kinds: {sorted(value)}")
    ((kind, inner),) = value.items()
    if kind in _SCALARS:
        return _scalar(kind, inner)
    if depth <= 0:
        raise _Refusal("an attribute value is nested too deeply")
    if kind == "arrayValue":
        return [decode_value(v, depth - 1) for v in _values(inner, kind)]
    if kind == "kvlistValue":
        return decode_attributes(_values(inner, kind), depth - 1, limit=None)
    raise _Refusal(f"unknown attribute value kind {kind!r}")


def _values(inner: Any, kind: str) -> list[Any]:
    if type(inner) is not dict or not set(inner) <= {"values"}:
        raise _Refusal(f"a {kind} is not an object with 'values': {_short(inner)}")
    values = inner.get("values", [])
    if type(values) is not list:
        raise _Refusal(f"the values of a {kind} are not a list")
    return values


def decode_attributes(items: Any, depth: int = 32, limit: int | None = 1_000) -> dict[str, Any]:
    """A ``KeyValue`` list as a dict (a repeated key is refused)."""
    if items is None:
        return {}
    if type(items) is not list:
        raise _Refusal(f"attributes are not a list: {_short(items)}")
    if limit is not None and len(items) > limit:
        raise _Refusal(f"{len(items)} attributes, more than the limit of {limit}")
    decoded: dict[str, Any] = {}
    for item in items:
        if type(item) is not dict or type(item.get("key")) is not str:
            raise _Refusal(f"an attribute is not a {{key, value}} object: {_short(item)}")
        key = item["key"]
        if key in decoded:
            raise _Refusal(f"attribute {key!r} is repeated")
        try:
            decoded[key] = decode_value(item.get("value", {}), depth)
        except _Refusal as exc:
            raise _Refusal(f"attribute {key!r}: {exc}") from None
    return decoded


def encode_value(value: Any) -> dict[str, Any]:
    """A plain JSON value as a typed ``AnyValue``."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": encode_attributes(value)}}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [encode_value(v) for v in value]}}
    raise TypeError(f"cannot encode {type(value).__name__} as an attribute value")


def encode_attributes(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A dict as a ``KeyValue`` list (``None`` values are left out)."""
    return [
        {"key": str(k), "value": encode_value(v)} for k, v in attributes.items() if v is not None
    ]


# -- ids, times, enums ------------------------------------------------------------------


def _id(value: Any, size: int, what: str, *, required: bool) -> str | None:
    """An id as lowercase hex (``size`` bytes); hex or protobuf's base64 are read."""
    if value is None or value == "":
        if required:
            raise _Refusal(f"the {what} is missing")
        return None
    if type(value) is not str:
        raise _Refusal(f"the {what} is not a string: {_short(value)}")
    text = value.lower()
    if len(text) == 2 * size and _HEX.fullmatch(text):
        return text
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != size:
        raise _Refusal(f"the {what} is not {size} bytes of hex or base64: {_short(value)}")
    return raw.hex()


def _enum(value: Any, names: Mapping[str, int], what: str) -> int:
    if value is None:
        return 0
    if type(value) is str and value in names:
        return names[value]
    return _int(value, what)


# -- reading ----------------------------------------------------------------------------


def read_spans(
    path: str | os.PathLike[str], limits: TraceLimits = DEFAULT_TRACE_LIMITS
) -> list[Span]:
    """Every span of an OTLP/JSON file (one ``ExportTraceServiceRequest`` a line)."""
    name = os.fspath(path)
    try:
        data = read_regular(name, limits.file_bytes, "trace file")
    except Unreadable as exc:
        raise RolloutFormatError(name, None, exc.reason) from None
    return spans_from_bytes(data, path=name, limits=limits)


def spans_from_bytes(
    data: bytes, *, path: str = "<trace>", limits: TraceLimits = DEFAULT_TRACE_LIMITS
) -> list[Span]:
    """Every span of OTLP/JSON bytes, read within ``limits``."""
    if len(data) > limits.file_bytes:
        raise RolloutFormatError(path, None, f"the file is over {limits.file_bytes} bytes")
    spans: list[Span] = []
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        if len(raw) > limits.line_bytes:
            raise RolloutFormatError(path, lineno, f"the line is over {limits.line_bytes} bytes")
        try:
            request = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise RolloutFormatError(path, lineno, f"not JSON: {exc}") from None
        _read_request(request, spans, path, lineno, limits)
    _check_tree(spans, path)
    return spans


def _check_tree(spans: list[Span], path: str) -> None:
    """Refuse a span id used twice in a trace, or parents that lead round in a circle.

    Each span is walked up its parents once: a walk stops at a span already placed, so
    the whole check is linear in the number of spans, however long the chains."""
    by_id: dict[tuple[str, str], Span] = {}
    for span in spans:
        own = (span.trace_id, span.span_id)
        if own in by_id:
            first = by_id[own]
            raise RolloutFormatError(
                path, span.line, f"{span.label}: its span id is used before, by {first.label}"
            )
        by_id[own] = span
    placed: set[tuple[str, str]] = set()
    for span in spans:
        path_ids: dict[tuple[str, str], None] = {}
        key: tuple[str, str] | None = (span.trace_id, span.span_id)
        while key is not None and key in by_id and key not in placed:
            if key in path_ids:
                raise RolloutFormatError(
                    path, by_id[key].line, f"{by_id[key].label}: its parents form a cycle"
                )
            path_ids[key] = None
            parent = by_id[key].parent_id
            key = None if parent is None else (span.trace_id, parent)
        placed.update(path_ids)


def _read_request(
    request: Any, spans: list[Span], path: str, lineno: int, limits: TraceLimits
) -> None:
    where = "the line"
    try:
        if type(request) is not dict:
            raise _Refusal("the line is not an ExportTraceServiceRequest object")
        for resource_spans in _list(request.get("resourceSpans"), "resourceSpans"):
            where = "a resource"
            resource = _object(resource_spans, "a resourceSpans entry")
            attrs = _object(resource.get("resource", {}), "a resource")
            resource_attrs = decode_attributes(
                attrs.get("attributes"), limits.depth, limits.attributes
            )
            for scope_spans in _list(resource.get("scopeSpans"), "scopeSpans"):
                scoped = _object(scope_spans, "a scopeSpans entry")
                scope = _object(scoped.get("scope", {}), "a scope").get("name", "")
                for raw_span in _list(scoped.get("spans"), "spans"):
                    where = _span_label(raw_span, len(spans) + 1)
                    if len(spans) >= limits.spans:
                        raise _Refusal(f"more than {limits.spans} spans")
                    spans.append(_span(raw_span, str(scope), resource_attrs, lineno, limits))
    except _Refusal as exc:
        raise RolloutFormatError(path, lineno, f"{where}: {exc}") from None
    except RecursionError:
        raise RolloutFormatError(path, lineno, f"{where}: nested too deeply") from None


def _span_label(raw: Any, number: int) -> str:
    if type(raw) is dict and type(raw.get("name")) is str:
        name = raw["name"] if len(raw["name"]) <= 80 else raw["name"][:77] + "..."
        return f"span {name!r} (span {number} of the file)"
    return f"span {number} of the file"


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if type(value) is not list:
        raise _Refusal(f"{what} is not a list")
    return value


def _object(value: Any, what: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise _Refusal(f"{what} is not an object")
    return value


def _span(raw: Any, scope: str, resource: dict[str, Any], lineno: int, limits: TraceLimits) -> Span:
    span = _object(raw, "the span")
    name = span.get("name", "")
    if type(name) is not str:
        raise _Refusal("its name is not a string")
    trace_id = _id(span.get("traceId"), 16, "traceId", required=True)
    span_id = _id(span.get("spanId"), 8, "spanId", required=True)
    assert trace_id is not None
    assert span_id is not None
    start = _int(span.get("startTimeUnixNano", 0), "startTimeUnixNano")
    end = _int(span.get("endTimeUnixNano", start), "endTimeUnixNano")
    if 0 < end < start:
        raise _Refusal(f"it ends ({end}) before it starts ({start})")
    raw_events = _list(span.get("events"), "events")
    if len(raw_events) > limits.events:
        raise _Refusal(f"{len(raw_events)} events, more than the limit of {limits.events}")
    status = _object(span.get("status", {}), "its status")
    message = status.get("message", "")
    if type(message) is not str:
        raise _Refusal("its status message is not a string")
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_id(span.get("parentSpanId"), 8, "parentSpanId", required=False),
        name=name,
        start_ns=start,
        end_ns=max(end, start),
        attributes=decode_attributes(span.get("attributes"), limits.depth, limits.attributes),
        events=tuple(_event(e, limits) for e in raw_events),
        status_code=_enum(status.get("code"), _STATUS_NAMES, "the status code"),
        status_message=message,
        kind=_enum(span.get("kind"), _KIND_NAMES, "the span kind"),
        scope=scope,
        resource=resource,
        line=lineno,
    )


def _event(raw: Any, limits: TraceLimits) -> SpanEvent:
    event = _object(raw, "a span event")
    name = event.get("name", "")
    if type(name) is not str:
        raise _Refusal("a span event's name is not a string")
    try:
        attributes = decode_attributes(event.get("attributes"), limits.depth, limits.attributes)
    except _Refusal as exc:
        raise _Refusal(f"event {name!r}: {exc}") from None
    return SpanEvent(name, _int(event.get("timeUnixNano", 0), "an event's time"), attributes)


# -- writing ----------------------------------------------------------------------------


def encode_trace(
    spans: Iterable[Span], *, resource: Mapping[str, Any], scope: str, version: str
) -> bytes:
    """One ``ExportTraceServiceRequest`` line (with its newline) holding ``spans``."""
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": encode_attributes(resource)},
                "scopeSpans": [
                    {
                        "scope": {"name": scope, "version": version},
                        "spans": [_encode_span(s) for s in spans],
                    }
                ],
            }
        ]
    }
    return orjson.dumps(request) + b"\n"


def _encode_span(span: Span) -> dict[str, Any]:
    encoded: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "kind": span.kind,
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
        "attributes": encode_attributes(span.attributes),
        "status": {"code": span.status_code},
    }
    if span.parent_id is not None:
        encoded["parentSpanId"] = span.parent_id
    if span.status_message:
        encoded["status"]["message"] = span.status_message
    if span.events:
        encoded["events"] = [
            {
                "timeUnixNano": str(e.time_ns),
                "name": e.name,
                "attributes": encode_attributes(e.attributes),
            }
            for e in span.events
        ]
    return encoded


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
