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

Several processes (pytest-xdist workers) may append to the same file: :func:`append_entry`
holds an exclusive ``flock`` while it reads the last entry and writes the next. The lock is
advisory: it orders writers that take it, which every writer in this module does. POSIX only.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson

from ..errors import RolloutFileError
from ..format.files import FILE_MODE, Unreadable, read_regular, sync_directory

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

#: The only event types an audit trail holds.
AUDIT_EVENT_TYPES: Final = frozenset({"run.started", "audit.action", "run.completed", "run.failed"})

#: The ``prev_hash`` of the first entry of a chain.
GENESIS: Final = "0" * 64

#: The name of a day's audit file.
FILE_NAME: Final = "audit.jsonl"

#: The longest line (without its newline) that is written or read back.
MAX_LINE_BYTES: Final = 1024 * 1024

#: The largest audit file :func:`verify_audit` reads.
MAX_FILE_BYTES: Final = 1024 * 1024 * 1024

FIELDS: Final = ("timestamp", "run_id", "event_type", "payload", "prev_hash", "entry_hash")
_HASHED: Final = FIELDS[:-1]
_FIELD_SET: Final = frozenset(FIELDS)
_HEX64: Final = re.compile(r"[0-9a-f]{64}")
_TIMESTAMP: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
_BOM: Final = b"\xef\xbb\xbf"
_TAIL_CHUNK: Final = 64 * 1024


class AuditError(RolloutFileError):
    """An audit file could not be read or appended to. ``path`` names the file, ``reason``
    says why."""

    __module__ = "pytest_rollout"


# -- where and what --------------------------------------------------------------------


def audit_path(root: Path, when: datetime) -> Path:
    """``<root>/<YYYY-MM-DD>/audit.jsonl``, the day being ``when``'s UTC date.

    A naive ``when`` is taken to be UTC already.
    """
    return root / _utc(when).date().isoformat() / FILE_NAME


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _timestamp(when: datetime) -> str:
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


