"""A run with several agents, written line by line: lanes, handoffs, call_id links and a
causal graph for the viewer's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

#: An agent name that would run script if it were ever written into the page as markup.
EVIL_AGENT = '<img src=x onerror="window.__pwned=1;alert(1)">'


def _event(seq: int, step: int, kind: str, data: dict[str, Any]) -> bytes:
    ts = f"2026-06-28T12:34:{seq:02d}.000000Z"
    return orjson.dumps({"ts": ts, "seq": seq, "type": kind, "data": {"step": step, **data}})


def agent_run_events(evil: str = EVIL_AGENT) -> list[tuple[int, str, dict[str, Any]]]:
    """``(step, type, data)`` of a run: triage looks the account up and hands off to
    billing, which refunds and hands off to ``evil``, which answers."""
    account = {"account": "ACC-12345", "plan": "pro"}
    usage = {"input_tokens": 10, "output_tokens": 5}
    return [
        (
            0,
            "run.started",
            {
                "run_id": "multi",
                "test_id": "t::multi",
                "model": "m",
                "provider": "openai",
                "tools": ["lookup", "refund"],
                "prompt": "Refund me",
            },
        ),
        (
            1,
            "llm.turn.started",
            {"messages": [{"role": "user", "content": "Refund me"}], "agent": "triage"},
        ),
        (
            1,
            "llm.turn.completed",
            {
                "content": "",
                "usage": usage,
                "agent": "triage",
                "tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"user": "u1"}}],
            },
        ),
        (
            1,
            "tool.call.started",
            {"call_id": "c1", "name": "lookup", "arguments": {"user": "u1"}, "agent": "triage"},
        ),
        (
            1,
            "tool.call.completed",
            {"call_id": "c1", "name": "lookup", "output": account, "agent": "triage"},
        ),
        (2, "handoff", {"from": "triage", "to": "billing", "agent": "triage"}),
        (
            2,
            "llm.turn.started",
            {"messages": [{"role": "tool", "content": "ACC-12345"}], "agent": "billing"},
        ),
        (
            2,
            "llm.turn.completed",
            {
                "content": "",
                "usage": usage,
                "agent": "billing",
                "tool_calls": [
                    {"id": "c2", "name": "refund", "arguments": {"account": "ACC-12345"}}
                ],
            },
        ),
        (
            2,
            "tool.call.started",
            {
                "call_id": "c2",
                "name": "refund",
                "arguments": {"account": "ACC-12345"},
                "agent": "billing",
            },
        ),
        (
            2,
            "tool.call.completed",
            {"call_id": "c2", "name": "refund", "output": "ok", "agent": "billing"},
        ),
        (3, "handoff", {"from": "billing", "to": evil, "agent": "billing"}),
        (3, "llm.turn.completed", {"content": "Refunded.", "usage": usage, "agent": evil}),
        (
            3,
            "causal.graph.snapshot",
            {
                "nodes": [
                    {"id": "turn:1", "kind": "turn", "step": 1, "name": None, "agent": "triage"},
                    {
                        "id": "call:c1",
                        "kind": "tool_call",
                        "step": 1,
                        "name": "lookup",
                        "agent": "triage",
                    },
                    {"id": "turn:2", "kind": "turn", "step": 2, "name": None, "agent": "billing"},
                    {
                        "id": "call:c2",
                        "kind": "tool_call",
                        "step": 2,
                        "name": "refund",
                        "agent": "billing",
                    },
                ],
                "edges": [
                    {"from": "call:c1", "to": "turn:2", "kind": "context", "value": None},
                    {"from": "call:c1", "to": "call:c2", "kind": "data_flow", "value": "ACC-12345"},
                ],
            },
        ),
        (3, "run.completed", {"outcome": "completed"}),
    ]


def write_agent_run(path: Path, evil: str = EVIL_AGENT) -> Path:
    """The run of :func:`agent_run_events`, as a rollout file at ``path``."""
    lines = [_event(seq, *event) for seq, event in enumerate(agent_run_events(evil))]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path
