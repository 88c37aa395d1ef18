"""Runs found by their id: where a ``rollout`` command looks for a run named by its run id,
or by a prefix of one, instead of by its file.

A run id (``20261129T225800123456Z-3f9a0c1b2d4e``, see :func:`.capture.new_run_id`) is
looked up in two places:

- the capture directory (``ROLLOUT_DIR``, else the project's ``rollout_dir`` ini key), where
  each run is ``<YYYY-MM-DD>/<run_id>.jsonl``: found by its file name, nothing is read;
- the runs cache (``.pytest_cache/d/rollout/runs`` of the project, or under its
  ``cache_dir``), where each test's last run is kept under the test's path: found by the
  ``run_id`` of its first line, ``run.started``. Only that line is read, and at most
  :data:`FIRST_LINE_BYTES` of it.

A prefix names a run when it has at least :data:`MIN_PREFIX` characters (the id's date) and
exactly one run's id starts with it. A crashed run's partial file (``.<name>.partial``) is
found too, unless the same run also has its whole file, which wins; so does a run in the
capture directory over a copy of it in the runs cache.

Both places are read as the plugin writes them: no symbolic link below the folder is
followed (each folder is opened relative to its parent with ``O_NOFOLLOW``, each file too,
and only regular files are read), while the folder itself may be one. What is not a run
(another file, a folder or file that cannot be read, a first line that is no ``run.started``
with a run id) is passed over in silence. Nothing is written. This module never imports
pytest.
"""

from __future__ import annotations

import enum
import functools
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Final

import orjson

from ..errors import RolloutError
from ..format.events import RUN_STARTED
from ..safety.sanitize import sanitize
from .capture import SUFFIX, is_run_id, resolve_root
from .project import find_project

__all__ = [
    "FIRST_LINE_BYTES",
    "MIN_PREFIX",
    "AmbiguousRunError",
    "FoundRun",
    "Place",
    "RunFinder",
    "RunLookupError",
    "RunNotFoundError",
    "RunPlaces",
    "RunPrefixTooShortError",
    "find_run",
    "looks_like_run_id",
]

#: The fewest characters of a run id that name a run: its start date, ``YYYYMMDD``.
MIN_PREFIX: Final = 8
#: The most bytes of a file in the runs cache read to find its run id.
FIRST_LINE_BYTES: Final = 64 * 1024
#: Each read of a first line (most are well under it).
_CHUNK: Final = 4096
#: How deep the runs cache is walked (it mirrors the test files' folders).
_MAX_DEPTH: Final = 32
#: Matching runs named in the ambiguity error; the others are counted.
_SHOWN: Final = 5

_DIGITS: Final = "0123456789"
#: What each character of a run id may be (see :func:`.capture.new_run_id`).
_ID_SHAPE: Final = (
    (_DIGITS,) * 8 + ("T",) + (_DIGITS,) * 12 + ("Z", "-") + ("0123456789abcdef",) * 12
)
_DAY_RE: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
#: A capture directory's partial file: ``.<run_id>.jsonl.partial`` (older versions put a
#: random part before ``.partial``).
_CAPTURE_PARTIAL_RE: Final = re.compile(r"\.(?P<run>[^.]+)\.jsonl(?:\.[A-Za-z0-9_-]+)?\.partial")
#: The start of a first line as the recorder writes it, for a line longer than what is read.
_RECORDER_START: Final = re.compile(
    rb'\{"ts":"[^"\\]{0,64}","seq":0,"type":"'
    + re.escape(RUN_STARTED.encode())
    + rb'","data":\{"run_id":"(?P<run>[0-9]{8}T[0-9]{12}Z-[0-9a-f]{12})"'
)

_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_ROOT_FLAGS: Final = os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC
_DIR_FLAGS: Final = _ROOT_FLAGS | _O_NOFOLLOW
_FILE_FLAGS: Final = (
    os.O_RDONLY
    | _O_NOFOLLOW
    | _O_CLOEXEC
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
)


class RunLookupError(RolloutError):
    """A run named by its id was not found, or not only one was: the message is one line.

    These errors are the ``rollout`` command's, not part of the package's public names, so
    they keep their module (and pickle under it)."""


class RunPrefixTooShortError(RunLookupError):
    """The text names no file, and is too short a prefix to name a run by its id."""

    def __init__(self, query: str) -> None:
        self.query = query
        super().__init__(
            f"{sanitize(query)}: no such file, and too short to name a run by its id "
            f"(give at least {MIN_PREFIX} characters of the id)"
        )

    def __reduce__(self) -> tuple[type[RunPrefixTooShortError], tuple[str]]:
        return (type(self), (self.query,))


class RunNotFoundError(RunLookupError):
    """No run's id is, or starts with, ``query`` in the places searched (``searched``: a
    phrase naming them)."""

    def __init__(self, query: str, searched: str) -> None:
        self.query = query
        self.searched = searched
        what = "with id" if is_run_id(query) else "whose id starts with"
        super().__init__(f"no run {what} {sanitize(query)} in {searched}")

    def __reduce__(self) -> tuple[type[RunNotFoundError], tuple[str, str]]:
        return (type(self), (self.query, self.searched))


