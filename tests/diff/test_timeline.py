"""Unit tests of the timeline behind ``rollout show``: filters, columns and totals."""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import pytest

from pytest_rollout import Event, RunSummary, loads
from pytest_rollout.diff.timeline import (
    event_matches,
    parse_step_range,
    render_show,
    render_timeline,
    render_totals,
)

TS = "2026-06-28T12:34:56.000000Z"


def rollout(*lines: tuple[str, dict[str, Any]], first_seq: int = 0) -> tuple[Event, ...]:
    data = b"".join(
        orjson.dumps({"ts": TS, "seq": first_seq + i, "type": t, "data": d}) + b"\n"
        for i, (t, d) in enumerate(lines)
    )
    return loads(data).events


RUN = rollout(
    ("run.started", {"model": "gpt-x", "prompt": "Weather in Oslo?"}),
    ("llm.turn.started", {"step": 1, "messages": [{"role": "user", "content": "Weather?"}]}),
    (
        "llm.turn.completed",
        {
            "step": 1,
            "content": "",
            "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}}],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    ),
    ("tool.call.started", {"step": 1, "call_id": "c1", "name": "get_weather", "arguments": {}}),
    ("tool.call.completed", {"step": 1, "call_id": "c1", "name": "get_weather", "output": 4}),
    ("llm.turn.completed", {"step": 2, "content": "4C, overcast in OSLO."}),
    ("llm.turn.completed", {"step": 3, "content": "Anything else?"}),
    ("run.completed", {"outcome": "completed"}),
)


def shown_seqs(**filters: Any) -> list[int]:
    return [e.seq for e in RUN if event_matches(e, **filters)]


# -- filters -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("3", (3, 3)), ("0", (0, 0)), ("1-4", (1, 4)), ("2-2", (2, 2)), (" 7 ", (7, 7))],
)
def test_step_ranges(text: str, expected: tuple[int, int]) -> None:
    assert parse_step_range(text) == expected


@pytest.mark.parametrize("text", ["", "-1", "a", "1-", "-3", "1-2-3", "1..3", "1 - 3", "²"])
def test_bad_step_ranges(text: str) -> None:
    with pytest.raises(ValueError, match="--step takes N or A-B"):
        parse_step_range(text)


def test_a_backwards_step_range() -> None:
    with pytest.raises(ValueError, match="--step range 3-1 goes backwards; write 1-3"):
        parse_step_range("3-1")


def test_no_filter_shows_everything() -> None:
    assert shown_seqs() == list(range(8))
    assert shown_seqs(types=[], grep="") == list(range(8))


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        (["tool.call.started"], [3]),
        (["tool."], [3, 4]),
        (["tool"], [3, 4]),
        (["tool.call"], [3, 4]),
        (["tool.ca"], []),  # a prefix is whole dotted segments
        (["llm.turn.completed", "run."], [0, 2, 5, 6, 7]),
        (["run.started."], []),
    ],
)
def test_type_filter(types: list[str], expected: list[int]) -> None:
    assert shown_seqs(types=types) == expected


def test_step_filter() -> None:
    assert shown_seqs(steps=(1, 1)) == [1, 2, 3, 4]
    assert shown_seqs(steps=(2, 3)) == [5, 6, 7]
    assert shown_seqs(steps=(0, 0)) == [0]
    assert shown_seqs(steps=(9, 12)) == []


def test_grep_is_a_case_insensitive_match_on_the_json() -> None:
    assert shown_seqs(grep="oslo") == [0, 2, 5]
    assert shown_seqs(grep='"CALL_ID":"c1"') == [3, 4]
    assert shown_seqs(grep="tool.call") == [3, 4]
    assert shown_seqs(grep="nowhere") == []


def test_filters_combine() -> None:
    assert shown_seqs(types=["llm."], steps=(1, 2), grep="oslo") == [2, 5]


def test_grep_finds_non_ascii_text() -> None:
    events = rollout(
        ("run.started", {}),
        ("llm.turn.completed", {"step": 1, "content": "Il fait 18,5 °C à PARIS"}),
        ("run.completed", {}),
    )
    assert [e.seq for e in events if event_matches(e, grep="°c à paris")] == [1]


# -- the timeline --------------------------------------------------------------------------


def test_timeline_lines() -> None:
    assert render_timeline(RUN) == [
        "step  seq  type                 detail",
        '   0    0  run.started          model="gpt-x" prompt="Weather in Oslo?"',
        '   1    1  llm.turn.started     1 new message, last user: "Weather?"',
        '   1    2  llm.turn.completed   -> get_weather(city="Oslo")',
        "   1    3  tool.call.started    get_weather()",
        "   1    4  tool.call.completed  get_weather -> 4",
        '   2    5  llm.turn.completed   "4C, overcast in OSLO."',
        '   3    6  llm.turn.completed   "Anything else?"',
        '   3    7  run.completed        outcome="completed"',
    ]


