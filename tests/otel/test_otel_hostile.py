"""Hostile and outsized traces: the OTel paths refuse what is not a trace with one typed error
naming the file, line and span, and follow chains of any length without walking them again.

Time is measured in ``benchmarks/bench_otel.py``; these tests pin what is refused and what is
read, on shapes of the sizes the benchmark times."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_otel_import import run_cli

from pytest_rollout.diff.compare import compare
from pytest_rollout.errors import RolloutFormatError
from pytest_rollout.format.loader import load
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.otel import import_spans, spans_from_bytes
from pytest_rollout.otel.exporter import export_runs

TRACE = "a" * 32


def span_id(number: int) -> str:
    return f"{number + 1:016x}"


def chat(number: int, parent: int | None, **changes: Any) -> dict[str, Any]:
    """A chat span that answered ``turn N`` (all start at the same instant: only their
    parents order them)."""
    output = [{"role": "assistant", "parts": [{"type": "text", "content": f"turn {number}"}]}]
    span: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": span_id(number),
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": "[]"}},
            {
                "key": "gen_ai.output.messages",
                "value": {"stringValue": orjson.dumps(output).decode()},
            },
        ],
    }
    if parent is not None:
        span["parentSpanId"] = span_id(parent)
    return {**span, **changes}


def trace(spans: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + b"\n"


def chain(length: int) -> list[dict[str, Any]]:
    """``length`` chat spans, each the child of the one before, written last first."""
    return [chat(n, n - 1 if n else None) for n in reversed(range(length))]


def refusal(data: bytes) -> str:
    with pytest.raises(RolloutFormatError) as refused:
        spans_from_bytes(data, path="hostile.jsonl")
    assert refused.value.path == "hostile.jsonl"
    assert refused.value.line == 1
    return refused.value.reason


def test_a_chain_of_8000_spans_is_read_parent_before_child() -> None:
    run = import_spans(spans_from_bytes(trace(chain(8000))))
    answers = [data["content"] for _, kind, data in run.events if kind == "llm.turn.completed"]
    assert answers == [f"turn {n}" for n in range(8000)]


@pytest.mark.parametrize("length", [2, 8000])
def test_parents_that_lead_round_in_a_cycle_are_refused(length: int) -> None:
    spans = chain(length)
    spans[-1]["parentSpanId"] = span_id(length - 1)  # the root's parent is the last child
    reason = refusal(trace(spans))
    assert reason.startswith("span 'chat gpt-4o' (")
    assert reason.endswith("): its parents form a cycle")


def test_a_span_that_is_its_own_parent_is_refused() -> None:
    reason = refusal(trace([chat(0, 0)]))
    assert reason == f"span 'chat gpt-4o' ({span_id(0)}): its parents form a cycle"


def test_a_span_id_used_twice_in_a_trace_is_refused() -> None:
    reason = refusal(trace([chat(0, None), chat(1, 0), chat(0, None, name="chat again")]))
    assert reason == (
        f"span 'chat again' ({span_id(0)}): its span id is used before, "
        f"by span 'chat gpt-4o' ({span_id(0)})"
    )


def test_the_same_span_id_in_two_traces_is_two_spans() -> None:
    other = chat(0, None, traceId="b" * 32)
    assert len(spans_from_bytes(trace([chat(0, None), other]))) == 2


def test_a_span_that_ends_before_it_starts_is_refused() -> None:
    reason = refusal(trace([chat(0, None, endTimeUnixNano="999")]))
    assert (
        reason == "span 'chat gpt-4o' (span 1 of the file): it ends (999) before it starts (1000)"
    )


def test_a_span_with_no_end_time_is_read_as_not_ended() -> None:
    (span,) = spans_from_bytes(trace([chat(0, None, endTimeUnixNano="0")]))
    assert span.end_ns == span.start_ns == 1000


def test_thousands_of_waiting_calls_are_each_claimed_by_their_own_tool_span() -> None:
    """One turn announces 3,000 calls; their tool spans come back in reverse order, half
    saying their call's id and half only the name and arguments (as OpenInference's)."""
    calls = [
        {"type": "tool_call", "id": f"c{n}", "name": "look", "arguments": {"n": n}}
        for n in range(3000)
    ]
    turn = chat(0, None)
    turn["attributes"][2]["value"]["stringValue"] = orjson.dumps(
        [{"role": "assistant", "parts": calls}]
    ).decode()
    tools = []
    for n in reversed(range(3000)):
        attributes = [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "look"}},
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": f'{{"n":{n}}}'}},
            {"key": "gen_ai.tool.call.result", "value": {"stringValue": f'"found {n}"'}},
        ]
        if n % 2:
            attributes.append({"key": "gen_ai.tool.call.id", "value": {"stringValue": f"c{n}"}})
        tools.append(
            {
                "traceId": TRACE,
                "spanId": span_id(10_000 + n),
                "name": "execute_tool look",
                "startTimeUnixNano": str(3000 + 2 * (3000 - n)),
                "endTimeUnixNano": str(3001 + 2 * (3000 - n)),
                "attributes": attributes,
            }
        )
    run = import_spans(spans_from_bytes(trace([turn, *tools])))
    done = {
        data["call_id"]: data["output"]
        for _, kind, data in run.events
        if kind == "tool.call.completed"
    }
    assert done == {f"c{n}": f"found {n}" for n in range(3000)}


# -- export ------------------------------------------------------------------------------


def conversation(tmp_path: Path) -> Path:
    """A run whose second request repeats the first request's new message before its own:
    only the marker on the span, not a common prefix, says where the new messages start."""
    recorder = Recorder()
    recorder.emit("run.started", {"run_id": "r", "test_id": "t", "model": "m", "tools": []})
    asked = {"role": "user", "content": "again?"}
    for step, new in enumerate(([asked], [asked, {"role": "user", "content": "and?"}]), 1):
        recorder.emit("llm.turn.started", {"messages": new, "tools": None, "params": {}})
        recorder.emit("llm.turn.completed", {"content": f"answer {step}", "tool_calls": []})
    recorder.emit("run.completed", {"outcome": "completed", "output": "answer 2"})
    path = tmp_path / "run.jsonl"
    path.write_bytes(recorder.getvalue())
    return path


def test_new_input_messages_hold_only_what_each_request_added(tmp_path: Path) -> None:
    run = conversation(tmp_path)
    traced = tmp_path / "trace.jsonl"
    assert run_cli("export", "otel", str(run), "-o", str(traced), "--input-messages", "new")[0] == 0
    chats = [s for s in spans_from_bytes(traced.read_bytes()) if s.name.startswith("chat")]
    inputs = [orjson.loads(s.attributes["gen_ai.input.messages"]) for s in chats]
    assert [[p["parts"][0]["content"] for p in shown] for shown in inputs] == [
        ["again?"],
        ["again?", "and?"],
    ]
    assert all(s.attributes["pytest_rollout.new_input"] is True for s in chats)
    # Read back from the marker alone: no carrier had to correct the messages.
    assert all("messages" not in s.attributes.get("pytest_rollout.start", "") for s in chats)
    back = tmp_path / "back.jsonl"
    assert run_cli("import", "otel", str(traced), "-o", str(back))[0] == 0
    assert compare(load(run).events, load(back).events).identical


def test_full_input_messages_repeat_the_whole_conversation(tmp_path: Path) -> None:
    data = export_runs([load(conversation(tmp_path)).events])
    chats = [s for s in spans_from_bytes(data) if s.name.startswith("chat")]
    shown = [len(orjson.loads(s.attributes["gen_ai.input.messages"])) for s in chats]
    assert shown == [1, 3]
    assert not any("pytest_rollout.new_input" in s.attributes for s in chats)


def test_an_export_too_big_to_import_back_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_rollout.otel import otlp

    monkeypatch.setattr(otlp, "DEFAULT_TRACE_LIMITS", otlp.TraceLimits(line_bytes=100))
    traced = tmp_path / "trace.jsonl"
    assert run_cli("export", "otel", str(conversation(tmp_path)), "-o", str(traced))[0] == 0
    assert re.fullmatch(
        r"rollout export: warning: the file is \d+ bytes, its longest trace \d+ bytes: over "
        r"what `rollout import otel` reads back \(256 MiB a file, 100 bytes a trace\); "
        r"--input-messages new keeps each chat span to the messages new since the last one\n",
        capsys.readouterr().err,
    )