def _jsonable(value: Any) -> Any:
    """orjson's ``default``: any mapping as a dict, anything else it cannot encode as text."""
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def _plain_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` as the JSON object it will read back as, so its hash is the one verified."""
    try:
        data = orjson.dumps(dict(payload), default=_jsonable, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError as exc:
        raise ValueError(f"the audit payload cannot be encoded as JSON: {exc}") from None
    plain: dict[str, Any] = orjson.loads(data)
    return plain


# -- appending -------------------------------------------------------------------------


def append_entry(
    path: Path,
    run_id: str,
    event_type: str,
    payload: Mapping[str, Any],
    *,
    now: datetime | None = None,
) -> str:
    """Append one entry to the audit file ``path`` and return its ``entry_hash``.

    The directory is created when missing, the file when it does not exist (never through a
    symbolic link). An exclusive ``flock`` is held while the last entry is read (from the end
    of the file, for its ``entry_hash``) and the new line is written and synced, so processes
    appending at once each chain onto the entry before theirs. ``now`` (default: the time
    the lock is taken) is the entry's timestamp.

    ``payload`` values JSON cannot hold are written as text (``str(value)``). Raises
    ``ValueError`` for an event type outside :data:`AUDIT_EVENT_TYPES`, a payload orjson
    cannot encode (an integer beyond 64 bits) or an entry over :data:`MAX_LINE_BYTES`;
    :class:`AuditError` when the file cannot be opened or written, or when its last line is
    not a whole, valid entry (the chain is already broken there and no entry is guessed at:
    ``rollout audit verify`` shows where).
    """
    if event_type not in AUDIT_EVENT_TYPES:
        allowed = ", ".join(sorted(AUDIT_EVENT_TYPES))
        raise ValueError(f"{event_type!r} is not an audit event type (one of {allowed})")
    if not isinstance(run_id, str):
        raise TypeError(f"run_id must be a str, not {type(run_id).__name__}")
    plain = _plain_payload(payload)
    _check_size(run_id, event_type, plain)
    name = os.fspath(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AuditError(path.parent, f"cannot create the directory: {exc.strerror}") from None
    flags = (
        os.O_RDWR
        | os.O_APPEND
        | os.O_CREAT
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_NOCTTY", 0)
    )
    try:
        fd = os.open(name, flags, FILE_MODE)
    except OSError as exc:
        if os.path.islink(name):
            raise AuditError(name, "cannot append: it is a symbolic link") from None
        raise AuditError(name, f"cannot open: {exc.strerror}") from None
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


def _check_size(run_id: str, event_type: str, payload: dict[str, Any]) -> None:
    """Refuse an entry whose line would be over :data:`MAX_LINE_BYTES`, before any file is
    touched (the timestamp and hashes have fixed lengths, so a draft measures it exactly)."""
    draft = {
        "timestamp": _timestamp(datetime(1, 1, 1, tzinfo=UTC)),
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
        "timestamp": _timestamp(datetime.now(UTC) if now is None else now),
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
    entry, reason = _read_entry(line)
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


# -- reading and verifying -------------------------------------------------------------


def _read_entry(line: bytes) -> tuple[dict[str, Any] | None, str]:
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
        entry, reason = _read_entry(data[pos:end])
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


# -- which tool calls are actions ------------------------------------------------------

#: Tool names whose every call changes state (matched whole, in any case).
STATE_MODIFYING_TOOLS: Final[frozenset[str]] = frozenset(
    {
        # shells and code execution
        "bash",
        "sh",
        "zsh",
        "shell",
        "powershell",
        "cmd",
        "exec",
        "eval",
        "run_command",
        "execute_command",
        "run_shell_command",
        "shell_command",
        "terminal",
        "python",
        "python_repl",
        "code_interpreter",
        "code_execution",
        "computer",
        # files
        "file_write",
        "write_file",
        "file_edit",
        "edit_file",
        "file_delete",
        "delete_file",
        "create_file",
        "move_file",
        "rename_file",
        "copy_file",
        "append_file",
        "mkdir",
        "rm",
        "mv",
        "cp",
        "touch",
        "chmod",
        "chown",
        "apply_patch",
        "str_replace_editor",
        "str_replace_based_edit_tool",
        "text_editor",
        # version control
        "git_commit",
        "git_push",
        "git_merge",
        "git_rebase",
        "git_reset",
        "git_checkout",
        "git_tag",
        # network and messaging
        "http_post",
        "http_put",
        "http_patch",
        "http_delete",
        "http_request",
        "send_email",
        "send_message",
        "send_sms",
        "post_message",
        # data and infrastructure
        "sql",
        "execute_sql",
        "run_sql",
        "sql_execute",
        "kubectl",
        "docker",
        "terraform",
        "deploy",
        "pip_install",
        "npm_install",
    }
)

#: Name tokens that make a tool's calls actions ("createTicket", "db.delete_row").
STATE_MODIFYING_KEYWORDS: Final[frozenset[str]] = frozenset(
    {
        "write",
        "delete",
        "del",
        "remove",
        "rm",
        "create",
        "update",
        "upsert",
        "insert",
        "drop",
        "truncate",
        "alter",
        "commit",
        "push",
        "merge",
        "rebase",
        "revert",
        "rollback",
        "send",
        "post",
        "put",
        "patch",
        "exec",
        "execute",
        "eval",
        "run",
        "spawn",
        "shell",
        "move",
        "rename",
        "copy",
        "replace",
        "overwrite",
        "append",
        "deploy",
        "install",
        "uninstall",
        "kill",
        "terminate",
        "restart",
        "reboot",
        "shutdown",
        "stop",
        "modify",
        "edit",
        "set",
        "reset",
        "clear",
        "purge",
        "wipe",
        "destroy",
        "save",
        "upload",
        "transfer",
        "pay",
        "purchase",
        "buy",
        "refund",
        "charge",
        "withdraw",
        "deposit",
        "cancel",
        "approve",
        "reject",
        "grant",
        "revoke",
        "assign",
        "invite",
        "enable",
        "disable",
        "lock",
        "unlock",
        "publish",
        "submit",
        "restore",
        "migrate",
        "provision",
        "apply",
        "chmod",
        "chown",
        "mkdir",
        "touch",
        "notify",
        "tweet",
        "reply",
        "mutate",
        "register",
        "clone",
        "download",
        "import",
        "sync",
        "flush",
        "increment",
        "decrement",
    }
)

_TOKEN: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _tokens(name: str) -> set[str]:
    """The lowercase words of a tool name: split on anything but ASCII letters and digits,
    and on camelCase ("HTTPPostJSON" is http, post, json)."""
    return {word.lower() for word in _TOKEN.findall(name)}


def is_state_modifying(
    name: str, *, tools: Iterable[str] = (), keywords: Iterable[str] = ()
) -> bool:
    """Whether a call of the tool ``name`` is an action the audit trail records.

    First the whole name, in any case, against :data:`STATE_MODIFYING_TOOLS` and ``tools``;
    then its words ("createTicket" is create and ticket, "db.delete_row" is db, delete and
    row) against :data:`STATE_MODIFYING_KEYWORDS` and ``keywords``. Read-only names such as
    ``get_weather``, ``search`` or ``read_file`` are not actions.
    """
    whole = name.strip().lower()
    if not whole:
        return False
    if whole in STATE_MODIFYING_TOOLS or whole in {t.strip().lower() for t in tools}:
        return True
    words = _tokens(name)
    return not words.isdisjoint(STATE_MODIFYING_KEYWORDS) or not words.isdisjoint(
        {k.strip().lower() for k in keywords}
    )


# -- the plugin's sink -----------------------------------------------------------------


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
            append_entry(audit_path(self.root, now), run_id, event_type, payload, now=now)
        except (AuditError, ValueError, TypeError) as exc:
            if self._on_error is None:
                raise
            message = f"audit trail: entry not written: {exc}"
            if message not in self._reported:
                self._reported.add(message)
                self._on_error(message)
