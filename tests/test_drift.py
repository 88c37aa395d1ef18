"""The drift report: how run b drifted from run a, as data, with likely causes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_rollout import Recorder
from pytest_rollout.cli import main
from pytest_rollout.diff.divergence import Divergence, DivergenceKind
from pytest_rollout.diff.drift import ToolCallDrift, drift_report
from pytest_rollout.format.events import Event

SYSTEM = "You are a weather assistant."


def run(
    *,
    city: str = "Paris",
    model: str = "m-1",
    version: str = "m-1-2026",
    tools: tuple[str, ...] = ("weather",),
    schema: str = "string",
    system: str = SYSTEM,
    output: Any = None,
    weather: Any = None,
    fail: bool = False,
    answer: str = "18C",
    extra_turn: bool = False,
) -> tuple[Event, ...]:
    r = Recorder(clock=lambda: 1_700_000_000_000_000_000)
    r.emit("run.started", {"model": model, "tools": list(tools)})
    r.emit(
        "llm.turn.started",
        {
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "?"}],
            "tools": [{"name": "weather", "parameters": {"city": schema}}],
        },
    )
    call = {"id": "c1", "name": "weather", "arguments": {"city": city}}
    r.emit(
        "llm.turn.completed",
        {"content": None, "tool_calls": [call], "model_version": version, "cost_usd": 0.01},
    )
    r.emit("tool.call.started", {"call_id": "c1", "name": "weather", "arguments": {"city": city}})
    r.emit(
        "tool.call.completed",
        {
            "call_id": "c1",
            "name": "weather",
            "output": weather if weather is not None else {"temp_c": 18},
        },
    )
    r.emit("llm.turn.started", {"messages": [{"role": "tool", "content": "18"}]})
    r.emit(
        "llm.turn.completed",
        {"content": answer, "tool_calls": [], "model_version": version, "cost_usd": 0.01},
    )
    if extra_turn:
        r.emit(
            "llm.turn.completed", {"content": "anything else?", "tool_calls": [], "cost_usd": 0.01}
        )
    if fail:
        r.emit("run.failed", {"error": {"class": "TimeoutError", "message": "slow"}})
    else:
        r.emit("run.completed", {"outcome": "completed", "output": output or answer})
    r.close()
    return r.rollout().events


GOLDEN = run()


def test_identical_runs_match() -> None:
    report = drift_report(GOLDEN, run())
    assert report.matched
    assert report.outcome_diff == "identical"
    assert (report.added_steps, report.removed_steps, report.changed_steps) == ([], [], [])
    assert report.tool_calls == ()
    assert report.cost_delta_usd == 0
    assert report.likely_causes == ()
    assert report.headline is None


@pytest.mark.parametrize(
    ("b", "expected"),
    [
        (run(fail=True), "regressed"),
        (run(answer="19C"), "changed"),
    ],
    ids=["regressed", "changed"],
)
def test_outcome_diff(b: tuple[Event, ...], expected: str) -> None:
    assert drift_report(GOLDEN, b).outcome_diff == expected


def test_improved_is_the_mirror_of_regressed() -> None:
    assert drift_report(run(fail=True), GOLDEN).outcome_diff == "improved"


def test_added_removed_changed_steps_and_cost_delta() -> None:
    longer = run(extra_turn=True, answer="19C")
    report = drift_report(GOLDEN, longer)
    assert report.changed_steps == [2]
    assert report.added_steps == [3]
    assert report.removed_steps == []
    assert report.cost_delta_usd == pytest.approx(0.01)
    assert drift_report(longer, GOLDEN).removed_steps == [3]


def test_divergent_tool_calls_name_step_position_and_both_sides() -> None:
    report = drift_report(GOLDEN, run(city="Lyon"))
    assert report.tool_calls == (
        ToolCallDrift(1, 1, "weather", {"city": "Paris"}, "weather", {"city": "Lyon"}),
    )
    assert report.headline is not None
    assert report.headline.kind is DivergenceKind.TOOL_CALL_MISMATCH
    assert report.headline.attribution == "agent"


def test_replay_divergences_are_the_headline() -> None:
    replayed = Divergence(DivergenceKind.PROMPT_MISMATCH, 1, "system prompt differs")
    report = drift_report(GOLDEN, run(city="Lyon"), divergences=[replayed])
    assert report.headline == replayed
    assert not report.matched


@pytest.mark.parametrize(
    ("b", "cause"),
    [
        (
            run(model="m-2", city="Lyon"),
            "the model changed: m-1 in a, m-2 in b",
        ),
        (
            run(version="m-1-2027", city="Lyon"),
            "the model changed: m-1, m-1-2026 in a, m-1, m-1-2027 in b",
        ),
        (run(tools=("weather", "search"), city="Lyon"), "the set of tools changed"),
        (run(schema="enum", city="Lyon"), "the tool schemas sent to the model changed"),
        (run(system="Be brief.", city="Lyon"), "the system prompt changed (sha256 "),
        (
            run(weather={"temperature": {"c": 18}}, answer="19C"),
            "tool weather returned a differently shaped result at step 1",
        ),
    ],
    ids=["model", "model-version", "tool-set", "tool-schema", "system-prompt", "result-shape"],
)
def test_likely_causes_come_from_evidence(b: tuple[Event, ...], cause: str) -> None:
    causes = drift_report(GOLDEN, b).likely_causes
    assert len(causes) == 1
    assert causes[0].startswith(cause)


def test_same_shape_different_values_is_not_a_cause() -> None:
    report = drift_report(GOLDEN, run(weather={"temp_c": 25}, answer="25C"))
    assert not report.matched
    assert report.likely_causes == ()


def _save(tmp_path: Path, name: str, events: tuple[Event, ...]) -> str:
    r = Recorder(tmp_path / name)
    for e in events:
        r.emit(e.type, e.data)
    r.close()
    return str(tmp_path / name)


def test_rollout_diff_json(tmp_path: Path) -> None:
    a = _save(tmp_path, "a.jsonl", GOLDEN)
    b = _save(tmp_path, "b.jsonl", run(city="Lyon", fail=True))
    out = io.StringIO()
    assert main(["diff", a, b, "--json"], out=out) == 1
    data = json.loads(out.getvalue())
    assert data["matched"] is False
    assert data["first_divergent_step"] == 1
    assert data["outcome_diff"] == "regressed"
    assert data["divergent_tool_calls"] == [
        {
            "step": 1,
            "position": 1,
            "a": {"name": "weather", "arguments": {"city": "Paris"}},
            "b": {"name": "weather", "arguments": {"city": "Lyon"}},
        }
    ]
    assert data["score"]["winner"] == "a"
    assert data["divergences"][0] == {
        "kind": "tool_call_mismatch",
        "attribution": "agent",
        "step": 1,
        "detail": "first difference in data.tool_calls[0].arguments.city",
    }
    same = io.StringIO()
    assert main(["diff", a, a, "--json"], out=same) == 0
    assert json.loads(same.getvalue())["matched"] is True


def test_tools_and_names_of_the_wrong_type_do_not_break_the_report() -> None:
    # Events built in memory, past the loader and its schema.
    def events(tools: Any, name: Any, content: str) -> tuple[Event, ...]:
        return (
            Event(0, "t", "run.started", {"tools": tools}, 0),
            Event(1, "t", "llm.turn.started", {"step": 1, "messages": 3}, 1),
            Event(2, "t", "tool.call.completed", {"step": 1, "name": name, "output": {}}, 1),
            Event(3, "t", "llm.turn.completed", {"step": 2, "content": content}, 2),
            Event(4, "t", "run.completed", {"step": 2}, 2),
        )

    report = drift_report(events(0, ["x"], "a"), events(["a"], ["x"], "b"))
    assert report.comparison.first is not None
    assert report.to_json_obj()["likely_causes"] == []
