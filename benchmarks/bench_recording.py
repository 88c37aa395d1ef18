"""Benchmark of a recorded tool call, per event, against a bare ``orjson.dumps`` of its data.

A test records its agent's tool calls through ``rollout.tools(...)``: each call is a
``tool.call.started`` and a ``tool.call.completed`` event. This script wraps three seeded
tools whose arguments and results are realistic JSON (a search with filters, a query
returning rows, a file read: 150-600 bytes each) on a ``RolloutSession`` in record mode
writing its file, calls them in turn, and prints, per event:

* **tool call**: the time of the wrapped calls (the tools themselves return a prepared
  value), then a flush of the lines to the partial file, divided by the events made; with
  no redaction and with the default ``Redactor`` (the built-in rules, without this
  machine's environment), the difference being the cost of default redaction;
* **Recorder.emit**: the same events' payloads (plain dicts) emitted straight into a
  ``Recorder`` writing a file, then flushed, with and without the default redaction;
* **floor**: a bare ``orjson.dumps`` of each event's payload.

The paths run alternately, a fresh session (and file) each round; each figure is the median
of ``--repeat`` rounds, timed by the CPU time of the process (``--wall``: by the wall clock).
Opening and closing the file (its lock, fsync and rename: once a test) are not counted.
Target: a recorded tool call <= 5x the floor, without redaction (the recording itself) and
with the default redaction (as the plugin records). Exits 1 when either is missed.

    python benchmarks/bench_recording.py                 # 400 calls a round, 15 rounds: seconds
    python benchmarks/bench_recording.py --repeat 31     # steadier figures on a busy machine
    python benchmarks/bench_recording.py --quick         # smoke run, prints no verdict
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pytest_rollout import Recorder
from pytest_rollout.format.events import TOOL_CALL_COMPLETED, TOOL_CALL_STARTED
from pytest_rollout.safety.redact import Redactor
from pytest_rollout.session import Mode, RolloutSession
from pytest_rollout.session.setup import RunSetup

SEED = 20260702
TARGET = 5.0
#: The CPU time of this process: on a shared machine, time spent waiting for a core while
#: another process runs is not counted (``--wall`` counts it).
_clock: Callable[[], float] = time.process_time

_WORDS = (
    "revenue",
    "forecast",
    "region",
    "churn",
    "invoice",
    "customer",
    "archive",
    "summary",
    "margin",
    "quarter",
    "report",
    "orders",
    "totals",
    "notes",
    "planning",
    "meeting",
    "risks",
    "figures",
    "finance",
    "team",
    "draft",
    "compare",
    "growth",
)


def _text(rng: random.Random, low: int, high: int) -> str:
    size = rng.randint(low, high)
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < size:
        words.append(rng.choice(_WORDS))
    return " ".join(words)


@dataclass(frozen=True)
class Call:
    """One tool call of the plan: the tool, its keyword arguments and what it returns."""

    tool: str
    arguments: dict[str, Any]
    result: Any


def _search(rng: random.Random) -> Call:
    arguments = {
        "query": _text(rng, 30, 80),
        "filters": {"region": rng.sample(["emea", "apac", "amer", "latam"], 2), "year": 2025},
        "limit": rng.randint(5, 20),
    }
    hits = [
        {"id": f"doc-{rng.randint(1000, 9999)}", "title": _text(rng, 20, 40), "score": rng.random()}
        for _ in range(rng.randint(2, 4))
    ]
    return Call("search_docs", arguments, {"hits": hits, "total": rng.randint(10, 500)})


def _query(rng: random.Random) -> Call:
    arguments = {"sql": "select id, region, total from orders where " + _text(rng, 20, 60)}
    rows = [
        [rng.randint(1, 99_999), rng.choice(["emea", "apac"]), round(rng.random() * 1e4, 2)]
        for _ in range(rng.randint(6, 12))
    ]
    return Call("run_query", arguments, {"columns": ["id", "region", "total"], "rows": rows})


def _read(rng: random.Random) -> Call:
    arguments = {"path": f"reports/{rng.choice(_WORDS)}/q{rng.randint(1, 4)}.md", "max_bytes": 4096}
    return Call("read_file", arguments, _text(rng, 200, 500))


def plan(calls: int, seed: int = SEED) -> list[Call]:
    rng = random.Random(seed)
    makers = (_search, _query, _read)
    return [makers[i % 3](rng) for i in range(calls)]


def _payloads(calls: list[Call]) -> list[tuple[str, dict[str, Any]]]:
    """The events the wrapped tools record (as their payloads would be)."""
    events: list[tuple[str, dict[str, Any]]] = []
    for call in calls:
        events.append(
            (TOOL_CALL_STARTED, {"call_id": None, "name": call.tool, "arguments": call.arguments})
        )
        done = {"call_id": None, "name": call.tool, "duration_ms": 0.004, "output": call.result}
        events.append((TOOL_CALL_COMPLETED, done))
    return events


def _tool_functions(calls: list[Call]) -> dict[str, Callable[..., Any]]:
    """Tools with real signatures, answering the plan's results in order."""
    results = iter([c.result for c in calls] * 2)

    def search_docs(query: str, filters: dict[str, Any], limit: int = 10) -> Any:
        return next(results)

    def run_query(sql: str) -> Any:
        return next(results)

    def read_file(path: str, max_bytes: int = 65536) -> Any:
        return next(results)

    return {"search_docs": search_docs, "run_query": run_query, "read_file": read_file}


