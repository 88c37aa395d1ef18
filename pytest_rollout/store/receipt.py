"""Receipts: tamper evidence for golden files.

Each golden ``X.jsonl`` can have a sidecar ``X.jsonl.receipt``: a small JSON file holding
the sha256 of the golden's exact bytes, its size and line count, the rollout format version
and the redaction settings it was recorded under. A receipt has no timestamp, so an
unchanged golden has a byte-identical receipt and re-recording churns nothing in review.

What a matching receipt proves, and what it does not:

* **Integrity.** The golden is byte for byte the file that the recorder wrote, or that
  someone deliberately accepted with ``rollout seal``. A hand edit, a bad merge, a
  truncated copy or an editor that rewrote line endings is caught, with the old and new
  digests and, when they differ, the event counts.
* **Not authorship.** A receipt is not a signature: there is no key. Anyone who can edit
  the golden can edit or re-seal its receipt too. It makes a change visible (the receipt
  changes in the same diff) and deliberate (someone had to seal it); it cannot tell who
  made it, or stop them.

Receipts are untrusted input like any rollout: they are read with a size cap, only from
regular files (a FIFO at the receipt's path is refused on the opened handle, without
blocking), and parsed strictly. :func:`verify` never raises for a missing or broken
receipt; it returns a :class:`Verification` whose status says which it was.

This module never imports pytest.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import re
import shlex
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

import orjson

from ..errors import RolloutFileError
from ..format.files import Unreadable, read_regular, sync_directory
from ..format.loader import read_rollout_bytes
from ..safety.sanitize import excerpt, sanitize
from .pending import PendingFile

__all__ = [
    "MAX_RECEIPT_BYTES",
    "RECEIPT_SUFFIX",
    "RECEIPT_VERSION",
    "ROLLOUT_FORMAT",
    "Receipt",
    "ReceiptError",
    "ReceiptStatus",
    "Verification",
    "count_events",
    "exact_fields",
    "make_receipt",
    "receipt_path",
    "short_digest",
    "verify",
    "write_receipt",
]

RECEIPT_SUFFIX: Final = ".receipt"
#: The version of the receipt file itself; a reader refuses versions it does not know.
RECEIPT_VERSION: Final = 1
#: The version of the rollout file format a receipt vouches for: docs/file-format.md (one JSON event
#: per line). Bump it, and teach the loader, when that on-disk contract changes.
ROLLOUT_FORMAT: Final = 1
#: A receipt is a few hundred bytes; anything over this is refused unread.
MAX_RECEIPT_BYTES: Final = 64 * 1024

_HEX64: Final = re.compile(r"[0-9a-f]{64}")
_SHORT: Final = 12
_FIELDS: Final = frozenset({"receipt", "file", "sha256", "bytes", "events", "format", "redaction"})
#: The digest of the receipt's own body: every other field, as compact JSON with sorted keys.
#: A receipt written before it existed has none and is still read.
_BODY_DIGEST: Final = "body_sha256"
#: The fields only a replay receipt has (:mod:`~pytest_rollout.store.replay_receipt`): the
#: golden receipt it replayed, and what the replay matched. Their values are checked there.
_REPLAY_FIELDS: Final = frozenset({"replay_of", "replay"})
_REDACTION_FIELDS: Final = frozenset({"mode", "rules_sha256"})


class ReceiptError(RolloutFileError):
    """A receipt was refused: ``path`` names it and ``reason`` says what is wrong."""

    __module__ = "pytest_rollout"


def receipt_path(golden: Path) -> Path:
    """The receipt beside ``golden``: ``X.jsonl`` -> ``X.jsonl.receipt``, same directory."""
    return golden.with_name(golden.name + RECEIPT_SUFFIX)


def count_events(data: bytes) -> int:
    """The number of lines in ``data``: one per event (a last line without ``\\n`` counts)."""
    lines = data.count(b"\n")
    return lines + 1 if data and not data.endswith(b"\n") else lines


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a receipt vouches for: the golden's digest, size and line count, the rollout
    format, and the redaction mode and rules digest it was recorded under.

    Invalid values (a digest that is not 64 lowercase hex digits, a negative count, more
    events than bytes) raise :class:`ValueError`.
    """

    sha256: str
    bytes: int
    events: int
    format: int
    redaction_mode: str
    rules_sha256: str
    #: A replay receipt's ``replay_of`` and ``replay`` fields, as read (``None``: a golden's).
    replay: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem is not None:
            raise ValueError(problem)

    def to_bytes(self, name: str) -> builtins.bytes:
        """The receipt file for the golden called ``name`` (its base name): indented JSON
        with sorted keys and a final newline, the same bytes for the same receipt."""
        obj: dict[str, Any] = {
            "receipt": RECEIPT_VERSION,
            "file": name,
            "sha256": self.sha256,
            "bytes": self.bytes,
            "events": self.events,
            "format": self.format,
            "redaction": {"mode": self.redaction_mode, "rules_sha256": self.rules_sha256},
        }
        if self.replay is not None:
            obj.update(self.replay)
        try:
            obj[_BODY_DIGEST] = _body_digest(obj)
            text = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError as exc:  # a file name that is not valid Unicode
            raise ReceiptError(name, f"cannot write a receipt for this file name: {exc}") from None
        return text + b"\n"

    def digest(self, name: str) -> str:
        """The ``body_sha256`` this receipt has when written for the file called ``name``:
        what a replay receipt names as the golden receipt it replayed."""
        return str(orjson.loads(self.to_bytes(name))[_BODY_DIGEST])

    @classmethod
    def parse(cls, data: builtins.bytes, path: str, *, file: str | None = None) -> Receipt:
        """Read a receipt file's bytes; ``path`` names it in errors.

        When ``file`` is given, the receipt must be the one of the golden with that base
        name. Raises :class:`ReceiptError` for anything but a well-formed receipt of a
        known version.
        """
        if len(data) > MAX_RECEIPT_BYTES:
            raise ReceiptError(
                path, f"receipt is {len(data)} bytes, over the {MAX_RECEIPT_BYTES}-byte limit"
            )
        obj = _json_object(data, path)
        _check_version(obj.get("receipt"), path)
        written = _BODY_DIGEST in obj
        digest = obj.pop(_BODY_DIGEST, None)
        replay = {key: obj[key] for key in _REPLAY_FIELDS & obj.keys()}
        exact_fields(obj, _FIELDS | replay.keys(), "", path)
        if replay and replay.keys() != _REPLAY_FIELDS:
            raise ReceiptError(path, f"missing field {min(_REPLAY_FIELDS - replay.keys())!r}")
        if replay and not written:
            raise ReceiptError(path, f"a replay receipt must carry its {_BODY_DIGEST}")
        if written and digest != _body_digest(obj):
            raise ReceiptError(
                path,
                "the receipt was edited: its body_sha256 is not the digest of its other fields "
                "(re-seal the golden with rollout seal once you trust it)",
            )
        _check_file(obj["file"], file, path)
        redaction = _redaction_object(obj["redaction"], path)
        _check_kinds(obj, redaction, path)
        try:
            return cls(
                sha256=obj["sha256"],
                bytes=obj["bytes"],
                events=obj["events"],
                format=obj["format"],
                redaction_mode=redaction["mode"],
                rules_sha256=redaction["rules_sha256"],
                replay=replay or None,
            )
        except ValueError as exc:
            raise ReceiptError(path, str(exc)) from None


