"""Verifying the audit trail (docs/analyzers.md): walk a file's hash chain and name the
first entry that breaks it.

Editing, deleting, inserting or moving an entry breaks the chain at that entry. This is tamper
detection, not prevention: see :mod:`pytest_rollout.store.audit` for what it cannot catch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..format.files import Unreadable, read_regular
from .audit_entry import GENESIS, MAX_FILE_BYTES, MAX_LINE_BYTES, AuditError, read_entry

__all__ = ["AuditCheck", "verify_audit"]


@dataclass(frozen=True, slots=True)
class AuditCheck:
    """What :func:`verify_audit` found in one audit file.

    ``entries`` counts the entries read before the break (all of them when the chain is
    intact); ``head`` is the last ``entry_hash`` of an intact chain (``None`` when it is
    empty or broken); ``broken_line`` is the 1-based line (and entry) number where the chain
    breaks, ``reason`` says why, in a phrase starting with "it" or "its".
    """

    path: str
    entries: int
    head: str | None
    broken_line: int | None
    reason: str | None

    @property
    def ok(self) -> bool:
        """Whether the whole file is an intact chain."""
        return self.broken_line is None


def verify_audit(path: str | os.PathLike[str]) -> AuditCheck:
    """Walk the hash chain of the audit file ``path`` and report the first entry that breaks
    it, or that it is intact (an empty file is intact with 0 entries).

    Each line must be a JSON object with exactly the six fields, of the right types, an
    ``event_type`` of :data:`AUDIT_EVENT_TYPES`, an ``entry_hash`` that matches its content
    and a ``prev_hash`` equal to the ``entry_hash`` before it (:data:`GENESIS` for the
    first). A line over :data:`MAX_LINE_BYTES` is a break. Only a regular file is read,
    checked on the opened handle without blocking. Raises :class:`AuditError` when the file
    is missing, cannot be read, is not a regular file or is over :data:`MAX_FILE_BYTES`.
    """
    name = os.fspath(path)
    try:
        data = read_regular(name, MAX_FILE_BYTES, "regular file")
    except Unreadable as exc:
        raise AuditError(name, exc.reason) from None
    if len(data) > MAX_FILE_BYTES:
        raise AuditError(name, f"file grew past the {MAX_FILE_BYTES}-byte limit as it was read")
    entries = 0
    prev = GENESIS
    pos = 0
    size = len(data)

    def broken(reason: str) -> AuditCheck:
        return AuditCheck(name, entries, None, entries + 1, reason)

    while pos < size:
        end = data.find(b"\n", pos, pos + MAX_LINE_BYTES + 1)
        if end < 0:
            if size - pos > MAX_LINE_BYTES:
                return broken(f"it is longer than the {MAX_LINE_BYTES}-byte line limit")
            return broken("it has no newline at the end (a partial write)")
        entry, reason = read_entry(data[pos:end])
        if entry is None:
            return broken(reason)
        if entry["prev_hash"] != prev:
            if entries == 0:
                return broken(
                    "it is the first entry but its prev_hash is not the genesis hash "
                    "(the entries before it were deleted)"
                )
            return broken(
                "its prev_hash does not match the entry before it "
                "(an entry was deleted, inserted or moved)"
            )
        prev = entry["entry_hash"]
        entries += 1
        pos = end + 1
    return AuditCheck(name, entries, prev if entries else None, None, None)
