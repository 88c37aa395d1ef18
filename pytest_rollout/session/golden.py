"""Golden files: where each test's golden lives, and how it is written and pruned.

A golden is an ordinary rollout file. It is written atomically (a temporary file in the
same directory, flushed to disk, then renamed over the old one), only inside the golden
directory, and only when its canonical content changed, so re-recording an unchanged run
leaves the file byte-identical.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions, canonicalize
from ..errors import RolloutError, RolloutFormatError
from ..format.files import atomic_write, contained
from ..format.loader import Rollout, load, loads

__all__ = [
    "GoldenEditedError",
    "GoldenMissingError",
    "GoldenRef",
    "WriteResult",
    "find_unused",
    "golden_path",
    "module_dir",
    "prune_empty_dirs",
    "safe_name",
    "write_golden",
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


def golden_path(golden_dir: Path, nodeid: str, name: str | None = None) -> Path:
    """``<golden dir>/<test file path without .py>/<test name>.jsonl`` for a test node id.

    ``name`` (from the marker) replaces the test name. Every component is made safe, so
    the result is always inside ``golden_dir``.
    """
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


def module_dir(golden_dir: Path, nodeid: str) -> Path:
    """The directory that holds the goldens of the test file of ``nodeid``."""
    return golden_path(golden_dir, nodeid.partition("::")[0] + "::_").parent


class WriteResult(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


def _canonical_keys(rollout: Rollout, options: CanonicalOptions) -> list[bytes]:
    return [e.key for e in canonicalize(rollout.events, options)]


def write_golden(
    golden_dir: Path,
    path: Path,
    data: bytes,
    options: CanonicalOptions = DEFAULT_OPTIONS,
    *,
    scan: Callable[[bytes], str | None] | None = None,
    keep_unchanged: bool = True,
) -> WriteResult:
    """Write ``data`` (a whole rollout) as the golden at ``path``, atomically.

    Nothing is written when the existing golden has the same canonical content. The new
    content is validated by the loader first, so a golden is always loadable, and ``path``
    must be inside ``golden_dir`` (checked before any directory is made). ``scan`` is the
    redactor's last look at the bytes (see :func:`~pytest_rollout.format.files.atomic_write`).
    ``keep_unchanged=False`` rewrites even an unchanged golden (one whose receipt no longer
    vouches for its bytes).
    """
    new = loads(data, path=str(path))
    target = contained(golden_dir, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target = contained(golden_dir, path)  # a directory swapped for a symlink meanwhile
    existed = target.exists()
    if existed and keep_unchanged:
        try:
            old = load(target)
        except RolloutFormatError:
            pass  # a broken golden is replaced
        else:
            if _canonical_keys(old, options) == _canonical_keys(new, options):
                return WriteResult.UNCHANGED
    atomic_write(target, data, scan=scan)
    return WriteResult.UPDATED if existed else WriteResult.CREATED


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
