"""syrupy integration: snapshot an agent run with syrupy, fail with the first-divergence report.

``assert rollout == snapshot(extension_class=RolloutSnapshotExtension)`` keeps syrupy's
workflow (``--snapshot-update``, unused-snapshot detection and cleanup, ``--snapshot-details``,
pytest-xdist) for agent runs. What is stored is the run in canonical form (docs/replay.md), one
``.jsonl`` file per snapshot; what is compared is that canonical form; and a mismatch reads
like a golden's: the first divergent step, its kind, the field-level difference and the score.

The file has the line format of a rollout file (docs/file-format.md):
``{"ts","seq","type","data"}``, with ``data`` canonical (volatile fields removed, keys
sorted, floats rounded) and ``data.step`` kept as the recorder writes it. ``ts`` is the fixed
:data:`SNAPSHOT_TS` and ``seq`` the event's position, so the bytes depend on nothing but what
the run did, and the strict loader, ``rollout diff``, ``rollout show`` and ``rollout fork``
all read the file.

This module imports syrupy; ``import pytest_rollout`` does not import it (the package's
``RolloutSnapshotExtension`` attribute is resolved on first use).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import orjson
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions, canonicalize
from ..diff.drift import Verdict, drift_report
from ..diff.render import Labels
from ..diff.report import render_verdict
from ..errors import RolloutError, RolloutFormatError
from ..format.events import RUN_STARTED, Event
from ..format.files import atomic_write
from ..format.loader import Rollout, loads
from ..safety.sanitize import excerpt, sanitize
from ..session import RolloutSession

if TYPE_CHECKING:
    import pytest
    from syrupy.data import SnapshotCollection
    from syrupy.types import PropertyFilter, PropertyMatcher, SerializableData, SerializedData

__all__ = ["SNAPSHOT_TS", "RolloutSnapshotExtension", "explain_snapshot", "serialize_events"]

#: The ``ts`` of every line of a snapshot: fixed, so that the file never churns.
SNAPSHOT_TS: Final = "1970-01-01T00:00:00Z"
_TS: Final = SNAPSHOT_TS.encode()
#: How every snapshot file begins: how a comparison tells this extension's data apart.
_SIGNATURE: Final = b'{"ts":"%s","seq":0,"type":"run.started",' % _TS
LABELS: Final = Labels(a="snapshot", b="this run", owned=True)
_UPDATE: Final = "pytest --snapshot-update"
_FORK: Final = "Fork the conversation from the last good "  # step (N), or event (...)


def serialize_events(events: Sequence[Event], options: CanonicalOptions = DEFAULT_OPTIONS) -> bytes:
    """A run as snapshot bytes: one canonical event a line, in the rollout line format."""
    lines = []
    for seq, event in enumerate(canonicalize(events, options)):
        data = dict(event.data)
        if event.type != RUN_STARTED:
            data["step"] = event.step
        body = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
        kind = orjson.dumps(event.type)
        lines.append(b'{"ts":"%s","seq":%d,"type":%s,"data":%s}\n' % (_TS, seq, kind, body))
    return b"".join(lines)


def _as_bytes(data: object) -> bytes | None:
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    return None


def is_rollout_snapshot(data: object) -> bool:
    """Whether ``data`` (serialized) was written by :class:`RolloutSnapshotExtension`."""
    raw = _as_bytes(data)
    return raw is not None and raw.startswith(_SIGNATURE)


def _parse(data: object, path: str) -> tuple[Event, ...]:
    raw = _as_bytes(data)
    if raw is None:
        raise RolloutFormatError(path, None, f"expected bytes, got {type(data).__name__}")
    return loads(raw, path=path).events


def _display(path: str) -> str:
    """``path`` relative to the working directory when it lies inside it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith(os.pardir) else relative


