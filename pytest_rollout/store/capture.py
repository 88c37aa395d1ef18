"""The capture directory: every run's rollout kept for forensics, outside the golden files.

Capture is opt-in. Its root comes from the ``ROLLOUT_DIR`` environment variable, else the
``--rollout-dir`` flag, else the ``rollout_dir`` ini key. Each run is written to
``<root>/<YYYY-MM-DD>/<run_id>.jsonl``, the day being the UTC date the run started. Run ids
(:func:`new_run_id`) start with their UTC start time, so sorting them sorts the runs.

The directory is kept small by :class:`CaptureLimits`: a cap per file, a cap on the whole
directory, and a retention in days. What is enforced, and when:

- Retention (:func:`enforce_retention`) runs at session start. It removes the run files of
  day directories older than the retention, then, while the directory is over its total
  cap, the oldest run files first. It deletes nothing but run files inside day directories
  inside the root: a file the user put there (a README, an ``audit.jsonl``) stays, and a
  symbolic link is never followed nor deleted through.
- The per-file cap is a byte budget (:meth:`Budget.for_new_run`) that the recorder enforces
  while writing: past it, further events are dropped with a marker.
- The total cap is checked against the directory's usage measured at session start plus
  what this process wrote since (:class:`Budget`). It is not a lock: several processes
  writing at once (pytest-xdist workers) can overshoot it by up to one per-file cap each,
  and so can runs of one process that are in progress at the same time. The next session's
  retention brings the directory back under the cap.

Capture is private and stays inside its root: the recorder writes under
:func:`capture_root`, which creates folders ``0700`` and files ``0600`` and follows no
symbolic link below the root (a day folder or run file that is one is refused, and the run
counted as not saved). While a run is recorded its lines are in ``.<run_id>.jsonl.partial``
beside its file; a run cut short by a crash leaves that file behind, kept like a run file
once it is a day old (a younger one may be a run still in progress).

Capture never changes a test's outcome: functions that touch the file system either never
raise for an ``OSError`` (they skip and count) or say exactly what they raise.

A session that is about to make the capture directory with redaction off (mode ``full``) is
told so once, before any run is written (:func:`unredacted_note`): such a directory holds
every run verbatim, secrets included.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Final

from ..format.files import WriteRoot
from ..safety.sanitize import sanitize
from .receipt import RECEIPT_SUFFIX

__all__ = [
    "ENV_VAR",
    "ENV_VARS",
    "INI_KEYS",
    "Budget",
    "CaptureLimits",
    "Pruned",
    "capture_path",
    "capture_root",
    "enforce_retention",
    "is_run_id",
    "new_run_id",
    "resolve_root",
    "unredacted_note",
    "usage",
]

ENV_VAR: Final = "ROLLOUT_DIR"
SUFFIX: Final = ".jsonl"
MB: Final = 1024 * 1024
# A temporary file left by a crashed run is removed once it is this old (by its mtime).
STALE_PARTIAL_SECONDS: Final = 24 * 60 * 60

_RUN_ID: Final = r"[0-9]{8}T[0-9]{12}Z-[0-9a-f]{12}"
_RUN_ID_RE: Final = re.compile(_RUN_ID)
_RUN_FILE_RE: Final = re.compile(rf"(?P<run>{_RUN_ID})\.jsonl")
# ``.<run_id>.jsonl.partial``; older versions put a random part before ``.partial``.
_PARTIAL_RE: Final = re.compile(rf"\.(?P<run>{_RUN_ID})\.jsonl(?:\.[A-Za-z0-9_-]+)?\.partial")
_DAY_RE: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


# -- where ------------------------------------------------------------------------------


def resolve_root(
    environ: Mapping[str, str], option: str | None, ini: str, base: Path
) -> Path | None:
    """The capture root, or ``None`` when capture is off.

    The first non-blank of ``environ["ROLLOUT_DIR"]``, the ``--rollout-dir`` value
    ``option`` and the ``rollout_dir`` ini value wins, stripped of surrounding blanks. A
    leading ``~`` is expanded; a relative path is taken relative to ``base`` (the
    invocation directory). Nothing is created or resolved on disk.

    Raises ``ValueError`` when a ``~`` cannot be expanded (no home directory is known).
    """
    sources = ((ENV_VAR, environ.get(ENV_VAR)), ("--rollout-dir", option), ("rollout_dir", ini))
    for source, value in sources:
        text = (value or "").strip()
        if not text:
            continue
        try:
            path = Path(text).expanduser()
        except RuntimeError as exc:
            raise ValueError(f"{source}={text!r}: cannot expand '~': {exc}") from None
        return path if path.is_absolute() else base / path
    return None


def new_run_id(now_ns: int | None = None) -> str:
    """A fresh run id: the UTC start time to the microsecond, then 12 random hex digits.

    For example ``20261129T225800123456Z-3f9a0c1b2d4e``. Ids are safe as file names,
    unique (48 random bits), and sort by start time; two runs started within the same
    microsecond sort in random order. ``now_ns`` (nanoseconds since the epoch) defaults to
    the current time; ``ValueError`` when it is outside the years 1 to 9999.
    """
    ns = time.time_ns() if now_ns is None else now_ns
    seconds, rest = divmod(ns, 1_000_000_000)
    try:
        t = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    except OverflowError:
        raise ValueError(f"run start time {ns} ns is out of range") from None
    stamp = (
        f"{t.year:04d}{t.month:02d}{t.day:02d}T{t.hour:02d}{t.minute:02d}{t.second:02d}"
        f"{rest // 1000:06d}Z"
    )
    return f"{stamp}-{secrets.token_hex(6)}"


def is_run_id(text: str) -> bool:
    """Whether ``text`` has the exact shape :func:`new_run_id` gives (ASCII only)."""
    return _RUN_ID_RE.fullmatch(text) is not None


def capture_path(root: Path, run_id: str, started: datetime) -> Path:
    """``<root>/<YYYY-MM-DD>/<run_id>.jsonl``, the day being ``started``'s UTC date.

    A naive ``started`` is taken to be UTC already. ``ValueError`` when ``run_id`` is not a
    run id, so that no id can lead outside ``root``.
    """
    if not is_run_id(run_id):
        raise ValueError(f"refusing capture file name {run_id!r}: it is not a run id")
    day = started.date() if started.tzinfo is None else started.astimezone(UTC).date()
    return root / day.isoformat() / f"{run_id}{SUFFIX}"


def capture_root(root: Path) -> WriteRoot:
    """The capture directory as files are written under it: folders ``0700``, files
    ``0600``, no symbolic link below ``root`` followed (``root`` itself may be one)."""
    return WriteRoot(root, private=True)


#: The redaction mode that writes everything as it is.
_UNREDACTED: Final = "full"


def unredacted_note(root: Path, redaction: str) -> str | None:
    """The note a session gives once, as it starts, when the capture directory ``root`` does
    not exist yet and its runs will be written with the redaction mode ``redaction`` set to
    ``full``: the new directory will hold them unredacted. ``None`` otherwise (the directory
    was there before, so whoever made it was told; or runs are redacted)."""
    if redaction != _UNREDACTED or os.path.lexists(root):
        return None
    return (
        f"pytest-rollout: note: the capture directory {sanitize(str(root))} is new, and with "
        "redaction off (redaction mode full) it will keep every run unredacted: prompts, "
        "answers, tool arguments and results, and any secret in them. Turn redaction on "
        "with --rollout-redact=redacted or the rollout_redact ini key (docs/secrets.md)."
    )


# -- limits ---------------------------------------------------------------------------


#: The ini keys of the capture limits, and the environment variables that take precedence
#: over them (as ``ROLLOUT_DIR`` does over ``rollout_dir``), in the order of
#: :class:`CaptureLimits`' fields.
INI_KEYS: Final = (
    "rollout_capture_max_file_mb",
    "rollout_capture_max_total_mb",
    "rollout_capture_retention_days",
)
ENV_VARS: Final = ("ROLLOUT_MAX_FILE_MB", "ROLLOUT_MAX_TOTAL_MB", "ROLLOUT_RETENTION_DAYS")


@dataclass(frozen=True, slots=True)
class CaptureLimits:
    """Size caps and retention of the capture directory; ``None`` means no limit.

    ``retention_days``: a day directory whose date is more than this many days before
    today is removed; one exactly that old is kept (with 30, on 2026-11-30 the directory
    2026-10-31 stays and 2026-10-30 goes).
    """

    max_file_bytes: int | None = 50 * MB
    max_total_bytes: int | None = 2048 * MB
    retention_days: int | None = 30

    def __post_init__(self) -> None:
        for name in ("max_file_bytes", "max_total_bytes", "retention_days"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must not be negative, got {value}")

    @classmethod
    def from_ini(
        cls,
        max_file_mb: str,
        max_total_mb: str,
        retention_days: str,
        *,
        names: tuple[str, str, str] = INI_KEYS,
    ) -> CaptureLimits:
        """Limits from the ini keys ``rollout_capture_max_file_mb``,
        ``rollout_capture_max_total_mb`` and ``rollout_capture_retention_days``, or from
        values ``names`` says came from elsewhere (the environment variables that win over
        the keys): an error names each value by its name.

        An empty value keeps the default; ``0`` or ``none`` means no limit. Megabytes are
        ``1024 * 1024`` bytes and may have a fraction; days are whole. ``ValueError``
        naming the key and the value for anything else.
        """
        default = cls()
        return cls(
            max_file_bytes=_megabytes(names[0], max_file_mb, default.max_file_bytes),
            max_total_bytes=_megabytes(names[1], max_total_mb, default.max_total_bytes),
            retention_days=_days(names[2], retention_days, default.retention_days),
        )


def _megabytes(key: str, text: str, default: int | None) -> int | None:
    value = text.strip()
    if not value:
        return default
    if value.lower() == "none":
        return None
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ValueError(f"{key} must be a number of megabytes, got {text!r}")
    if number < 0:
        raise ValueError(f"{key} must not be negative, got {text!r} (use 0 for no limit)")
    if number == 0:
        return None
    return max(1, int(number * MB))


def _days(key: str, text: str, default: int | None) -> int | None:
    value = text.strip()
    if not value:
        return default
    if value.lower() == "none":
        return None
    if not re.fullmatch(r"[+-]?[0-9]+", value):
        raise ValueError(f"{key} must be a whole number of days, got {text!r}")
    number = int(value)
    if number < 0:
        raise ValueError(f"{key} must not be negative, got {text!r} (use 0 for no limit)")
    return number or None


# -- what is on disk ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pruned:
    """What :func:`enforce_retention` did: the files it removed, their bytes, and how many
    file system errors it met (and skipped)."""

    removed: tuple[Path, ...]
    freed_bytes: int
    errors: int


@dataclass(slots=True)
class _Tally:
    errors: int = 0


@dataclass(frozen=True, slots=True)
class _RunFile:
    day: date
    run_id: str
    path: Path
    size: int
    mtime: float
    partial: bool


def _day_of(name: str) -> date | None:
    if _DAY_RE.fullmatch(name) is None:
        return None
    try:
        return date.fromisoformat(name)
    except ValueError:
        return None


def _day_dirs(root: Path, tally: _Tally) -> list[tuple[date, Path]]:
    """The day directories directly in ``root``, oldest first; symbolic links are skipped."""
    found: list[tuple[date, Path]] = []
    try:
        with os.scandir(root) as entries:
            for entry in entries:
                day = _day_of(entry.name)
                try:
                    real_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    tally.errors += 1
                    continue
                if day is not None and real_dir:
                    found.append((day, root / entry.name))
    except FileNotFoundError:
        pass
    except OSError:
        tally.errors += 1
    found.sort()
    return found


def _run_files(day: date, directory: Path, tally: _Tally) -> Iterator[_RunFile]:
    """The regular files in ``directory`` named like run files or their temporary files."""
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                match = _RUN_FILE_RE.fullmatch(entry.name)
                partial = match is None
                if match is None:
                    match = _PARTIAL_RE.fullmatch(entry.name)
                    if match is None:
                        continue
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    tally.errors += 1
                    continue
                yield _RunFile(
                    day=day,
                    run_id=match["run"],
                    path=directory / entry.name,
                    size=info.st_size,
                    mtime=info.st_mtime,
                    partial=partial,
                )
    except FileNotFoundError:
        pass
    except OSError:
        tally.errors += 1


def usage(root: Path) -> int:
    """Total bytes of the run files (and their temporary files) in the day directories.

    Anything else under ``root`` is not counted; symbolic links are neither counted nor
    followed. Never raises ``OSError``: what cannot be read is skipped.
    """
    ignored = _Tally()
    return sum(
        f.size for day, path in _day_dirs(root, ignored) for f in _run_files(day, path, ignored)
    )


# -- retention ------------------------------------------------------------------------


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symbolic link loop (Python 3.11, 3.12)
        return None


@dataclass(slots=True)
class _Sweep:
    """One pass of retention over the capture root: what may be deleted, and what was."""

    root: Path  # resolved
    keep: frozenset[Path]  # resolved
    kept_runs: frozenset[str]  # run ids of the kept run files
    now: float
    removed: list[Path] = field(default_factory=list)
    freed: int = 0
    tally: _Tally = field(default_factory=_Tally)

    def deletable(self, f: _RunFile) -> bool:
        if f.partial:
            # A fresh temporary file may be a run in progress in another process.
            return f.run_id not in self.kept_runs and self.now - f.mtime >= STALE_PARTIAL_SECONDS
        parent = _resolved(f.path.parent)
        return parent is not None and (parent / f.path.name) not in self.keep

    def delete(self, f: _RunFile) -> bool:
        """Remove one run file after checking it is a regular file inside the root."""
        parent = _resolved(f.path.parent)
        if parent is None or parent.parent != self.root or not parent.is_relative_to(self.root):
            self.tally.errors += 1
            return False
        target = parent / f.path.name
        try:
            if not stat.S_ISREG(os.lstat(target).st_mode):
                return False
            os.unlink(target)
        except FileNotFoundError:
            return False  # gone already: someone else pruned it
        except OSError:
            self.tally.errors += 1
            return False
        self.removed.append(f.path)
        self.freed += f.size
        if not f.partial:
            _remove_receipt(parent / f"{f.path.name}{RECEIPT_SUFFIX}")
        return True

    def rmdir(self, directory: Path) -> None:
        """Remove an emptied day directory; one that still holds anything stays."""
        parent = _resolved(directory)
        if parent is None or parent.parent != self.root:
            return
        with contextlib.suppress(OSError):  # not empty (a user's file, a kept run), or gone
            parent.rmdir()

    def expire(self, days: list[tuple[date, Path]], cutoff: date) -> None:
        """Empty (and remove) the day directories older than ``cutoff``."""
        for day, path in days:
            if day >= cutoff:
                break
            for f in list(_run_files(day, path, self.tally)):
                if self.deletable(f):
                    self.delete(f)
            self.rmdir(path)

    def trim(self, days: list[tuple[date, Path]], cap: int, today: date) -> None:
        """Remove the oldest run files until those left add up to ``cap`` bytes at most;
        remove the day directories this empties, except ``today``'s and later ones."""
        # Expired directories are scanned again: what they kept still counts.
        files = [f for day, path in days for f in _run_files(day, path, self.tally)]
        total = sum(f.size for f in files)
        emptied: dict[date, Path] = {}
        for f in sorted(files, key=lambda f: (f.day, f.run_id, f.partial, f.path.name)):
            if total <= cap:
                break
            if self.deletable(f) and self.delete(f):
                total -= f.size
                emptied[f.day] = f.path.parent
        for day, path in emptied.items():
            if day < today:
                self.rmdir(path)


