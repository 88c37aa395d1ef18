"""The evidence a replayed test leaves: how much of its golden it matched, and the replay
receipt that proves it (:mod:`~pytest_rollout.store.replay_receipt`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..store.replay_receipt import (
    ReplayDivergence,
    ReplayRecord,
    options_fingerprint,
    trajectory_digests,
)
from .engine import Engine

__all__ = ["ReplayEvidence", "replay_evidence"]


@dataclass(frozen=True, slots=True)
class ReplayEvidence:
    """What one replayed test leaves: the record its receipt holds, and whether it
    diverged as the test sees it (replay met a divergence, or the test compared its run
    and it did not match; a run the test never compared that stopped early where that is
    allowed has not)."""

    record: ReplayRecord
    diverged: bool


def replay_evidence(engine: Engine) -> ReplayEvidence | None:
    """What the test's replay did with its golden, once the test is over (``None`` when
    nothing was replayed: no golden, or the agent never reached it; and for a fork, which
    is not compared).

    The run is compared with its golden here when the test did not ask for it, so every
    replay says whether its trajectory came out identical.
    """
    golden = engine.golden
    if golden is None or golden.rollout is None or golden.sha256 is None:
        return None
    if not (engine.used and engine.replay_started) or engine.fork is not None:
        return None  # a fork runs on past its golden by design: it is not compared
    replay = engine.replay
    assert replay is not None
    compared = engine.compared is not None
    verdict = engine.verdict()
    recording = replay.recording
    calls = [call for step in recording.calls.values() for call in step]
    options = engine.setup.options
    identical = verdict.comparison.identical
    digests = trajectory_digests(
        golden.rollout.events, engine.events(), options, identical=identical
    )
    record = ReplayRecord(
        mode=engine.mode.value,
        golden=golden.shown,
        golden_sha256=golden.sha256,
        verified=not golden.unverified,
        turns_served=sum(1 for turn in recording.turns if turn.consumed),
        turns_recorded=len(recording.turns),
        calls_matched=sum(1 for call in calls if call.consumed),
        calls_recorded=len(calls),
        divergences=tuple(
            ReplayDivergence(d.kind.value, d.step, d.attribution) for d in verdict.report.leading
        ),
        identical=identical,
        canonical_golden=digests[0],
        canonical_run=digests[1],
        options=options_fingerprint(options),
    )
    diverged = bool(engine.divergences()) or (compared and not verdict.matched)
    return ReplayEvidence(record, diverged)
