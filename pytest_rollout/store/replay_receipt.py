"""Replay receipts: what a replayed test proves it replayed, and how much of it matched.

A replayed test's saved run ``X.jsonl`` gets a receipt ``X.jsonl.receipt`` of the same
format as a golden's (the run's digest, size, line count and redaction settings), with two
more fields:

* ``replay_of``: the ``body_sha256`` of the golden's receipt, the golden this run replayed
  (``null`` when the golden had no usable receipt: an unverified replay);
* ``replay``: the mode, the golden's path and digest, turns served of those recorded, tool
  calls matched of those recorded, each divergence (kind, step, attribution), the digests
  of both canonical trajectories and whether they came out identical, and ``verified``:
  whether the golden matched its receipt.

:func:`check_replay` verifies such a receipt later against its run and its golden. Like
every receipt it is tamper evidence, not a signature (see :mod:`.receipt`).

This module never imports pytest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions, canonicalize
from ..diff.compare import compare
from ..format.events import Event
from ..format.ids import align_call_ids
from ..format.loader import loads, read_rollout_bytes
from ..replay.recorded import Recording
from ..safety.sanitize import sanitize
from .receipt import (
    RECEIPT_SUFFIX,
    Receipt,
    ReceiptError,
    ReceiptStatus,
    exact_fields,
    make_receipt,
    receipt_path,
    short_digest,
    verify,
    write_receipt,
)

__all__ = [
    "ReplayCheck",
    "ReplayDivergence",
    "ReplayRecord",
    "canonical_digest",
    "check_replay",
    "options_fingerprint",
    "recorded_counts",
    "trajectory_digests",
    "write_replay_receipt",
]

_RECORD_FIELDS: Final = frozenset(
    {
        "mode",
        "golden",
        "golden_sha256",
        "verified",
        "turns",
        "tool_calls",
        "divergences",
        "identical",
        "canonical",
    }
)
_MODES: Final = frozenset({"dry", "full"})


@dataclass(frozen=True, slots=True)
class ReplayDivergence:
    """One departure a replay found: its kind, step and whom it is attributed to."""

    kind: str
    step: int
    attribution: str


@dataclass(frozen=True, slots=True)
class ReplayRecord:
    """What one replay did with its golden (the ``replay`` field of a replay receipt).

    ``golden`` is the golden's path as the test named it; ``golden_sha256`` the digest of
    the bytes replayed. ``canonical_golden``/``canonical_run`` are :func:`canonical_digest`
    of each side under the test's canonical options, which ``options`` names
    (:func:`options_fingerprint`).
    """

    mode: str
    golden: str
    golden_sha256: str
    verified: bool
    turns_served: int
    turns_recorded: int
    calls_matched: int
    calls_recorded: int
    divergences: tuple[ReplayDivergence, ...]
    identical: bool
    canonical_golden: str
    canonical_run: str
    options: str

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "golden": self.golden,
            "golden_sha256": self.golden_sha256,
            "verified": self.verified,
            "turns": {"served": self.turns_served, "recorded": self.turns_recorded},
            "tool_calls": {"matched": self.calls_matched, "recorded": self.calls_recorded},
            "divergences": [
                {"kind": d.kind, "step": d.step, "attribution": d.attribution}
                for d in self.divergences
            ],
            "identical": self.identical,
            "canonical": {
                "golden": self.canonical_golden,
                "run": self.canonical_run,
                "options": self.options,
            },
        }

    @classmethod
    def from_json_obj(cls, obj: object, path: str) -> ReplayRecord:
        """Read the ``replay`` field of the receipt at ``path``, strictly."""
        fields = _object(obj, "replay", _RECORD_FIELDS, path)
        turns = _object(fields["turns"], "replay.turns", frozenset({"served", "recorded"}), path)
        calls = _object(
            fields["tool_calls"], "replay.tool_calls", frozenset({"matched", "recorded"}), path
        )
        canonical = _object(
            fields["canonical"], "replay.canonical", frozenset({"golden", "run", "options"}), path
        )
        if fields["mode"] not in _MODES:
            raise ReceiptError(path, 'field "replay.mode" must be "dry" or "full"')
        divergences = fields["divergences"]
        if not isinstance(divergences, list):
            raise ReceiptError(path, 'field "replay.divergences" must be an array')
        record = cls(
            mode=fields["mode"],
            golden=_string(fields["golden"], "replay.golden", path),
            golden_sha256=_hex(fields["golden_sha256"], "replay.golden_sha256", path),
            verified=_bool(fields["verified"], "replay.verified", path),
            turns_served=_count(turns["served"], "replay.turns.served", path),
            turns_recorded=_count(turns["recorded"], "replay.turns.recorded", path),
            calls_matched=_count(calls["matched"], "replay.tool_calls.matched", path),
            calls_recorded=_count(calls["recorded"], "replay.tool_calls.recorded", path),
            divergences=tuple(_divergence(d, path) for d in divergences),
            identical=_bool(fields["identical"], "replay.identical", path),
            canonical_golden=_hex(canonical["golden"], "replay.canonical.golden", path),
            canonical_run=_hex(canonical["run"], "replay.canonical.run", path),
            options=_string(canonical["options"], "replay.canonical.options", path),
        )
        if record.turns_served > record.turns_recorded:
            raise ReceiptError(path, "it says more turns were served than were recorded")
        if record.calls_matched > record.calls_recorded:
            raise ReceiptError(path, "it says more tool calls matched than were recorded")
        return record

    def lines(self, wrote: str | None = None) -> list[str]:
        """The replay in the words of a replay log: what it replayed, whether the golden
        was verified, how much matched, what diverged, and the saved run (``wrote``) its
        receipt was written beside."""
        recording = (
            "recording verified against receipt"
            if self.verified
            else "recording UNVERIFIED (no matching receipt)"
        )
        lines = [
            f"replay {self.mode} of sha256:{short_digest(self.canonical_golden)}",
            f"  {recording}  turns {self.turns_served}/{self.turns_recorded}"
            f"  calls matched {self.calls_matched}/{self.calls_recorded}",
            f"  replay trajectory sha256:{short_digest(self.canonical_run)}"
            f"  identical={self.identical}",
        ]
        if not self.divergences:
            lines.append("  no divergence")
        for d in self.divergences[:3]:
            lines.append(f"  divergence: {d.kind} at step {d.step} ({d.attribution})")
        if len(self.divergences) > 3:
            lines.append(f"  ... and {len(self.divergences) - 3} more divergence(s)")
        if wrote is not None:
            lines.append(f"  wrote {sanitize(wrote)} and its replay receipt (+{RECEIPT_SUFFIX})")
        return lines


def canonical_digest(events: Iterable[Event], options: CanonicalOptions) -> str:
    """The sha256 of a run's canonical trajectory: its canonical events' keys, one per
    line. Two runs that compare equal under ``options`` have the same digest."""
    digest = hashlib.sha256()
    for canonical in canonicalize(events, options):
        digest.update(canonical.key)
        digest.update(b"\n")
    return digest.hexdigest()


def trajectory_digests(
    golden: Sequence[Event], run: Sequence[Event], options: CanonicalOptions, *, identical: bool
) -> tuple[str, str]:
    """The canonical digests of a golden and of a run replayed from it (``identical``: the
    two compare equal). A run that compares equal to its golden has its golden's digest, so
    it is not canonicalized again; another is, its call ids named as the golden's first (as
    the comparison does)."""
    digest = canonical_digest(golden, options)
    if identical:
        return digest, digest
    return digest, canonical_digest(align_call_ids(golden, run), options)


def options_fingerprint(options: CanonicalOptions) -> str:
    """A short, stable name for a canonical form: two option sets with the same name give
    every run the same canonical trajectory."""
    described = {
        "drop_keys": sorted(options.drop_keys),
        "ignore_paths": [[p.event_type, list(p.segments)] for p in options.ignore_paths],
        "ignore_types": sorted(options.ignore_types),
        "float_digits": options.float_digits,
        "volatile": options.volatile.fingerprint,
        "exact_paths": [[p.event_type, list(p.segments)] for p in options.exact_paths],
    }
    data = orjson.dumps(described, option=orjson.OPT_SORT_KEYS)
    return "canonical-" + hashlib.sha256(data).hexdigest()[:16]


def recorded_counts(events: Iterable[Event]) -> tuple[int, int]:
    """How many model turns and tool calls a golden holds for a replay to serve."""
    recording = Recording.from_events(events)
    return len(recording.turns), sum(len(calls) for calls in recording.calls.values())


def write_replay_receipt(
    run: Path,
    data: bytes,
    record: ReplayRecord,
    *,
    replay_of: str | None,
    redaction_mode: str,
    rules_sha256: str,
) -> Path:
    """Write the replay receipt of the saved run ``run`` (whose bytes are ``data``) beside
    it, atomically; returns its path."""
    fields = {"replay_of": replay_of, "replay": record.to_json_obj()}
    base = make_receipt(data, redaction_mode=redaction_mode, rules_sha256=rules_sha256)
    receipt = Receipt(
        sha256=base.sha256,
        bytes=base.bytes,
        events=base.events,
        format=base.format,
        redaction_mode=base.redaction_mode,
        rules_sha256=base.rules_sha256,
        replay=fields,
    )
    write_receipt(run, receipt)
    return receipt_path(run)


@dataclass(frozen=True, slots=True)
class ReplayCheck:
    """The verdict of :func:`check_replay`: the record read, what was checked, and every
    problem found (none: the receipt proves what it says)."""

    record: ReplayRecord | None
    checked: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def check_replay(
    run: Path, golden: Path | None = None, options: CanonicalOptions | None = None
) -> ReplayCheck:
    """Verify the replay receipt of ``run`` against the run and its golden (``golden``, or
    the path the receipt names, relative to the current directory).

    The run must match the receipt; the golden must be the file replayed (its digest), and
    for a verified replay still match its own receipt, the one ``replay_of`` names; the
    recorded counts are counted again from the golden; under the same canonical options
    (``options``, the defaults when ``None``) both canonical digests are computed again.
    Never raises for a bad receipt or golden: each is a problem.
    """
    options = DEFAULT_OPTIONS if options is None else options
    checked: list[str] = []
    verification = verify(run)
    receipt = verification.receipt
    if verification.status is not ReceiptStatus.OK or receipt is None:
        return ReplayCheck(None, (), (_run_problem(run, verification.summary()),))
    if receipt.replay is None:
        return ReplayCheck(None, (), (f"{_shown(run)}'s receipt is not a replay receipt",))
    try:
        record = ReplayRecord.from_json_obj(receipt.replay["replay"], str(receipt_path(run)))
    except ReceiptError as exc:
        return ReplayCheck(None, (), (f"replay receipt refused: {exc.reason}",))
    replay_of = receipt.replay.get("replay_of")
    if replay_of is not None and not _is_hex(replay_of):
        refused = 'replay receipt refused: "replay_of" must be a digest or null'
        return ReplayCheck(None, (), (refused,))
    checked.append(f"run matches its receipt (sha256 {short_digest(verification.actual_sha256)})")
    target = Path(record.golden) if golden is None else golden
    problems = _golden_problems(target, record, replay_of, checked)
    if not problems:
        problems = _trajectory_problems(run, target, record, options, checked)
    return ReplayCheck(record, tuple(checked), tuple(problems))


def _golden_problems(
    golden: Path, record: ReplayRecord, replay_of: object, checked: list[str]
) -> list[str]:
    try:
        data = read_rollout_bytes(golden)
    except (OSError, ValueError) as exc:
        return [f"cannot read the golden {_shown(golden)}: {sanitize(str(exc))}"]
    actual = hashlib.sha256(data).hexdigest()
    if actual != record.golden_sha256:
        return [
            f"the golden {_shown(golden)} is not the file this run replayed (sha256 "
            f"{short_digest(actual)}, the receipt says {short_digest(record.golden_sha256)})"
        ]
    checked.append(f"golden {_shown(golden)} is the file replayed")
    if not record.verified:
        checked.append("the replay was unverified: the golden had no matching receipt")
        return []
    vouched = verify(golden, data)
    if vouched.status is not ReceiptStatus.OK or vouched.receipt is None:
        return [f"the golden {_shown(golden)} no longer matches its receipt: {vouched.summary()}"]
    if vouched.receipt.digest(golden.name) != replay_of:
        return [f"the receipt is not of a replay of {_shown(golden)}'s receipt (replay_of differs)"]
    checked.append("golden matches the receipt the replay names (replay_of)")
    return []


def _trajectory_problems(
    run: Path, golden: Path, record: ReplayRecord, options: CanonicalOptions, checked: list[str]
) -> list[str]:
    golden_events = loads(read_rollout_bytes(golden), path=str(golden)).events
    counts = recorded_counts(golden_events)
    if counts != (record.turns_recorded, record.calls_recorded):
        return [
            f"the golden holds {counts[0]} turn(s) and {counts[1]} tool call(s), the receipt "
            f"says {record.turns_recorded} and {record.calls_recorded}"
        ]
    checked.append(f"recorded counts: {counts[0]} turn(s), {counts[1]} tool call(s)")
    if record.options != options_fingerprint(options):
        checked.append(
            "canonical digests not recomputed: the test compared under other canonical "
            f"options ({sanitize(record.options)})"
        )
        return []
    run_events = loads(read_rollout_bytes(run), path=str(run)).events
    identical = compare(golden_events, run_events, options).identical
    if identical != record.identical:
        return [f"the receipt says identical={record.identical}, the runs say {identical}"]
    digests = trajectory_digests(golden_events, run_events, options, identical=identical)
    if digests != (record.canonical_golden, record.canonical_run):
        return ["the canonical trajectories are not the ones the receipt names"]
    checked.append(f"canonical trajectories recomputed: identical={identical}")
    return []


def _run_problem(run: Path, summary: str) -> str:
    return f"the run {_shown(run)} does not match its receipt: {summary}"


def _shown(path: Path) -> str:
    return sanitize(str(path))


def _object(obj: object, name: str, wanted: frozenset[str], path: str) -> Mapping[str, Any]:
    if not isinstance(obj, dict):
        raise ReceiptError(path, f'field "{name}" must be an object')
    exact_fields(obj, wanted, f"{name}.", path)
    return obj


def _string(value: object, name: str, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ReceiptError(path, f'field "{name}" must be a non-empty string')
    return value


def _is_hex(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and not value.strip("0123456789abcdef")


def _hex(value: object, name: str, path: str) -> str:
    text = _string(value, name, path)
    if not _is_hex(text):
        raise ReceiptError(path, f'field "{name}" must be 64 lowercase hex digits')
    return text


def _bool(value: object, name: str, path: str) -> bool:
    if not isinstance(value, bool):
        raise ReceiptError(path, f'field "{name}" must be true or false')
    return value


def _count(value: object, name: str, path: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ReceiptError(path, f'field "{name}" must be an integer of 0 or more')
    return value


def _divergence(obj: object, path: str) -> ReplayDivergence:
    fields = _object(obj, "replay.divergences[]", frozenset({"kind", "step", "attribution"}), path)
    return ReplayDivergence(
        kind=_string(fields["kind"], "replay.divergences[].kind", path),
        step=_count(fields["step"], "replay.divergences[].step", path),
        attribution=_string(fields["attribution"], "replay.divergences[].attribution", path),
    )
