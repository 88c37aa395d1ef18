"""Benchmark of the core: recording, loading and diffing rollouts (docs/performance.md).

Generates realistic, seeded rollouts of 1k, 10k and 100k events with the project's own
``Recorder`` and prints, measured in this one run:

* load+diff of two rollouts (``load`` both, ``compare``, ``summarize`` + ``score`` both:
  what ``rollout diff`` does) as a ratio to the floor (read both files, split on ``\\n``,
  ``orjson.loads`` each line, in the same process, garbage collector left as Python's
  default); for a pair that diverges late in the run and for an identical pair;
* a plain ``DeepDiff(list_a, list_b)`` of the two lists of loaded event dicts against ours
  (load+diff) at 10k events;
* the recorder's per-event cost (``Recorder.emit`` writing to a file) as a ratio to a bare
  ``orjson.dumps`` of the same payload dicts, over the realistic event mix.

* the loader's bounded cost: ``loads`` of a whole file against ``orjson.loads`` of its lines
  (time and peak memory, each in a fresh process), on the ordinary rollout of the largest
  size, on a hostile but valid file of lines holding 99,991 ``{}`` each, and on two recorded
  runs of long lines: tool outputs of 1 Mi escaped control characters (``"\\u0000\\u0001..."``,
  5.4 MiB a line) and tool outputs of one 15 MiB string.

Targets: diff <= 2.0x the floor at 100k events; >= 50x faster than whole-list DeepDiff at
10k; recording <= 5x a bare dumps; loading <= 3x the time and 3x the memory of
``orjson.loads`` of the lines. Every figure is the best of ``--repeat`` runs.

    python benchmarks/bench_core.py                      # 1k, 10k, 100k (a minute or two)
    python benchmarks/bench_core.py --quick              # smoke run, a few seconds
    python benchmarks/bench_core.py --sizes 1000,10000 --repeat 5
    python benchmarks/bench_core.py --sizes 1000 --hostile-mib 255   # the full-size file (~7 GB)
"""

from __future__ import annotations

import argparse
import copy
import functools
import gc
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

import pytest_rollout
from pytest_rollout import Recorder, compare, load, score, summarize
from pytest_rollout.safety.redact import Redactor

SEED = 20260628
MAX_EVENTS_PER_STEP = 9  # turn started/completed, up to 3 tool calls x2, usage.delta
TARGET_DIFF_RATIO = 2.0
TARGET_DEEPDIFF_SPEEDUP = 50.0
TARGET_RECORD_RATIO = 5.0
TARGET_LOAD_RATIO = 3.0
HOSTILE_ITEMS = 99_991  # {} per line: just within the 100,000 elements of a line
CONTROL_CHARS = 1024 * 1024  # a tool output of "\u0000\u0001...\u001f" repeated
LONG_STRING_BYTES = 15 * 1024 * 1024  # a tool output of one string, within a 16 MiB line
DEEPDIFF_SIZE = 10_000
TARGET_DIFF_SIZE = 100_000

# -- realistic content ------------------------------------------------------------------

_VOCABULARY = (
    "the agent checks weather forecast for city and then compares results with previous "
    "answer because user asked about tomorrow rain probability in degrees celsius while "
    "tool returned a list of hourly values that need summarizing into short paragraph with "
    "units sources caveats and a recommendation about umbrella travel plans flights delayed "
    "database query returned rows orders customers revenue quarter growth percent table "
    "schema column index join filter group aggregate python script computed mean median "
    "standard deviation plotted chart saved file path report markdown section heading"
)
_WORDS = _VOCABULARY.split()

