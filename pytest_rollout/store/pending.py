"""Pending files (docs/secrets.md): the temporary files of a write, and what a crash leaves.

A file is first written whole as a *pending file* beside its target,
``.<target name>.<8 hex digits>.tmp``, flushed to disk, then renamed over the target. Its
writer holds an exclusive lock (``flock``) on it for as long as it exists, and the kernel
drops that lock when the writer ends, however it ends (an exception, ``os._exit``,
SIGKILL). So a pending file that can be locked has no writer any more: it is *stale*, left
by an interrupted write, and :func:`claim_stale` hands it to whoever cleans the directory
(which may still finish the write it belonged to, or remove it).

Creating a file and locking it are two steps, so a cleaner may claim a pending file in
between; the writer notices (the name no longer leads to the file it locked) and starts
again with a new name. The pending files of :func:`~pytest_rollout.format.files.atomic_write`
(``mkstemp`` names, never locked) are recognized as stale too.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..format.files import FILE_MODE

__all__ = ["PENDING_NAME", "Claim", "PendingFile", "claim_stale"]

#: The name of a pending file: the target's name, then 8 characters of ``[a-z0-9_]`` (this
#: module writes hex digits; ``mkstemp`` uses the wider set).
PENDING_NAME: Final = re.compile(r"\.(?P<target>.+)\.[a-z0-9_]{8}\.tmp")
_ATTEMPTS: Final = 16
_FLAGS: Final = os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


def _leads_to(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (and no symlink)."""
    try:
        named = os.lstat(path)
    except OSError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _create_locked(target: Path) -> tuple[int, Path]:
    """A new, empty, locked pending file for ``target``."""
    for _ in range(_ATTEMPTS):
        path = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FLAGS, 0o600)
        except FileExistsError:
            continue
        try:
            # Blocking: a cleaner holds the lock only while it removes a file it claimed.
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        if _leads_to(path, fd):
            return fd, path
        os.close(fd)  # claimed and removed before it was locked: start again
    raise FileExistsError(f"could not create a pending file beside {target}")


class PendingFile:
    """``data`` written whole beside ``target``, flushed to disk and locked, until it is
    renamed over ``target`` (:meth:`commit`) or closed. Closing removes it unless it was
    committed or :meth:`keep` was called; closing always releases the lock."""

    def __init__(self, target: Path, data: bytes) -> None:
        self.target = target
        self._fd, self.path = _create_locked(target)
        self._committed = False
        self._kept = False
        try:
            with os.fdopen(self._fd, "wb", closefd=False) as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(self._fd, FILE_MODE)
                os.fsync(self._fd)
        except BaseException:
            self.close()
            raise

    def commit(self) -> None:
        """Rename the pending file over its target."""
        os.replace(self.path, self.target)
        self._committed = True

    def keep(self) -> None:
        """Leave the file in place when it is closed uncommitted (for a recovery to find)."""
        self._kept = True

    def close(self) -> None:
        if self._fd < 0:
            return
        try:
            if not self._committed and not self._kept:
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
        finally:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> PendingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class Claim:
    """A stale pending file, locked by the process cleaning its directory: ``target`` is
    the name of the file it was meant to become."""

    path: Path
    target: str
    fd: int

    def read(self, limit: int) -> bytes | None:
        """The file's bytes, or ``None`` when it holds more than ``limit``."""
        size = os.fstat(self.fd).st_size
        if size > limit:
            return None
        return os.pread(self.fd, size + 1, 0)

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def finish(self) -> None:
        """Rename the file over its target, as its writer would have."""
        os.replace(self.path, self.path.with_name(self.target))


def claim_stale(directory: Path, wanted: Callable[[str], bool]) -> Iterator[Claim]:
    """Each stale pending file in ``directory`` whose target name is ``wanted``, locked
    while the caller handles it. Files whose writer is alive, symlinks and anything that is
    not a regular file are passed over."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return
    for name in names:
        if not (name.startswith(".") and name.endswith(".tmp")):
            continue
        match = PENDING_NAME.fullmatch(name)
        if match is None or not wanted(match["target"]):
            continue
        path = directory / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _FLAGS)
        except OSError:  # gone meanwhile, a symlink, unreadable
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # its writer is alive
                continue
            if _leads_to(path, fd):
                yield Claim(path, match["target"], fd)
        finally:
            os.close(fd)
