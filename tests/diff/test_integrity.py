"""Unit tests of the integrity check (docs/cli.md): consistent runs and every kind of mismatch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_rollout import Event, load, loads
from pytest_rollout.diff.integrity import IntegrityReport, Mismatch, check

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = sorted(
    [*ROOT.glob("examples/weather/golden/**/*.jsonl"), *ROOT.glob("golden/**/*.jsonl")]
)
TS = "2026-06-28T12:34:56.000000Z"

Line = tuple[str, dict[str, Any]]


def unchecked(*body: Line) -> tuple[Event, ...]:
    """Events built in memory, past the loader's schema (ids of any JSON type)."""
    lines = [("run.started", {"model": "m"}), *body, ("run.completed", {"outcome": "completed"})]
    events: list[Event] = []
    step = 0
    for i, (kind, data) in enumerate(lines):
        step = data.get("step", step)
        events.append(Event(i, TS, kind, data, step, i + 1))
    return tuple(events)


def rollout(*body: Line) -> tuple[Event, ...]:
    """A loaded run: run.started (line 1), ``body`` (from line 2), run.completed last."""
    lines = [("run.started", {"model": "m"}), *body, ("run.completed", {"outcome": "completed"})]
    data = b"".join(
        orjson.dumps({"ts": TS, "seq": i, "type": t, "data": d}) + b"\n"
        for i, (t, d) in enumerate(lines)
    )
    return loads(data).events


