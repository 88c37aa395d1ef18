"""Every performance target of pytest-rollout, with its floor measured in the same run.

    python benchmarks/run.py              # every row: a few minutes
    python benchmarks/run.py --quick      # smoke run of every row: well under a minute, no verdict
    python benchmarks/run.py --repeat 7   # steadier medians on a busy machine
    python benchmarks/run.py --only diff,startup

Each row compares what a user runs with its floor (the least the same work can cost) or with
what they would run instead, both measured here, alternately, as the median of ``--repeat``
runs. A row with a target counts; a figure is printed for what it tells. The summary says
which targets are met, and how steady the machine's speed was at the start and at the end:
on a steady machine the exit status is 1 when a target is missed; on an unsteady one the run
prints its figures, says they are not evidence either way, and exits 0. What each row
measures: benchmarks/README.md. The rows:

* ``turns``: a recorded provider turn late in a 60-turn run (``bench_turns.py``);
* ``tools``: a tool call recorded through ``rollout.tools(...)``, per event, against a plain
  recording with the same duties and the redactor's look for secrets;
* ``diff``: ``rollout diff`` of two 10k- and of two 100k-event rollouts, whole process;
* ``deepdiff``: the same work at 10k events against a whole-list ``DeepDiff`` (a figure);
* ``view``, ``show``: ``rollout view`` of 100k events and ``rollout show`` of 10
  (``bench_cli.py``);
* ``startup``: pytest's start-up with the plugin;
* ``memory``: resident memory gained per replayed SDK test of 20 tool calls;
* ``recording``: ``Recorder.emit`` per event (a figure, no target).
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bench_cli
import bench_core
import bench_process
import bench_turns
import orjson

import pytest_rollout
from pytest_rollout import Recorder, ToolCall, Turn
from pytest_rollout.cli import main as rollout_main
from pytest_rollout.safety.redact import Redactor
from pytest_rollout.session import Mode, RolloutSession
from pytest_rollout.session.setup import RunSetup

ROWS = ("turns", "tools", "diff", "deepdiff", "view", "show", "startup", "memory", "recording")


@dataclass(frozen=True)
class Row:
    """One line of the summary: a ratio (or figure), what it was measured against, its target."""

    name: str
    value: float
    shown: str  # the measured times, e.g. "1085 us against 172 us"
    target: float | None  # None: a figure without a target
    higher_is_better: bool = False

    @property
    def met(self) -> bool:
        if self.target is None:
            return True
        return self.value >= self.target if self.higher_is_better else self.value <= self.target

    unit: str = "x"

    def line(self, verdicts: bool) -> str:
        if self.target is None:
            goal, verdict = "(figure)", ""
        else:
            goal = f"{'>=' if self.higher_is_better else '<='} {self.target:g}{self.unit}"
            verdict = ("PASS" if self.met else "FAIL") if verdicts else "(quick)"
        value = f"{self.value:.2f}{self.unit}"
        return f"{verdict:>7}  {self.name:<66} {value:>9}  {goal:<10} {self.shown}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us"


# -- turns ------------------------------------------------------------------------------------


def turn_rows(repeat: int) -> list[Row]:
    """The per-turn rows of ``bench_turns.py``: the late turns against the first ones, and
    against hashing the whole request once, for ``rollout.provider`` and for an SDK client."""
    conv = bench_turns.conversation(bench_turns.TURNS)
    goldens = bench_turns.record_provider(conv), bench_turns.record_sdk(conv)
    provider, sdk = bench_turns.Timings(), bench_turns.Timings()
    bench_turns.replay_provider(conv, goldens[0], bench_turns.Timings())  # warm-up
    bench_turns.replay_sdk(conv, goldens[1], bench_turns.Timings())
    for _ in range(repeat):
        bench_turns.replay_provider(conv, goldens[0], provider)
        bench_turns.replay_sdk(conv, goldens[1], sdk)
    rows = []
    window, turns = bench_turns.WINDOW, bench_turns.TURNS
    late = turns - window + 1
    for label, timings in (("provider", provider), ("sdk", sdk)):
        first = timings.median(timings.turns, 1, window)
        last = timings.median(timings.turns, late, turns)
        floor = timings.median(timings.floors, late, turns)
        rows.append(
            Row(
                f"{label} turn {late}-{turns} / turn 1-{window}",
                last / first,
                f"{_us(last)} against {_us(first)}",
                bench_turns.TARGET_GROWTH,
            )
        )
        rows.append(
            Row(
                f"{label} turn {late}-{turns} / hashing the whole request",
                last / floor,
                f"{_us(last)} against {_us(floor)}",
                bench_turns.TARGET_FLOOR,
            )
        )
    return rows


# -- a tool call, recorded --------------------------------------------------------------------


#: (name, arguments, output) of each tool call of a benchmark run.
_Calls = list[tuple[str, dict[str, Any], Any]]


def _tool_calls(count: int) -> _Calls:
    """Realistic (name, arguments, output) triples, from the core benchmark's generator."""
    import random

    rng = random.Random(bench_core.SEED)
    calls = []
    for _ in range(count):
        name = rng.choice(bench_core._TOOL_NAMES)
        arguments = bench_core._arguments(rng, name)
        calls.append((name, arguments, bench_core._output(rng, name, arguments)))
    return calls