def _context(data: object) -> tuple[CanonicalOptions, str | None]:
    """The options to compare a run with, and where the run is saved (for the report's
    ``rollout diff`` command) when it is."""
    if isinstance(data, RolloutSession):
        path = data.recorder.path
        return data.engine.setup.options, None if path is None else _display(path)
    if isinstance(data, Rollout) and Path(data.path).is_file():
        return DEFAULT_OPTIONS, _display(data.path)
    return DEFAULT_OPTIONS, None


def _events_of(data: SerializableData) -> Sequence[Event]:
    """The events of what a test compares with a snapshot."""
    if isinstance(data, RolloutSession):
        data.close()  # ends a run the test left open, as verdict() would, and flushes it
        events = data.events()
        if not events:
            raise RolloutError(
                "the rollout recorded nothing: run the agent inside rollout.run() before "
                "comparing the rollout with a snapshot"
            )
        return events
    if isinstance(data, Rollout):
        return data.events
    if isinstance(data, list | tuple) and data and all(isinstance(e, Event) for e in data):
        return data
    raise TypeError(
        "RolloutSnapshotExtension snapshots an agent run: the rollout fixture, a Rollout or a "
        f"list of Events, not {type(data).__name__}"
    )


def report_lines(
    snapshot_data: object,
    serialized_data: object,
    options: CanonicalOptions,
    *,
    snapshot_path: str | None,
    run_path: str | None = None,
    verbose: int = 0,
) -> list[str]:
    """The first-divergence report of this run (``serialized_data``) against its snapshot.

    With no ``snapshot_path`` (a snapshot not read from a file), the lines that name the file
    (and the commands that would take it) are left out.
    """
    try:
        stored = _parse(snapshot_data, snapshot_path or "snapshot")
    except RolloutFormatError as exc:
        return [
            f"the stored snapshot cannot be read: {excerpt(str(exc), 300)}",
            f"Rewrite it from this run with: {_UPDATE}",
        ]
    run = _parse(serialized_data, "this run")
    verdict = Verdict(
        golden_path=snapshot_path or "snapshot",
        run_path=run_path if snapshot_path else None,
        report=drift_report(stored, run, options),
    )
    lines = render_verdict(verdict, verbose=verbose, labels=LABELS)
    if verdict.golden_summary.cost_usd is None and verdict.run_summary.cost_usd is None:
        # A snapshot keeps no cost (canonical form): the line would only say so twice.
        lines = [line for line in lines if not line.startswith("Cost: ")]
    if snapshot_path is None:
        fork = next((n for n, line in enumerate(lines) if line.startswith(_FORK)), len(lines))
        lines = [line for line in lines[:fork] if not line.startswith("Snapshot: ")]
    return lines


