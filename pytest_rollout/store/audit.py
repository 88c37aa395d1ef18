"""The audit trail: an opt-in, append-only, hash-chained log of security-relevant events.

One file per UTC day, shared by every run of that day (``<root>/<YYYY-MM-DD>/audit.jsonl``,
:func:`audit_path`). Each line is one entry::

    {"timestamp": "2026-06-28T12:34:56.000123Z", "run_id": "...", "event_type": "audit.action",
     "payload": {...}, "prev_hash": "<64 hex>", "entry_hash": "<64 hex>"}

``entry_hash`` is the SHA-256 of the other five fields in a canonical form (compact JSON, keys
sorted at every level, UTF-8; see :func:`entry_hash`). Those fields include ``prev_hash``, the
``entry_hash`` of the entry before (:data:`GENESIS` for the first), so the entries form a
chain: editing, deleting, inserting or moving an entry breaks it at that entry, and
:func:`verify_audit` names the line and the reason.

This is tamper detection, not prevention. Anyone who can write the file can rewrite the whole
chain so that it verifies again, and cutting entries off the end leaves a shorter chain that
still verifies. Both are caught only by comparing with a head hash (the last ``entry_hash``)
kept somewhere the writer cannot change. Use it alongside file system permissions, not
instead of them.

Several processes (pytest-xdist workers) may append to the same file at once; appending
holds an exclusive ``flock`` (POSIX only).

The trail is kept in a few modules, each re-exported here: the entry format and its hash
(:mod:`~pytest_rollout.store.audit_entry`), appending
(:mod:`~pytest_rollout.store.audit_append`), verification
(:mod:`~pytest_rollout.store.audit_verify`) and which tool calls are actions
(:mod:`~pytest_rollout.store.audit_actions`). This module holds the sink the plugin writes
through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .audit_actions import STATE_MODIFYING_KEYWORDS, STATE_MODIFYING_TOOLS, is_state_modifying
from .audit_append import append_entry
from .audit_entry import (
    AUDIT_EVENT_TYPES,
    FILE_NAME,
    GENESIS,
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    AuditError,
    audit_path,
    entry_hash,
)
from .audit_verify import AuditCheck, verify_audit

__all__ = [
    "AUDIT_EVENT_TYPES",
    "FILE_NAME",
    "GENESIS",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "STATE_MODIFYING_KEYWORDS",
    "STATE_MODIFYING_TOOLS",
    "AuditCheck",
    "AuditError",
    "AuditTrailSink",
    "append_entry",
    "audit_path",
    "entry_hash",
    "is_state_modifying",
    "verify_audit",
]


class AuditTrailSink:
    """Appends a session's entries to the day's audit trail under ``root``, and says which
    tools are actions (:func:`is_state_modifying` with the user's ``tools`` and
    ``keywords``).

    With ``on_error``, a failed append never raises: the first failure with a given message
    is handed to ``on_error`` as one line of text, so a broken trail cannot fail a test.
    """

    def __init__(
        self,
        root: Path,
        *,
        tools: Iterable[str] = (),
        keywords: Iterable[str] = (),
        on_error: Callable[[str], None] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.root = root
        self.tools = frozenset(t.strip().lower() for t in tools if t.strip())
        self.keywords = frozenset(k.strip().lower() for k in keywords if k.strip())
        self._on_error = on_error
        self._clock = clock
        self._reported: set[str] = set()

    def is_action(self, tool_name: str) -> bool:
        return is_state_modifying(tool_name, tools=self.tools, keywords=self.keywords)

    def write(self, run_id: str, event_type: str, payload: Mapping[str, Any]) -> None:
        now = datetime.now(UTC) if self._clock is None else self._clock()
        try:
            append_entry(
                audit_path(self.root, now), run_id, event_type, payload, now=now, root=self.root
            )
        except (AuditError, ValueError, TypeError) as exc:
            if self._on_error is None:
                raise
            message = f"audit trail: entry not written: {exc}"
            if message not in self._reported:
                self._reported.add(message)
                self._on_error(message)
