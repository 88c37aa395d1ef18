"""The file a recorder writes: a hidden ``.partial`` beside the rollout, renamed in at the end.

:class:`PartialFile` appends the recorder's lines in batches as the run goes, so that a long
run does not hold the disk back until its end. At the end the bytes are synced, scanned for
secrets once more and only then renamed into place, so the rollout path only ever holds a
whole run (docs/file-format.md). A cap on the file's size leaves lines out of the file (never
out of the run in memory): a ``recorder.drop_detected`` line followed by the run's last line
stands in for them, so a cut file still loads.

A write that fails breaks the file, not the run: it is counted, the file is given up, and the
lines stay in memory for the comparison and the golden.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import TYPE_CHECKING, Final

import orjson

from .events import DROP_DETECTED
from .files import FILE_MODE

if TYPE_CHECKING:
    from ..safety.redact import Redactor

__all__ = ["PartialFile"]

#: On Linux, this advice on written bytes starts their writeback without waiting for it.
_START_WRITEBACK: Final = (
    getattr(os, "POSIX_FADV_DONTNEED", None) if sys.platform == "linux" else None
)


class PartialFile:
    """The rollout file at ``path`` while its run is recorded, at most ``max_bytes`` long
    (whole lines only; the first and the last line are kept whatever their size)."""

    def __init__(self, path: str, max_bytes: int) -> None:
        self.path = path
        self._max_bytes = max_bytes
        self.written = 0  # bytes of the recorder's buffer written so far
        self.broken = False  # a write failed: nothing more is written
        self.done = False  # finished: the file is in place, or was given up
        self.write_errors = 0
        #: Lines left out of the file by the size cap.
        self.cut_lines = 0
        #: The label of a secret found in the file's bytes before the rename.
        self.leaked: str | None = None
        self._fd: int | None = None
        self._partial: str | None = None
        self._cut_at: int | None = None  # buffer offset of the first line left out

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
        self._write_out(buffer, end)

    def finish(self, buffer: bytearray, redactor: Redactor | None) -> None:
        """Write the rest of ``buffer`` (the whole run) and put the file in place, unless a
        write failed or ``redactor`` finds a secret in its bytes."""
        if self.done:
            return
        self.write(buffer)
        self._write_cut_tail(buffer)
        self._publish(buffer, redactor)
        self.done = True

    def _write_out(self, buffer: bytearray, end: int) -> None:
        if self.written >= end or self.broken:
            return
        try:
            fd = self._open()
            # Write from a view of the buffer, released before returning: a live view would
            # pin the buffer and make the recorder's next append fail.
            with memoryview(buffer) as whole, whole[self.written : end] as part:
                _write_all(fd, part)
            if _START_WRITEBACK is not None:
                # Have the kernel start writing these bytes to disk now, while the run goes
                # on, so that the fsync at the end has little left to wait for. A hint: it
                # changes no byte, and its failure is no write error. Pages already on disk
                # may leave the page cache: the recorder never reads its file back.
                with contextlib.suppress(OSError):
                    os.posix_fadvise(fd, self.written, end - self.written, _START_WRITEBACK)
            self.written = end
        except OSError:
            self._failed()

    def _open(self) -> int:
        if self._fd is None:
            parent = os.path.dirname(self.path) or "."
            os.makedirs(parent, exist_ok=True)
            name = os.path.basename(self.path)
            self._fd, self._partial = tempfile.mkstemp(
                prefix=f".{name}.", suffix=".partial", dir=parent
            )
        return self._fd

    def _failed(self) -> None:
        # A file that missed a write would hold a hole; stop writing to it.
        self.write_errors += 1
        self.broken = True

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
        try:
            _write_all(self._open(), tail)
        except OSError:
            self._failed()

    def _publish(self, buffer: bytearray, redactor: Redactor | None) -> None:
        """Close the partial file and rename it into place, unless a secret is found."""
        if self._fd is None or self._partial is None:
            return
        fd, partial = self._fd, self._partial
        self._fd = self._partial = None
        try:
            if not self.broken:
                os.fsync(fd)
                os.fchmod(fd, FILE_MODE)
        except OSError:
            self._failed()
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
        leaked = None
        if not self.broken and redactor is not None and redactor.mode != "full":
            leaked = redactor.scan(bytes(buffer))
        if self.broken or leaked is not None:
            self.leaked = leaked
            with contextlib.suppress(OSError):
                os.unlink(partial)
            return
        try:
            os.replace(partial, self.path)
        except OSError:
            self._failed()
            with contextlib.suppress(OSError):
                os.unlink(partial)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    """Write all of ``data`` (``os.write`` may write less than asked)."""
    with memoryview(data) as view:
        done = 0
        while done < len(view):
            with view[done:] as rest:
                done += os.write(fd, rest)