class _Announcer:
    """A provider whose every turn asks for the next tool call of the script (a tool call is
    recorded inside a turn, as in a real run)."""

    model = "gpt-4o-mini"

    def __init__(self, calls: _Calls) -> None:
        self._turns = iter(
            [
                Turn(None, [ToolCall(f"call_{i}", name, args)])
                for i, (name, args, _) in enumerate(calls)
            ]
        )

    def complete(self, messages: Any, tools: Any = None, **params: Any) -> Turn:
        return next(self._turns)


def _recorded_run(calls: _Calls, path: Path, *, call_tools: bool) -> tuple[float, float, list[Any]]:
    """One recorded run of a turn a call: the seconds of the run (its turns, its calls and
    the redaction, lines and writes of all its events, up to a last flush; opening and
    closing the file are left out), the seconds spent inside the ``rollout.tools``
    wrappers, and the data of the tool events. With ``call_tools=False`` the turns announce
    the same calls and none is made: what is left is the run without its tool calls."""
    session = RolloutSession(
        RunSetup(test_id="run.py::test_tools", mode=Mode.RECORD),
        Recorder(path, redactor=Redactor(environ={})),  # the plugin records redacted
    )
    outputs = iter([output for _, _, output in calls])

    def tool(**arguments: Any) -> Any:
        return next(outputs)

    provider = session.provider(_Announcer(calls))
    tools = session.tools(dict.fromkeys(bench_core._TOOL_NAMES, tool))
    in_wrappers = 0.0
    clock = time.perf_counter
    # The run is timed in CPU time: time spent waiting for a core while another process
    # runs is left out of both runs, whose difference is the figure.
    with session.run(prompt="benchmark"):
        started = time.process_time()
        for _ in calls:
            (call,) = provider.complete([{"role": "user", "content": "next"}]).tool_calls
            start = clock()  # read in both runs, so that the clock costs both the same
            if call_tools:
                tools[call.name](**call.arguments)
            in_wrappers += clock() - start
        session.recorder.flush()
        whole = time.process_time() - started
    session.close()
    kinds = ("tool.call.started", "tool.call.completed")
    datas = [e.data for e in session.recorder.rollout().events if e.type in kinds]
    return whole, in_wrappers, datas


def plain_recording(
    calls: _Calls, path: Path, *, call_tools: bool, look: Callable[[bytes], Any] | None
) -> float:
    """CPU seconds of a run of one call a turn (``call_tools=False``: the same run without
    its calls), recorded the least way Python allows with the duties of ``rollout.tools``:
    each call's arguments and result encoded once, each payload looked at by ``look``
    (the redactor's secret look, or nothing), a line per event with its timestamp and seq,
    and a turn's lines written at once. :func:`tool_rows` and ``bench_tool_floor.py`` set
    it beside the tools row."""
    outputs = iter([output for _, _, output in calls])
    pieces: list[bytes] = []
    seq = 0
    clock = time.perf_counter

    def wrapped(name: str) -> Callable[..., Any]:
        def tool(**arguments: Any) -> Any:
            nonlocal seq
            started = orjson.dumps({"call_id": "c", "name": name, "arguments": arguments})
            t0 = clock()
            output = next(outputs)
            duration_ms = round((clock() - t0) * 1000, 3)
            done = orjson.dumps(
                {"call_id": "c", "name": name, "duration_ms": duration_ms, "output": output}
            )
            for payload in (started, done):
                if look is not None and look(payload) is not payload:
                    raise RuntimeError("a secret: not expected in these payloads")
                seq += 1
                pieces.append(
                    b'{"ts":"2026-06-28T12:34:56.%06dZ","seq":%d,"type":"tool.call","data":%b}\n'
                    % (seq % 1_000_000, seq, payload)
                )
            return output

        return tool

    tools = {name: wrapped(name) for name in {name for name, _, _ in calls}}
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        started = time.process_time()
        for name, arguments, _ in calls:
            if pieces:  # a turn boundary: the previous turn's lines go to the file
                os.write(descriptor, b"".join(pieces))
                pieces.clear()
            if call_tools:
                tools[name](**arguments)
        os.write(descriptor, b"".join(pieces))
        return time.process_time() - started
    finally:
        os.close(descriptor)


