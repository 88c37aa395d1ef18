"""The file a recorder writes: ``.<name>.partial`` beside the rollout, growing as the run goes.

:class:`PartialFile` appends the recorder's lines while the run goes on (the recorder writes
them at least at every turn boundary), so a run cut short by a hard crash (``os._exit``,
SIGKILL, an out-of-memory kill) leaves every line written so far in a file with a predictable
name beside where the run's file would have been: ``.<name>.partial``. A write hands the
bytes to the operating system, so they survive the process, not a power cut (the file is
synced once, at the end). The next run of the same test takes that name over and starts the
file afresh, so a stale one does not pile up.

The recorder looks at its lines for secrets before they are written here (the last look, see
:mod:`.recorder`); when it finds one it gives the file up (:meth:`PartialFile.give_up`):
nothing more is written and the partial file is removed at the end, so neither file ever
holds a secret the look finds. At the end, the bytes are synced and only then renamed into
place, so the rollout path only ever holds a whole run (docs/file-format.md). A cap on the
file's size leaves lines out of the file (never out of the run in memory): a
``recorder.drop_detected`` line followed by the run's last line stands in for them, so a cut
file still loads.

Folders and files are opened under a :class:`~.files.WriteRoot`, relative to a folder's
descriptor and never through a symbolic link; a link on the way is refused (``refused``
says why), not written through. While a run writes its partial file it holds an exclusive
``flock`` on it, so a second run writing the same file at the same time (two sessions
running one test) is refused instead of mixing its lines in.

A write that fails or is refused breaks the file, not the run: it is counted, the file is
given up, and the lines stay in memory for the comparison and the golden.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from pathlib import Path
from typing import Final

import orjson

from .events import DROP_DETECTED
from .files import UnsafePathError, WriteRoot, open_file, refuse_link

__all__ = ["PartialFile", "partial_name"]

#: On Linux, this advice on written bytes starts their writeback without waiting for it.
_START_WRITEBACK: Final = (
    getattr(os, "POSIX_FADV_DONTNEED", None) if sys.platform == "linux" else None
)
#: Bytes written between two such pieces of advice (one system call for many writes).
_ADVISE_EVERY: Final = 1024 * 1024


def partial_name(name: str) -> str:
    """The name of the partial file of the rollout file named ``name``."""
    return f".{name}.partial"


class _Refused(Exception):
    """The file is not written, for ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PartialFile:
    """The rollout file at ``path`` while its run is recorded, at most ``max_bytes`` long
    (whole lines only; the first and the last line are kept whatever their size).

    ``root`` (default: the file's own folder) is the folder below which no symbolic link is
    followed, and says the files' modes.
    """

    def __init__(self, path: str, max_bytes: int, *, root: WriteRoot | None = None) -> None:
        self.path = path
        self._target = Path(path)
        self._root = WriteRoot(self._target.parent) if root is None else root
        self._name = partial_name(self._target.name)
        self._max_bytes = max_bytes
        self.written = 0  # bytes of the recorder's buffer written so far
        self.broken = False  # a write failed or was refused: nothing more is written
        self.done = False  # finished: the file is in place, or was given up
        self.write_errors = 0
        #: Lines left out of the file by the size cap.
        self.cut_lines = 0
        #: The label of a secret found in bytes about to be written.
        self.leaked: str | None = None
        #: Why the file was not written, when it was refused (a symbolic link on the way).
        self.refused: str | None = None
        self._fd: int | None = None
        self._folder: int | None = None  # the descriptor of the file's folder
        self._cut_at: int | None = None  # buffer offset of the first line left out
        self._size = 0  # bytes in the partial file
        self._advised = 0  # bytes of it whose writeback was started

    @property
    def partial_path(self) -> str:
        """Where the run's lines are while it is recorded."""
        return os.fspath(self._target.parent / self._name)

    def write(self, buffer: bytearray) -> None:
        """Append the lines of ``buffer`` not written yet (up to the size cap)."""
        if self.broken or self._cut_at is not None or self.done:
            return
        end = len(buffer)
        if end > self._max_bytes:
            # Only whole lines go to the file: cut after the last one that fits. The first
            # line (run.started) and, at the end, the last are kept whatever their size, so
            # the file still loads.
            end = buffer.rfind(b"\n", self.written, self._max_bytes) + 1
            end = max(self.written, end, buffer.find(b"\n") + 1)
            self._cut_at = end
        if self.written >= end:
            return
        # Write from a view of the buffer, released before returning: a live view would pin
        # the buffer and make the recorder's next append fail.
        with memoryview(buffer) as whole, whole[self.written : end] as part:
            if self._put(part):
                self.written = end

    def give_up(self, leaked: str) -> None:
        """Write nothing more: the lines about to be written hold a secret (``leaked`` is
        its label). The partial file is removed at the end."""
        self.leaked = leaked
        self.broken = True

    def finish(self, buffer: bytearray) -> None:
        """Write the rest of ``buffer`` (the whole run) and put the file in place, unless a
        write failed or was refused, or a secret was found."""
        if self.done:
            return
        self.write(buffer)
        self._write_cut_tail(buffer)
        self._publish()
        self.done = True

    def _put(self, data: memoryview | bytes) -> bool:
        """Append ``data`` to the partial file; ``False`` (the file given up) when the write
        fails or is refused."""
        if self.broken:
            return False
        try:
            fd = self._fd if self._fd is not None else self._open()
            _write_all(fd, data)
        except _Refused as exc:
            self.refused = exc.reason
            self.broken = True
            return False
        except OSError:
            # A file that missed a write would hold a hole; stop writing to it.
            self.write_errors += 1
            self.broken = True
            return False
        self._size += len(data)
        if _START_WRITEBACK is not None and self._size - self._advised >= _ADVISE_EVERY:
            # Have the kernel start writing these bytes to disk now, while the run goes on,
            # so that the fsync at the end has little left to wait for. A hint: it changes
            # no byte, and its failure is no write error. Pages already on disk may leave
            # the page cache: the recorder never reads its file back.
            with contextlib.suppress(OSError):
                os.posix_fadvise(fd, self._advised, self._size - self._advised, _START_WRITEBACK)
            self._advised = self._size
        return True

    def _open(self) -> int:
        if self._fd is not None:
            return self._fd
        target, root = self._target, self._root
        try:
            folder = root.open_parent(target)
        except UnsafePathError as exc:
            raise _Refused(exc.reason) from None
        try:
            refuse_link(folder, target.name, target, root.path)
            self._fd = _claim(folder, self._name, root, Path(self.partial_path))
        except UnsafePathError as exc:
            os.close(folder)
            raise _Refused(exc.reason) from None
        except BaseException:
            os.close(folder)
            raise
        self._folder = folder
        return self._fd

    def _write_cut_tail(self, buffer: bytearray) -> None:
        """End a file cut by the size cap: a gap marker for the lines left out, then the
        run's last line (its terminal event), so the file still loads."""
        if self._cut_at is None or self.broken:
            return
        last = buffer.rfind(b"\n", 0, len(buffer) - 1) + 1
        tail = bytes(buffer[max(last, self._cut_at) :])
        if last > self._cut_at:
            self.cut_lines = buffer.count(b"\n", self._cut_at, last)
            first = orjson.loads(buffer[self._cut_at : buffer.index(b"\n", self._cut_at)])
            step = first["data"].get("step", 0)
            marker = {"step": step, "dropped": self.cut_lines}
            line = {"ts": first["ts"], "seq": first["seq"], "type": DROP_DETECTED, "data": marker}
            tail = orjson.dumps(line) + b"\n" + tail
        self._put(tail)

    def _publish(self) -> None:
        """Sync the partial file and rename it into place; remove it instead when the file
        was given up. The lock on it is held until then."""
        fd, folder = self._fd, self._folder
        if fd is None or folder is None:
            return
        self._fd = self._folder = None
        try:
            if not self.broken and self._rename(fd, folder):
                return
            with contextlib.suppress(OSError):
                os.unlink(self._name, dir_fd=folder)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
            os.close(folder)

    def _rename(self, fd: int, folder: int) -> bool:
        target = self._target
        try:
            os.fsync(fd)
            # A link put where the file goes would be replaced, not followed: refuse it all
            # the same, so that the user learns of it.
            refuse_link(folder, target.name, target, self._root.path)
            os.replace(self._name, target.name, src_dir_fd=folder, dst_dir_fd=folder)
        except UnsafePathError as exc:
            self.refused = exc.reason
            self.broken = True
            return False
        except OSError:
            self.write_errors += 1
            self.broken = True
            return False
        with contextlib.suppress(OSError):
            os.fsync(folder)
        return True


def _claim(folder: int, name: str, root: WriteRoot, shown: Path) -> int:
    """The partial file ``name`` in ``folder``, emptied and locked for this run alone.

    A file left by a run that ended without closing it (a crash) is taken over; one that a
    live run holds locked is refused.
    """
    for _ in range(3):
        fd = open_file(folder, name, os.O_WRONLY | os.O_CREAT, root.file_mode, shown, root.path)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise _Refused(f"{shown} is being written by another run of this test") from None
            if _is_named(folder, name, fd):
                os.ftruncate(fd, 0)
                os.fchmod(fd, root.file_mode)
                return fd
        except BaseException:
            os.close(fd)
            raise
        # The run that held it renamed or removed it meanwhile: open the name again.
        os.close(fd)
    raise _Refused(f"{shown} keeps being replaced by another run of this test")


def _is_named(folder: int, name: str, fd: int) -> bool:
    """Whether ``name`` in ``folder`` is still the file open as ``fd``."""
    try:
        named = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    """Write all of ``data`` (``os.write`` may write less than asked)."""
    done = os.write(fd, data)  # the common case: all of it, in one call
    if done == len(data):
        return
    with memoryview(data) as view:
        while done < len(view):
            with view[done:] as rest:
                done += os.write(fd, rest)
