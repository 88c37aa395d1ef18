"""Appending to the audit trail (docs/analyzers.md): one entry at a time, chained onto the
last one under an exclusive lock.

Several processes (pytest-xdist workers) may append to the same file: :func:`append_entry`
holds an exclusive ``flock`` while it reads the last entry and writes the next. The lock is
advisory: it orders writers that take it, which every writer of the trail does. POSIX only.

The trail is private: a file it creates is ``0600`` and a folder ``0700``, and no symbolic
link below the capture directory is followed (:class:`~..format.files.WriteRoot`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson

from ..format.files import PRIVATE_FILE_MODE, UnsafePathError, WriteRoot, sync_directory
from ..format.jsonable import text_default
from .audit_entry import (
    AUDIT_EVENT_TYPES,
    GENESIS,
    MAX_LINE_BYTES,
    AuditError,
    entry_hash,
    format_timestamp,
    read_entry,
)

__all__ = ["append_entry"]

#: How much of the file's end is read at a time to find its last line.
_TAIL_CHUNK: Final = 64 * 1024
#: Open for appending, created when missing; never through a symbolic link, never blocking
#: (on a FIFO), never inherited by a child process, never a controlling terminal.
_APPEND_FLAGS: Final = (
    os.O_RDWR
    | os.O_APPEND
    | os.O_CREAT
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)


def _plain_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` as the JSON object it will read back as, so its hash is the one verified."""
    try:
        data = orjson.dumps(dict(payload), default=text_default, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError as exc:
        raise ValueError(f"the audit payload cannot be encoded as JSON: {exc}") from None
    plain: dict[str, Any] = orjson.loads(data)
    return plain


def append_entry(
    path: Path,
    run_id: str,
    event_type: str,
    payload: Mapping[str, Any],
    *,
    now: datetime | None = None,
    root: Path | None = None,
) -> str:
    """Append one entry to the audit file ``path`` and return its ``entry_hash``.

    The directory is created when missing (``0700``), the file when it does not exist
    (``0600``), never through a symbolic link: not the file, nor a folder between ``root``
    (default: the file's folder) and the file. An exclusive ``flock`` is held while the last
    entry is read (from the end of the file, for its ``entry_hash``) and the new line is
    written and synced, so processes appending at once each chain onto the entry before
    theirs. ``now`` (default: the time the lock is taken) is the entry's timestamp.

    ``payload`` values JSON cannot hold are written as text (``str(value)``). Raises
    ``ValueError`` for an event type outside :data:`AUDIT_EVENT_TYPES`, a payload orjson
    cannot encode (an integer beyond 64 bits) or an entry over :data:`MAX_LINE_BYTES`;
    :class:`AuditError` when the file cannot be opened or written, or when its last line is
    not a whole, valid entry (the chain is already broken there and no entry is guessed at:
    ``rollout audit verify`` shows where).
    """
    plain = _checked_payload(run_id, event_type, payload)
    name = os.fspath(path)
    fd = _open_for_append(path, name, root)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise AuditError(name, "cannot append: it is not a regular file")
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            return _append_locked(fd, name, run_id, event_type, plain, now)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError as exc:
        raise AuditError(name, f"cannot append: {exc.strerror}") from None
    finally:
        os.close(fd)


def _checked_payload(run_id: str, event_type: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` as it will be written, once the entry is known to be one that may be."""
    if event_type not in AUDIT_EVENT_TYPES:
        allowed = ", ".join(sorted(AUDIT_EVENT_TYPES))
        raise ValueError(f"{event_type!r} is not an audit event type (one of {allowed})")
    if not isinstance(run_id, str):
        raise TypeError(f"run_id must be a str, not {type(run_id).__name__}")
    plain = _plain_payload(payload)
    _check_size(run_id, event_type, plain)
    return plain


def _open_for_append(path: Path, name: str, root: Path | None) -> int:
    """A descriptor of the audit file open for appending, the file and its directory
    created when missing (never through a symbolic link)."""
    under = WriteRoot(path.parent if root is None else root, private=True)
    try:
        folder = under.open_parent(path)
    except UnsafePathError as exc:
        raise AuditError(name, f"cannot append: {exc.reason}") from None
    except OSError as exc:
        raise AuditError(path.parent, f"cannot create the directory: {exc.strerror}") from None
    try:
        return os.open(path.name, _APPEND_FLAGS, PRIVATE_FILE_MODE, dir_fd=folder)
    except OSError as exc:
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.stat(path.name, dir_fd=folder, follow_symlinks=False).st_mode):
                raise AuditError(name, "cannot append: it is a symbolic link") from None
        raise AuditError(name, f"cannot open: {exc.strerror}") from None
    finally:
        os.close(folder)


def _check_size(run_id: str, event_type: str, payload: dict[str, Any]) -> None:
    """Refuse an entry whose line would be over :data:`MAX_LINE_BYTES`, before any file is
    touched (the timestamp and hashes have fixed lengths, so a draft measures it exactly)."""
    draft = {
        "timestamp": format_timestamp(datetime(1, 1, 1, tzinfo=UTC)),
        "run_id": run_id,
        "event_type": event_type,
        "payload": payload,
        "prev_hash": GENESIS,
        "entry_hash": GENESIS,
    }
    size = len(orjson.dumps(draft))
    if size > MAX_LINE_BYTES:
        raise ValueError(
            f"the audit entry is {size} bytes, over the {MAX_LINE_BYTES}-byte line limit"
        )


def _append_locked(
    fd: int,
    name: str,
    run_id: str,
    event_type: str,
    payload: dict[str, Any],
    now: datetime | None,
) -> str:
    size = os.fstat(fd).st_size
    prev = GENESIS if size == 0 else _last_entry_hash(fd, name, size)
    entry: dict[str, Any] = {
        "timestamp": format_timestamp(datetime.now(UTC) if now is None else now),
        "run_id": run_id,
        "event_type": event_type,
        "payload": payload,
        "prev_hash": prev,
    }
    entry["entry_hash"] = digest = entry_hash(entry)
    data = memoryview(orjson.dumps(entry) + b"\n")
    try:
        while data:
            written = os.write(fd, data)
            data = data[written:]
        os.fsync(fd)
    except OSError:
        # Leave no partial line behind: it would break the chain for every later entry.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise
    if size == 0:
        sync_directory(os.path.dirname(name) or ".")
    return digest


def _last_entry_hash(fd: int, name: str, size: int) -> str:
    """The ``entry_hash`` of the file's last line, read backwards from its end."""
    end = size - 1
    if _pread(fd, 1, end) != b"\n":
        raise _corrupt_tail(name, "it has no newline at the end (a partial write)")
    chunks: list[bytes] = []
    pos = end
    while pos > 0:
        step = min(_TAIL_CHUNK, pos)
        chunk = _pread(fd, step, pos - step)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            chunks.append(chunk[cut + 1 :])
            break
        chunks.append(chunk)
        pos -= step
        if end - pos > MAX_LINE_BYTES:
            raise _corrupt_tail(name, f"it is longer than the {MAX_LINE_BYTES}-byte line limit")
    line = b"".join(reversed(chunks))
    entry, reason = read_entry(line)
    if entry is None:
        raise _corrupt_tail(name, reason)
    digest: str = entry["entry_hash"]
    return digest


def _pread(fd: int, size: int, offset: int) -> bytes:
    parts: list[bytes] = []
    while size > 0:
        part = os.pread(fd, size, offset)
        if not part:
            break  # the file shrank under us: what was read is all there is
        parts.append(part)
        size -= len(part)
        offset += len(part)
    return b"".join(parts)


def _corrupt_tail(name: str, reason: str) -> AuditError:
    return AuditError(
        name,
        f"cannot append: the last line is not a whole, valid entry: {reason}. The chain is "
        f"already broken there, so no entry was added; `rollout audit verify` shows where. "
        f"Move the file aside to start a new chain.",
    )