def tool_rows(repeat: int, count: int, directory: Path) -> list[Row]:
    """A tool call recorded through ``rollout.tools(...)`` (record mode, writing a file, the
    default redaction), per event, against :func:`plain_recording` with the redactor's
    look, counted the same way in the same rounds (the target).

    What a call costs the run is what the run takes with the calls less what it takes
    without them (the same turns): that counts the redaction, lines and writes of the
    call's events, which are made at the next turn, outside the wrapper. Shown as figures:
    the same over a bare ``orjson.dumps`` of each event's data, and the wrapper's own time
    over it."""
    calls = _tool_calls(count)
    look = Redactor(environ={}).redact_payload
    added: list[float] = []
    wrapped: list[float] = []
    plain: list[float] = []
    bare: list[float] = []
    for index in range(repeat + 1):
        runs = {}
        plains = {}
        for call_tools in (True, False) if index % 2 else (False, True):
            name = f"{'tools' if call_tools else 'turns'}-{index}.jsonl"
            runs[call_tools] = _recorded_run(calls, directory / name, call_tools=call_tools)
            plains[call_tools] = plain_recording(
                calls, directory / f"plain-{name}", call_tools=call_tools, look=look
            )
        (whole, in_wrappers, datas), (without, _, _) = runs[True], runs[False]
        start = time.perf_counter()
        for data in datas:
            orjson.dumps(data)
        if index:  # the first round warms up
            bare.append((time.perf_counter() - start) / len(datas))
            added.append((whole - without) / len(datas))
            wrapped.append(in_wrappers / len(datas))
            plain.append((plains[True] - plains[False]) / len(datas))
    per_event, floor = statistics.median(added), statistics.median(bare)
    in_wrapper, least = statistics.median(wrapped), statistics.median(plain)
    return [
        Row(
            "tool call recorded, per event / a plain recording with the look",
            per_event / least,
            f"{_us(per_event)} against {_us(least)}",
            TARGET_TOOLS,
        ),
        Row(
            "the same / orjson.dumps of its data",
            per_event / floor,
            f"{_us(per_event)} against {_us(floor)}",
            None,
        ),
        Row(
            "the same, the time inside the wrapper only / orjson.dumps",
            in_wrapper / floor,
            f"{_us(in_wrapper)} against {_us(floor)}",
            None,
        ),
    ]


# -- rollout diff -----------------------------------------------------------------------------


#: The tool-call row's target: a recorded tool call over the plain recording with the look.
TARGET_TOOLS = 1.5


def diff_rows(pair: bench_core._Pair, repeat: int) -> list[Row]:
    """``rollout diff A B`` as a whole process over reading and parsing both files, with the
    garbage collector on and off."""
    figures = bench_process.diff_process(pair.a, pair.b, pair.events_a, repeat)
    size = f"{figures.events:,}"
    return [
        Row(
            f"rollout diff, {size} events, whole process / floor, GC on",
            figures.diff / figures.floor_on,
            f"{_ms(figures.diff)} against {_ms(figures.floor_on)}",
            1.5,
        ),
        Row(
            f"rollout diff, {size} events, whole process / floor, GC off",
            figures.diff / figures.floor_off,
            f"{_ms(figures.diff)} against {_ms(figures.floor_off)}",
            2.5,
        ),
    ]