class Bench:
    """The paths of one round, each timed on the same plan of calls."""

    def __init__(self, calls: list[Call], folder: Path) -> None:
        self.calls = calls
        self.events = _payloads(calls)
        self.folder = folder
        self.redactor = Redactor(environ={})
        self._round = 0

    def _path(self, name: str) -> Path:
        self._round += 1
        return self.folder / f"{name}-{self._round}.jsonl"

    def floor(self) -> float:
        dumps = orjson.dumps
        payloads = [data for _, data in self.events]
        t0 = _clock()
        for data in payloads:
            dumps(data)
        return _clock() - t0

    def tools(self, redactor: Redactor | None) -> float:
        recorder = Recorder(self._path("tools"), redactor=redactor)
        session = RolloutSession(
            RunSetup(test_id="bench_recording.py::test_tools", mode=Mode.RECORD), recorder
        )
        tools = session.tools(_tool_functions(self.calls))
        work = [(tools[c.tool], c.arguments) for c in self.calls]
        with session.run(prompt="Summarize the quarter."):
            session.emit("bench.opened")  # run.started, and the file opened: once a test
            recorder.flush()
            t0 = _clock()
            for tool, arguments in work:
                tool(**arguments)
            recorder.flush()
            elapsed = _clock() - t0
        session.close()
        _check(recorder, len(self.events) + 3)
        return elapsed

    def emit(self, redactor: Redactor | None) -> float:
        recorder = Recorder(self._path("emit"), redactor=redactor)
        recorder.emit("run.started", {"run_id": "r", "test_id": "t"})
        recorder.flush()  # the file opened: once a test
        emit = recorder.emit
        t0 = _clock()
        for event_type, data in self.events:
            emit(event_type, data)
        recorder.flush()
        elapsed = _clock() - t0
        recorder.emit("run.completed", {"outcome": "completed"})
        recorder.close()
        _check(recorder, len(self.events) + 2)
        return elapsed


def _check(recorder: Recorder, expected: int) -> None:
    stats = recorder.stats
    if stats.recorded != expected or stats.dropped or stats.leaked or stats.refused:
        raise SystemExit(f"the recording is not whole: {stats}")


PATHS = ("floor", "tools", "tools_redacted", "emit", "emit_redacted")


def measure(calls: int, repeat: int) -> dict[str, float]:
    """Median microseconds per event of each path, the paths run alternately."""
    with tempfile.TemporaryDirectory(prefix="bench-recording-") as folder:
        bench = Bench(plan(calls), Path(folder))
        runs: dict[str, Callable[[], float]] = {
            "floor": bench.floor,
            "tools": lambda: bench.tools(None),
            "tools_redacted": lambda: bench.tools(bench.redactor),
            "emit": lambda: bench.emit(None),
            "emit_redacted": lambda: bench.emit(bench.redactor),
        }
        for run in runs.values():  # warm up: imports, caches, the first file
            run()
        seconds: dict[str, list[float]] = {name: [] for name in PATHS}
        for _ in range(repeat):
            for name in PATHS:
                seconds[name].append(runs[name]())
        events = len(bench.events)
    return {name: statistics.median(seconds[name]) / events * 1e6 for name in PATHS}


def report(us: dict[str, float], verdict: bool) -> bool:
    floor = us["floor"]

    def line(label: str, name: str) -> None:
        print(f"  {label:<44} {us[name]:7.2f} us  {us[name] / floor:6.1f}x")

    print(f"per event, median; floor (bare orjson.dumps of the payload): {floor:.3f} us")
    line("tool call, default redaction", "tools_redacted")
    line("tool call, no redaction", "tools")
    line("Recorder.emit, default redaction", "emit_redacted")
    line("Recorder.emit, no redaction", "emit")
    print(
        f"  default redaction costs {us['tools_redacted'] - us['tools']:.2f} us per event "
        f"on a tool call, {us['emit_redacted'] - us['emit']:.2f} us through Recorder.emit"
    )
    ok = True
    for label, name in (("no redaction", "tools"), ("default redaction", "tools_redacted")):
        ratio = us[name] / floor
        ok = ok and ratio <= TARGET
        if verdict:
            met = "met" if ratio <= TARGET else "MISSED"
            print(f"tool call ({label}) <= {TARGET:.0f}x a bare dumps: {met} ({ratio:.1f}x)")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=400, help="tool calls a round")
    parser.add_argument("--repeat", type=int, default=15, help="rounds of each path")
    parser.add_argument("--quick", action="store_true", help="smoke run: no verdict")
    parser.add_argument("--wall", action="store_true", help="time by the wall clock")
    args = parser.parse_args(argv)
    if args.wall:
        global _clock
        _clock = time.perf_counter
    if args.quick:
        args.calls, args.repeat = 30, 1
    ok = report(measure(args.calls, args.repeat), verdict=not args.quick)
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
