"""Safe writes: every file pytest-rollout writes is whole, in its directory, and private to it.

:func:`atomic_write` puts a file in place the way editors do: a temporary file in the same
directory, flushed to disk, then renamed over the target, so a reader (or a crash, or a
KeyboardInterrupt) sees the old file or the new one, never half of one. :func:`contained`
refuses a path that leaves its root, symlinks included.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

from ..errors import RolloutError

__all__ = [
    "FILE_MODE",
    "SecretInFileError",
    "Unreadable",
    "atomic_write",
    "contained",
    "read_regular",
    "sync_directory",
]


def _file_mode() -> int:
    # The umask can only be read by setting it; do it once, before any thread writes files.
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


#: The permissions of a normally created file (``0o666`` less the umask).
FILE_MODE: Final = _file_mode()


class SecretInFileError(RolloutError):
    """A file was not written because its bytes still held a secret after redaction.

    The message names the file and the rule's label, never the secret.
    """

    __module__ = "pytest_rollout"

    def __init__(self, path: str | os.PathLike[str], label: str) -> None:
        self.path = os.fspath(path)
        self.label = label
        super().__init__(
            f"refusing to write {self.path}: its bytes hold a secret ({label}) that redaction "
            f"did not replace. The file was left as it was. Add a redaction rule or key that "
            f"covers it (rollout_redact_patterns, rollout_redact_keys), or keep the secret out "
            f"of the run."
        )


def contained(root: Path, path: Path) -> Path:
    """``path`` with its directories' symlinks resolved, if that is inside ``root``.

    Raises :class:`RolloutError` otherwise. The file itself may be a symlink: it is
    replaced by a rename, never written through.
    """
    base = root.resolve()
    resolved = path.parent.resolve() / path.name
    if path.name in ("", ".", "..") or not resolved.is_relative_to(base):
        raise RolloutError(f"refusing to write {path}: it is outside {base}")
    return resolved


def atomic_write(
    target: Path, data: bytes, *, scan: Callable[[bytes], str | None] | None = None
) -> None:
    """Replace ``target`` with ``data`` so that readers see the old file or the new, whole.

    ``scan`` (a redactor's) looks at the bytes once more before anything is written; when
    it names a secret, :class:`SecretInFileError` is raised and ``target`` is untouched.
    """
    if scan is not None and (label := scan(data)) is not None:
        raise SecretInFileError(target, label)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), FILE_MODE)
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    sync_directory(target.parent)


def sync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a rename or a new name in ``directory`` durable (best effort: not every file
    system allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class Unreadable(Exception):
    """Why :func:`read_regular` read nothing (``missing``: there is no such file)."""

    def __init__(self, reason: str, *, missing: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.missing = missing


def read_regular(name: str, limit: int, what: str) -> bytes:
    """Up to ``limit + 1`` bytes of the regular file ``name``, so an oversize file shows.

    The kind of file is checked on the opened handle, which is opened without blocking: a
    FIFO, device, socket or directory is refused, never read. Raises :class:`Unreadable`.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(name, flags)
    except FileNotFoundError as exc:
        raise Unreadable(f"cannot open: {exc.strerror}", missing=True) from None
    except IsADirectoryError:
        raise Unreadable(f"is a directory, not a {what}") from None
    except OSError as exc:
        raise Unreadable(f"cannot open: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"is a {_file_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise Unreadable(f"file is {info.st_size} bytes, over the {limit}-byte limit")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            # One byte past the limit, so that a file growing while it is read shows too.
            return handle.read(limit + 1)
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"
