"""What any recording of a tool call costs in Python, against what pytest-rollout's costs.

The ``tools`` row of ``run.py`` counts a recorded tool call whole: the wrapper, and the
redaction, lines and writes of its two events. This script puts that figure beside the least
a recording with the same duties can cost in Python, written out plainly here: encode the
arguments and the result once each, look for secrets in both payloads with the redactor (its
gate, which says "no secret" for these payloads at once), make each event's line with a
timestamp and a seq, and write a turn's lines at once. Without the look for secrets too.

Each figure is the CPU time a run with the calls takes less the same run without them, per
event (as ``run.py`` counts it), the median of ``--repeat`` runs; the floor is a bare
``orjson.dumps`` of each event's data, warm (run over and over) and as ``run.py`` measures it
(once a round, after the runs).

    python benchmarks/bench_tool_floor.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).parent))

import run as rows

from pytest_rollout.safety.redact import Redactor


def _per_event(run: Callable[[bool], float], events: int, repeat: int) -> float:
    added = []
    for index in range(repeat + 1):
        order = (True, False) if index % 2 else (False, True)
        times = {call_tools: run(call_tools) for call_tools in order}
        if index:  # the first round warms up
            added.append((times[True] - times[False]) / events)
    return statistics.median(added)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    calls = rows._tool_calls(args.calls)
    events = 2 * len(calls)
    folder = Path(tempfile.mkdtemp(prefix="bench-tool-floor-"))
    redactor = Redactor(environ={})
    plain_gated = _per_event(
        lambda call_tools: rows.plain_recording(
            calls, folder / "plain.jsonl", call_tools=call_tools, look=redactor.redact_payload
        ),
        events,
        args.repeat,
    )
    plain = _per_event(
        lambda call_tools: rows.plain_recording(
            calls, folder / "plain.jsonl", call_tools=call_tools, look=None
        ),
        events,
        args.repeat,
    )
    ours = _per_event(
        lambda call_tools: rows._recorded_run(calls, folder / "ours.jsonl", call_tools=call_tools)[
            0
        ],
        events,
        args.repeat,
    )
    _, _, datas = rows._recorded_run(calls, folder / "datas.jsonl", call_tools=True)
    cold = []
    warm = []
    for _ in range(args.repeat):
        rows._recorded_run(calls, folder / "cold.jsonl", call_tools=False)  # caches go cold
        start = time.perf_counter()
        for data in datas:
            orjson.dumps(data)
        cold.append((time.perf_counter() - start) / len(datas))
        start = time.perf_counter()
        for data in datas:
            orjson.dumps(data)
        warm.append((time.perf_counter() - start) / len(datas))
    floor_cold, floor_warm = statistics.median(cold), statistics.median(warm)
    print(f"{len(calls):,} calls, {events:,} events; medians of {args.repeat}")
    print(
        f"bare orjson.dumps of an event's data: {floor_cold * 1e6:.2f} us after a run "
        f"(as run.py measures it), {floor_warm * 1e6:.2f} us warm"
    )
    for name, figure in (
        ("plain recording, no look for secrets", plain),
        ("plain recording, the redactor's look", plain_gated),
        ("pytest-rollout (run.py's tools row)", ours),
    ):
        print(
            f"{name:<40} {figure * 1e6:6.2f} us an event: {figure / floor_cold:5.1f}x "
            f"run.py's floor, {figure / floor_warm:5.1f}x warm"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
