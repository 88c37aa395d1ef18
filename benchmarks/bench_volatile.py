"""What renaming volatile values costs: ``rollout diff`` of the 100k-event benchmark pair and a
recorded turn, each against the same work with renaming off (target: at most 1.10x).

    python benchmarks/bench_volatile.py [--size 100000] [--repeat 5]

The diff row loads both files and compares them (what ``rollout diff`` does before it
renders), with the built-in kinds on and off. The turn row records the 60-turn agent of
``bench_turns.py`` (the whole history sent each turn, a few KB of new messages a turn)
and takes the median of turns 51-60, each turn's request keyed and its events recorded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_turns
from bench_core import _generate

from pytest_rollout.diff.canonical import DEFAULT_OPTIONS
from pytest_rollout.diff.compare import compare
from pytest_rollout.diff.volatile import BUILTIN, NOTHING, Volatile
from pytest_rollout.format.loader import load
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.safety.redact import Redactor
from pytest_rollout.session import RolloutSession
from pytest_rollout.session.setup import RunSetup

TARGET = 1.10


def _alternating(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Each function's median, the functions run in turn so that drift hits all alike."""
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for times, fn in zip(runs, fns, strict=True):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return [statistics.median(t) for t in runs]


def diff_row(a: Path, b: Path, repeat: int) -> tuple[float, float]:
    def diff(volatile: Volatile) -> Callable[[], object]:
        options = DEFAULT_OPTIONS.extended(volatile=volatile)
        return lambda: compare(load(a).events, load(b).events, options)

    on, off = _alternating([diff(BUILTIN), diff(NOTHING)], repeat)
    return on, off


def turn_row(repeat: int) -> tuple[float, float]:
    """The median recorded turn of turns 51-60 of bench_turns' 60-turn agent (a few KB of new
    messages a turn, the whole history sent each time), renaming on and off."""
    conv = bench_turns.conversation(bench_turns.TURNS)

    def recorded(volatile: Volatile) -> Callable[[], object]:
        def run() -> None:
            setup = RunSetup(
                test_id="bench_volatile.py::test_agent",
                options=DEFAULT_OPTIONS.extended(volatile=volatile),
            )
            session = RolloutSession(setup, Recorder(redactor=Redactor(environ={})))
            live = bench_turns.ScriptedProvider(conv)
            bench_turns.provider_agent(session, conv, live, timings[volatile])

        return run

    timings = {BUILTIN: bench_turns.Timings(), NOTHING: bench_turns.Timings()}
    # A turn is short and the machine's noise is not: three sessions a repeat, each side.
    _alternating([recorded(BUILTIN), recorded(NOTHING)], repeat * 3)
    last = bench_turns.TURNS - bench_turns.WINDOW + 1
    on, off = (t.median(t.turns, last, bench_turns.TURNS) for t in timings.values())
    return on, off


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="events in the diff pair")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each measurement")
    args = parser.parse_args(argv)
    failed = False
    with tempfile.TemporaryDirectory() as directory:
        pair, _ = _generate(args.size, Path(directory))
        on, off = diff_row(pair.a, pair.b, args.repeat)
    rows = [
        (f"rollout diff, {pair.events_a:,} events, renaming on / off", on, off, "ms", 1e3),
        (
            "a recorded turn, turns 51-60, renaming on / off",
            *turn_row(args.repeat),
            "us",
            1e6,
        ),
    ]
    for label, on, off, unit, scale in rows:
        ratio = on / off
        verdict = "PASS" if ratio <= TARGET else "FAIL"
        failed |= ratio > TARGET
        print(
            f"{verdict}  {label:<66} {ratio:5.2f}x  <= {TARGET}x  "
            f"{on * scale:.1f} {unit} against {off * scale:.1f} {unit}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