def deepdiff_rows(pair: bench_core._Pair, repeat: int, deep_repeat: int) -> list[Row]:
    """``rollout diff``'s work in this process (load both, the drift report, its text) at
    10k events, against a plain ``DeepDiff`` of the two lists of parsed events: a figure, as
    its ratio depends on the machine (``DeepDiff`` is plain Python, ours mostly C)."""
    from deepdiff import DeepDiff

    list_a, list_b = bench_core.floor(pair.a, pair.b)
    args = ["diff", str(pair.a), str(pair.b)]
    ours: list[float] = []
    theirs: list[float] = []
    rollout_main(args, out=io.StringIO())  # warm-up (DeepDiff's runs are long enough)
    for index in range(max(repeat, deep_repeat)):
        start = time.perf_counter()
        rollout_main(args, out=io.StringIO())
        ours.append(time.perf_counter() - start)
        if index < deep_repeat:
            start = time.perf_counter()
            DeepDiff(list_a, list_b)
            theirs.append(time.perf_counter() - start)
    t_ours, t_deep = statistics.median(ours), statistics.median(theirs)
    return [
        Row(
            f"speed-up over whole-list DeepDiff, {pair.events_a:,} events",
            t_deep / t_ours,
            f"{_ms(t_ours)} against {_ms(t_deep)}",
            None,
            higher_is_better=True,
        )
    ]


# -- start-up and memory ----------------------------------------------------------------------


def startup_rows(repeat: int) -> list[Row]:
    """Start-up with bytecode cached, as an installed plugin starts (the target), and, as a
    figure, with every module of the plugin compiled in every run."""
    cached = bench_process.startup(repeat)
    compiled = bench_process.startup(repeat, cached=False)
    return [
        Row(
            "pytest start-up, 1 trivial test, with the plugin / without",
            cached.plugin / cached.bare,
            f"{_ms(cached.plugin)} against {_ms(cached.bare)}",
            1.25,
        ),
        Row(
            "the same, the plugin compiled in every run (no bytecode cache)",
            compiled.plugin / compiled.bare,
            f"{_ms(compiled.plugin)} against {_ms(compiled.bare)}",
            None,
        ),
    ]


def memory_rows(tests: int, warm_up: int) -> list[Row]:
    """Resident memory gained per replayed SDK test of ``bench_process.CALLS_PER_TEST``
    tool calls, in one pytest process: over the tests after ``warm_up`` (the target: what
    each test leaves behind), and over the first ``warm_up`` (a figure)."""
    figures = bench_process.replay_memory(tests, warm_up)
    calls = bench_process.CALLS_PER_TEST
    return [
        Row(
            f"replay memory per test, tests {warm_up + 1}-{tests} ({calls} tool calls each)",
            figures.slope_mib,
            f"{figures.total_mib:+.1f} MiB over tests {warm_up + 1}-{tests}",
            0.05,
            unit=" MiB",
        ),
        Row(
            f"the same, tests 1-{warm_up}",
            figures.warm_up_slope_mib,
            "imports and caches filling up",
            None,
            unit=" MiB",
        ),
    ]


def recording_rows(steps: list[bench_core.Step], directory: Path, repeat: int) -> list[Row]:
    figures = bench_core.bench_record(steps, directory, repeat)
    return [
        Row(
            "Recorder.emit per event, writing a file / orjson.dumps",
            figures["file"] / figures["dumps"],
            f"{figures['file']:.2f} us against {figures['dumps']:.2f} us",
            None,
        )
    ]


# -- the run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    rows: tuple[str, ...]
    repeat: int
    diff_sizes: tuple[int, ...]
    deep_size: int
    deep_repeat: int
    tool_calls: int
    memory_tests: int
    memory_warm_up: int


def _plan(args: argparse.Namespace) -> Plan:
    rows = tuple(r.strip() for r in args.only.split(",")) if args.only else ROWS
    unknown = set(rows) - set(ROWS)
    if unknown:
        raise SystemExit(f"unknown rows: {', '.join(sorted(unknown))} (rows: {', '.join(ROWS)})")
    if args.quick:
        return Plan(rows, 1, (1_000, 10_000), 1_000, 1, 500, 40, 20)
    repeat, deep_repeat = max(1, args.repeat), max(1, args.deepdiff_repeat)
    return Plan(rows, repeat, (10_000, 100_000), 10_000, deep_repeat, 5_000, 200, 100)


