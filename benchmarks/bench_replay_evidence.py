"""What a replay's evidence costs: it grows linearly, and next to the comparison every compared
test already pays it is a figure.

    python benchmarks/bench_replay_evidence.py [--small 1000] [--large 10000] [--repeat 5]

At the end of each replayed test the plugin computes the canonical digest of both
trajectories for the replay receipt (docs/replay.md, what a replay leaves); the counts come
from the replay's own index of the golden, already built. Each size is a generated golden
and a run of it recorded again (other times, same content); medians of ``--repeat``:

* ``compare``: ``compare(golden, run)``, the comparison ``assert rollout == golden`` makes
  (its fast test skips canonicalizing events whose data are equal as recorded);
* ``evidence, identical``: the digests of a run that compares equal (its digest is its
  golden's: the golden is canonicalized once);
* ``evidence, diverged``: the same for a run changed at its first tool call (both sides
  canonicalized, the run's call ids aligned first), paid only by a failing test.

The target: the time per event of ``evidence, identical`` at the large size over the small
one, at most 1.5x (it grows linearly). Its ratio to ``compare`` is printed as a figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import bench_core

from pytest_rollout.diff.canonical import DEFAULT_OPTIONS
from pytest_rollout.diff.compare import compare
from pytest_rollout.format.events import Event
from pytest_rollout.format.loader import load, loads
from pytest_rollout.store.replay_receipt import trajectory_digests

TARGET = 1.5


def _median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _evidence(golden: Sequence[Event], run: Sequence[Event], identical: bool) -> object:
    return trajectory_digests(golden, run, DEFAULT_OPTIONS, identical=identical)


def _measure(events: int, repeat: int) -> tuple[int, float, float, float]:
    """The golden's event count, and the medians of compare and of both evidence rows."""
    with tempfile.TemporaryDirectory() as folder:
        steps, _ = bench_core._make_runs(events)
        golden_path, run_path = Path(folder, "golden.jsonl"), Path(folder, "run.jsonl")
        bench_core._record(steps, golden_path, 0)
        bench_core._record(steps, run_path, 1)
        golden, run = load(golden_path).events, load(run_path).events
        changed_bytes = run_path.read_bytes().replace(b'"city":"', b'"city":"X', 1)
        changed = loads(changed_bytes, path="changed.jsonl").events
    assert compare(golden, run).identical
    assert not compare(golden, changed).identical
    base = _median(lambda: compare(golden, run), repeat)
    same = _median(lambda: _evidence(golden, run, True), repeat)
    diverged = _median(lambda: _evidence(golden, changed, False), repeat)
    return len(golden), base, same, diverged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    per_event = []
    for size in (args.small, args.large):
        events, base, same, diverged = _measure(size, args.repeat)
        per_event.append(same / events)
        print(f"{events:,} events, medians of {args.repeat}")
        print(f"  compare              {base * 1000:8.1f} ms")
        print(f"  evidence, identical  {same * 1000:8.1f} ms  {same / base:5.2f}x compare (figure)")
        ratio = diverged / base
        print(f"  evidence, diverged   {diverged * 1000:8.1f} ms  {ratio:5.2f}x compare (figure)")
    ratio = per_event[1] / per_event[0]
    verdict = "ok" if ratio <= TARGET else "MISSED"
    print(
        f"evidence, identical, per event: {per_event[1] * 1e6:.1f} us at the large size, "
        f"{ratio:.2f}x the small size's (target <= {TARGET}x) {verdict}"
    )
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
