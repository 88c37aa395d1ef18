"""``rollout export otel`` then ``rollout import otel`` gives back the run ``rollout diff``
finds identical: for the project's goldens and for a generated corpus. And the importer is
as strict and bounded as the loader."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_otel_import import run_cli

from pytest_rollout.diff.compare import compare
from pytest_rollout.errors import RolloutFormatError
from pytest_rollout.format.events import Event
from pytest_rollout.format.loader import load
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.format.schema import SCHEMA
from pytest_rollout.otel import (
    TraceLimits,
    export_runs,
    import_spans,
    spans_from_bytes,
    write_rollout,
)
from pytest_rollout.otel.exporter import INPUT_MESSAGES
from pytest_rollout.plugin.otel_trace import OtelPlugin
from pytest_rollout.plugin.tally import Tally
from pytest_rollout.safety.redact import Redactor

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = sorted(
    [*ROOT.glob("golden/**/*.jsonl"), *ROOT.glob("examples/weather/golden/**/*.jsonl")]
)


@pytest.mark.parametrize("input_messages", INPUT_MESSAGES)
@pytest.mark.parametrize("golden", GOLDENS, ids=lambda p: p.name)
def test_an_exported_golden_imports_back_identical(
    golden: Path, input_messages: str, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    back = tmp_path / "back.jsonl"
    exported = run_cli(
        "export", "otel", str(golden), "-o", str(trace), "--input-messages", input_messages
    )
    assert exported[0] == 0
    assert run_cli("import", "otel", str(trace), "-o", str(back))[0] == 0
    assert compare(load(golden).events, load(back).events).identical
    # The spans are the conventions': one agent span, a chat span a step, a tool span a call.
    names = [s.name.split(" ")[0] for s in spans_from_bytes(trace.read_bytes())]
    run = load(golden)
    assert names.count("chat") == sum(e.type == "llm.turn.started" for e in run.events)
    assert names.count("execute_tool") == sum(e.type == "tool.call.started" for e in run.events)


def test_exporting_twice_gives_the_same_bytes() -> None:
    events = load(GOLDENS[0]).events
    assert export_runs([events]) == export_runs([events])


@pytest.mark.parametrize("calls", [True, "call_1", {"id": "call_1"}, 3])
def test_free_form_tool_calls_in_a_message_export_and_import_back(
    calls: Any, tmp_path: Path
) -> None:
    """The loader accepts any JSON in a message's ``tool_calls``; export keeps such a message
    as it is instead of reading it as the conventions' shape (it crashed on ``true``)."""
    recorder = Recorder()
    recorder.emit("run.started", {"run_id": "r", "test_id": "t", "model": "m", "tools": []})
    message = {"role": "assistant", "content": "x", "tool_calls": calls}
    recorder.emit("llm.turn.started", {"messages": [message], "tools": None, "params": {}})
    recorder.emit("llm.turn.completed", {"content": "hi", "tool_calls": []})
    recorder.emit("run.completed", {"outcome": "completed", "output": "hi"})
    run = tmp_path / "run.jsonl"
    run.write_bytes(recorder.getvalue())
    trace, back = tmp_path / "trace.jsonl", tmp_path / "back.jsonl"
    assert run_cli("export", "otel", str(run), "-o", str(trace))[0] == 0
    assert run_cli("import", "otel", str(trace), "-o", str(back))[0] == 0
    assert compare(load(run).events, load(back).events).identical


# -- a generated corpus --------------------------------------------------------------------

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(-1e9, 1e9), text
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)),
    max_leaves=8,
)
#: Keys of free-form fields: not the step, and none that the typed schema gives a type
#: (generated values for those are refused by the loader, as they should be).
TYPED_KEYS = frozenset(f.key for fields in SCHEMA.values() for f in fields)
free_keys = text.filter(lambda k: k != "step" and k not in TYPED_KEYS)
payloads = st.dictionaries(free_keys, values, max_size=4)
names = st.sampled_from(["get_weather", "convert", "search"])
calls = st.lists(st.builds(lambda n, a: {"name": n, "arguments": a}, names, payloads), max_size=3)
turns = st.lists(st.tuples(st.one_of(st.none(), text), calls, payloads), min_size=1, max_size=4)