def _problem(receipt: Receipt) -> str | None:
    if not isinstance(receipt.sha256, str) or not _HEX64.fullmatch(receipt.sha256):
        return "sha256 must be 64 lowercase hex digits"
    for name in ("bytes", "events"):
        value = getattr(receipt, name)
        if not _is_int(value) or value < 0:
            return f"{name} must be an integer of 0 or more, not {_value(value)}"
    if receipt.events > receipt.bytes:
        return f"{receipt.events} events cannot fit in {receipt.bytes} bytes"
    if not _is_int(receipt.format) or receipt.format < 1:
        return f"format must be an integer of 1 or more, not {_value(receipt.format)}"
    if receipt.format > ROLLOUT_FORMAT:
        # A rollout format this reader does not know: it cannot vouch for what it means.
        return f"format {receipt.format} is newer than this reader knows ({ROLLOUT_FORMAT})"
    if not isinstance(receipt.redaction_mode, str) or not receipt.redaction_mode:
        return "redaction.mode must be a non-empty string"
    rules = receipt.rules_sha256
    if not isinstance(rules, str) or (rules and not _HEX64.fullmatch(rules)):
        return 'redaction.rules_sha256 must be 64 lowercase hex digits, or "" when unknown'
    return None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _quote(text: str) -> str:
    """``text`` as a short, quoted, terminal-safe JSON string."""
    return excerpt(json.dumps(text), 60)


