"""The drift report: how run b drifted from run a, as data, with likely causes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_rollout import Recorder
from pytest_rollout.cli import main
from pytest_rollout.diff.canonical import DEFAULT_OPTIONS
from pytest_rollout.diff.divergence import Divergence, DivergenceKind
from pytest_rollout.diff.drift import ToolCallDrift, drift_report, model_family
from pytest_rollout.format.events import Event

SYSTEM = "You are a weather assistant."


def run(
    *,
    city: Any = "Paris",
    model: str = "m-1",
    version: str = "m-1-2026",
    tools: tuple[str, ...] = ("weather",),
    schema: str = "string",
    system: str = SYSTEM,
    role: str = "system",
    params: dict[str, Any] | None = None,
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
            "messages": [{"role": role, "content": system}, {"role": "user", "content": "?"}],
            "tools": [{"name": "weather", "parameters": {"city": schema}}],
            **({} if params is None else {"params": params}),
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


def test_a_tool_call_changed_where_the_comparison_looks_away_is_still_listed() -> None:
    lyon = run(city="Lyon")
    same = drift_report(GOLDEN, run())
    assert same.tool_calls == ()
    ignoring = DEFAULT_OPTIONS.extended(
        ignore_paths=["tool.call.started:arguments.city"], ignore_types=["llm.turn.completed"]
    )
    report = drift_report(GOLDEN, lyon, ignoring)
    # The comparison looks away from the argument; the tool-call section still shows it.
    assert report.comparison.identical
    assert [c.b_arguments for c in report.tool_calls] == [{"city": "Lyon"}]


def test_the_tool_call_section_agrees_with_the_comparison_on_floats() -> None:
    # Floats are compared to 9 decimal places: a change past them is no drift anywhere.
    beyond = drift_report(run(city=48.8566140001), run(city=48.8566140004))
    assert beyond.comparison.identical
    assert beyond.tool_calls == ()
    within = drift_report(run(city=48.85661), run(city=48.85662))
    assert [(c.a_arguments, c.b_arguments) for c in within.tool_calls] == [
        ({"city": 48.85661}, {"city": 48.85662})
    ]


def test_replay_divergences_are_the_headline() -> None:
    replayed = Divergence(DivergenceKind.PROMPT_MISMATCH, 1, "system prompt differs")
    report = drift_report(GOLDEN, run(city="Lyon"), divergences=[replayed])
    assert report.headline == replayed
    assert not report.matched


def test_a_run_started_apart_is_headed_by_its_setup_mismatch_before_replay_s() -> None:
    # Another model: run.started differs at step 0, replay refused the first request at 1.
    replayed = Divergence(DivergenceKind.PROMPT_MISMATCH, 1, "params.model differs")
    report = drift_report(GOLDEN, run(model="m-2"), divergences=[replayed])
    assert report.divergences == (replayed,)
    assert [(d.step, d.kind) for d in report.leading] == [
        (0, DivergenceKind.SETUP_MISMATCH),
        (1, DivergenceKind.PROMPT_MISMATCH),
    ]
    assert report.headline == report.leading[0]


@pytest.mark.parametrize(
    ("b", "cause"),
    [
        (
            run(model="m-2", city="Lyon"),
            "the model changed: m-1 -> m-2",
        ),
        (
            run(tools=("weather", "search"), city="Lyon"),
            "the set of tools changed: search added",
        ),
        (
            run(tools=("forecast",), city="Lyon"),
            "the set of tools changed: weather dropped; forecast added",
        ),
        (run(schema="enum", city="Lyon"), "the tool schemas sent to the model changed"),
        (run(system="Be brief.", city="Lyon"), "the system prompt changed (sha256 "),
        (
            run(role="developer", system="Be brief.", city="Lyon"),
            "the system prompt changed (sha256 ",
        ),
        (
            run(params={"system": "Answer in French."}, city="Lyon"),
            "the system prompt changed (sha256 ",
        ),
        (
            run(weather={"temperature": {"c": 18}}, answer="19C"),
            "tool weather returned a differently shaped result at step 1",
        ),
    ],
    ids=[
        "model",
        "tool-set",
        "tool-renamed",
        "tool-schema",
        "system-prompt",
        "developer-prompt",
        "system-param",
        "result-shape",
    ],
)
def test_likely_causes_come_from_evidence(b: tuple[Event, ...], cause: str) -> None:
    causes = drift_report(GOLDEN, b).likely_causes
    assert len(causes) == 1
    assert causes[0].startswith(cause)


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        (("gpt-4o-mini", "gpt-4o-mini"), ("gpt-4o-mini", "gpt-4o-mini-2024-07-18")),
        (("gpt-4o-mini", "gpt-4o-mini"), ("gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-09-01")),
        (("claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022"), ("x", "x")),
        (("gpt-4-0613", "gpt-4"), ("gpt-4-0613", "gpt-4-0613")),
        (("gemini-1.5-pro@20240514", "gemini-1.5-pro"), ("", "")),
    ],
    ids=["dated-answer", "two-dates", "alias-and-date", "openai-mmdd", "vertex-at"],
)
def test_a_dated_version_of_the_same_model_is_not_a_model_change(
    asked: tuple[str, str], answered: tuple[str, str]
) -> None:
    golden = run(model=asked[0], version=answered[0])
    report = drift_report(golden, run(model=asked[1], version=answered[1], city="Lyon"))
    assert not report.matched
    assert report.likely_causes == ()


def test_another_requested_model_is_a_model_change() -> None:
    golden = run(model="gpt-4o-mini", version="gpt-4o-mini-2024-07-18")
    b = run(model="gpt-4o", version="gpt-4o-2024-08-06", city="Lyon")
    assert drift_report(golden, b).likely_causes == ("the model changed: gpt-4o-mini -> gpt-4o",)


def _requested(model: str | None, version: str) -> tuple[Event, ...]:
    """A run that names its model in each request's params (an SDK agent), or nowhere."""
    params = {} if model is None else {"model": model}
    return (
        Event(0, "t", "run.started", {}, 0),
        Event(1, "t", "llm.turn.started", {"step": 1, "messages": [], "params": params}, 1),
        Event(
            2,
            "t",
            "llm.turn.completed",
            {"step": 1, "content": version, "model_version": version},
            1,
        ),
        Event(3, "t", "run.completed", {"step": 1}, 1),
    )