def test_columns_widen_for_large_numbers_and_narrow_types() -> None:
    events = rollout(
        ("run.started", {}),
        ("note", {"text": "hi"}),
        ("run.completed", {"step": 12345, "outcome": "completed"}),
        first_seq=99_998,
    )
    assert render_timeline(events) == [
        " step     seq  type           detail",
        "    0   99998  run.started",
        '    0   99999  note           {"text":"hi"}',
        '12345  100000  run.completed  outcome="completed"',
    ]


def test_a_filtered_timeline_says_how_much_it_shows() -> None:
    assert render_timeline(RUN, types=["tool."]) == [
        "step  seq  type                 detail",
        "   1    3  tool.call.started    get_weather()",
        "   1    4  tool.call.completed  get_weather -> 4",
        "Shown: 2 of 8 events",
    ]
    assert render_timeline(RUN, steps=(7, 8)) == [
        "step  seq  type  detail",
        "(no events match the filters)",
        "Shown: 0 of 8 events",
    ]


def test_long_types_are_capped() -> None:
    kind = "x." * 40
    events = rollout(("run.started", {}), (kind, {}), ("run.completed", {}))
    line = render_timeline(events)[2]
    assert line.startswith("   0    1  " + "x." * 20 + "… (+40 chars)")
    assert len(line) < 80


# -- totals --------------------------------------------------------------------------------


def summary(**fields: Any) -> RunSummary:
    base: dict[str, Any] = {
        "steps": 3,
        "turns": 3,
        "tool_calls": Counter({"convert": 1, "get_weather": 2}),
        "errors": 1,
        "cost_usd": 0.0125,
        "input_tokens": 120,
        "output_tokens": 45,
        "outcome": "failed",
    }
    return RunSummary(**{**base, **fields})


def test_totals() -> None:
    assert render_totals(summary()) == [
        "Totals (whole run):",
        "  steps: 0-3, turns: 3",
        "  tool calls: get_weather x2, convert x1",
        "  errors: 1",
        "  tokens: 120 in, 45 out",
        "  cost: $0.0125",
        "  outcome: failed",
    ]


def test_totals_without_tools_or_cost() -> None:
    lines = render_totals(summary(tool_calls=Counter(), cost_usd=None, outcome="completed"))
    assert lines[2:] == [
        "  tool calls: none",
        "  errors: 1",
        "  tokens: 120 in, 45 out",
        "  cost: unknown",
        "  outcome: completed",
    ]


def test_show_is_the_filtered_timeline_and_the_whole_run_totals() -> None:
    lines = render_show(RUN, steps=(2, 2))
    assert lines == [
        "step  seq  type                detail",
        '   2    5  llm.turn.completed  "4C, overcast in OSLO."',
        "Shown: 1 of 8 events",
        "",
        "Totals (whole run):",
        "  steps: 0-3, turns: 3",
        "  tool calls: get_weather x1",
        "  errors: 0",
        "  tokens: 10 in, 5 out (usage from 1 of 3 turns)",
        "  cost: unknown",
        "  outcome: completed",
    ]


EVIL = "\x1b[31m\u202e\n::error::x\r##[group]##vso[task.x]"


def test_hostile_strings_are_sanitized() -> None:
    events = rollout(
        ("run.started", {"model": EVIL}),
        ("::error::" + EVIL, {"step": 1, EVIL: EVIL}),
        ("tool.call.started", {"step": 1, "name": "##[group]" + EVIL, "arguments": {EVIL: 1}}),
        ("run.completed", {"outcome": "::" + EVIL}),
    )
    lines = render_show(events)
    assert len(lines) == 5 + 1 + 7
    for line in lines:
        assert line.isprintable()
        assert "##[" not in line
        assert "##vso[" not in line
        assert not line.lstrip().startswith("::")
    assert lines[2].startswith("   1    1  \\x3a:error::\\x1b[31m\\u202e\\n::error::x")
    calls = "#\\x23[group]\\x1b[31m\\u202e\\n::error::x\\r#\\x23[group]#\\x23vso[task.x] x1"
    assert lines[-5] == f"  tool calls: {calls}"
    assert lines[-1] == (
        "  outcome: \\x3a:\\x1b[31m\\u202e\\n::error::x\\r#\\x23[group]#\\x23vso[task.x]"
    )