_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "get_weather",
        "description": "Current weather and hourly forecast for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "units": {"type": "string", "enum": ["metric", "imperial"]},
                "hours": {"type": "integer", "minimum": 1, "maximum": 48},
            },
            "required": ["city"],
        },
    },
    {
        "name": "search_web",
        "description": "Search the web and return the top results.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "top_k": {"type": "integer"},
                "filters": {"type": "object"},
            },
            "required": ["query"],
        },
    },
    {
        "name": "sql_query",
        "description": "Run a read-only SQL query on the analytics database.",
        "parameters": {
            "type": "object",
            "properties": {"sql": {"type": "string"}, "params": {"type": "array"}},
            "required": ["sql"],
        },
    },
    {
        "name": "run_python",
        "description": "Execute a short Python snippet in a sandbox.",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "timeout_s": {"type": "number"}},
            "required": ["code"],
        },
    },
    {
        "name": "read_file",
        "description": "Read a text file from the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "max_bytes": {"type": "integer"}},
            "required": ["path"],
        },
    },
)
_TOOL_NAMES = [t["name"] for t in _TOOLS]
_CITIES = ("Paris", "Lyon", "Berlin", "Osaka", "Lima", "Oslo", "Cairo", "Austin", "Perth")


def _text(rng: random.Random, low: int, high: int) -> str:
    target = rng.randint(low, high)
    words: list[str] = []
    size = 0
    while size < target:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    text = " ".join(words)[:target]
    return text[0].upper() + text[1:] + "."


def _arguments(rng: random.Random, name: str) -> dict[str, Any]:
    if name == "get_weather":
        return {"city": rng.choice(_CITIES), "units": "metric", "hours": rng.randint(6, 48)}
    if name == "search_web":
        return {
            "query": _text(rng, 20, 70),
            "top_k": rng.randint(3, 8),
            "filters": {"lang": "en", "recency_days": rng.choice([7, 30, 365]), "safe": True},
        }
    if name == "sql_query":
        return {
            "sql": "SELECT region, SUM(revenue) FROM orders WHERE quarter = ? GROUP BY region",
            "params": [f"2026-Q{rng.randint(1, 4)}"],
        }
    if name == "run_python":
        numbers = [rng.randint(1, 99) for _ in range(6)]
        code = f"import statistics\nprint(statistics.mean({numbers}))"
        return {"code": code, "timeout_s": 10.0}
    return {"path": f"reports/{rng.choice(_WORDS)}_{rng.randint(1, 40)}.md", "max_bytes": 4096}


def _output(rng: random.Random, name: str, arguments: dict[str, Any]) -> Any:
    if name == "get_weather":
        return {
            "city": arguments["city"],
            "now": {"temp_c": round(rng.uniform(-5, 35), 1), "humidity": rng.randint(20, 95)},
            "hourly": [round(rng.uniform(-5, 35), 1) for _ in range(rng.randint(4, 12))],
            "rain_probability": round(rng.random(), 2),
        }
    if name == "search_web":
        return [
            {
                "title": _text(rng, 20, 60),
                "url": f"https://example.org/{rng.choice(_WORDS)}/{rng.randint(1, 9999)}",
                "snippet": _text(rng, 80, 300),
                "score": rng.random(),
            }
            for _ in range(rng.randint(2, 4))
        ]
    if name == "sql_query":
        return {
            "columns": ["region", "revenue"],
            "rows": [[rng.choice(_CITIES), round(rng.uniform(1e3, 1e6), 2)] for _ in range(8)],
            "row_count": 8,
        }
    if name == "run_python":
        return f"{rng.uniform(1, 99):.4f}\n"
    return _text(rng, 300, 1200)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    output: Any
    duration_ms: float


@dataclass
class Step:
    content: str
    calls: list[ToolCall]
    input_tokens: int
    output_tokens: int
    latency_ms: float
    ttft_ms: float
    user_text: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _step(rng: random.Random, number: int) -> Step:
    calls = []
    for index in range(rng.choice((0, 1, 1, 1, 2, 2, 3))):
        name = rng.choice(_TOOL_NAMES)
        arguments = _arguments(rng, name)
        calls.append(
            ToolCall(
                id=f"call_{number}_{index}_{rng.getrandbits(32):08x}",
                name=name,
                arguments=arguments,
                output=_output(rng, name, arguments),
                duration_ms=round(rng.uniform(5, 900), 3),
            )
        )
    return Step(
        content=_text(rng, 100, 600),
        calls=calls,
        input_tokens=rng.randint(500, 12_000),
        output_tokens=rng.randint(20, 600),
        latency_ms=round(rng.uniform(300, 4000), 3),
        ttft_ms=round(rng.uniform(80, 900), 3),
        user_text=_text(rng, 40, 200) if not calls else "",
    )