def _measure(plan: Plan, directory: Path) -> list[Row]:
    steps: dict[int, list[bench_core.Step]] = {}
    pairs: dict[int, bench_core._Pair] = {}

    def pair(size: int) -> bench_core._Pair:
        if size not in pairs:
            pairs[size], steps[size] = bench_core._generate(size, directory)
        return pairs[size]

    def short() -> Path:
        path = directory / "short.jsonl"
        bench_cli.write_short(path, 10)
        return path

    sections: dict[str, Callable[[], list[Row]]] = {
        "turns": lambda: turn_rows(plan.repeat),
        "tools": lambda: tool_rows(plan.repeat, plan.tool_calls, directory),
        "diff": lambda: [row for n in plan.diff_sizes for row in diff_rows(pair(n), plan.repeat)],
        "deepdiff": lambda: deepdiff_rows(pair(plan.deep_size), plan.repeat, plan.deep_repeat),
        "view": lambda: bench_cli.view_rows(pair(plan.diff_sizes[-1]).a, plan.repeat),
        "show": lambda: bench_cli.show_rows(short(), max(plan.repeat, 9)),
        "startup": lambda: startup_rows(max(plan.repeat, 9)),  # short runs: more of them
        "memory": lambda: memory_rows(plan.memory_tests, plan.memory_warm_up),
        "recording": lambda: recording_rows(
            steps[plan.deep_size] if pair(plan.deep_size) else [], directory, max(plan.repeat, 3)
        ),
    }
    rows: list[Row] = []
    for name in plan.rows:
        start = time.perf_counter()
        found = sections[name]()
        print(f"  {name}: {time.perf_counter() - start:.0f} s", flush=True)
        rows.extend(found)
    return rows


def _load() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


#: How much the fixed loop's slow runs may take over its fast ones on a steady machine.
STEADY_SPREAD = 1.15


def _steadiness(runs: int = 21) -> float:
    """How steady the machine's own speed is: a fixed loop of plain Python, timed ``runs``
    times, its slowest tenth (90th percentile) over its fastest (10th). A machine whose
    neighbours take its caches or its cores' time gives the same code different times,
    and the ratios of short measurements with it."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        total = 0
        for number in range(200_000):
            total += number
        times.append(time.perf_counter() - start)
    deciles = statistics.quantiles(times, n=10)
    return deciles[-1] / deciles[0]


def _steadiness_line(spread: float) -> str:
    line = f"steadiness: a fixed loop's slow runs take {spread:.2f}x its fast ones"
    if spread > STEADY_SPREAD:
        line += (
            f" (over {STEADY_SPREAD}x: the machine's speed varies, and so will the ratios of"
            " short measurements; run again on a quieter machine)"
        )
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run of every row, no verdict")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each measurement (median)")
    parser.add_argument(
        "--deepdiff-repeat", type=int, default=3, help="runs of the whole-list DeepDiff"
    )
    parser.add_argument("--only", default="", help=f"comma-separated rows among: {', '.join(ROWS)}")
    args = parser.parse_args(argv)
    plan = _plan(args)
    print(
        f"pytest-rollout {pytest_rollout.__version__}, Python {sys.version.split()[0]}, "
        f"orjson {orjson.__version__}, {os.cpu_count()} CPUs; medians of {plan.repeat}, "
        f"alternating; {_load()}",
        flush=True,
    )
    start = _steadiness()
    print(_steadiness_line(start), flush=True)
    directory = Path(tempfile.mkdtemp(prefix="bench-run-"))
    try:
        rows = _measure(plan, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(f"\n{'':>7}  {'figure':<66} {'ratio':>9}  {'target':<10} measured")
    for row in rows:
        print(row.line(verdicts=not args.quick))
    end = _steadiness()
    print(f"\nat the end: {_load()}; {_steadiness_line(end)}")
    missed = [row.name for row in rows if not row.met]
    if args.quick:
        print("quick run: sizes and repeats too small for a verdict")
        return 0
    print("all targets met" if not missed else f"missed: {'; '.join(missed)}")
    if max(start, end) > STEADY_SPREAD:
        print(
            f"not evidence: the machine's speed was not steady (over {STEADY_SPREAD}x at the"
            " start or at the end), so this run neither passes nor fails; run it again"
        )
        return 0
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