@pytest.mark.parametrize(
    ("a", "b", "cause"),
    [
        (
            ("gpt-4o-mini", "gpt-4o-mini-2024-07-18"),
            ("gpt-4o-mini", "gpt-4o-mini-2025-01-01"),
            None,
        ),
        (("gpt-4o-mini", "gpt-4o-mini"), ("gpt-4.1", "gpt-4.1"), "gpt-4o-mini -> gpt-4.1"),
        ((None, "gpt-4o-mini-2024-07-18"), (None, "gpt-4o-mini"), None),
        (
            (None, "gpt-4o-mini-2024-07-18"),
            (None, "gpt-4o-2024-08-06"),
            "gpt-4o-mini-2024-07-18 -> ",
        ),
    ],
    ids=["params-same-family", "params-other-model", "answered-same-family", "answered-other"],
)
def test_the_requested_model_comes_from_the_requests_or_else_the_answers(
    a: tuple[str | None, str], b: tuple[str | None, str], cause: str | None
) -> None:
    causes = drift_report(_requested(*a), _requested(*b)).likely_causes
    if cause is None:
        assert causes == ()
    else:
        assert len(causes) == 1
        assert causes[0].startswith(f"the model changed: {cause}")


def test_rollout_diff_names_a_model_change_only_for_another_model(tmp_path: Path) -> None:
    a = _save(tmp_path, "a.jsonl", run(model="gpt-4o-mini", version="gpt-4o-mini"))
    dated = _save(
        tmp_path,
        "dated.jsonl",
        run(model="gpt-4o-mini", version="gpt-4o-mini-2024-07-18", city="Lyon"),
    )
    other = _save(tmp_path, "other.jsonl", run(model="gpt-4o", version="gpt-4o", city="Lyon"))
    out = io.StringIO()
    assert main(["diff", a, dated], out=out) == 1
    assert "Likely cause" not in out.getvalue()
    out = io.StringIO()
    assert main(["diff", a, other], out=out) == 1
    assert "Likely cause: the model changed: gpt-4o-mini -> gpt-4o\n" in out.getvalue()


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("gpt-3.5-turbo-0125", "gpt-3.5-turbo"),
        ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet-v2"),
        ("m-1-2026", "m-1-2026"),  # not a date
        ("o1", "o1"),
    ],
)
def test_model_family(name: str, family: str) -> None:
    assert model_family(name) == family


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


def test_a_system_prompt_that_only_says_another_date_has_not_changed() -> None:
    golden = run(system="Today is 2026-12-01.", city="Paris")
    later = run(system="Today is 2026-12-02.", city="Lyon")
    assert drift_report(golden, later).likely_causes == ()


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_a_shape_description_grows_with_what_it_describes_not_with_its_nesting() -> None:
    """A tool output of nested lists doubled the shape's text at every level (its JSON was
    kept as text, escaped again each time): 30 levels took 85 s and 6 GB."""
    from pytest_rollout.diff.canonical import canonical_bytes
    from pytest_rollout.diff.drift import _shape

    sizes = [len(canonical_bytes(_shape(_nested(depth, 1)))) for depth in (8, 12, 40)]
    assert sizes[1] - sizes[0] == 4 * 2  # one "[" and one "]" a level
    assert sizes[2] < 100  # past 16 levels, "..."
    assert _shape(_nested(12, 1)) != _shape(_nested(12, "one"))
    assert _shape([[1, 2], [3]]) == _shape([[4]])