class AmbiguousRunError(RunLookupError):
    """Several runs' ids start with ``query``: ``matches`` are their ids, sorted."""

    def __init__(self, query: str, matches: tuple[str, ...]) -> None:
        self.query = query
        self.matches = matches
        shown = ", ".join(sanitize(m) for m in matches[:_SHOWN])
        more = f", and {len(matches) - _SHOWN} more" if len(matches) > _SHOWN else ""
        super().__init__(
            f"run id prefix {sanitize(query)} matches {len(matches)} runs: {shown}{more} "
            "(give more characters)"
        )

    def __reduce__(self) -> tuple[type[AmbiguousRunError], tuple[str, tuple[str, ...]]]:
        return (type(self), (self.query, self.matches))


class Place(enum.Enum):
    """Where a run was found; the value is how a message names the place."""

    CAPTURE = "the capture directory"
    RUNS_CACHE = "the runs cache"


@dataclass(frozen=True, slots=True)
class FoundRun:
    """A run found by its id: its file, where it was, and whether it is a partial file."""

    run_id: str
    path: Path
    place: Place
    partial: bool


@dataclass(frozen=True, slots=True)
class RunPlaces:
    """The folders searched: the capture directory (``None``: none is set) and the runs
    cache. Either may not exist; a folder that does not is searched and holds no run."""

    capture_dir: Path | None
    runs_cache: Path

    @classmethod
    def around(cls, cwd: Path, environ: Mapping[str, str]) -> RunPlaces:
        """The places of the project ``cwd`` (absolute) is in: the capture directory of
        ``ROLLOUT_DIR`` (relative to ``cwd``, as pytest takes it relative to where it is
        run), else of the ``rollout_dir`` ini key (relative to the project's root), and the
        project's runs cache. :class:`RunLookupError` when a ``~`` cannot be expanded."""
        project = find_project(cwd)
        try:
            capture = resolve_root(environ, None, "", cwd) or resolve_root(
                {}, None, project.settings.get("rollout_dir", ""), project.root
            )
        except ValueError as exc:
            raise RunLookupError(f"cannot find the capture directory: {exc}") from None
        return cls(capture_dir=capture, runs_cache=project.runs_cache)

    def described(self, shown: PurePath | None = None) -> str:
        """The places in words, each path relative to ``shown`` when inside it."""
        cache = f"{_shown(self.runs_cache, shown)} ({Place.RUNS_CACHE.value})"
        if self.capture_dir is None:
            return f"{cache}; no capture directory is set (ROLLOUT_DIR, rollout_dir)"
        return f"{_shown(self.capture_dir, shown)} ({Place.CAPTURE.value}) or {cache}"


def _shown(path: Path, base: PurePath | None) -> str:
    if base is not None and path.is_relative_to(base) and path != base:
        return sanitize(str(path.relative_to(base)))
    return sanitize(str(path))


def looks_like_run_id(text: str) -> bool:
    """Whether ``text`` is a run id or the start of one (of any length, at least 1)."""
    return 0 < len(text) <= len(_ID_SHAPE) and all(
        c in allowed for c, allowed in zip(text, _ID_SHAPE, strict=False)
    )


def find_run(query: str, places: RunPlaces, *, shown: PurePath | None = None) -> FoundRun:
    """The one run whose id is, or starts with, ``query``, in ``places``.

    Raises :class:`RunPrefixTooShortError` for fewer than :data:`MIN_PREFIX` characters,
    :class:`AmbiguousRunError` when several runs match, :class:`RunNotFoundError` when none
    does (naming the places, their paths relative to ``shown`` when inside it), and
    :class:`RunLookupError` for a text that is no run id's start.
    """
    if not looks_like_run_id(query):
        raise RunLookupError(f"{sanitize(query)} is not a run id, nor the start of one")
    if len(query) < MIN_PREFIX:
        raise RunPrefixTooShortError(query)
    best: dict[str, FoundRun] = {}
    for found in _candidates(places):
        if found.run_id.startswith(query):
            kept = best.get(found.run_id)
            if kept is None or _rank(found) < _rank(kept):
                best[found.run_id] = found
    if not best:
        raise RunNotFoundError(query, places.described(shown))
    if len(best) > 1:
        raise AmbiguousRunError(query, tuple(sorted(best)))
    (found,) = best.values()
    return found


def _rank(found: FoundRun) -> tuple[bool, bool]:
    """Whole files before partial ones, the capture directory before the runs cache."""
    return (found.partial, found.place is not Place.CAPTURE)


def _candidates(places: RunPlaces) -> Iterator[FoundRun]:
    if places.capture_dir is not None:
        yield from _captured(places.capture_dir)
    yield from _cached(places.runs_cache)