def _plan(rng: random.Random, events: int) -> list[Step]:
    """Steps whose events (plus run.started/run.completed) stay within ``events``."""
    steps: list[Step] = []
    count = 2  # run.started, run.completed
    while True:
        step = _step(rng, len(steps) + 1)
        size = 3 + 2 * len(step.calls)
        if count + size > events:
            return steps
        steps.append(step)
        count += size


def _events(steps: list[Step], run: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The (type, payload) pairs an instrumented agent would emit for ``steps``.

    ``run`` seeds what changes between two runs that do the same thing: the run id and the
    wall-clock timings (canonicalization drops both, docs/replay.md).
    """
    rng = random.Random(SEED)
    timing = random.Random(run)
    system = _text(rng, 600, 1200)
    prompt = _text(rng, 80, 300)
    yield (
        "run.started",
        {
            "run_id": f"run-{timing.getrandbits(64):016x}",
            "test_id": "tests/test_agent.py::test_weather_report[gpt]",
            "model": "gpt-4o-mini",
            "provider": "openai",
            "tools": _TOOL_NAMES,  # the names, as the session records them
            "prompt": prompt,
            "meta": {"git_sha": "3f9c2ab", "python": "3.11.7", "tags": ["nightly", "eu"]},
        },
    )
    cost = 0.0
    previous: Step | None = None
    for number, step in enumerate(steps, 1):
        if previous is None:
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
            ]
        elif previous.calls:
            messages = [
                {
                    "role": "tool",
                    "tool_call_id": c.id,
                    "content": orjson.dumps(c.output).decode()[:1500],
                }
                for c in previous.calls
            ]
        else:
            messages = [{"role": "user", "content": previous.user_text}]
        yield (
            "llm.turn.started",
            {
                "messages": messages,
                "tools": _TOOL_NAMES,
                "params": {"temperature": 0.2, "max_tokens": 1024, "top_p": 1.0},
                "messages_hash": hashlib.sha256(f"{SEED}:{number}".encode()).hexdigest(),
            },
        )
        turn_cost = round(step.input_tokens * 1.5e-7 + step.output_tokens * 6e-7, 8)
        cost += turn_cost
        yield (
            "llm.turn.completed",
            {
                "content": step.content,
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.calls
                ],
                "usage": {"input_tokens": step.input_tokens, "output_tokens": step.output_tokens},
                "cost_usd": turn_cost,
                "model_version": "gpt-4o-mini-2024-07-18",
                "latency_ms": round(step.latency_ms * timing.uniform(0.7, 1.4), 3),
                "ttft_ms": round(step.ttft_ms * timing.uniform(0.7, 1.4), 3),
            },
        )
        for call in step.calls:
            yield (
                "tool.call.started",
                {"call_id": call.id, "name": call.name, "arguments": call.arguments},
            )
            yield (
                "tool.call.completed",
                {
                    "call_id": call.id,
                    "name": call.name,
                    "output": call.output,
                    "duration_ms": round(call.duration_ms * timing.uniform(0.7, 1.4), 3),
                },
            )
        yield ("usage.delta", {"cumulative_cost_usd": round(cost, 8)})
        previous = step
    yield (
        "run.completed",
        {
            "outcome": "completed",
            "output": steps[-1].content if steps else "",
            "cost_totals": {"total_cost_usd": round(cost, 8)},
            "total_duration_ms": round(sum(s.latency_ms for s in steps) * timing.random(), 3),
        },
    )


def _make_runs(size: int) -> tuple[list[Step], list[Step]]:
    """Run A of about ``size`` events, and run B: the same, except that at ~90% of the steps
    one tool argument differs, and B takes one more step (both fit the loader's limits)."""
    rng = random.Random(SEED + size)
    steps_a = _plan(rng, size - MAX_EVENTS_PER_STEP)
    at = max(0, int(len(steps_a) * 0.9) - 1)
    while at < len(steps_a) - 1 and not steps_a[at].calls:
        at += 1
    steps_b = list(steps_a)
    changed = copy.deepcopy(steps_a[at])
    if changed.calls:
        arguments = changed.calls[0].arguments
        first = next(iter(arguments))
        value = arguments[first]
        arguments[first] = value + 1 if isinstance(value, int) else f"{value} (revised)"
    else:
        changed.content += " Let me double-check that."
    steps_b[at] = changed
    steps_b.append(_step(rng, len(steps_b) + 1))
    return steps_a, steps_b


class _Clock:
    """A deterministic clock, so two runs that do the same thing write the same bytes."""

    def __init__(self, run: int) -> None:
        self.now = 1_782_650_096_000_000_000 + run * 3_600_000_000_000  # 2026-06-28T12:34:56Z
        self.rng = random.Random(run)

    def __call__(self) -> int:
        self.now += self.rng.randint(20_000, 3_000_000)
        return self.now


def _record(steps: list[Step], path: Path, run: int) -> int:
    recorder = Recorder(path, clock=_Clock(run))
    emit = recorder.emit
    for event_type, payload in _events(steps, run):
        emit(event_type, payload)
    recorder.close()
    stats = recorder.stats
    if stats.dropped or stats.encode_errors or stats.write_errors:
        raise SystemExit(f"recorder lost events while generating {path}: {stats}")
    return stats.recorded


# -- measurements -----------------------------------------------------------------------


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - start
        del result  # freeing the parsed objects is left out of both timings
        best = min(best, elapsed)
    return best


def floor(path_a: Path, path_b: Path) -> list[list[Any]]:
    """The physical floor: read both files, split lines, orjson-parse each line."""
    loads = orjson.loads
    parsed = []
    for path in (path_a, path_b):
        with open(path, "rb") as handle:
            data = handle.read()
        parsed.append([loads(line) for line in data.split(b"\n") if line])
    return parsed


def load_diff(path_a: Path, path_b: Path) -> tuple[object, ...]:
    """What ``rollout diff A B`` does before rendering."""
    run_a = load(path_a)
    run_b = load(path_b)
    comparison = compare(run_a.events, run_b.events)
    summary_a = summarize(run_a.events)
    summary_b = summarize(run_b.events)
    return run_a, run_b, comparison, score(summary_a, summary_b)


def _interleaved(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Best time of each function, alternating them so that noise hits all alike."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for index, fn in enumerate(fns):
            best[index] = min(best[index], _best(fn, 1))
    return best


def bench_record(steps: list[Step], directory: Path, repeat: int) -> dict[str, float]:
    """Per-event µs of a bare dumps and of Recorder.emit (to a file, and in memory)."""
    mix = list(_events(steps, 1))
    dumps = orjson.dumps

    def bare() -> None:
        for _, payload in mix:
            dumps(payload)

    redactor = Redactor(environ={})  # the default rules, without this machine's environment

    def recorded(path: Path | None, redacting: Redactor | None = None) -> None:
        recorder = Recorder(path, redactor=redacting)
        emit = recorder.emit
        for event_type, payload in mix:
            emit(event_type, payload)
        recorder.close()
        if recorder.stats.recorded != len(mix):
            raise SystemExit(f"the recorder lost events: {recorder.stats}")

    times = _interleaved(
        [
            bare,
            lambda: recorded(directory / "record.jsonl"),
            lambda: recorded(None),
            lambda: recorded(directory / "redacted.jsonl", redactor),
        ],
        repeat,
    )
    per_event = [t / len(mix) * 1e6 for t in times]
    return {
        "events": len(mix),
        "dumps": per_event[0],
        "file": per_event[1],
        "memory": per_event[2],
        "redacted": per_event[3],
    }


def bench_deepdiff(pair: _Pair, repeat: int) -> float:
    """Seconds of a plain DeepDiff of the two lists of loaded event dicts."""
    from deepdiff import DeepDiff

    list_a, list_b = floor(pair.a, pair.b)
    return _best(lambda: DeepDiff(list_a, list_b), repeat)


def bench_parts(path_a: Path, path_b: Path, repeat: int) -> dict[str, float]:
    """Where load+diff spends its time (best of ``repeat`` for each part)."""
    parts: dict[str, float] = {}
    parts["load both"] = _best(lambda: (load(path_a), load(path_b)), repeat)
    run_a, run_b = load(path_a), load(path_b)
    parts["compare"] = _best(lambda: compare(run_a.events, run_b.events), repeat)
    parts["summarize+score"] = _best(
        lambda: score(summarize(run_a.events), summarize(run_b.events)), repeat
    )
    return parts


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="1000,10000,100000", help="event counts, comma-separated"
    )
    parser.add_argument("--repeat", type=int, default=3, help="repeats per figure (best is kept)")
    parser.add_argument(
        "--deepdiff-repeat", type=int, default=1, help="repeats of the whole-list DeepDiff"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes, 1 repeat")
    parser.add_argument(
        "--data-dir", default=None, help="where rollouts are written (default: a temp dir)"
    )
    parser.add_argument(
        "--hostile-mib",
        type=int,
        default=32,
        help="size of the hostile file of the load-cost row (255: the full-size one)",
    )
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    repeat = max(1, args.repeat)
    deep_repeat = max(1, args.deepdiff_repeat)
    deep_size = DEEPDIFF_SIZE
    if args.quick:
        sizes, repeat, deep_size = [1000, 2000], 1, 1000

    print(
        f"pytest-rollout {pytest_rollout.__version__}, Python {sys.version.split()[0]}, "
        f"orjson {orjson.__version__}, {os.cpu_count()} CPUs; best of {repeat} "
        f"(whole-list DeepDiff: best of {deep_repeat})"
    )
    own_dir = args.data_dir is None
    directory = Path(tempfile.mkdtemp(prefix="bench-rollout-") if own_dir else args.data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        status = _run(sizes, repeat, deep_size, deep_repeat, directory)
        mib = 1 if args.quick else args.hostile_mib
        return max(status, _report_load_cost(directory, max(sizes), mib, repeat))
    finally:
        if own_dir:
            shutil.rmtree(directory, ignore_errors=True)


@dataclass
class _Pair:
    a: Path
    b: Path  # diverges from a at ~90% of the steps, and takes one more step
    same: Path  # does what a did: only ids, timestamps and timings differ
    events_a: int
    events_b: int
    steps: int


def _generate(size: int, directory: Path) -> tuple[_Pair, list[Step]]:
    steps_a, steps_b = _make_runs(size)
    pair = _Pair(
        a=directory / f"a-{size}.jsonl",
        b=directory / f"b-{size}.jsonl",
        same=directory / f"same-{size}.jsonl",
        events_a=0,
        events_b=0,
        steps=len(steps_a),
    )
    pair.events_a = _record(steps_a, pair.a, run=1)
    pair.events_b = _record(steps_b, pair.b, run=2)
    _record(steps_a, pair.same, run=3)
    return pair, steps_a


def _check_outcomes(pair: _Pair) -> str:
    """Make sure the pairs compare the way they were built to (or stop the benchmark)."""
    comparison = load_diff(pair.a, pair.b)[2]
    assert isinstance(comparison, pytest_rollout.Comparison)
    first = comparison.first
    if first is None or comparison.count(pytest_rollout.StepStatus.ONLY_IN_B) != 1:
        raise SystemExit(f"{pair.b} does not diverge from {pair.a} as built")
    same = load_diff(pair.a, pair.same)[2]
    assert isinstance(same, pytest_rollout.Comparison)
    if not same.identical:
        raise SystemExit(f"{pair.same} does not compare identical to {pair.a}")
    return (
        f"first divergence at step {first.step} of {pair.steps} "
        f"({', '.join(c.path for c in first.changes)}), then 1 step only in b"
    )


def _run(sizes: list[int], repeat: int, deep_size: int, deep_repeat: int, directory: Path) -> int:
    start = time.perf_counter()
    pairs: dict[int, _Pair] = {}
    record: dict[str, float] = {}
    for size in sorted(set(sizes) | {deep_size}):
        pairs[size], steps = _generate(size, directory)
        if size == deep_size:
            record = bench_record(steps, directory, max(repeat, 3))
        del steps
    print(f"generated {3 * len(pairs)} rollouts in {time.perf_counter() - start:.1f} s")
    gc.collect()

    verdicts: list[tuple[str, bool]] = []
    _report_load_diff(pairs, sizes, repeat, verdicts)
    _report_deepdiff(pairs[deep_size], deep_size, repeat, deep_repeat, verdicts)
    _report_recording(record, verdicts)

    print("\nsummary")
    for name, ok in verdicts:
        print(f"   {_verdict(ok)}  {name}")
    failures = sum(not ok for _, ok in verdicts)
    return 1 if failures else 0


def _report_load_diff(
    pairs: dict[int, _Pair], sizes: list[int], repeat: int, verdicts: list[tuple[str, bool]]
) -> None:
    """Section 1: load+diff against the floor, at each size."""
    print(
        "\n1. load+diff vs the floor (floor: read + split + orjson.loads both files;"
        "\n   load+diff: load both, compare, summarize + score both)"
    )
    header = f"{'events':>13} {'B/event':>7}  {'pair':<9} {'floor s':>8} {'diff s':>8} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for size in sizes:
        pair = pairs[size]
        per_event = pair.a.stat().st_size / pair.events_a
        t_floor, t_diff, t_floor_same, t_same = _interleaved(
            [
                functools.partial(floor, pair.a, pair.b),
                functools.partial(load_diff, pair.a, pair.b),
                functools.partial(floor, pair.a, pair.same),
                functools.partial(load_diff, pair.a, pair.same),
            ],
            repeat,
        )
        rows = (
            ("diverged", f"{pair.events_a}/{pair.events_b}", t_floor, t_diff),
            ("identical", f"{pair.events_a}/{pair.events_a}", t_floor_same, t_same),
        )
        for label, events, t_f, t_d in rows:
            ratio = t_d / t_f
            verdict = ""
            if size == TARGET_DIFF_SIZE:
                ok = ratio <= TARGET_DIFF_RATIO
                verdicts.append((f"load+diff {label} <= {TARGET_DIFF_RATIO}x floor at 100k", ok))
                verdict = f"  {_verdict(ok)} (target <= {TARGET_DIFF_RATIO}x)"
            print(
                f"{events:>13} {per_event:7.0f}  {label:<9} {t_f:8.3f} {t_d:8.3f} "
                f"{ratio:6.2f}x{verdict}"
            )
    largest = pairs[max(sizes)]
    print(f"   diverged pair at {largest.events_a} events: {_check_outcomes(largest)}")
    parts = bench_parts(largest.a, largest.b, repeat)
    print(
        f"   load+diff of the diverged pair at {largest.events_a} events, by part: "
        + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in parts.items())
    )
    if TARGET_DIFF_SIZE not in sizes:
        print(f"   (the target applies at {TARGET_DIFF_SIZE} events: not measured)")


def _report_deepdiff(
    pair: _Pair, deep_size: int, repeat: int, deep_repeat: int, verdicts: list[tuple[str, bool]]
) -> None:
    """Section 2: whole-list DeepDiff against ours."""
    t_deep = bench_deepdiff(pair, deep_repeat)
    t_ours = _best(lambda: load_diff(pair.a, pair.b), max(repeat, 3))
    speedup = t_deep / t_ours
    print(f"\n2. whole-list DeepDiff vs ours, diverged pair of {pair.events_a} events")
    print(f"   DeepDiff(list_a, list_b) of the loaded dicts: {t_deep:8.3f} s")
    print(f"   ours, load+diff from the files:               {t_ours:8.3f} s")
    verdict = "(the target applies at 10000 events)"
    if deep_size == DEEPDIFF_SIZE:
        ok = speedup >= TARGET_DEEPDIFF_SPEEDUP
        verdicts.append((f">= {TARGET_DEEPDIFF_SPEEDUP:.0f}x faster than DeepDiff at 10k", ok))
        verdict = f"{_verdict(ok)} (target >= {TARGET_DEEPDIFF_SPEEDUP:.0f}x)"
    print(f"   speed-up: {speedup:.0f}x  {verdict}")


def _report_recording(record: dict[str, float], verdicts: list[tuple[str, bool]]) -> None:
    """Section 3: recording, per event, against a bare dumps."""
    ratio = record["file"] / record["dumps"]
    ok = ratio <= TARGET_RECORD_RATIO
    verdicts.append((f"recording <= {TARGET_RECORD_RATIO:.0f}x a bare dumps", ok))
    print(f"\n3. recording, per event, over the realistic mix of {record['events']:.0f} events")
    print(f"   bare orjson.dumps of the payload:  {record['dumps']:6.2f} us")
    print(f"   Recorder.emit, writing a file:     {record['file']:6.2f} us  ({ratio:.2f}x)")
    print(
        f"   Recorder.emit, in memory only:     {record['memory']:6.2f} us  "
        f"({record['memory'] / record['dumps']:.2f}x)"
    )
    print(
        f"   Recorder.emit, writing a file, default redaction on: {record['redacted']:6.2f} us  "
        f"({record['redacted'] / record['dumps']:.2f}x; +{record['redacted'] - record['file']:.2f} "
        f"us an event for the secret scan, not part of the target)"
    )
    print(f"   {_verdict(ok)} (target <= {TARGET_RECORD_RATIO:.0f}x, writing a file)")


# -- 4. the loader's bounded cost ----------------------------------------------------------

#: Run in a fresh process: read the file, then time and measure (peak RSS) one way of loading
#: it. Prints "seconds kibibytes". A child inherits its parent's peak RSS, so on Linux the
#: peak is reset (``/proc/self/clear_refs``) and read from ``VmHWM``. Both ways import what
#: they use before the clock starts: the package's import (tens of milliseconds where no
#: bytecode is cached, a fixed cost that would weigh on a small file's ratio) is start-up,
#: which ``run.py`` measures, not loading.
_MEASURE = """
import gc, resource, sys, time
import orjson
from pytest_rollout import loads


def peak():
    try:
        with open("/proc/self/status") as status:
            return next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


mode, path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
gc.collect()
try:
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
except OSError:
    pass
before = peak()
start = time.perf_counter()
if mode == "floor":
    kept = [orjson.loads(line) for line in data.split(b"\\n") if line.strip()]
else:
    kept = loads(data, path=path)
seconds = time.perf_counter() - start
print(seconds, peak() - before)
"""


def write_hostile(path: Path, mib: int) -> int:
    """A valid rollout of about ``mib`` MiB whose lines hold 99,991 ``{}`` each; its events."""
    items = b"[" + b",".join([b"{}"] * HOSTILE_ITEMS) + b"]"
    with path.open("wb") as out:
        out.write(b'{"ts":"t","seq":0,"type":"run.started","data":{}}\n')
        seq = 1
        while out.tell() < mib * 1024 * 1024 - len(items) - 200:
            out.write(b'{"ts":"t","seq":%d,"type":"note","data":{"v":%b}}\n' % (seq, items))
            seq += 1
        out.write(b'{"ts":"t","seq":%d,"type":"run.completed","data":{}}\n' % seq)
    return seq + 1


def write_long_outputs(path: Path, mib: int, output: str) -> int:
    """A recorded run of about ``mib`` MiB (at least one tool call) whose tool calls each
    return ``output``, so that each ``tool.call.completed`` line holds it; its events."""
    recorder = Recorder(path, clock=_Clock(1))
    emit = recorder.emit
    emit("run.started", {"run_id": "long-outputs", "tools": ["read_file"]})
    size = len(orjson.dumps(output))
    for step in range(1, max(1, mib * 1024 * 1024 // size) + 1):
        call = {"id": f"call_{step}", "name": "read_file", "arguments": {"path": "dump.bin"}}
        emit("llm.turn.started", {"messages": [{"role": "user", "content": "Read it."}]})
        emit("llm.turn.completed", {"content": None, "tool_calls": [call]})
        emit("tool.call.started", {"call_id": call["id"], "name": "read_file"})
        emit(
            "tool.call.completed",
            {"call_id": call["id"], "name": "read_file", "output": output, "duration_ms": 1.5},
        )
    emit("run.completed", {"outcome": "completed", "output": "done"})
    recorder.close()
    if recorder.stats.dropped or recorder.stats.encode_errors:
        raise SystemExit(f"recorder lost events while generating {path}: {recorder.stats}")
    return recorder.stats.recorded


def control_characters() -> str:
    """``CONTROL_CHARS`` characters of U+0000-U+001F in turn: each one is escaped in JSON
    (``\\u0000``, ``\\n``, ...), so the line holds about 5.4 bytes a character."""
    return "".join(map(chr, range(32))) * (CONTROL_CHARS // 32)


def long_string() -> str:
    """One ``LONG_STRING_BYTES`` string of plain text (nothing to escape)."""
    text = " ".join(_WORDS) + " "
    return (text * (LONG_STRING_BYTES // len(text) + 1))[:LONG_STRING_BYTES]


def measure_load(mode: str, path: Path) -> tuple[float, int]:
    """Seconds and peak memory (KiB over the file's bytes) of one load, in a fresh process."""
    found = subprocess.run(
        [sys.executable, "-c", _MEASURE, mode, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds, kib = found.stdout.split()
    return float(seconds), int(kib)


def _load_row(label: str, path: Path, repeat: int, verdicts: list[tuple[str, bool]]) -> None:
    floor_runs = [measure_load("floor", path) for _ in range(repeat)]
    load_runs = [measure_load("load", path) for _ in range(repeat)]
    t_floor = min(t for t, _ in floor_runs)
    t_load = min(t for t, _ in load_runs)
    # Peak memory barely varies between runs: the median is kept.
    m_floor = max(1, sorted(m for _, m in floor_runs)[len(floor_runs) // 2])
    m_load = sorted(m for _, m in load_runs)[len(load_runs) // 2]
    time_ratio, memory_ratio = t_load / t_floor, m_load / m_floor
    ok = time_ratio <= TARGET_LOAD_RATIO and memory_ratio <= TARGET_LOAD_RATIO
    verdicts.append((f"load {label} <= {TARGET_LOAD_RATIO:.0f}x orjson.loads (time, memory)", ok))
    size = path.stat().st_size / 1024 / 1024
    print(
        f"   {label:<13} {size:6.1f} MiB  time {t_floor:7.3f} s -> {t_load:7.3f} s "
        f"({time_ratio:.2f}x)  memory {m_floor / 1024:7.0f} MiB -> {m_load / 1024:7.0f} MiB "
        f"({memory_ratio:.2f}x)  {_verdict(ok)}"
    )


def _report_load_cost(directory: Path, size: int, mib: int, repeat: int) -> int:
    """Section 4: the loader against orjson.loads of the lines, time and peak memory."""
    hostile = directory / f"hostile-{mib}mib.jsonl"
    events = write_hostile(hostile, mib)
    print(
        f"\n4. load vs orjson.loads of the lines (each in a fresh process; target <= "
        f"{TARGET_LOAD_RATIO:.0f}x time and memory)"
    )
    controls = directory / f"controls-{mib}mib.jsonl"
    control_events = write_long_outputs(controls, mib, control_characters())
    strings = directory / f"long-string-{mib}mib.jsonl"
    string_events = write_long_outputs(strings, mib, long_string())
    verdicts: list[tuple[str, bool]] = []
    _load_row("ordinary", directory / f"a-{size}.jsonl", repeat, verdicts)
    _load_row("hostile", hostile, repeat, verdicts)
    _load_row("\\u0000-heavy", controls, repeat, verdicts)
    _load_row("15 MiB string", strings, repeat, verdicts)
    print(
        f"   (hostile: {events} events, {HOSTILE_ITEMS} {{}} a line; \\u0000-heavy: "
        f"{control_events} events, tool outputs of {CONTROL_CHARS} escaped control "
        f"characters; 15 MiB string: {string_events} events, tool outputs of one string)"
    )
    for name, ok in verdicts:
        print(f"   {_verdict(ok)}  {name}")
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
