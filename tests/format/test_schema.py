"""The typed schema of the core vocabulary, as the loader applies it (docs/file-format.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from pytest_rollout import RolloutFormatError, load, loads
from pytest_rollout.format.schema import SCHEMA, schema_problem

ROOT = Path(__file__).resolve().parents[2]
TS = "2026-06-28T12:34:56.000000Z"


def rollout(event_type: str, data: dict[str, Any]) -> bytes:
    """A run whose line 2 is an event of ``event_type`` (at step 1) with ``data``."""
    events = [
        ("run.started", {}),
        (event_type, {"step": 1, **data}),
        ("run.completed", {"step": 1}),
    ]
    if event_type in ("run.started", "run.completed", "run.failed"):
        terminal = event_type != "run.started"
        events = [
            (event_type, data) if event_type == "run.started" else ("run.started", {}),
            *([] if terminal else [("note", {})]),
            (event_type, data) if terminal else ("run.completed", {}),
        ]
    return b"".join(
        orjson.dumps({"ts": TS, "seq": seq, "type": kind, "data": payload}) + b"\n"
        for seq, (kind, payload) in enumerate(events)
    )


def refusal(event_type: str, data: dict[str, Any]) -> RolloutFormatError:
    with pytest.raises(RolloutFormatError) as info:
        loads(rollout(event_type, data), path="run.jsonl")
    return info.value


# (event type, data, the line of the refusal, its reason)
REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("run.started", {"tools": 0}, "data.tools must be an array of strings or null, got an integer"),
    ("run.started", {"tools": [["x"]]}, "data.tools[0] must be a string, got an array"),
    ("run.started", {"model": 3}, "data.model must be a string or null, got an integer"),
    ("run.started", {"meta": []}, "data.meta must be an object, a string or null, got an array"),
    ("llm.turn.started", {"messages": 3}, "data.messages must be an array, a string or null"),
    ("llm.turn.started", {"params": [1]}, "data.params must be an object, a string or null"),
    ("llm.turn.completed", {"content": {}}, "data.content must be a string or null, got an object"),
    ("llm.turn.completed", {"tool_calls": 3}, "data.tool_calls must be an array of tool calls"),
    ("llm.turn.completed", {"tool_calls": ["c1"]}, "data.tool_calls[0] must be an object"),
    (
        "llm.turn.completed",
        {"tool_calls": [{"id": "c1", "name": ["x"], "arguments": {}}]},
        "data.tool_calls[0].name must be a string, got an array",
    ),
    (
        "llm.turn.completed",
        {"tool_calls": [{"id": "c1", "arguments": {}}]},
        'data.tool_calls[0] must have a "name" field',
    ),
    (
        "llm.turn.completed",
        {"tool_calls": [{"name": "x", "arguments": "{}"}]},
        "data.tool_calls[0].arguments must be an object or null, got a string",
    ),
    (
        "llm.turn.completed",
        {"usage": {"input_tokens": 2**53 + 1}},
        "data.usage.input_tokens must be an integer from 0 to 2**53, got 9007199254740993",
    ),
    (
        "llm.turn.completed",
        {"usage": {"output_tokens": -1}},
        "data.usage.output_tokens must be an integer from 0 to 2**53",
    ),
    (
        "llm.turn.completed",
        {"usage": {"output_tokens": 1.5}},
        "data.usage.output_tokens must be an integer or null, got a number",
    ),
    ("llm.turn.completed", {"cost_usd": 1e308}, "data.cost_usd must be a number of US dollars"),
    ("llm.turn.completed", {"cost_usd": True}, "data.cost_usd must be a number or null, got a"),
    ("llm.turn.completed", {"latency_ms": -1e300}, "data.latency_ms must be a number of millis"),
    ("tool.call.started", {"name": ["x"]}, "data.name must be a string or null, got an array"),
    ("tool.call.started", {"call_id": 7}, "data.call_id must be a string or null, got an integer"),
    ("tool.call.completed", {"error": "boom"}, "data.error must be an object or null, got a str"),
    ("usage.delta", {"cumulative_cost_usd": -1e308}, "data.cumulative_cost_usd must be a number"),
    (
        "run.completed",
        {"cost_totals": {"total_cost_usd": 1e308}},
        "data.cost_totals.total_cost_usd must be a number of US dollars within plus or minus 1e+14",
    ),
    ("run.completed", {"cost_totals": 1}, "data.cost_totals must be an object or null"),
    ("run.failed", {"error": 3}, "data.error must be an object, a string or null, got an integer"),
    ("recorder.drop_detected", {"dropped": "3"}, "data.dropped must be an integer, got a string"),
]


@pytest.mark.parametrize(("event_type", "data", "reason"), REFUSED)
def test_a_core_field_of_the_wrong_type_is_refused_with_its_path(
    event_type: str, data: dict[str, Any], reason: str
) -> None:
    error = refusal(event_type, data)
    assert error.path == "run.jsonl"
    assert error.line == (2 if event_type not in ("run.started",) else 1)
    assert reason in error.reason, error.reason
    assert str(error).startswith(f"run.jsonl:{error.line}: data.")


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    # absent fields, nulls and the recorder's placeholders for values it could not record
    ("run.started", {}),
    ("run.started", {"tools": None, "model": None, "provider": None, "meta": "<unrecordable X>"}),
    ("llm.turn.started", {"messages": ["hi"], "tools": {"any": "shape"}, "params": None}),
    ("llm.turn.started", {"messages": "<unrecordable list>", "params": "<unrecordable dict>"}),
    (
        "llm.turn.completed",
        {
            "content": None,
            "tool_calls": [{"id": None, "name": "x", "arguments": None}, {"name": "y"}],
            "usage": {"input_tokens": 2**53, "output_tokens": None, "cache_tokens": [1]},
            "cost_usd": -1e9,
            "model_version": None,
            "latency_ms": 0,
            "ttft_ms": 1.5,
            "raw": {"anything": [1, "x"]},
        },
    ),
    ("llm.turn.completed", {"tool_calls": None, "usage": None, "cost_usd": None}),
    ("tool.call.started", {"call_id": None, "name": None, "arguments": "<unrecordable dict>"}),
    ("tool.call.completed", {"error": {"class": 1, "message": {"a": 1}}, "output": [1]}),
    ("run.completed", {"cost_totals": {"total_cost_usd": None}, "outcome": None, "output": 1}),
    ("run.failed", {"error": "<unrecordable object>"}),
    ("my.custom", {"tools": 0, "messages": 3, "cost_usd": 1e308}),
]


@pytest.mark.parametrize(("event_type", "data"), ACCEPTED)
def test_what_real_files_hold_is_accepted(event_type: str, data: dict[str, Any]) -> None:
    assert loads(rollout(event_type, data)).events


def test_custom_types_stay_free_form() -> None:
    assert "my.custom" not in SCHEMA
    assert schema_problem("my.custom", {"tools": 0}) is None
    assert schema_problem("run.started", {"tools": 0}) is not None


def test_a_long_field_value_is_shown_short() -> None:
    error = refusal("llm.turn.completed", {"cost_usd": -1.2345678901234567e300})
    assert len(error.reason) < 120


@pytest.mark.parametrize(
    "path",
    sorted(
        str(p.relative_to(ROOT))
        for folder in ("golden", "examples")
        for p in (ROOT / folder).rglob("*.jsonl")
        # Shipped: not a run a local pytest saved under a hidden folder (.pytest_cache).
        if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
    ),
)
def test_every_shipped_golden_fits_the_schema(path: str) -> None:
    assert load(ROOT / path).events
