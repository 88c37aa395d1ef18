"""The audit trail's entries (docs/analyzers.md): where a day's file is, what a line holds,
how it is hashed, and the check of one line read back.

Each line is one entry::

    {"timestamp": "2026-06-28T12:34:56.000123Z", "run_id": "...", "event_type": "audit.action",
     "payload": {...}, "prev_hash": "<64 hex>", "entry_hash": "<64 hex>"}

``entry_hash`` is the SHA-256 of the other five fields in a canonical form (compact JSON, keys
sorted at every level, UTF-8; see :func:`entry_hash`). Those fields include ``prev_hash``, the
``entry_hash`` of the entry before (:data:`GENESIS` for the first), so the entries form a
chain.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson

from ..errors import RolloutFileError
from ..format.events import AUDIT_ACTION, RUN_COMPLETED, RUN_FAILED, RUN_STARTED

__all__ = [
    "AUDIT_EVENT_TYPES",
    "FIELDS",
    "FILE_NAME",
    "GENESIS",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "AuditError",
    "audit_path",
    "entry_hash",
    "format_timestamp",
    "read_entry",
]

#: The only event types an audit trail holds.
AUDIT_EVENT_TYPES: Final = frozenset({RUN_STARTED, AUDIT_ACTION, RUN_COMPLETED, RUN_FAILED})

#: The ``prev_hash`` of the first entry of a chain.
GENESIS: Final = "0" * 64

#: The name of a day's audit file.
FILE_NAME: Final = "audit.jsonl"

#: The longest line (without its newline) that is written or read back.
MAX_LINE_BYTES: Final = 1024 * 1024

#: The largest audit file that is verified (read whole).
MAX_FILE_BYTES: Final = 1024 * 1024 * 1024

#: The fields of an entry, in the order they are written.
FIELDS: Final = ("timestamp", "run_id", "event_type", "payload", "prev_hash", "entry_hash")
_HASHED: Final = FIELDS[:-1]
_FIELD_SET: Final = frozenset(FIELDS)
_HEX64: Final = re.compile(r"[0-9a-f]{64}")
_TIMESTAMP: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
_BOM: Final = b"\xef\xbb\xbf"


class AuditError(RolloutFileError):
    """An audit file could not be read or appended to. ``path`` names the file, ``reason``
    says why."""

    __module__ = "pytest_rollout"


def audit_path(root: Path, when: datetime) -> Path:
    """``<root>/<YYYY-MM-DD>/audit.jsonl``, the day being ``when``'s UTC date.

    A naive ``when`` is taken to be UTC already.
    """
    return root / _utc(when).date().isoformat() / FILE_NAME


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def format_timestamp(when: datetime) -> str:
    """``when`` as an entry's timestamp: RFC 3339, UTC, with microseconds."""
    t = _utc(when)
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d}T"
        f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{t.microsecond:06d}Z"
    )


def entry_hash(entry: Mapping[str, Any]) -> str:
    """The SHA-256 (lowercase hex) of ``entry``'s ``timestamp``, ``run_id``, ``event_type``,
    ``payload`` and ``prev_hash``; any other key (``entry_hash`` itself) is ignored.

    The hashed bytes are those five fields as one compact JSON object with the keys of every
    object sorted, in UTF-8 with no escaping beyond JSON's own (orjson with
    ``OPT_SORT_KEYS``): the order of keys in a line does not change the hash. ``KeyError``
    when a field is missing.
    """
    canonical = {name: entry[name] for name in _HASHED}
    return hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)).hexdigest()


# -- reading one line back -------------------------------------------------------------


def read_entry(line: bytes) -> tuple[dict[str, Any] | None, str]:
    """``line`` (without its newline) as a well-formed entry whose hash matches its content,
    or ``None`` and the reason it is not one (a phrase starting with "it" or "its")."""
    if len(line) > MAX_LINE_BYTES:
        return None, f"it is longer than the {MAX_LINE_BYTES}-byte line limit"
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None, _why_not_json(line)
    if not isinstance(value, dict):
        return None, "it is not a JSON object"
    if value.keys() != _FIELD_SET:
        return None, _field_problem(value)
    reason = _type_problem(value)
    if reason is not None:
        return None, reason
    try:
        digest = entry_hash(value)
    except orjson.JSONEncodeError:  # pragma: no cover - what orjson reads, it can write
        return None, "its content cannot be hashed"
    if digest != value["entry_hash"]:
        return None, "its entry_hash does not match its content (the entry was edited)"
    return value, ""


def _why_not_json(line: bytes) -> str:
    if line.startswith(_BOM):
        return "it starts with a byte order mark (BOM)"
    if not line.strip():
        return "it is blank"
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return "it is not valid UTF-8"
    return "it is not valid JSON"


def _names(names: Iterable[str]) -> str:
    shown = [f'"{n[:40]}…"' if len(n) > 41 else f'"{n}"' for n in names]
    return ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")


def _field_problem(value: dict[str, Any]) -> str:
    missing = [name for name in FIELDS if name not in value]
    if missing:
        return f"it lacks the field{'s' if len(missing) > 1 else ''} {_names(missing)}"
    extra = sorted(value.keys() - _FIELD_SET)
    return f"it has the unexpected field{'s' if len(extra) > 1 else ''} {_names(extra)}"


def _type_problem(value: dict[str, Any]) -> str | None:
    timestamp = value["timestamp"]
    if not isinstance(timestamp, str) or not _TIMESTAMP.fullmatch(timestamp):
        return (
            "its timestamp is not an RFC 3339 UTC time with microseconds "
            "(YYYY-MM-DDTHH:MM:SS.ffffffZ)"
        )
    if not isinstance(value["run_id"], str):
        return "its run_id is not a string"
    event_type = value["event_type"]
    if not isinstance(event_type, str) or event_type not in AUDIT_EVENT_TYPES:
        return (
            f"its event_type is not one of the audit event types "
            f"({', '.join(sorted(AUDIT_EVENT_TYPES))})"
        )
    if not isinstance(value["payload"], dict):
        return "its payload is not a JSON object"
    for name in ("prev_hash", "entry_hash"):
        digest = value[name]
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            return f"its {name} is not 64 lowercase hex digits"
    return None
