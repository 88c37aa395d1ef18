"""Golden files: where each test's golden lives, and how it is written and pruned.

A golden is an ordinary rollout file, named after its test id with every secret in the id
redacted (:mod:`~pytest_rollout.safety.names`). It is written only inside the golden
directory, and only when the new run does not compare equal to the golden it would replace
(by :func:`~pytest_rollout.diff.compare.compare` itself, provider tool-call ids renamed in
order), so re-recording an unchanged run leaves the file and its receipt byte-identical.

A golden and its receipt are written as one unit (:func:`write_golden_and_receipt`). Both
are first written whole as pending files beside their targets
(:mod:`~pytest_rollout.store.pending`); then the receipt is renamed into place, which is
the commit point, and the golden after it. A crash before the commit point leaves the old
pair and stale pending files; a crash after it leaves the new receipt, the old golden and
the new golden's pending file, whose bytes the new receipt vouches for. :func:`settle`,
run before every write into a golden folder and before a golden is read, tells the two
apart from the files alone: it renames a stale pending golden into place when its receipt
names its digest (the write had passed its commit point) and removes every other stale
pending file. So after any crash, once the folder is settled, a golden and its receipt are
both the old pair or both the new.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions
from ..diff.compare import compare
from ..errors import RolloutError, RolloutFormatError
from ..format.events import LLM_TURN_STARTED
from ..format.files import (
    SecretInFileError,
    Unreadable,
    contained,
    read_regular,
    sync_directory,
)
from ..format.loader import DEFAULT_LIMITS, Rollout, load, loads, read_rollout_bytes
from ..safety.names import redact_test_id
from .pending import Claim, PendingFile, claim_stale
from .receipt import (
    MAX_RECEIPT_BYTES,
    RECEIPT_SUFFIX,
    Receipt,
    ReceiptError,
    ReceiptStatus,
    make_receipt,
    receipt_path,
    verify,
)

__all__ = [
    "GoldenEditedError",
    "GoldenMissingError",
    "GoldenRef",
    "UnrecordedToolsError",
    "WriteResult",
    "find_unused",
    "golden_path",
    "module_dir",
    "prune_empty_dirs",
    "recover_pair",
    "safe_name",
    "settle",
    "write_golden_and_receipt",
]

SUFFIX: Final = ".jsonl"
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._\-\[\]=+,@]")
_MAX_NAME: Final = 120


class GoldenMissingError(RolloutError):
    """A test in compare mode has no golden file to replay and compare against."""

    __module__ = "pytest_rollout"

    def __init__(self, path: str, hint: str) -> None:
        self.path = path
        self.hint = hint
        super().__init__(f"no golden file for this test: {path} does not exist. {hint}")

    def __reduce__(self) -> tuple[type[GoldenMissingError], tuple[str, str]]:
        return (type(self), (self.path, self.hint))


class GoldenEditedError(RolloutError):
    """A test's golden no longer matches its receipt: it changed after it was recorded
    (edited, truncated), or it has no receipt. Nothing of it is replayed."""

    __module__ = "pytest_rollout"


class UnrecordedToolsError(RolloutError):
    """A golden whose turns announced tool calls that were never recorded: in dry replay
    those tools would run live, so the test is not replayed (``rollout_unrecorded_tools``)."""

    __module__ = "pytest_rollout"


@dataclass(frozen=True, slots=True)
class GoldenRef:
    """What the ``golden`` fixture gives: this test's golden file, to compare with."""

    path: str

    def load(self) -> Rollout:
        return load(self.path)

    def __repr__(self) -> str:
        return f"golden({self.path})"


def safe_name(name: str) -> str:
    """A file-name-safe, readable form of a test name or parametrize id.

    Characters outside a conservative set become ``_``; when that changed anything, or the
    name is too long, a short hash of the original is appended so that two different ids
    never share a file.
    """
    cleaned = _UNSAFE.sub("_", name).strip(".") or "_"
    if cleaned == name and len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned[: _MAX_NAME - 9]}-{digest}"