def tool_call(call_id: Any, name: str = "get_weather", **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def turn(step: int, *calls: dict[str, Any]) -> Line:
    return ("llm.turn.completed", {"step": step, "content": "", "tool_calls": list(calls)})


def started(step: int, call_id: Any, name: str = "get_weather", **arguments: Any) -> Line:
    data = {"step": step, "call_id": call_id, "name": name, "arguments": arguments}
    return ("tool.call.started", data)


def completed(step: int, call_id: Any, name: str = "get_weather") -> Line:
    return ("tool.call.completed", {"step": step, "call_id": call_id, "name": name, "output": 1})


def found(report: IntegrityReport) -> list[tuple[int, str | None, int | None, str]]:
    return [(m.step, m.call_id, m.line, m.reason) for m in report.mismatches]


# -- consistent runs -----------------------------------------------------------------------


def test_a_consistent_run_with_parallel_calls_and_two_steps() -> None:
    events = rollout(
        ("llm.turn.started", {"step": 1, "messages": []}),
        turn(1, tool_call("c1", city="Oslo"), tool_call("c2", city="Rome")),
        ("usage.delta", {"step": 1, "cumulative_cost_usd": 0.1}),
        # Parallel calls may start and complete in any order.
        started(1, "c2", city="Rome"),
        started(1, "c1", city="Oslo"),
        completed(1, "c1"),
        completed(1, "c2"),
        ("llm.turn.started", {"step": 2, "messages": []}),
        turn(2, tool_call("c3", "convert", celsius=4.0, to="F")),
        started(2, "c3", "convert", to="F", celsius=4.0),  # key order does not matter
        completed(2, "c3", "convert"),
        turn(3),
    )
    report = check(events)
    assert report == IntegrityReport(events=14, steps=3, mismatches=())
    assert report.matched


def test_a_run_without_tools() -> None:
    events = rollout(
        ("llm.turn.started", {"step": 1, "messages": [{"role": "user", "content": "hi"}]}),
        ("llm.turn.completed", {"step": 1, "content": "Hello!"}),
    )
    report = check(events)
    assert (report.events, report.steps, report.matched) == (4, 1, True)


def test_a_run_without_turns() -> None:
    report = check(rollout())
    assert (report.events, report.steps, report.matched) == (2, 0, True)


def test_no_events() -> None:
    assert check(()) == IntegrityReport(events=0, steps=0, mismatches=())


def test_the_project_has_goldens_to_check() -> None:
    assert len(GOLDENS) >= 7
    assert any("examples" in p.parts for p in GOLDENS)


@pytest.mark.parametrize("path", GOLDENS, ids=lambda p: p.name)
def test_every_golden_checks_clean(path: Path) -> None:
    rollout_ = load(path)
    report = check(rollout_.events)
    assert report.mismatches == ()
    assert report.events == len(rollout_.events)
    assert report.steps == rollout_.steps >= 2


# -- each mismatch -------------------------------------------------------------------------


def test_a_call_id_the_turn_did_not_announce() -> None:
    events = rollout(turn(1, tool_call("c1", city="Oslo")), started(1, "c9"), completed(1, "c9"))
    assert found(check(events)) == [
        (1, "c9", 3, "not announced by the turn before it (step 1, line 2)"),
    ]


def test_a_call_announced_by_an_earlier_turn_only() -> None:
    events = rollout(
        turn(1, tool_call("c1"), tool_call("c2")),
        started(1, "c1"),
        completed(1, "c1"),
        turn(2),
        started(2, "c2"),
        completed(2, "c2"),
    )
    assert found(check(events)) == [
        (
            2,
            "c2",
            6,
            "not announced by the turn before it (step 2, line 5); "
            "an earlier turn announced it (step 1, line 2)",
        ),
    ]


def test_a_call_before_any_turn() -> None:
    events = rollout(("llm.turn.started", {"step": 1}), started(1, "c1"), completed(1, "c1"))
    assert found(check(events)) == [
        (1, "c1", 3, "not announced: no llm.turn.completed comes before it"),
    ]


@pytest.mark.parametrize("data", [{"call_id": None}, {}], ids=["null", "absent"])
def test_a_null_call_id(data: dict[str, Any]) -> None:
    start = {"step": 1, "name": "get_weather", "arguments": {}, **data}
    done = {"step": 1, "name": "get_weather", "output": 1, **data}
    events = rollout(
        turn(1, tool_call("c1")),
        ("tool.call.started", start),
        ("tool.call.completed", done),
    )
    # The completion answers the unnamed call: one mismatch, not three.
    assert found(check(events)) == [
        (1, None, 3, "not announced: the call has no call_id (it is null)"),
    ]


def test_null_call_ids_left_open_or_completed_without_a_start() -> None:
    events = rollout(
        turn(1, tool_call(None), tool_call("c1")),
        started(1, None),
        started(1, "c1"),
        completed(1, "c1"),
        completed(1, None, "other"),
    )
    assert found(check(events)) == [
        (1, None, 3, "not announced: the call has no call_id (it is null)"),
        (
            1,
            None,
            3,
            "started but never completed: no tool.call.completed with this call_id follows",
        ),
        (1, None, 6, "completed without a start: the completion has no call_id"),
    ]


def test_a_tool_name_that_differs() -> None:
    events = rollout(
        turn(1, tool_call("c1", "get_weather", city="Oslo")),
        started(1, "c1", "get_time", city="Oslo"),
        completed(1, "c1", "get_time"),
    )
    assert found(check(events)) == [
        (1, "c1", 3, 'tool name "get_time" differs from the announced "get_weather" (line 2)'),
    ]


@pytest.mark.parametrize(
    ("announced", "made"),
    [
        ({"x": 1}, {"x": 1.0}),
        ({"x": 1.0}, {"x": 1}),
        ({"x": 1}, {"x": True}),
        ({"x": 0}, {"x": False}),
        ({"x": "1"}, {"x": 1}),
        ({"x": [1, 2]}, {"x": [2, 1]}),
        ({"x": {"a": 1}}, {"x": {"a": 1, "b": None}}),
        ({"x": 1}, {}),
        ({}, {"x": None}),
        ({"city": "Oslo"}, {"city": "oslo"}),
    ],
)
def test_arguments_that_differ(announced: dict[str, Any], made: dict[str, Any]) -> None:
    events = rollout(
        turn(1, tool_call("c1", **announced)), started(1, "c1", **made), completed(1, "c1")
    )
    [mismatch] = check(events).mismatches
    assert (mismatch.step, mismatch.call_id, mismatch.line) == (1, "c1", 3)
    made_text = orjson.dumps(made, option=orjson.OPT_SORT_KEYS).decode()
    announced_text = orjson.dumps(announced, option=orjson.OPT_SORT_KEYS).decode()
    assert mismatch.reason == (
        f"arguments {made_text} differ from the announced {announced_text} (line 2)"
    )


def test_arguments_that_are_not_objects_are_compared_too() -> None:
    same = rollout(
        ("llm.turn.completed", {"step": 1, "tool_calls": [{"id": "c1", "name": "f"}]}),
        ("tool.call.started", {"step": 1, "call_id": "c1", "name": "f"}),
        completed(1, "c1", "f"),
    )
    assert check(same).matched
    other = rollout(
        ("llm.turn.completed", {"step": 1, "tool_calls": [{"id": "c1", "name": "f"}]}),
        ("tool.call.started", {"step": 1, "call_id": "c1", "name": "f", "arguments": []}),
        completed(1, "c1", "f"),
    )
    assert [m.reason for m in check(other).mismatches] == [
        "arguments [] differ from the announced null (line 2)"
    ]


def test_name_and_arguments_that_differ_are_two_mismatches() -> None:
    events = rollout(
        turn(1, tool_call("c1", "a", x=1)), started(1, "c1", "b", x=2), completed(1, "c1", "b")
    )
    assert [m.reason for m in check(events).mismatches] == [
        'tool name "b" differs from the announced "a" (line 2)',
        'arguments {"x":2} differ from the announced {"x":1} (line 2)',
    ]


def test_a_call_never_completed() -> None:
    events = rollout(
        turn(1, tool_call("c1"), tool_call("c2")),
        started(1, "c1"),
        started(1, "c2"),
        completed(1, "c2"),
    )
    assert found(check(events)) == [
        (
            1,
            "c1",
            3,
            "started but never completed: no tool.call.completed with this call_id follows",
        ),
    ]


def test_a_completion_without_a_start() -> None:
    events = rollout(turn(1, tool_call("c1")), completed(1, "c1"))
    assert found(check(events)) == [
        (1, "c1", 3, "completed without a start: no tool.call.started with this call_id before it"),
    ]


def test_a_completion_before_its_start() -> None:
    events = rollout(turn(1, tool_call("c1")), completed(1, "c1"), started(1, "c1"))
    assert [(m.line, m.reason.split(":")[0]) for m in check(events).mismatches] == [
        (3, "completed without a start"),
        (4, "started but never completed"),
    ]


def test_a_call_id_started_twice() -> None:
    # A provider that numbers its calls from 1 again on every turn.
    events = rollout(
        turn(1, tool_call("call_1", city="Oslo")),
        started(1, "call_1", city="Oslo"),
        completed(1, "call_1"),
        turn(2, tool_call("call_1", city="Rome")),
        started(2, "call_1", city="Rome"),
        completed(2, "call_1"),
    )
    assert found(check(events)) == [
        (2, "call_1", 6, "call_id reused: a call with this id already started on line 3"),
        (2, "call_1", 7, "call_id reused: this call already completed on line 4"),
    ]


def test_a_call_completed_twice() -> None:
    events = rollout(
        turn(1, tool_call("c1")), started(1, "c1"), completed(1, "c1"), completed(1, "c1")
    )
    assert found(check(events)) == [
        (1, "c1", 5, "call_id reused: this call already completed on line 4"),
    ]


def test_a_turn_that_announces_one_id_twice() -> None:
    events = rollout(
        turn(1, tool_call("c1", x=1), tool_call("c1", x=2)),
        started(1, "c1", x=1),
        completed(1, "c1"),
    )
    assert found(check(events)) == [(1, "c1", 2, "the turn announces this call_id twice")]


def test_a_call_at_another_step_than_its_turn() -> None:
    events = rollout(
        turn(1, tool_call("c1")),
        ("llm.turn.started", {"step": 2}),
        started(2, "c1"),
        completed(2, "c1"),
    )
    assert found(check(events)) == [
        (2, "c1", 4, "announced by the step 1 turn (line 2) but recorded at step 2"),
    ]


def test_a_completion_that_names_another_tool() -> None:
    events = rollout(turn(1, tool_call("c1", "a")), started(1, "c1", "a"), completed(1, "c1", "b"))
    assert found(check(events)) == [
        (1, "c1", 4, 'completed as tool "b" but started as "a" (line 3)'),
    ]


def test_ids_of_other_json_types_are_matched_exactly() -> None:
    events = unchecked(turn(1, tool_call(7)), started(1, 7), completed(1, 7))
    assert check(events).matched
    events = unchecked(turn(1, tool_call(7)), started(1, "7"), completed(1, "7"))
    assert found(check(events)) == [
        (1, "7", 3, "not announced by the turn before it (step 1, line 2)"),
    ]
    events = unchecked(turn(1, tool_call({"a": 1})), started(1, {"a": 1}))
    assert [m.call_id for m in check(events).mismatches] == ['{"a":1}']


def test_malformed_tool_calls_announce_nothing() -> None:
    events = unchecked(
        ("llm.turn.completed", {"step": 1, "tool_calls": "c1"}),
        started(1, "c1"),
        completed(1, "c1"),
        ("llm.turn.completed", {"step": 2, "tool_calls": ["c2", None, 3, {"name": "x"}]}),
        started(2, "c2"),
        completed(2, "c2"),
    )
    assert [(m.line, m.reason.split(" (")[0]) for m in check(events).mismatches] == [
        (3, "not announced by the turn before it"),
        (6, "not announced by the turn before it"),
    ]


def test_mismatches_are_in_file_order_and_counted() -> None:
    events = rollout(
        turn(1, tool_call("c1"), tool_call("c2")),
        started(1, "c1"),  # never completed, reported at its own line
        started(1, "c2", "other"),
        completed(1, "c2", "other"),
        completed(1, "c3"),
    )
    report = check(events)
    assert [m.line for m in report.mismatches] == [3, 4, 6]
    assert not report.matched


def test_events_built_in_memory_have_no_line() -> None:
    events = (
        Event(0, TS, "run.started", {}, 0),
        Event(1, TS, "llm.turn.completed", {"tool_calls": [tool_call("c1")]}, 1),
        Event(2, TS, "tool.call.started", {"call_id": "c1", "name": "f", "arguments": {}}, 1),
        Event(3, TS, "tool.call.started", {"call_id": "c2", "name": "f", "arguments": {}}, 1),
        Event(4, TS, "tool.call.completed", {"call_id": "c2", "name": "f"}, 1),
        Event(5, TS, "run.completed", {}, 1),
    )
    report = check(events)
    assert found(report) == [
        (1, "c1", None, 'tool name "f" differs from the announced "get_weather" (seq 1)'),
        (
            1,
            "c1",
            None,
            "started but never completed: no tool.call.completed with this call_id follows",
        ),
        (1, "c2", None, "not announced by the turn before it (step 1, seq 1)"),
    ]


def test_arguments_that_cannot_be_encoded_are_compared_by_value() -> None:
    marker = object()
    events = (
        Event(0, TS, "run.started", {}, 0),
        Event(1, TS, "llm.turn.completed", {"tool_calls": [tool_call(1, x=marker)]}, 1),
        Event(
            2,
            TS,
            "tool.call.started",
            {"call_id": 1, "name": "get_weather", "arguments": {"x": marker}},
            1,
        ),
        Event(3, TS, "tool.call.completed", {"call_id": 1, "name": "get_weather"}, 1),
    )
    assert check(events).matched


# -- the report ----------------------------------------------------------------------------


def test_json_shape() -> None:
    events = rollout(turn(1, tool_call("c1")), started(1, "c2"), completed(1, "c2"))
    assert check(events).to_json_obj() == {
        "events": 5,
        "steps": 1,
        "matched": False,
        "mismatches": [
            {
                "step": 1,
                "call_id": "c2",
                "line": 3,
                "reason": "not announced by the turn before it (step 1, line 2)",
            }
        ],
        "text_calls": [],
    }
    assert Mismatch(2, None, None, "why").to_json_obj() == {
        "step": 2,
        "call_id": None,
        "line": None,
        "reason": "why",
    }


EVIL = "\x1b[31m\u202e\n::error::x\r##[group]##vso[task.x]"


def test_reasons_quote_file_content_sanitized() -> None:
    events = rollout(
        turn(1, tool_call("c1", EVIL, **{EVIL: EVIL})),
        started(1, "c1", "::error::" + EVIL, **{EVIL: "::" + EVIL}),
        completed(1, "c1", "\n##[group]" + EVIL),
    )
    reasons = [m.reason for m in check(events).mismatches]
    assert len(reasons) == 3
    for reason in reasons:
        assert reason.isprintable()
        assert "\x1b" not in reason
        assert "\u202e" not in reason
        assert "##[" not in reason
        assert "##vso[" not in reason
        assert not reason.startswith("::")
    # Still shown, as escapes: the JSON ones of orjson, then those of sanitize.
    assert '"::error::\\u001b[31m\\u202e\\n::error::x\\r#\\x23[gr' in reasons[0]


# -- properties ----------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
ARGUMENTS = st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=4)


