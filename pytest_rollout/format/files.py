"""Safe writes: every file pytest-rollout writes is whole, in its directory, and private to it.

:func:`atomic_write` puts a file in place the way editors do: a temporary file in the same
directory, flushed to disk, then renamed over the target, so a reader (or a crash, or a
KeyboardInterrupt) sees the old file or the new one, never half of one. :func:`contained`
refuses a path that leaves its root, symlinks included.

A :class:`WriteRoot` is a folder that files are written under without following any symbolic
link below it (the golden folder, the runs cache, the capture directory). The folder itself
may be a link, or lie under one: it is where the user chose to put it. Below it, each folder
is opened (or created) relative to its parent's descriptor with ``O_NOFOLLOW``, and each file
is opened in the last one the same way, so a symlinked subfolder or file is refused with
:class:`UnsafePathError`, never written through, even one swapped in while a run is written.
A private root creates its folders ``0700`` and its files ``0600``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Final

from ..errors import RolloutError, RolloutFileError

__all__ = [
    "FILE_MODE",
    "PARTIAL_GLOB",
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "SecretInFileError",
    "Unreadable",
    "UnsafePathError",
    "WriteRoot",
    "atomic_write",
    "contained",
    "open_file",
    "read_regular",
    "refuse_link",
    "rollouts_in",
    "sync_directory",
    "write_output",
]


def _file_mode() -> int:
    # The umask can only be read by setting it; do it once, before any thread writes files.
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


#: The permissions of a normally created file (``0o666`` less the umask).
FILE_MODE: Final = _file_mode()
#: The permissions of a file only its owner may read (capture files, audit trails).
PRIVATE_FILE_MODE: Final = 0o600
#: The permissions of a folder only its owner may enter.
PRIVATE_DIR_MODE: Final = 0o700

_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
#: A folder below a root: never through a symbolic link.
_DIR_FLAGS: Final = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_NOFOLLOW | _O_CLOEXEC
#: A file in such a folder: never through a symbolic link, never blocking (on a FIFO), never
#: a controlling terminal.
_FILE_FLAGS: Final = (
    _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
)


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


class UnsafePathError(RolloutError):
    """A file was not written because its path leaves its folder, or goes through a symbolic
    link (or something else that is not a folder) below it. ``reason`` names the culprit."""

    __module__ = "pytest_rollout"

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"refusing to write {self.path}: {reason}")


def contained(root: Path, path: Path) -> Path:
    """``path`` with its directories' symlinks resolved, if that is inside ``root``.

    Raises :class:`UnsafePathError` otherwise. The file itself may be a symlink: it is
    replaced by a rename, never written through.
    """
    base = root.resolve()
    resolved = path.parent.resolve() / path.name
    if path.name in ("", ".", "..") or not resolved.is_relative_to(base):
        raise UnsafePathError(path, f"it is outside {base}")
    return resolved


@dataclass(frozen=True, slots=True)
class WriteRoot:
    """A folder that files are written under without following a symbolic link below it.

    ``private``: the folders it creates are ``0700`` and its files ``0600``; otherwise they
    are created as any other (the umask decides).
    """

    path: Path
    private: bool = False

    @property
    def file_mode(self) -> int:
        return PRIVATE_FILE_MODE if self.private else FILE_MODE

    @property
    def dir_mode(self) -> int:
        return PRIVATE_DIR_MODE if self.private else 0o777

    def open_parent(self, target: Path) -> int:
        """A descriptor of ``target``'s folder (the caller closes it), the folders on the way
        created where missing; the root itself is created too, with its missing parents.

        Raises :class:`UnsafePathError` for a target outside the root (by its spelling:
        no ``..``) or a folder below the root that is a symbolic link or not a folder;
        ``OSError`` when the file system fails (the root cannot be made, for one).
        """
        if target.name in ("", ".", ".."):
            raise UnsafePathError(target, "it is not a file name")
        try:
            parts = PurePath(target.parent).relative_to(self.path).parts
        except ValueError:
            parts = ("..",)
        if ".." in parts:
            raise UnsafePathError(target, f"it is outside {self.path}")
        fd = self._open_root()
        shown = self.path
        try:
            for part in parts:
                shown = shown / part
                child = _open_child_dir(fd, part, self.dir_mode, shown, self.path)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_root(self) -> int:
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_CLOEXEC
        try:
            return os.open(self.path, flags)
        except FileNotFoundError:
            _make_dirs(self.path, self.dir_mode)
            return os.open(self.path, flags)


def _make_dirs(path: Path, mode: int) -> None:
    """Create ``path`` and its missing parents, each with ``mode`` (``os.makedirs`` gives
    ``mode`` to the last one only)."""
    missing: list[Path] = []
    while not os.path.lexists(path) and path.parent != path:
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, mode)


def _open_child_dir(fd: int, name: str, mode: int, shown: Path, root: Path) -> int:
    """The folder ``name`` in the folder ``fd``, created when missing, never followed."""
    for attempt in range(3):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if attempt == 2:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, mode, dir_fd=fd)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise
            raise UnsafePathError(shown, _not_followed(fd, name, shown, root)) from None
    raise AssertionError("unreachable")  # pragma: no cover


def _not_followed(fd: int, name: str, shown: Path, root: Path, want: str = "directory") -> str:
    """Why ``name`` in the folder ``fd`` is refused where a ``want`` was expected."""
    try:
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except OSError:
        mode = stat.S_IFLNK
    if stat.S_ISLNK(mode):
        return f"{shown} is a symbolic link, and none is followed under {root}"
    kind = "regular file" if stat.S_ISREG(mode) else _file_kind(mode)
    return f"{shown} is a {kind}, not a {want}"


def refuse_link(fd: int, name: str, shown: Path, root: Path) -> None:
    """Raise :class:`UnsafePathError` when ``name`` in the folder ``fd`` exists and is not a
    regular file (a symbolic link, a folder, a FIFO): a rename would replace it."""
    try:
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise UnsafePathError(shown, _not_followed(fd, name, shown, root, "regular file"))


def open_file(fd: int, name: str, flags: int, mode: int, shown: Path, root: Path) -> int:
    """Open the regular file ``name`` in the folder ``fd`` with ``flags``, never through a
    symbolic link and never blocking; :class:`UnsafePathError` for anything but a regular
    file. The descriptor is the caller's to close."""
    try:
        opened = os.open(name, flags | _FILE_FLAGS, mode, dir_fd=fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EISDIR):
            raise
        raise UnsafePathError(shown, _not_followed(fd, name, shown, root, "regular file")) from None
    try:
        if not stat.S_ISREG(os.fstat(opened).st_mode):
            raise UnsafePathError(shown, _not_followed(fd, name, shown, root, "regular file"))
    except BaseException:
        os.close(opened)
        raise
    return opened