def golden_path(
    golden_dir: Path,
    nodeid: str,
    name: str | None = None,
    *,
    redact_name: Callable[[str], str] | None = None,
) -> Path:
    """``<golden dir>/<test file path without .py>/<test name>.jsonl`` for a test node id.

    ``name`` (from the marker) replaces the test name. ``redact_name`` (a redactor's
    :meth:`~pytest_rollout.safety.redact.Redactor.redact_name`) replaces each secret in the
    id's parts and in ``name`` first; a name without one is unchanged. Every component is
    then made safe, so the result is always inside ``golden_dir``.
    """
    if redact_name is not None:
        nodeid = redact_test_id(nodeid, redact_name)
        name = None if name is None else redact_name(name)
    file_part, _, rest = nodeid.partition("::")
    module = file_part[:-3] if file_part.endswith(".py") else file_part
    parts = [p for p in module.replace("\\", "/").split("/") if p and p != "."]
    # A parametrize id may itself hold "::" or "/": split names only before it.
    names, bracket, params = rest.partition("[")
    inner = names.split("::") if names else []
    if bracket and inner:
        inner[-1] += bracket + params
    if name is not None:
        inner = [*inner[:-1], name]
    parts = [safe_name(p if p != ".." else "__") for p in parts]
    components = [*parts, *(safe_name(p) for p in inner)]
    if not components:
        raise RolloutError(f"cannot derive a golden file name from test id {nodeid!r}")
    components[-1] += SUFFIX
    return golden_dir.joinpath(*components)


def module_dir(
    golden_dir: Path, nodeid: str, *, redact_name: Callable[[str], str] | None = None
) -> Path:
    """The directory that holds the goldens of the test file of ``nodeid``."""
    file_part = nodeid.partition("::")[0]
    return golden_path(golden_dir, file_part + "::_", redact_name=redact_name).parent