def record(turn_list: list[tuple[Any, list[dict[str, Any]], dict[str, Any]]]) -> list[Event]:
    """A run in the project's vocabulary: turns, each with its tool calls and results."""
    ticks = itertools.count()
    rec = Recorder(clock=lambda: 1_782_650_096_000_000_000 + next(ticks) * 1_000)
    rec.emit("run.started", {"run_id": "r", "test_id": "t", "model": "gpt-4o", "meta": {}})
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for number, (content, tool_calls, extra) in enumerate(turn_list):
        rec.emit("llm.turn.started", {"messages": history, "tools": [], "params": {}})
        announced = [{"id": f"c{number}-{i}", **c} for i, c in enumerate(tool_calls)]
        rec.emit("llm.turn.completed", {"content": content, "tool_calls": announced, **extra})
        rec.emit("usage.delta", {"cumulative_cost_usd": 0.001 * (number + 1)})
        history = [{"role": "assistant", "content": content, "tool_calls": announced}]
        for call in announced:
            rec.emit("tool.call.started", {"call_id": call["id"], "name": call["name"]})
            rec.emit(
                "tool.call.completed",
                {"call_id": call["id"], "name": call["name"], "output": call["arguments"]},
            )
            history.append({"role": "tool", "tool_call_id": call["id"], "content": extra})
    rec.emit("run.completed", {"outcome": "completed", "output": turn_list[-1][0]})
    return list(rec.rollout().events)


@pytest.mark.parametrize("input_messages", INPUT_MESSAGES)
@SETTINGS
@given(turn_list=turns)
def test_a_generated_run_round_trips(
    input_messages: str, turn_list: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    events = record(turn_list)
    run = import_spans(spans_from_bytes(export_runs([events], input_messages=input_messages)))
    assert not run.warnings  # an export holds all it says
    back = write_rollout(run, tmp_path_factory.mktemp("otel") / "back.jsonl", Redactor("full"))
    assert compare(events, back.events).identical


# -- hostile input -------------------------------------------------------------------------


def one_span(**changes: Any) -> bytes:
    span = {
        "traceId": "a" * 32,
        "spanId": "b" * 16,
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
        **changes,
    }
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(levels):
        value = {"arrayValue": {"values": [value]}}
    return value


@pytest.mark.parametrize(
    ("trace", "limits", "reason"),
    [
        (one_span(), TraceLimits(file_bytes=10), "the file is over 10 bytes"),
        (one_span(), TraceLimits(line_bytes=10), "the line is over 10 bytes"),
        (one_span() + b"\n" + one_span(), TraceLimits(spans=1), "more than 1 spans"),
        (
            one_span(attributes=[{"key": "deep", "value": deep(40)}]),
            TraceLimits(),
            "span 'chat gpt-4o' (span 1 of the file): attribute 'deep': an attribute value "
            "is nested too deeply",
        ),
        (
            one_span(attributes=[{"key": "n", "value": {"intValue": "twelve"}}]),
            TraceLimits(),
            "span 'chat gpt-4o' (span 1 of the file): attribute 'n': an intValue is not an "
            "integer: 'twelve'",
        ),
        (
            one_span(spanId="zz"),
            TraceLimits(),
            "span 'chat gpt-4o' (span 1 of the file): the spanId is not 8 bytes of hex or "
            "base64: 'zz'",
        ),
        (one_span(attributes="x"), TraceLimits(), "attributes are not a list"),
        (b"[1, 2]", TraceLimits(), "the line is not an ExportTraceServiceRequest object"),
        (b"{nope", TraceLimits(), "not JSON"),
    ],
)
def test_a_malformed_trace_is_one_clear_error(
    trace: bytes, limits: TraceLimits, reason: str
) -> None:
    with pytest.raises(RolloutFormatError) as refused:
        spans_from_bytes(trace, path="bad.jsonl", limits=limits)
    assert refused.value.path == "bad.jsonl"
    assert reason in refused.value.reason


def test_the_cli_refuses_a_malformed_trace_in_one_line(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_bytes(one_span(spanId=12))
    with pytest.raises(RolloutFormatError, match=r"bad\.jsonl:1: span 'chat gpt-4o'"):
        run_cli("import", "otel", str(source), "-o", str(tmp_path / "out.jsonl"))
    assert not (tmp_path / "out.jsonl").exists()


# -- the plugin object ---------------------------------------------------------------------


def test_the_plugin_writes_one_trace_per_test_sorted_by_node_id(tmp_path: Path) -> None:
    config = SimpleNamespace()
    plugin = OtelPlugin(config, tmp_path / "traces" / "run.jsonl", Tally())  # type: ignore[arg-type]
    plugin.add("tests/test_b.py::test_b", load(GOLDENS[1]).events)
    plugin.add("tests/test_a.py::test_a", load(GOLDENS[0]).events)
    plugin.pytest_sessionfinish(None)  # type: ignore[arg-type]
    written = (tmp_path / "traces" / "run.jsonl").read_bytes()
    assert written == export_runs([load(GOLDENS[0]).events, load(GOLDENS[1]).events])
