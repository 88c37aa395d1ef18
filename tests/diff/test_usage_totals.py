"""What real runs show: prompt-cache tokens priced and totalled, output speed per turn and in
totals, and a Responses API run's tool outputs in the timeline (``rollout show``, the viewer)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from usage_runs import CACHED_RUN, record, unreported

from pytest_rollout.cli import main
from pytest_rollout.diff.score import summarize
from pytest_rollout.format.loader import load
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.sdk.pricing import CacheRates, cache_rates_for, cost_usd
from pytest_rollout.view.entries import run_entry


def show(path: Path) -> list[str]:
    out = io.StringIO()
    assert main(["show", str(path)], out=out) == 0
    return out.getvalue().splitlines()


# -- pricing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "rates"),
    [
        ("gpt-4o-mini-2024-07-18", CacheRates(0.5, 1.0)),
        ("gpt-4.1-nano", CacheRates(0.25, 1.0)),
        ("gpt-5-mini-2025-08-07", CacheRates(0.1, 1.0)),
        ("gpt-5-pro", CacheRates(1.0, 1.0)),  # no cached-input price
        ("o3-mini", CacheRates(0.5, 1.0)),
        ("claude-sonnet-4-5-20250929", CacheRates(0.1, 1.25)),
        ("anthropic/claude-3-haiku", CacheRates(0.1, 1.25)),
        ("my-own-model", CacheRates(1.0, 1.0)),
    ],
)
def test_cache_rates_by_model(model: str, rates: CacheRates) -> None:
    assert cache_rates_for(model) == rates


def test_openai_cached_input_is_priced_at_the_cached_rate() -> None:
    # gpt-4o-mini: $0.15 input, $0.075 cached input, $0.60 output per million tokens.
    usage = {"input_tokens": 1000, "output_tokens": 100, "cache_read_tokens": 800}
    assert cost_usd("gpt-4o-mini", usage) == pytest.approx((200 * 0.15 + 800 * 0.075 + 60) / 1e6)
    assert cost_usd("gpt-4o-mini", {"input_tokens": 1000, "output_tokens": 100}) == 0.00021


def test_anthropic_cache_reads_and_writes_are_priced() -> None:
    # claude-sonnet-4-5: $3 input (reads 0.1x, writes 1.25x), $15 output per million tokens.
    usage = {
        "input_tokens": 1000,
        "output_tokens": 100,
        "cache_read_tokens": 600,
        "cache_write_tokens": 300,
    }
    expected = (100 * 3 + 600 * 0.3 + 300 * 3.75 + 100 * 15) / 1e6
    assert cost_usd("claude-sonnet-4-5", usage) == pytest.approx(expected)


def test_a_cache_count_that_is_not_a_count_prices_nothing() -> None:
    usage: dict[str, Any] = {"input_tokens": 10, "output_tokens": 1, "cache_read_tokens": -1}
    assert cost_usd("gpt-4o", usage) is None


# -- totals and speed ---------------------------------------------------------------------


def test_show_totals_the_cache_tokens_and_the_output_speed(tmp_path: Path) -> None:
    lines = show(record(tmp_path / "cached.jsonl", CACHED_RUN))
    assert lines[3] == (
        '   1    2  llm.turn.completed  "Looking."  (40 tokens out in 800 ms, 50.0 tokens/s)'
    )
    assert lines[5] == '   2    4  llm.turn.completed  "Rain."'  # no latency: no speed
    assert lines[-8:] == [
        "Totals (whole run):",
        "  steps: 0-2, turns: 2",
        "  tool calls: none",
        "  errors: 0",
        "  tokens: 2500 in (1000 cache read, 150 cache write), 48 out",
        "  output speed: 50.0 tokens/s (1 of 2 turns timed)",
        "  cost: unknown",
        "  outcome: completed",
    ]


def test_a_run_without_cache_or_latency_shows_neither(tmp_path: Path) -> None:
    plain = [
        (k, {**d, "latency_ms": None}) if k == "llm.turn.completed" else (k, d)
        for k, d in CACHED_RUN
    ]
    for _, data in plain:
        usage = data.get("usage")
        if isinstance(usage, dict):
            data["usage"] = {k: usage[k] for k in ("input_tokens", "output_tokens")}
    lines = show(record(tmp_path / "plain.jsonl", plain))
    assert "  tokens: 2500 in, 48 out" in lines
    assert not any("tokens/s" in line or "cache" in line for line in lines)


def test_summary_and_viewer_totals(tmp_path: Path) -> None:
    path = record(tmp_path / "cached.jsonl", CACHED_RUN)
    summary = summarize(load(path).events)
    assert (summary.cache_read_tokens, summary.cache_write_tokens) == (1000, 150)
    assert summary.tokens_per_second == 50.0
    totals = run_entry(str(path))["totals"]
    assert {k: totals[k] for k in ("first_step", "steps", "input_tokens", "output_tokens")} == {
        "first_step": 0,
        "steps": 2,
        "input_tokens": 2500,
        "output_tokens": 48,
    }
    assert totals["cache_read_tokens"] == 1000
    assert totals["cache_write_tokens"] == 150
    assert totals["tokens_per_second"] == 50.0
    assert totals["timed_turns"] == 1
    rows = run_entry(str(path))["events"]
    assert rows[2][3] == '"Looking."  (40 tokens out in 800 ms, 50.0 tokens/s)'


def test_tokens_not_reported_by_any_turn_are_not_shown_as_zero(tmp_path: Path) -> None:
    path = record(tmp_path / "none.jsonl", unreported(CACHED_RUN, 1, 2))
    assert "  tokens: not reported" in show(path)
    assert summarize(load(path).events).unreported_turns == 2
    totals = run_entry(str(path))["totals"]
    assert (totals["unreported_turns"], totals["turns"]) == (2, 2)


def test_tokens_reported_by_some_turns_say_how_many(tmp_path: Path) -> None:
    path = record(tmp_path / "some.jsonl", unreported(CACHED_RUN, 2))
    lines = show(path)
    assert (
        "  tokens: 1200 in (1000 cache read, 150 cache write), 40 out (usage from 1 of 2 turns)"
        in lines
    )
    assert run_entry(str(path))["totals"]["unreported_turns"] == 1


@pytest.mark.parametrize("usage", [{}, {"input_tokens": None, "output_tokens": None}])
def test_a_usage_without_counts_is_unreported(usage: Any) -> None:
    run = [
        (k, {**d, "usage": usage}) if k == "llm.turn.completed" else (k, d) for k, d in CACHED_RUN
    ]
    recorder = Recorder()
    for kind, data in run:
        recorder.emit(kind, data)
    summary = summarize(recorder.rollout().events)
    assert (summary.unreported_turns, summary.input_tokens, summary.output_tokens) == (2, 0, 0)


def test_a_run_without_turns_has_nothing_unreported(tmp_path: Path) -> None:
    path = record(tmp_path / "empty.jsonl", [CACHED_RUN[0], CACHED_RUN[-1]])
    assert "  tokens: 0 in, 0 out" in show(path)


# -- Responses API input items ------------------------------------------------------------


def test_show_names_a_responses_tool_output(tmp_path: Path) -> None:
    call = {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city":"Paris"}',
    }
    output = {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": '{"city": "Paris", "sky": "sunny"}',
    }
    path = record(
        tmp_path / "responses.jsonl",
        [
            ("run.started", {"model": "gpt-4o-mini", "prompt": "Weather?", "meta": {}}),
            ("llm.turn.started", {"messages": [{"role": "user", "content": "Weather?"}]}),
            ("llm.turn.completed", {"content": None, "tool_calls": []}),
            ("llm.turn.started", {"messages": [call]}),
            ("llm.turn.started", {"messages": [call, output]}),
            ("run.completed", {"outcome": "completed"}),
        ],
    )
    lines = show(path)
    assert lines[4].endswith('1 new message, last function_call get_weather(city="Paris")')
    assert lines[5].endswith(
        '2 new messages, last function_call_output call_1: {"city":"Paris","sky":"sunny"}'
    )
    assert not any("?: null" in line for line in lines)