class WriteResult(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


def _same_run(old: Rollout, new: Rollout, options: CanonicalOptions) -> bool:
    """Whether ``new`` compares equal to ``old``, the golden it would replace: the very
    comparison replay and ``rollout diff`` make (provider tool-call ids renamed in order,
    volatile values renamed, volatile fields and raw provider bytes left out), so a run that
    passes against its golden never rewrites it. A golden whose request keys were taken
    another way (before volatile values were renamed, or by other rules) is rewritten, so
    that its next replay keys requests as this run did."""
    return _key_forms(old) == _key_forms(new) and compare(old.events, new.events, options).identical


def _key_forms(run: Rollout) -> list[object]:
    """How each model request's key was taken (``key_volatile``), in order."""
    return [e.data.get("key_volatile") for e in run.events if e.type == LLM_TURN_STARTED]


def write_golden_and_receipt(
    golden_dir: Path,
    path: Path,
    data: bytes,
    options: CanonicalOptions = DEFAULT_OPTIONS,
    *,
    redaction_mode: str,
    rules_sha256: str,
    scan: Callable[[bytes], str | None] | None = None,
) -> WriteResult:
    """Write ``data`` (a whole rollout) as the golden at ``path`` together with its receipt,
    as one unit (see the module documentation).

    Nothing is written when the golden matches its receipt and the new run compares equal
    to it. The new content is validated by the loader first, ``path`` must be inside
    ``golden_dir`` (checked before any directory is made), and the folder is settled first,
    which removes what interrupted writes left. ``scan`` is the redactor's last look at the
    bytes: when it names a secret, :class:`~pytest_rollout.format.files.SecretInFileError`
    is raised and nothing is written.
    """
    new = loads(data, path=str(path))
    target = contained(golden_dir, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target = contained(golden_dir, path)  # a directory swapped for a symlink meanwhile
    settle(target.parent)
    existed = target.exists()
    if existed and _sealed_and_unchanged(target, new, options):
        return WriteResult.UNCHANGED
    if scan is not None and (label := scan(data)) is not None:
        raise SecretInFileError(target, label)
    receipt = make_receipt(data, redaction_mode=redaction_mode, rules_sha256=rules_sha256)
    _commit_pair(target, data, receipt.to_bytes(target.name))
    return WriteResult.UPDATED if existed else WriteResult.CREATED


def _sealed_and_unchanged(target: Path, new: Rollout, options: CanonicalOptions) -> bool:
    """Whether the golden at ``target`` matches its receipt and has ``new``'s content."""
    try:
        data = read_rollout_bytes(target)
        if verify(target, data).status is not ReceiptStatus.OK:
            return False
        old = loads(data, path=str(target))
    except RolloutFormatError:
        return False  # a broken golden is replaced
    return _same_run(old, new, options)


def _commit_pair(target: Path, data: bytes, receipt_data: bytes) -> None:
    """Put ``data`` at ``target`` and ``receipt_data`` beside it; the receipt's rename is
    the commit point."""
    directory = target.parent
    with (
        PendingFile(target, data) as golden,
        PendingFile(receipt_path(target), receipt_data) as receipt,
    ):
        golden.keep()  # once the receipt may name it, only settle() decides its fate
        try:
            receipt.commit()
            sync_directory(directory)  # the commit is on disk before the golden moves
            golden.commit()
        except BaseException:
            golden.close()
            with contextlib.suppress(OSError):
                settle(directory)
            raise
    sync_directory(directory)


def settle(directory: Path) -> list[str]:
    """Finish or undo the interrupted writes of a golden folder; the names of the goldens
    that were put in place.

    A stale pending golden whose receipt names its digest (and not that of the golden in
    place) is renamed into place; every other stale pending golden or receipt is removed.
    Pending files whose writer is alive are left alone.
    """
    finished: list[str] = []
    for claim in claim_stale(directory, _in_golden_folder):
        try:
            if claim.target.endswith(SUFFIX) and _vouched(claim, directory / claim.target):
                claim.finish()
                finished.append(claim.target)
            else:
                claim.remove()
        except OSError:  # left for the next time the folder is settled
            continue
    if finished:
        sync_directory(directory)
    return finished


def recover_pair(golden_dir: Path, path: Path) -> bool:
    """Settle the folder of the golden at ``path`` before it is read; whether that golden
    was an interrupted write now put in place. Never raises for what it cannot fix."""
    try:
        target = contained(golden_dir, path)
    except RolloutError:
        return False
    if not target.parent.is_dir():
        return False
    return target.name in settle(target.parent)


def _in_golden_folder(target: str) -> bool:
    return target.endswith((SUFFIX, SUFFIX + RECEIPT_SUFFIX))


def _vouched(claim: Claim, golden: Path) -> bool:
    """Whether ``golden``'s receipt names the bytes of ``claim``, and not those of
    ``golden`` itself."""
    receipt = _receipt_of(golden)
    if receipt is None:
        return False
    data = claim.read(DEFAULT_LIMITS.total_bytes)
    if data is None or hashlib.sha256(data).hexdigest() != receipt.sha256:
        return False
    try:
        current = read_regular(str(golden), DEFAULT_LIMITS.total_bytes, "golden")
    except Unreadable:
        return True  # no golden yet: its first write was interrupted
    return hashlib.sha256(current).hexdigest() != receipt.sha256


def _receipt_of(golden: Path) -> Receipt | None:
    path = receipt_path(golden)
    try:
        raw = read_regular(str(path), MAX_RECEIPT_BYTES, "receipt")
        return Receipt.parse(raw, str(path), file=golden.name)
    except (Unreadable, ReceiptError):
        return None


def prune_empty_dirs(start: Path, golden_dir: Path) -> None:
    """Remove ``start`` and its parents while they are empty, stopping at ``golden_dir``."""
    root = golden_dir.resolve()
    current = start.resolve()
    while current != root and current.is_relative_to(root):
        try:
            current.rmdir()
        except OSError:  # not empty, or gone
            return
        current = current.parent


def find_unused(golden_dir: Path, owned: Iterable[Path], scopes: Iterable[Path]) -> list[Path]:
    """Golden files under ``scopes`` (directories in ``golden_dir``) that no test owns."""
    owned_set = {p.resolve() for p in owned}
    found: set[Path] = set()
    for scope in scopes:
        if scope.is_dir():
            found.update(p.resolve() for p in scope.rglob(f"*{SUFFIX}") if p.is_file())
        elif scope.is_file() and scope.suffix == SUFFIX:
            found.add(scope.resolve())
    root = golden_dir.resolve()
    return sorted(p for p in found - owned_set if p.is_relative_to(root))