class RolloutSnapshotExtension(SingleFileSnapshotExtension):
    """A syrupy extension for agent runs: ``snapshot(extension_class=RolloutSnapshotExtension)``.

    It serializes the ``rollout`` fixture (or a :class:`~pytest_rollout.Rollout`, or a list of
    events) to canonical JSONL, one ``.jsonl`` file per snapshot under syrupy's
    ``__snapshots__/<test file>/`` (override the ``dirname`` classmethod in a subclass to
    move it); compares canonically with the test's options (its ``rollout`` marker, ini keys
    and hooks), so an unchanged run never rewrites its file; and describes a mismatch with
    the first-divergence report.
    """

    file_extension = "jsonl"
    _write_mode = WriteMode.BINARY

    def __init__(self) -> None:
        self._options = DEFAULT_OPTIONS
        self._run_path: str | None = None
        self._location: str | None = None

    # -- what is stored ---------------------------------------------------------------

    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> SerializedData:
        # syrupy always passes a matcher of its own; it has nothing to match in a run.
        if exclude is not None or include is not None:
            raise TypeError(
                "RolloutSnapshotExtension takes no include/exclude filters: leave fields out "
                "of the comparison with @pytest.mark.rollout(ignore=[...]) or rollout_ignore"
            )
        events = _events_of(data)
        self._options, self._run_path = _context(data)
        serialized = serialize_events(events, self._options)
        try:  # what is stored must read back, or no later run could be compared with it
            _parse(serialized, "the snapshot")
        except RolloutFormatError as exc:
            raise RolloutError(f"this run cannot be snapshotted: {exc}") from None
        return serialized

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> SerializableData | None:
        self._location = snapshot_location
        return super().read_snapshot_data_from_location(
            snapshot_location=snapshot_location,
            snapshot_name=snapshot_name,
            session_id=session_id,
        )

    @classmethod
    def write_snapshot_collection(
        cls,
        *,
        snapshot_collection: SnapshotCollection,
        name_order: dict[str, int] | None = None,
    ) -> None:
        """Write the snapshot atomically: readers see the old file or the new one, whole."""
        snapshot = next(iter(snapshot_collection))
        data = _as_bytes(snapshot.data)
        if data is None:
            raise TypeError(f"cannot write a {type(snapshot.data).__name__} as a rollout snapshot")
        atomic_write(Path(snapshot_collection.location), data)

    # -- how it is compared -----------------------------------------------------------

    def matches(
        self, *, serialized_data: SerializableData, snapshot_data: SerializableData
    ) -> bool:
        """Equal canonical forms (with this test's options): not necessarily equal bytes."""
        if serialized_data == snapshot_data:
            return True
        try:
            ours = _parse(serialized_data, "this run")
            theirs = _parse(snapshot_data, "snapshot")
        except RolloutFormatError:
            return False
        keys = [e.key for e in canonicalize(ours, self._options)]
        return keys == [e.key for e in canonicalize(theirs, self._options)]

    def diff_lines(
        self, serialized_data: SerializedData, snapshot_data: SerializedData
    ) -> Iterator[str]:
        """The report, when syrupy asks this extension for the failure's lines."""
        if not is_rollout_snapshot(serialized_data):
            yield from super().diff_lines(serialized_data, snapshot_data)
            return
        if not snapshot_data:
            yield f"Create it with: {_UPDATE}"
            return
        yield from report_lines(
            snapshot_data,
            serialized_data,
            self._options,
            snapshot_path=None if self._location is None else _display(self._location),
            run_path=self._run_path,
        )

    def diff_snapshots(
        self, serialized_data: SerializedData, snapshot_data: SerializedData
    ) -> SerializedData:
        """``snapshot(diff=...)``: the report of this run against the other snapshot."""
        lines = report_lines(snapshot_data, serialized_data, self._options, snapshot_path=None)
        return ("\n".join(lines) + "\n").encode("utf-8")


def explain_snapshot(config: pytest.Config, left: object, right: object) -> list[str] | None:
    """The report for a failed ``x == snapshot`` whose snapshot this extension wrote.

    The rollout plugin answers ``pytest_assertrepr_compare`` with it ahead of syrupy, which
    would otherwise describe a failure with the fixture's default extension: with
    ``snapshot(extension_class=...)``, syrupy has already put the default back by then.
    ``None`` for every other comparison, and when syrupy's diffs are disabled.
    """
    assertion, data = (left, right) if isinstance(left, SnapshotAssertion) else (right, left)
    if not isinstance(assertion, SnapshotAssertion):
        return None
    if str(getattr(config.option, "diff_mode", "detailed")) == "disabled":
        return None
    result = assertion.executions.get(assertion.num_executions - 1)
    if result is None or result.success or result.exception is not None:
        return None
    if not is_rollout_snapshot(result.asserted_data):
        return None
    location = _display(result.snapshot_location)
    if result.recalled_data is None:
        nodeid = shlex.quote(sanitize(result.test_location.nodeid))
        return [
            f"snapshot {sanitize(result.snapshot_name)} does not exist: {sanitize(location)}",
            f"Create it with: {_UPDATE} {nodeid}",
        ]
    options, run_path = _context(data)
    return report_lines(
        result.recalled_data,
        result.asserted_data,
        options,
        snapshot_path=location,
        run_path=run_path,
        verbose=config.get_verbosity(),
    )