class RunFinder:
    """The rollout a command's argument names, for one command: a path as it is, else the
    run whose id it is (or starts with). The places are worked out on first need, so an
    argument that is a file costs one ``lstat``."""

    def __init__(self, cwd: Path, environ: Mapping[str, str]) -> None:
        self.cwd = cwd
        self.environ = environ

    @functools.cached_property
    def places(self) -> RunPlaces:
        return RunPlaces.around(self.cwd, self.environ)

    def rollout(self, text: str) -> str:
        """The file ``text`` names: ``text`` itself when something exists at that path (a
        path always wins) or when it is no run id's start (the command then says the file
        is missing); else the file of the run it names, relative to the current folder
        when inside it. Raises :class:`RunLookupError`."""
        if not text or os.path.lexists(text) or not looks_like_run_id(text):
            return text
        found = find_run(text, self.places, shown=self.cwd)
        if found.path.is_relative_to(self.cwd):
            return str(found.path.relative_to(self.cwd))
        return str(found.path)


# -- the folders ------------------------------------------------------------------------


def _open(name: str | Path, flags: int, dir_fd: int | None = None) -> int | None:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except (OSError, ValueError):  # ValueError: a NUL in a configured path
        return None


def _entries(fd: int) -> list[tuple[str, bool, bool]]:
    """``(name, is a folder, is a regular file)`` of each entry of the folder ``fd``, no
    symbolic link followed (a link is neither)."""
    found: list[tuple[str, bool, bool]] = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    kind = (
                        entry.is_dir(follow_symlinks=False),
                        entry.is_file(follow_symlinks=False),
                    )
                except OSError:
                    continue
                found.append((entry.name, *kind))
    except OSError:
        pass
    return found


def _captured(root: Path) -> Iterator[FoundRun]:
    """The runs in the capture directory, by their file names."""
    root_fd = _open(root, _ROOT_FLAGS)
    if root_fd is None:
        return
    try:
        for day, is_dir, _ in _entries(root_fd):
            if not is_dir or _DAY_RE.fullmatch(day) is None:
                continue
            day_fd = _open(day, _DIR_FLAGS, root_fd)
            if day_fd is None:
                continue
            try:
                for name, _, is_file in _entries(day_fd):
                    run = _captured_run(name) if is_file else None
                    if run is not None:
                        run_id, partial = run
                        yield FoundRun(run_id, root / day / name, Place.CAPTURE, partial)
            finally:
                os.close(day_fd)
    finally:
        os.close(root_fd)


def _captured_run(name: str) -> tuple[str, bool] | None:
    """The run id of a capture directory's file name, and whether it is a partial file."""
    if name.endswith(SUFFIX) and is_run_id(name[: -len(SUFFIX)]):
        return name[: -len(SUFFIX)], False
    match = _CAPTURE_PARTIAL_RE.fullmatch(name)
    if match is not None and is_run_id(match["run"]):
        return match["run"], True
    return None


def _cached(root: Path) -> Iterator[FoundRun]:
    """The runs in the runs cache, by the run id of each file's first line."""
    root_fd = _open(root, _ROOT_FLAGS)
    if root_fd is None:
        return
    try:
        yield from _walk(root_fd, root, 0)
    finally:
        os.close(root_fd)


def _walk(fd: int, folder: Path, depth: int) -> Iterator[FoundRun]:
    for name, is_dir, is_file in sorted(_entries(fd)):
        if is_dir and depth < _MAX_DEPTH:
            child = _open(name, _DIR_FLAGS, fd)
            if child is not None:
                try:
                    yield from _walk(child, folder / name, depth + 1)
                finally:
                    os.close(child)
            continue
        partial = name.startswith(".") and name.endswith(f"{SUFFIX}.partial")
        if not is_file or not (partial or name.endswith(SUFFIX)):
            continue
        run_id = _first_line_run_id(fd, name)
        if run_id is not None:
            yield FoundRun(run_id, folder / name, Place.RUNS_CACHE, partial)


def _first_line_run_id(folder: int, name: str) -> str | None:
    """The run id of the file's first line, a ``run.started`` event; ``None`` for anything
    else. At most :data:`FIRST_LINE_BYTES` are read; a longer first line is read as the
    recorder writes it (the run id first in ``data``)."""
    fd = _open(name, _FILE_FLAGS, folder)
    if fd is None:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = _head(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    line, newline, _ = head.partition(b"\n")
    if not newline and len(head) >= FIRST_LINE_BYTES:
        match = _RECORDER_START.match(head)
        return None if match is None else match["run"].decode("ascii")
    return _run_id_of(line)


def _head(fd: int) -> bytes:
    """The file's bytes up to its first newline, or :data:`FIRST_LINE_BYTES` of them."""
    head = b""
    while len(head) < FIRST_LINE_BYTES:
        chunk = os.read(fd, min(_CHUNK, FIRST_LINE_BYTES - len(head)))
        if not chunk:
            break
        head += chunk
        if b"\n" in chunk:
            break
    return head


def _run_id_of(line: bytes) -> str | None:
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(event, dict) or event.get("type") != RUN_STARTED:
        return None
    data = event.get("data")
    run_id = data.get("run_id") if isinstance(data, dict) else None
    return run_id if isinstance(run_id, str) and is_run_id(run_id) else None