@st.composite
def consistent_runs(draw: st.DrawFn) -> list[Line]:
    """Runs as the recorder writes them: each turn's calls start and complete in any order.

    (Built without the helpers above: drawn argument names may be "name" or "step".)
    """
    body: list[Line] = []
    number = 0
    for step in range(1, draw(st.integers(1, 4)) + 1):
        calls: list[dict[str, Any]] = []
        for _ in range(draw(st.integers(0, 3))):
            number += 1
            name = draw(st.sampled_from("fgh"))
            calls.append({"id": f"call_{number}", "name": name, "arguments": draw(ARGUMENTS)})
        body.append(("llm.turn.completed", {"step": step, "tool_calls": calls}))
        body.extend(
            (
                "tool.call.started",
                {"step": step, "call_id": c["id"], "name": c["name"], "arguments": c["arguments"]},
            )
            for c in draw(st.permutations(calls))
        )
        body.extend(completed(step, c["id"], c["name"]) for c in draw(st.permutations(calls)))
    return body


@settings(max_examples=60, deadline=None)
@given(body=consistent_runs())
def test_recorded_consistent_runs_always_match(body: list[Line]) -> None:
    report = check(rollout(*body))
    assert report.mismatches == ()
    assert report.events == len(body) + 2


@settings(max_examples=60, deadline=None)
@given(body=consistent_runs(), data=st.data())
def test_dropping_a_call_event_is_always_found(body: list[Line], data: st.DataObject) -> None:
    calls = [i for i, (kind, _) in enumerate(body) if kind.startswith("tool.call.")]
    assume(calls)
    index = data.draw(st.sampled_from(calls))
    kind, dropped = body.pop(index)
    report = check(rollout(*body))
    expected = "completed without a start" if kind == "tool.call.started" else "started but never"
    assert [m.call_id for m in report.mismatches] == [dropped["call_id"]]
    assert report.mismatches[0].reason.startswith(expected)