def _value(value: object) -> str:
    try:
        return excerpt(json.dumps(value), 40)
    except (TypeError, ValueError):
        return excerpt(repr(value), 40)


_KIND_NAMES: Final = {
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    list: "an array",
    dict: "an object",
    type(None): "null",
}


def _field_problem(key: str, wanted: str, value: object) -> str:
    return f"field {key!r} must be {wanted}, not {_KIND_NAMES.get(type(value), 'that')}"


def _json_object(data: bytes, path: str) -> dict[str, Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReceiptError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except _Duplicate as exc:
        raise ReceiptError(path, f"field {_quote(str(exc))} appears twice") from None
    except json.JSONDecodeError as exc:
        raise ReceiptError(path, f"not valid JSON: {exc.msg} (line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:  # huge integers, deep nesting
        raise ReceiptError(path, f"not valid JSON: {excerpt(str(exc), 80)}") from None
    if not isinstance(obj, dict):
        raise ReceiptError(path, "not a JSON object")
    return obj


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _Duplicate(key)
        obj[key] = value
    return obj


def _body_digest(body: dict[str, Any]) -> str:
    """The sha256 of a receipt's fields but its own digest, as compact sorted JSON (of a body
    orjson cannot write, as an integer beyond 64 bits: a digest no receipt has)."""
    try:
        return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()
    except orjson.JSONEncodeError:
        return "not JSON that a receipt holds"


def _no_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


def exact_fields(obj: dict[str, Any], wanted: frozenset[str], prefix: str, path: str) -> None:
    """Refuse ``obj`` (a field of the receipt at ``path``, named by ``prefix``) unless it
    has exactly the fields ``wanted``."""
    missing = sorted(wanted - obj.keys())
    if missing:
        raise ReceiptError(path, f"missing field {prefix + missing[0]!r}")
    extra = sorted(obj.keys() - wanted)
    if extra:
        raise ReceiptError(path, f"unexpected field {_quote(prefix + extra[0])}")


def _check_version(version: object, path: str) -> None:
    if not _is_int(version):
        raise ReceiptError(path, _field_problem("receipt", "an integer", version))
    if version != RECEIPT_VERSION:
        raise ReceiptError(
            path,
            f"unknown receipt version {version} (this pytest-rollout reads version "
            f"{RECEIPT_VERSION}; upgrade it, or re-seal the golden)",
        )


def _check_file(name: object, file: str | None, path: str) -> None:
    """The receipt's ``file`` field: a name, and ``file`` when one is expected."""
    if not isinstance(name, str) or not name:
        raise ReceiptError(path, _field_problem("file", "a non-empty string", name))
    if file is not None and name != file:
        raise ReceiptError(path, f"it is the receipt of {_quote(name)}, not of {_quote(file)}")


def _redaction_object(redaction: object, path: str) -> dict[str, Any]:
    if not isinstance(redaction, dict):
        raise ReceiptError(path, _field_problem("redaction", "an object", redaction))
    exact_fields(redaction, _REDACTION_FIELDS, "redaction.", path)
    return redaction


def _check_kinds(obj: dict[str, Any], redaction: dict[str, Any], path: str) -> None:
    """The strings are strings and the counts integers (their values are checked by
    :class:`Receipt` itself)."""
    strings = {"sha256": obj["sha256"]} | {
        f"redaction.{key}": redaction[key] for key in ("mode", "rules_sha256")
    }
    for key, value in strings.items():
        if not isinstance(value, str):
            raise ReceiptError(path, _field_problem(key, "a string", value))
    for key in ("bytes", "events", "format"):
        if not _is_int(obj[key]):
            raise ReceiptError(path, _field_problem(key, "an integer", obj[key]))


def make_receipt(data: bytes, *, redaction_mode: str, rules_sha256: str) -> Receipt:
    """The receipt of the golden whose exact bytes are ``data``."""
    return Receipt(
        sha256=hashlib.sha256(data).hexdigest(),
        bytes=len(data),
        events=count_events(data),
        format=ROLLOUT_FORMAT,
        redaction_mode=redaction_mode,
        rules_sha256=rules_sha256,
    )


def write_receipt(golden: Path, receipt: Receipt) -> None:
    """Write the receipt of ``golden`` beside it, atomically; an identical receipt is left
    untouched. The caller keeps ``golden`` inside its directory. (A golden written together
    with its receipt goes through ``write_golden_and_receipt`` of the session layer.)"""
    target = receipt_path(golden)
    data = receipt.to_bytes(golden.name)
    try:
        unchanged = read_regular(str(target), MAX_RECEIPT_BYTES, "receipt") == data
    except Unreadable:
        unchanged = False
    if not unchanged:
        with PendingFile(target, data) as pending:
            pending.commit()
        sync_directory(target.parent)


class ReceiptStatus(StrEnum):
    OK = "ok"
    MISSING = "missing"
    MISMATCH = "mismatch"
    CORRUPT = "corrupt"


@dataclass(frozen=True, slots=True)
class Verification:
    """The verdict on one golden against its receipt.

    ``expected_*`` and ``receipt`` come from the receipt (``None`` when it is missing or
    corrupt), ``actual_*`` from the golden's bytes. ``reason`` says why a receipt is
    corrupt, or how a mismatching file differs; it is ``None`` otherwise.
    """

    status: ReceiptStatus
    golden: str
    expected_sha256: str | None
    actual_sha256: str
    expected_events: int | None
    actual_events: int
    reason: str | None
    receipt: Receipt | None
    actual_bytes: int = 0

    @property
    def truncated(self) -> bool:
        """The file is shorter than the receipt says (it lost bytes somewhere)."""
        return self.receipt is not None and self.actual_bytes < self.receipt.bytes

    def message(self, test: str | None = None) -> str:
        """A multi-line explanation of the verdict, with the remedies for a refused golden.

        ``test`` (a pytest node id) fills in the re-record command; file-derived text is
        sanitized.
        """
        golden = sanitize(self.golden)
        receipt = sanitize(receipt_path(Path(self.golden)).name)
        if self.status is ReceiptStatus.OK:
            return (
                f"golden {golden} matches its receipt "
                f"(sha256 {short_digest(self.actual_sha256)}, {_plural(self.actual_events)})"
            )
        if self.status is ReceiptStatus.MISSING:
            lines = [
                f"golden {golden} has no receipt ({receipt} not found), so nothing shows "
                "that it is the file that was recorded."
            ]
        elif self.status is ReceiptStatus.CORRUPT:
            lines = [f"golden {golden} has an unusable receipt ({receipt}): {self._reason()}"]
        else:
            lines = [
                f"golden {golden} does not match its receipt ({receipt}): it changed after "
                "it was recorded or sealed.",
                f"  expected sha256: {self.expected_sha256}",
                f"  actual sha256:   {self.actual_sha256}",
            ]
            if self.expected_events != self.actual_events:
                lines.append(
                    f"  events: {self.actual_events} in the file, "
                    f"{self.expected_events} in the receipt"
                )
            if self.receipt is not None and self.actual_bytes != self.receipt.bytes:
                cut = " (shorter)" if self.truncated else ""
                lines.append(
                    f"  bytes: {self.actual_bytes} in the file, "
                    f"{self.receipt.bytes} in the receipt{cut}"
                )
        command = "<test>" if test is None else sanitize(shlex.quote(test))
        lines += [
            f"To accept the golden as it is: re-record it with `pytest --rollout-record "
            f"{command}`,",
            "or accept a deliberate edit with `pytest --rollout-accept-edits` or "
            f"`rollout seal {sanitize(shlex.quote(self.golden))}`.",
        ]
        return "\n".join(lines)

    def summary(self) -> str:
        """The verdict in one line, as ``rollout check`` prints it after ``receipt:``."""
        if self.status is ReceiptStatus.OK:
            return f"ok (sha256 {short_digest(self.actual_sha256)}, {_plural(self.actual_events)})"
        if self.status is ReceiptStatus.MISSING:
            return "none"
        if self.status is ReceiptStatus.CORRUPT:
            return f"corrupt — {self._reason()}"
        return (
            f"MISMATCH — expected sha256 {short_digest(self.expected_sha256 or '')}, "
            f"got {short_digest(self.actual_sha256)} ({self._reason()})"
        )

    def _reason(self) -> str:
        return excerpt(self.reason or "", 200)

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "expected_sha256": self.expected_sha256,
            "actual_sha256": self.actual_sha256,
            "expected_events": self.expected_events,
            "actual_events": self.actual_events,
            "reason": self.reason,
        }


def short_digest(digest: str) -> str:
    """The first 12 hex digits of a digest, and an ellipsis."""
    return f"{digest[:_SHORT]}…"


def _plural(events: int) -> str:
    return f"{events} event{'' if events == 1 else 's'}"


def verify(golden: Path, data: bytes | None = None) -> Verification:
    """Check ``golden`` (its bytes are ``data``, read from the file when ``None``) against
    its receipt.

    A missing, unreadable or malformed receipt is a status, never an exception; only
    reading the golden itself can raise (:class:`RolloutFormatError`, as the loader would).
    """
    if data is None:
        data = read_rollout_bytes(golden)
    actual_sha256 = hashlib.sha256(data).hexdigest()
    actual_events = count_events(data)

    def verdict(
        status: ReceiptStatus, reason: str | None = None, receipt: Receipt | None = None
    ) -> Verification:
        return Verification(
            status=status,
            golden=str(golden),
            expected_sha256=None if receipt is None else receipt.sha256,
            actual_sha256=actual_sha256,
            expected_events=None if receipt is None else receipt.events,
            actual_events=actual_events,
            reason=reason,
            receipt=receipt,
            actual_bytes=len(data),
        )

    path = receipt_path(golden)
    try:
        raw = read_regular(str(path), MAX_RECEIPT_BYTES, "receipt")
    except Unreadable as exc:
        if exc.missing:
            return verdict(ReceiptStatus.MISSING)
        return verdict(ReceiptStatus.CORRUPT, exc.reason)
    try:
        receipt = Receipt.parse(raw, str(path), file=golden.name)
    except ReceiptError as exc:
        return verdict(ReceiptStatus.CORRUPT, exc.reason)
    if receipt.sha256 != actual_sha256:
        return verdict(ReceiptStatus.MISMATCH, _difference(receipt, data, actual_events), receipt)
    if (receipt.bytes, receipt.events) != (len(data), actual_events):
        return verdict(
            ReceiptStatus.CORRUPT,
            f"its digest matches the file but it says {receipt.bytes} bytes and "
            f"{_plural(receipt.events)}, where the file has {len(data)} and {actual_events}",
        )
    return verdict(ReceiptStatus.OK, receipt=receipt)


def _difference(receipt: Receipt, data: bytes, events: int) -> str:
    if len(data) < receipt.bytes:
        change = f"shrank from {receipt.bytes} to {len(data)} bytes"
    elif len(data) > receipt.bytes:
        change = f"grew from {receipt.bytes} to {len(data)} bytes"
    else:
        change = f"edited in place: same size ({len(data)} bytes), other content"
    if events != receipt.events:
        change += f", {receipt.events} to {events} events"
    return change
