"""The ``rollout`` command's own costs, each against its floor measured in the same run.

    python benchmarks/bench_cli.py             # view and show: a minute or two
    python benchmarks/bench_cli.py --quick     # smoke run: small sizes, one repeat, no verdict
    python benchmarks/bench_cli.py --big       # also diff two trusted files of a million events
                                               # (about 10 minutes, 1.7 GB of files, 5 GB of memory)
    python benchmarks/bench_cli.py --big --data-dir /tmp/rollout-big   # keep the big files
                                               # (and use them again: they take 2 minutes)

Every row runs whole processes, alternating what it measures with its floor, and keeps the
medians (``bench_process.alternate``, with bytecode cached as an installed package has it).
The rows (``view_rows``, ``show_rows`` and ``big_diff_rows`` return them, for ``run.py``):

* ``view``: ``rollout view FILE --out PAGE`` of a 100k-event rollout over the floor, a process
  that reads the file, splits its lines and ``orjson.loads`` each one, the garbage collector
  on (``bench_process.FLOOR``). Target: 1.5x.
* ``show``: ``rollout show FILE`` of a 10-event rollout over a script that reads, parses and
  prints each line: what is left is start-up, so it says whether the command imports only
  what it runs. A figure.
* ``big diff`` (``--big``): ``rollout diff --max-events N --max-bytes SIZE A B`` of two
  trusted files of 500k and of 1M events (555 MB each). Its seconds per event at 1M over
  those at 500k (target 1.2x: linear), and its peak resident memory over the floor's, a
  process that reads and parses both files (target 1.0x). Its time over the floor's is a
  figure.

The rollouts are ``bench_core``'s seeded runs; a pair is its ``a`` and ``b`` runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import bench_core
import bench_process

from pytest_rollout import Recorder

if TYPE_CHECKING:
    from run import Row

#: The size of the view row's rollout, and of the big diff's two pairs.
VIEW_EVENTS = 100_000
BIG_EVENTS = (500_000, 1_000_000)
TARGET_VIEW = 1.5
TARGET_LINEAR = 1.2
TARGET_MEMORY = 1.0

#: The show row's floor: read the file, parse each line and print what it is.
SHOW_FLOOR = """
import sys
import orjson
with open(sys.argv[1], "rb") as handle:
    data = handle.read()
for line in data.split(b"\\n"):
    if line:
        event = orjson.loads(line)
        print(event["seq"], event["type"], event["data"].get("step", ""))
"""


def _row(name: str, value: float, shown: str, target: float | None, unit: str = "x") -> Row:
    # run.py's summary line; imported here so that run.py can import this module.
    from run import Row

    return Row(name, value, shown, target, unit=unit)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms"


# -- the rollouts -----------------------------------------------------------------------------


def write_run(
    path: Path, events: int, run: int = 1, steps: list[bench_core.Step] | None = None
) -> int:
    """``bench_core``'s seeded run (its ``a`` run of about ``events`` events, or ``steps``),
    recorded by the project's Recorder into ``path`` with no limit on its events; how many."""
    if steps is None:
        steps = bench_core._make_runs(events)[0]
    return _record(path, bench_core._events(steps, run), run, events)


def write_short(path: Path, events: int) -> int:
    """A run of exactly ``events`` events: the start of ``bench_core``'s seeded run, then its
    end."""
    whole = list(bench_core._events(bench_core._make_runs(1000)[0], 1))
    return _record(path, iter([*whole[: events - 1], whole[-1]]), 1, events)


def _record(path: Path, events: Iterator[tuple[str, dict[str, Any]]], run: int, most: int) -> int:
    recorder = Recorder(path, clock=bench_core._Clock(run), max_events=most + 10)
    emit = recorder.emit
    for event_type, payload in events:
        emit(event_type, payload)
    recorder.close()
    stats = recorder.stats
    if stats.dropped or stats.encode_errors or stats.write_errors:
        raise SystemExit(f"the recorder lost events while writing {path}: {stats}")
    return stats.recorded


def write_pair(directory: Path, events: int) -> tuple[Path, Path]:
    """``bench_core``'s ``a`` and ``b`` runs of about ``events`` events (``b`` diverges at 90%
    of the steps and takes one more), kept in ``directory``: files already there are used."""
    a, b = directory / f"a-{events}.jsonl", directory / f"b-{events}.jsonl"
    if not (a.exists() and b.exists()):
        steps_a, steps_b = bench_core._make_runs(events)
        write_run(a, events, 1, steps_a)
        write_run(b, events, 2, steps_b)
    return a, b


