"""``rollout show --graph``: the run's causal graph, pinned as printed."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from command import write_lines
from hostile import EVIL, assert_printable

from pytest_rollout.cli import main

ORDER = {"order_id": "ORD-1234", "qty": 1}


def refund_run(*extra: tuple[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Triage looks an order up, billing refunds it; ``extra`` before the terminal event."""
    return [
        ("run.started", {"step": 0, "model": "gpt-4o"}),
        ("llm.turn.started", {"step": 1, "messages": [], "agent": "triage"}),
        (
            "tool.call.started",
            {"step": 1, "call_id": "c1", "name": "lookup_order", "arguments": {"email": "a@b.c"}},
        ),
        (
            "tool.call.completed",
            {"step": 1, "call_id": "c1", "name": "lookup_order", "output": ORDER},
        ),
        (
            "llm.turn.started",
            {
                "step": 2,
                "agent": "billing",
                "messages": [{"role": "tool", "tool_call_id": "c1", "content": ORDER}],
            },
        ),
        (
            "tool.call.started",
            {
                "step": 2,
                "call_id": "c2",
                "name": "refund_order",
                "arguments": {"order_id": "ORD-1234", "qty": 1},
                "agent": "billing",
            },
        ),
        (
            "tool.call.completed",
            {"step": 2, "call_id": "c2", "name": "refund_order", "output": "ok"},
        ),
        *extra,
        ("run.completed", {"step": 2, "outcome": "completed"}),
    ]


def show(*args: str | Path) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["show", *map(str, args)], out=out)
    return code, out.getvalue()


def test_a_graph_built_from_the_events(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "run.jsonl", *refund_run())
    assert show(path, "--graph") == (
        0,
        """\
causal graph (built from its events): 4 nodes, 2 edges
nodes:
  step 1  turn:1  [triage]
  step 1  call:c1  lookup_order
  step 2  turn:2  [billing]
  step 2  call:c2  refund_order  [billing]
edges:
  call:c1 (lookup_order, step 1) -> turn:2  context
  call:c1 (lookup_order, step 1) -> call:c2 (refund_order, step 2)  data_flow 'ORD-1234'
""",
    )


def test_the_recorded_snapshot_is_shown_when_there_is_one(tmp_path: Path) -> None:
    snapshot = {
        "step": 2,
        "nodes": [
            {
                "id": "call:c1",
                "kind": "tool_call",
                "step": 1,
                "name": "lookup_order",
                "agent": None,
            },
            {"id": "call:c2", "kind": "tool_call", "step": 2, "name": None, "agent": None},
        ],
        "edges": [{"from": "call:c1", "to": "call:c2", "kind": "data_flow", "value": "A-1234"}],
    }
    path = write_lines(tmp_path / "run.jsonl", *refund_run(("causal.graph.snapshot", snapshot)))
    assert show(path, "--graph") == (
        0,
        """\
causal graph (its causal.graph.snapshot): 2 nodes, 1 edge
nodes:
  step 1  call:c1  lookup_order
  step 2  call:c2
edges:
  call:c1 (lookup_order, step 1) -> call:c2 (step 2)  data_flow 'A-1234'
""",
    )


def test_a_run_cut_short_and_a_run_without_calls(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "run.jsonl.partial", *refund_run()[:2])
    assert show(path, "--graph") == (
        0,
        """\
cut short after event 2: the file ends before the run did
causal graph (built from its events): 1 node, 0 edges
nodes:
  step 1  turn:1  [triage]
edges: none
""",
    )


@pytest.mark.parametrize("flag", [["--type", "tool."], ["--step", "1"], ["--grep", "x"]])
def test_the_graph_takes_no_filter(
    tmp_path: Path, flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "run.jsonl", *refund_run())
    assert show(path, "--graph", *flag) == (2, "")
    assert capsys.readouterr().err == (
        "rollout show: error: --graph shows the whole run: leave out --type, --step and --grep\n"
    )


def test_hostile_names_and_values_print_safely(tmp_path: Path) -> None:
    events = refund_run()
    hostile = orjson.loads(orjson.dumps(events).replace(b"ORD-1234", orjson.dumps(EVIL)[1:-1]))
    for _, data in hostile:
        for key in ("call_id", "name", "agent"):
            if key in data:
                data[key] = EVIL + data[key]
    path = write_lines(tmp_path / "run.jsonl", *hostile)
    code, out = show(path, "--graph")
    assert code == 0
    assert "data_flow '" in out
    assert_printable(out)