# -- calls announced in text ---------------------------------------------------------------


def text_turn(step: int, content: str | None) -> Line:
    """A turn that names its call in its text (a ReAct or code agent), with no structured one."""
    return ("llm.turn.completed", {"step": step, "content": content, "tool_calls": None})


def test_a_call_announced_in_text_is_a_note_not_a_mismatch() -> None:
    events = rollout(
        text_turn(1, 'Thought: I need the weather.\nAction: get_weather({"city": "Paris"})'),
        started(1, None, city="Paris"),
        completed(1, None),
    )
    report = check(events)
    assert report.matched
    assert [(m.step, m.call_id, m.line, m.reason) for m in report.text_calls] == [
        (
            1,
            None,
            3,
            "announced in the text of the step 1 turn (line 2), which has no structured "
            "calls: replay matches it by tool and arguments",
        )
    ]
    assert report.to_json_obj()["text_calls"][0]["line"] == 3


@pytest.mark.parametrize("content", ["", "   ", None])
def test_a_call_with_no_id_after_a_turn_that_says_nothing_is_still_a_mismatch(
    content: str | None,
) -> None:
    events = rollout(text_turn(1, content), started(1, None), completed(1, None))
    assert found(check(events)) == [
        (1, None, 3, "not announced: the call has no call_id (it is null)"),
    ]
    assert check(events).text_calls == ()