def _events_in(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


# -- view and show ----------------------------------------------------------------------------


def view_rows(path: Path, repeat: int) -> list[Row]:
    """``rollout view`` of the rollout at ``path`` over reading and parsing it."""
    events = _events_in(path)
    with tempfile.TemporaryDirectory(prefix="bench-view-") as folder:
        page = str(Path(folder) / "page.html")
        env = bench_process.cached_bytecode(Path(folder) / "bytecode")
        floor, view = bench_process.alternate(
            [
                [sys.executable, "-c", bench_process.FLOOR, "on", str(path)],
                [sys.executable, "-c", bench_process.ROLLOUT, "view", "--out", page, str(path)],
            ],
            repeat,
            env=env,
        )
    return [
        _row(
            f"rollout view, {events:,} events / floor",
            view / floor,
            f"{_ms(view)} against {_ms(floor)}",
            TARGET_VIEW,
        )
    ]


def show_rows(path: Path, repeat: int) -> list[Row]:
    """``rollout show`` of the short rollout at ``path`` over a parse-and-print script."""
    events = _events_in(path)
    with tempfile.TemporaryDirectory(prefix="bench-show-") as folder:
        env = bench_process.cached_bytecode(Path(folder))
        floor, show = bench_process.alternate(
            [
                [sys.executable, "-c", SHOW_FLOOR, str(path)],
                [sys.executable, "-c", bench_process.ROLLOUT, "show", str(path)],
            ],
            repeat,
            env=env,
        )
    return [
        _row(
            f"rollout show, {events} events / read, parse, print",
            show / floor,
            f"{_ms(show)} against {_ms(floor)}",
            None,
        )
    ]


# -- the big diff -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One finished process: its wall seconds and peak resident memory (KiB)."""

    seconds: float
    peak_kib: int


def measured(command: Sequence[str], env: dict[str, str]) -> Run:
    """Run ``command`` (its output thrown away): its wall time and its own peak memory (the
    kernel's accounting of this one child, ``wait4``)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command[:4])}... ended with status {process.returncode}")
    return Run(seconds, usage.ru_maxrss)  # KiB on Linux


@dataclass(frozen=True)
class BigFigures:
    events: int
    floor: Run  # medians of the floor's runs
    diff: Run


def _median(runs: list[Run]) -> Run:
    return Run(
        statistics.median(r.seconds for r in runs), int(statistics.median(r.peak_kib for r in runs))
    )


def big_diff(directory: Path, sizes: Sequence[int], repeat: int) -> list[BigFigures]:
    """``rollout diff`` with the limits lifted, and the floor, on a pair of each size."""
    pairs = {size: write_pair(directory, size) for size in sizes}
    biggest = max(path.stat().st_size for pair in pairs.values() for path in pair)
    limits = ["--max-events", str(2 * max(sizes)), "--max-bytes", str(biggest + 1)]
    figures = []
    with tempfile.TemporaryDirectory(prefix="bench-big-") as folder:
        env = bench_process.cached_bytecode(Path(folder))
        for a, b in pairs.values():
            floor = [sys.executable, "-c", bench_process.FLOOR, "on", str(a), str(b)]
            diff = [sys.executable, "-c", bench_process.ROLLOUT, "diff", *limits, str(a), str(b)]
            measured(diff, env)  # fills the bytecode cache, and the page cache with the files
            runs: dict[str, list[Run]] = {"floor": [], "diff": []}
            for index in range(repeat):
                order = ("floor", "diff") if index % 2 == 0 else ("diff", "floor")
                for name in order:
                    runs[name].append(measured(floor if name == "floor" else diff, env))
            events = _events_in(a) + _events_in(b)
            figures.append(BigFigures(events, _median(runs["floor"]), _median(runs["diff"])))
    return figures


def big_diff_rows(directory: Path, sizes: Sequence[int], repeat: int) -> list[Row]:
    """``rollout diff --max-events --max-bytes`` at two sizes: linear time, and peak memory
    no more than reading and parsing both files."""
    small, large = big_diff(directory, sizes, repeat)
    per_event = [f.diff.seconds / f.events for f in (small, large)]
    mib = 1024
    return [
        _row(
            f"rollout diff --max-*, per event, {large.events:,} / {small.events:,}",
            per_event[1] / per_event[0],
            f"{per_event[1] * 1e6:.1f} us against {per_event[0] * 1e6:.1f} us",
            TARGET_LINEAR,
        ),
        _row(
            f"rollout diff --max-*, {large.events:,} events, peak RSS / floor",
            large.diff.peak_kib / large.floor.peak_kib,
            f"{large.diff.peak_kib / mib:.0f} MiB against {large.floor.peak_kib / mib:.0f} MiB",
            TARGET_MEMORY,
        ),
        _row(
            f"rollout diff --max-*, {large.events:,} events, time / floor",
            large.diff.seconds / large.floor.seconds,
            f"{large.diff.seconds:.1f} s against {large.floor.seconds:.1f} s",
            None,
        ),
    ]


# -- the run ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes, no verdict")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each process (median)")
    parser.add_argument("--big", action="store_true", help="also the big diff (minutes)")
    parser.add_argument(
        "--data-dir", help="where the big diff's files are kept (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    repeat = 1 if args.quick else max(1, args.repeat)
    view_events = 10_000 if args.quick else VIEW_EVENTS
    big_sizes = (50_000, 100_000) if args.quick else BIG_EVENTS
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; medians of {repeat}")
    own = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    data = own if args.data_dir is None else Path(args.data_dir)
    data.mkdir(parents=True, exist_ok=True)
    try:
        view_file, show_file = own / f"view-{view_events}.jsonl", own / "show.jsonl"
        write_run(view_file, view_events)
        write_short(show_file, 10)
        rows = view_rows(view_file, repeat)
        rows += show_rows(show_file, max(repeat, 15))  # runs of a few tens of ms: more of them
        if args.big:
            rows += big_diff_rows(data, big_sizes, repeat if args.quick else min(repeat, 3))
    finally:
        shutil.rmtree(own, ignore_errors=True)
    print(f"\n{'':>7}  {'figure':<58} {'ratio':>9}  {'target':<10} measured")
    for row in rows:
        print(row.line(verdicts=not args.quick))
    if args.quick:
        print("quick run: sizes and repeats too small for a verdict")
        return 0
    missed = [row.name for row in rows if not row.met]
    print("all targets met" if not missed else f"missed: {'; '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
