"""The OTel paths grow linearly: each row times the same work at a small and a large size and
prints the time per unit at the large size over the small (target: at most 1.5x).

    python benchmarks/bench_otel.py [--small 1000] [--large 8000] [--repeat 5]

Rows, all in one process, medians of ``--repeat``:

* ``import chain``: reading and importing a trace whose chat spans each have the one before
  as parent, written children first (per span);
* ``refuse cycle``: reading the same chain with the root's parent set to the last child,
  which the reader refuses (per span);
* ``import calls``: one turn announcing N calls whose tool spans come back in reverse order,
  half claiming their call by id, half by name and arguments (per call);
* ``export new``: ``export_runs`` of an N-turn run (each turn adds a tool call and its
  result) with ``input_messages="new"`` (per turn);
* ``export full``: the same with the whole input on each chat span (per byte written: the
  file itself grows with the square of the turns, so this row runs at an eighth of the sizes).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from pytest_rollout.errors import RolloutFormatError
from pytest_rollout.format.events import Event
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.otel import import_spans, spans_from_bytes
from pytest_rollout.otel.exporter import export_runs

TARGET = 1.5
TRACE = "a" * 32


def _median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _span(number: int, parent: int | None, operation: str, attributes: dict[str, str]) -> Any:
    span = {
        "traceId": TRACE,
        "spanId": f"{number + 1:016x}",
        "name": operation,
        "startTimeUnixNano": str(1000 + number),
        "endTimeUnixNano": str(1000 + number),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": operation}},
            *({"key": k, "value": {"stringValue": v}} for k, v in attributes.items()),
        ],
    }
    if parent is not None:
        span["parentSpanId"] = f"{parent + 1:016x}"
    return span


def _trace(spans: list[Any]) -> bytes:
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


def _chain(size: int, *, cycle: bool = False) -> bytes:
    output = orjson.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])
    attributes = {"gen_ai.input.messages": "[]", "gen_ai.output.messages": output.decode()}
    spans = [_span(n, n - 1 if n else None, "chat", attributes) for n in reversed(range(size))]
    for span in spans:
        span["startTimeUnixNano"] = "1000"  # only the parents order them
    if cycle:
        spans[-1]["parentSpanId"] = f"{size:016x}"
    return _trace(spans)


def _calls(size: int) -> bytes:
    parts = [
        {"type": "tool_call", "id": f"c{n}", "name": "look", "arguments": {"n": n}}
        for n in range(size)
    ]
    output = orjson.dumps([{"role": "assistant", "parts": parts}]).decode()
    turn = _span(0, None, "chat", {"gen_ai.output.messages": output})
    turn["endTimeUnixNano"] = "1001"
    tools = []
    for n in reversed(range(size)):
        attributes = {"gen_ai.tool.name": "look", "gen_ai.tool.call.arguments": f'{{"n":{n}}}'}
        if n % 2:
            attributes["gen_ai.tool.call.id"] = f"c{n}"
        tools.append(_span(2 * size - n + 10, None, "execute_tool", attributes))
    return _trace([turn, *tools])


def _run(turns: int) -> list[Event]:
    ticks = itertools.count()
    recorder = Recorder(clock=lambda: 1_782_650_096_000_000_000 + next(ticks) * 1_000)
    recorder.emit("run.started", {"run_id": "r", "test_id": "t", "model": "gpt-4o", "tools": []})
    new: list[Any] = [{"role": "user", "content": "go"}]
    for step in range(1, turns + 1):
        call = {"id": f"c{step}", "name": "look", "arguments": {"q": f"item {step}"}}
        recorder.emit("llm.turn.started", {"messages": new, "tools": [], "params": {}})
        recorder.emit("llm.turn.completed", {"content": None, "tool_calls": [call]})
        recorder.emit("tool.call.started", {"call_id": call["id"], "name": "look"})
        recorder.emit("tool.call.completed", {"call_id": call["id"], "name": "look", "output": 1})
        assistant = {"role": "assistant", "content": None, "tool_calls": [call]}
        new = [assistant, {"role": "tool", "tool_call_id": call["id"], "content": 1}]
    recorder.emit("run.completed", {"outcome": "completed", "output": "done"})
    return list(recorder.rollout().events)


def _refuse(data: bytes) -> None:
    try:
        spans_from_bytes(data)
    except RolloutFormatError:
        return
    raise AssertionError("the cycle was not refused")


def _row(
    name: str,
    unit: str,
    make: Callable[[int], Callable[[], Any]],
    sizes: tuple[int, int],
    repeat: int,
) -> bool:
    per_unit = []
    for size in sizes:
        work = make(size)
        units = work() if unit == "byte" else size
        per_unit.append(_median(work, repeat) / units)
    ratio = per_unit[1] / per_unit[0]
    verdict = "ok" if ratio <= TARGET else "MISSED"
    small, large = sizes
    print(
        f"{name:<13} {large:>6} / {small:<6} per {unit}: {ratio:5.2f}x (target <= {TARGET}x) "
        f"{verdict}   [{per_unit[0] * 1e6:.3f} us, {per_unit[1] * 1e6:.3f} us]"
    )
    return ratio <= TARGET


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=8000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = (args.small, args.large)
    quadratic = (max(args.small // 8, 1), max(args.large // 8, 2))

    def chain(size: int) -> Callable[[], Any]:
        data = _chain(size)
        return lambda: import_spans(spans_from_bytes(data))

    def cycle(size: int) -> Callable[[], Any]:
        data = _chain(size, cycle=True)
        return lambda: _refuse(data)

    def calls(size: int) -> Callable[[], Any]:
        data = _calls(size)
        return lambda: import_spans(spans_from_bytes(data))

    def export(mode: str) -> Callable[[int], Callable[[], Any]]:
        def make(size: int) -> Callable[[], Any]:
            events = _run(size)
            return lambda: len(export_runs([events], input_messages=mode))

        return make

    passed = [
        _row("import chain", "span", chain, sizes, args.repeat),
        _row("refuse cycle", "span", cycle, sizes, args.repeat),
        _row("import calls", "call", calls, sizes, args.repeat),
        _row("export new", "turn", export("new"), sizes, args.repeat),
        _row("export full", "byte", export("full"), quadratic, args.repeat),
    ]
    return 0 if all(passed) else 1


if __name__ == "__main__":
    sys.exit(main())