def forcing_request(step: int, function: str) -> Line:
    """A request that forces one function: structured output, as instructor asks for it."""
    choice = {"type": "function", "function": {"name": function}}
    return ("llm.turn.started", {"step": step, "messages": [], "params": {"tool_choice": choice}})


def test_a_call_the_agent_code_makes_after_structured_output_is_a_note() -> None:
    """The turn's only call is the forced function the SDK turned into the answer; the
    agent's own code then calls a tool with what it extracted."""
    events = rollout(
        forcing_request(1, "WeatherRequest"),
        turn(1, tool_call("call_1", "WeatherRequest", city="Paris")),
        started(1, None, city="Paris"),
        completed(1, None),
    )
    report = check(events)
    assert report.matched
    assert [m.reason for m in report.text_calls] == [
        "made by the agent's code after the step 1 turn (line 3), whose only call is the "
        "function its request forced (WeatherRequest, structured output): replay matches it "
        "by tool and arguments"
    ]
    # A turn that also announces another call, or forces nothing, still needs an id.
    other = rollout(
        forcing_request(1, "WeatherRequest"),
        turn(1, tool_call("call_1", "lookup", city="Paris")),
        started(1, "call_1", "lookup", city="Paris"),
        completed(1, "call_1", "lookup"),
        started(1, None, city="Paris"),
        completed(1, None),
    )
    assert found(check(other)) == [
        (1, None, 6, "not announced: the call has no call_id (it is null)"),
    ]