def _remove_receipt(path: Path) -> None:
    """Remove the replay receipt of a run just deleted, when it left one (a regular file);
    a receipt is a few hundred bytes and is not counted against the cap."""
    with contextlib.suppress(OSError):
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.unlink(path)


def enforce_retention(
    root: Path, limits: CaptureLimits, today: date, *, keep: Collection[Path] = ()
) -> Pruned:
    """Apply the retention and the total cap to the capture directory at ``root``.

    1. Day directories more than ``limits.retention_days`` days before ``today`` (the UTC
       date) lose their run files, and are removed when that empties them.
    2. Then, while the run files add up to more than ``limits.max_total_bytes``, the oldest
       are removed first, ordered by day then run id; day directories emptied this way are
       removed too, except today's and later ones (a run may be about to write there).

    Only regular files named ``<run_id>.jsonl``, or ``.<run_id>.jsonl.partial`` (the file of
    a run in progress or cut short, once a day old; also ``.<run_id>.jsonl.<random>.partial``
    of older versions), directly inside a day
    directory (``YYYY-MM-DD``) directly inside ``root`` are deleted, never a path in
    ``keep`` (the files of runs in progress), each with its replay receipt
    (``<run_id>.jsonl.receipt``) when it has one. Symbolic links are never followed nor
    deleted. Never raises ``OSError``: each one is counted in ``Pruned.errors``.
    """
    base = _resolved(root)
    if base is None or not base.is_dir():
        return Pruned(removed=(), freed_bytes=0, errors=0)
    kept = frozenset(r for r in map(_resolved, keep) if r is not None)
    kept_runs = frozenset(m["run"] for p in kept if (m := _RUN_FILE_RE.fullmatch(p.name)))
    sweep = _Sweep(root=base, keep=kept, kept_runs=kept_runs, now=time.time())
    days = _day_dirs(root, sweep.tally)
    if limits.retention_days is not None:
        sweep.expire(days, today - timedelta(days=limits.retention_days))
    if limits.max_total_bytes is not None:
        sweep.trim(days, limits.max_total_bytes, today)
    return Pruned(removed=tuple(sweep.removed), freed_bytes=sweep.freed, errors=sweep.tally.errors)