def atomic_write(
    target: Path,
    data: bytes,
    *,
    scan: Callable[[bytes], str | None] | None = None,
    root: WriteRoot | None = None,
    durable: bool = True,
) -> None:
    """Replace ``target`` with ``data`` so that readers see the old file or the new, whole.

    ``scan`` (a redactor's) looks at the bytes once more before anything is written; when
    it names a secret, :class:`SecretInFileError` is raised and ``target`` is untouched.
    Under a ``root``, no folder below it is followed if it is a symbolic link
    (:class:`UnsafePathError`); a ``target`` that is one is replaced, as any file is.

    ``durable``: the file and its new name are flushed to disk before this returns. Without
    it, a reader still sees the old file or the new whole, but a power cut may lose the new
    one: for a file that costs nothing to make again (a viewer page), never for a golden.
    """
    if scan is not None and (label := scan(data)) is not None:
        raise SecretInFileError(target, label)
    if root is not None:
        _write_under(root, target, data, durable)
        return
    import tempfile  # noqa: PLC0415  (reading a file needs none of what writing one does)

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), FILE_MODE)
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        sync_directory(target.parent)


def _write_under(root: WriteRoot, target: Path, data: bytes, durable: bool) -> None:
    """:func:`atomic_write` under ``root``: every step relative to the folder's descriptor."""
    folder = root.open_parent(target)
    try:
        tmp = f".{target.name}.{os.urandom(4).hex()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        fd = open_file(folder, tmp, flags, root.file_mode, target.parent / tmp, root.path)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(handle.fileno(), root.file_mode)
                if durable:
                    os.fsync(handle.fileno())
            os.replace(tmp, target.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            raise
        if durable:
            with contextlib.suppress(OSError):
                os.fsync(folder)
    finally:
        os.close(folder)


def _is_stream(mode: int) -> bool:
    """A FIFO, a character device or a socket: written to, never replaced."""
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def _output_target(target: Path) -> os.stat_result | None:
    """What ``target`` is (``None``: nothing yet), a link followed only to a stream."""
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RolloutFileError(target, f"cannot look at it: {exc.strerror}") from None
    if not stat.S_ISLNK(info.st_mode):
        return info
    try:
        followed = os.stat(target)
    except OSError:
        followed = None
    if followed is None or not _is_stream(followed.st_mode):
        raise UnsafePathError(target, "it is a symbolic link; name the file it points to")
    return followed


def write_output(target: Path, data: bytes, *, durable: bool = True) -> None:
    """Write a command's output to ``target`` as the user named it.

    A FIFO, a character device or a socket (a pipe, ``/dev/stdout``, even through the link
    ``/dev/stdout`` is) is written to as it is, never replaced by a file. A regular file is
    replaced whole (:func:`atomic_write`), and only once there is something to write. A
    symbolic link to anything else is refused, and so is a folder that does not exist:
    nothing is created but the file. Raises :class:`RolloutFileError` or
    :class:`UnsafePathError`, naming the path and why.
    """
    info = _output_target(target)
    try:
        if info is not None and _is_stream(info.st_mode):
            with open(target, "wb") as stream:
                stream.write(data)
            return
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise RolloutFileError(target, f"it is a {_file_kind(info.st_mode)}")
        if not target.parent.is_dir():
            raise RolloutFileError(target, f"its folder {target.parent} does not exist")
        atomic_write(target, data, durable=durable)
    except OSError as exc:
        raise RolloutFileError(target, f"cannot write it: {exc.strerror or exc}") from None


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
            # The size fstat gave and one byte more: asking for the limit would allocate it
            # whole, and fault in fresh pages where a smaller block would have been reused.
            # A file that grew since (or reports no size, as /proc does) is read on to one
            # byte past the limit, so that one growing past it shows too.
            data = handle.read(info.st_size + 1)
            if len(data) > info.st_size:
                data += handle.read(limit + 1 - len(data))
            return data
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)


def rollouts_in(paths: Iterable[str], *, partial: bool = False) -> list[tuple[str, str | None]]:
    """Each rollout ``paths`` name, as ``(path, name)``: a file as it is (``name`` is
    ``None``), a directory as the ``*.jsonl`` files under it (and, with ``partial``, the
    ``.<name>.partial`` files of runs cut short), sorted and named relative to it. A
    directory with none is a :class:`RolloutError`."""
    found: list[tuple[str, str | None]] = []
    for given in paths:
        if not os.path.isdir(given):
            found.append((given, None))
            continue
        root = Path(given)
        globbed = {*root.rglob("*.jsonl"), *(root.rglob(PARTIAL_GLOB) if partial else ())}
        inside = sorted(p for p in globbed if p.is_file())
        if not inside:
            raise RolloutError(f"no rollout (*.jsonl) under {given}")
        found.extend((str(p), p.relative_to(root).as_posix()) for p in inside)
    return found


#: The partial files a recorder leaves when its run is cut short (``.<name>.partial``).
PARTIAL_GLOB = ".*.jsonl.partial"


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
