"""Runs with prompt-cache tokens, timed turns and turns that report no usage, recorded for
the timeline tests (``tests/diff``) and the viewer's (``tests/view``)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from pytest_rollout.format.recorder import Recorder

# 2026-06-28T12:34:56Z
T0 = 1_782_650_096_000_000_000


def record(path: Path, events: list[tuple[str, dict[str, Any]]]) -> Path:
    ticks = itertools.count()
    recorder = Recorder(clock=lambda: T0 + next(ticks) * 250_000_000)
    for kind, data in events:
        recorder.emit(kind, data)
    path.write_bytes(recorder.getvalue())
    return path


CACHED_RUN: list[tuple[str, dict[str, Any]]] = [
    ("run.started", {"model": "claude-sonnet-4-5", "prompt": "Weather?", "meta": {}}),
    ("llm.turn.started", {"messages": [{"role": "user", "content": "Weather?"}]}),
    (
        "llm.turn.completed",
        {
            "content": "Looking.",
            "tool_calls": [],
            "usage": {
                "input_tokens": 1200,
                "output_tokens": 40,
                "cache_read_tokens": 1000,
                "cache_write_tokens": 150,
            },
            "latency_ms": 800,
        },
    ),
    ("llm.turn.started", {"messages": [{"role": "user", "content": "And tomorrow?"}]}),
    (
        "llm.turn.completed",
        {"content": "Rain.", "tool_calls": [], "usage": {"input_tokens": 1300, "output_tokens": 8}},
    ),
    ("run.completed", {"outcome": "completed"}),
]


def unreported(run: list[tuple[str, dict[str, Any]]], *turns: int) -> list[Any]:
    """``run`` with the usage of its turns numbered ``turns`` (from 1) left out, as a
    provider asked for no usage sends none (a streamed request without ``include_usage``)."""
    numbers = itertools.count(1)
    return [
        (k, {**d, "usage": None})
        if k == "llm.turn.completed" and next(numbers) in turns
        else (k, d)
        for k, d in run
    ]