# -- budget ---------------------------------------------------------------------------


class Budget:
    """This process's share of the capture directory: how much a new run may write.

    ``used`` is the directory's :func:`usage` at session start; each finished run adds its
    bytes with :meth:`charge`. Runs of other processes are not seen (see the module
    docstring). Safe to use from several threads. ``ValueError`` when ``used`` is negative.
    """

    __slots__ = ("_lock", "_used", "limits", "root")

    def __init__(self, root: Path, limits: CaptureLimits, used: int) -> None:
        if used < 0:
            raise ValueError(f"used must not be negative, got {used}")
        self.root = root
        self.limits = limits
        self._used = used
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        """Bytes in the directory at session start plus those charged since."""
        with self._lock:
            return self._used

    def for_new_run(self) -> int | None:
        """Bytes a run starting now may write, or ``None`` when no cap applies.

        The smaller of the per-file cap and what is left of the total cap, never negative.
        """
        file_cap = self.limits.max_file_bytes
        total_cap = self.limits.max_total_bytes
        with self._lock:
            left = None if total_cap is None else max(0, total_cap - self._used)
        if file_cap is None:
            return left
        return file_cap if left is None else min(file_cap, left)

    def charge(self, written: int) -> None:
        """Count ``written`` bytes of a finished run; ``ValueError`` when negative."""
        if written < 0:
            raise ValueError(f"written must not be negative, got {written}")
        with self._lock:
            self._used += written
