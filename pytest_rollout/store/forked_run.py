"""A fork written as a run of its own (``rollout fork --out``, docs/cli.md).

The new rollout holds the original run's events up to and including the fork's step, as
they were recorded, then an end of its own: a ``run.completed`` whose ``outcome`` is
``"forked"`` (the loader wants every run to end, and the original's end is not the fork's).
Its ``run.started`` gets a fresh run id and a ``forked_from`` object naming the original
run, the sha256 of the original file's bytes and the step (docs/file-format.md). So the
fork compares with its original, step by step, as the original's prefix: every event of
every step up to the fork's is the same, and the first difference is the fork's own end.

The events pass through a redactor, as a recorded run's do, and the file is sealed with a
receipt: file and receipt are written as one unit by the pair write goldens use (the
receipt's rename is the commit point, and a crash leaves the old pair or the new), never
over an existing file unless asked. Each fork is a new run, with an id of its own, even of
the same run at the same step.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson

from ..format.events import RUN_COMPLETED, RUN_STARTED, Event
from ..format.files import SecretInFileError
from ..format.loader import loads
from ..replay.fork import FORKED_FROM, ForkError, fork_prefix, forked_from, original_run_id
from ..safety.redact import RedactionMode, Redactor
from .capture import new_run_id
from .golden import _commit_pair, settle
from .receipt import make_receipt

__all__ = ["FORKED_OUTCOME", "ForkedRun", "write_forked_run"]

#: The outcome of a forked run's own end: it stopped where it was forked.
FORKED_OUTCOME: Final = "forked"


@dataclass(frozen=True, slots=True)
class ForkedRun:
    """A fork written to ``path``: its run id, where it came from (the ``forked_from``
    object), and how many of the original's events it holds (its own end aside)."""

    path: Path
    run_id: str
    forked_from: dict[str, Any]
    events_replayed: int


def write_forked_run(
    source: str,
    data: bytes,
    events: Sequence[Event],
    step: int,
    target: Path,
    *,
    force: bool = False,
    redactor: Redactor | None = None,
) -> ForkedRun:
    """Write the run ``events`` (loaded from the bytes ``data`` of the file ``source``),
    forked at ``step``, as a new rollout at ``target``, sealed with its receipt.

    Raises :class:`~pytest_rollout.replay.fork.ForkError` for a step outside the run, a
    ``target`` that is the source, is not a regular file, or exists (unless ``force``), or
    that cannot be written; :class:`~pytest_rollout.format.files.SecretInFileError` when a
    secret is left in the bytes after redaction. Nothing is written then.
    """
    prefix = fork_prefix(events, step)
    _check_target(source, target, force)
    redactor = Redactor(RedactionMode.REDACTED) if redactor is None else redactor
    run_id = new_run_id()
    origin = forked_from(original_run_id(events), hashlib.sha256(data).hexdigest(), step)
    lines = _lines(prefix, step, run_id, origin, redactor)
    loads(lines, path=str(target))  # only what the loader reads back is written
    if redactor.mode is not RedactionMode.FULL and (label := redactor.scan(lines)) is not None:
        raise SecretInFileError(target, label)
    receipt = make_receipt(
        lines, redaction_mode=redactor.mode.value, rules_sha256=redactor.rules_digest
    )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        settle(target.parent)  # what an interrupted write left in the folder
        _commit_pair(target, lines, receipt.to_bytes(target.name))
    except OSError as exc:
        raise ForkError(f"cannot write {target}: {exc.strerror or exc}") from None
    return ForkedRun(target, run_id, origin, len(prefix))


def _check_target(source: str, target: Path, force: bool) -> None:
    """Refuse a ``target`` that a fork must not be written over."""
    if target.is_symlink() or (target.exists() and not target.is_file()):
        # A rollout is sealed by a receipt beside it: it is a file of its own, never a link,
        # a pipe or a device written through.
        raise ForkError(f"{target} is not a regular file: write the fork to a file of its own")
    if not target.exists():
        return
    if _same_file(Path(source), target):
        raise ForkError(f"{target} is the rollout being forked: write the fork to another file")
    if not force:
        raise ForkError(
            f"{target} exists: a rollout and its receipt are not replaced unasked; write the "
            "fork to another file, or pass --force to replace it"
        )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _lines(
    prefix: Sequence[Event],
    step: int,
    run_id: str,
    origin: dict[str, Any],
    redactor: Redactor,
) -> bytes:
    """The forked run's lines: ``prefix`` with its new identity, then its own end."""
    out: list[bytes] = []
    for event in prefix:
        data: dict[str, Any] = event.data
        if event.type == RUN_STARTED:
            data = {**data, "run_id": run_id, FORKED_FROM: origin}
        out.append(_line(event.ts, event.seq, event.type, redactor.redact(data)))
    last = prefix[-1]
    end = {"outcome": FORKED_OUTCOME, "output": None, "step": step}
    out.append(_line(_now(), last.seq + 1, RUN_COMPLETED, end))
    return b"".join(out)


def _line(ts: str, seq: int, event_type: str, data: dict[str, Any]) -> bytes:
    return orjson.dumps({"ts": ts, "seq": seq, "type": event_type, "data": data}) + b"\n"


def _now() -> str:
    """The current UTC time as a rollout line's ``ts`` (RFC 3339, microseconds)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
