"""Unit tests of the timeline behind ``rollout show``: filters, columns and totals."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Mapping
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rollout import Event, RunSummary, loads
from pytest_rollout.diff.compare import compare, is_missing
from pytest_rollout.diff.render import describe_event, render_changes
from pytest_rollout.diff.score import tokens_per_second
from pytest_rollout.diff.text import call_text, value_text
from pytest_rollout.diff.timeline import (
    event_detail,
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


# -- the describers against their reference -------------------------------------------------
#
# What `rollout show`, the viewer and the failure report say about each event was built in
# one pass for speed (docs/viewer.md). What follows is the plain way it was built before:
# each piece sanitized and capped on its own, the line made with the type before it and cut
# off again. The fast describers must say exactly what it says, whatever an event holds.


def _ref_escape(char: str) -> str:
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def ref_sanitize(text: str) -> str:
    if not (text.isascii() and text.isprintable()):
        unsafe = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
        text = "".join(_ref_escape(c) if unicodedata.category(c) in unsafe else c for c in text)
    text = re.sub(r"^(\s*)::", r"\1\\x3a:", text, count=1)
    return re.sub(r"##(?=\[|vso\[)", r"#\\x23", text, flags=re.IGNORECASE)


def ref_excerpt(text: str, limit: int = 80) -> str:
    if len(text) > limit + len("… (+99 chars)"):
        return f"{ref_sanitize(text[:limit])}… (+{len(text) - limit} chars)"
    return ref_sanitize(text)


def ref_value_text(value: Any, limit: int = 60) -> str:
    if is_missing(value):
        return "(absent)"
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        text = repr(value)
    return ref_excerpt(text, limit)


def ref_call_text(name: Any, arguments: Any, limit: int = 60) -> str:
    if isinstance(arguments, Mapping):
        args = ", ".join(
            f"{ref_sanitize(str(k))}={ref_value_text(v, 30)}" for k, v in arguments.items()
        )
    elif arguments is None:
        args = ""
    else:
        args = ref_value_text(arguments, 30)
    shown = args if len(args) <= limit else args[:limit] + "…"
    return ref_excerpt(f"{name}", 40) + "(" + shown + ")"


def _ref_json_object(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("{"):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


def _ref_message(message: Mapping[str, Any], limit: int) -> str:
    role, kind = message.get("role"), message.get("type")
    if role is None and isinstance(kind, str):
        if kind == "function_call":
            arguments = _ref_json_object(message.get("arguments"))
            return f"function_call {ref_call_text(message.get('name'), arguments)}"
        if kind.endswith("_output") or "output" in message:
            call = message.get("call_id")
            of = f" {ref_excerpt(str(call), 40)}" if call is not None else ""
            output = _ref_json_object(message.get("output"))
            return f"{ref_excerpt(kind, 40)}{of}: {ref_value_text(output, limit)}"
        return f"{ref_excerpt(kind, 40)}: {ref_value_text(message.get('content'), limit)}"
    shown = ref_excerpt(str(role if role is not None else "?"), 20)
    return f"{shown}: " + ref_value_text(message.get("content"), limit)


def _ref_error(error: Mapping[str, Any]) -> str:
    return f"{error.get('class', 'Error')}: {error.get('message', '')}"


def _ref_describe(kind: str, data: Mapping[str, Any], limit: int) -> str:  # noqa: C901
    if kind == "llm.turn.completed":
        parts = []
        if data.get("content"):
            parts.append(ref_value_text(data.get("content"), limit))
        calls = data.get("tool_calls") or []
        if isinstance(calls, list) and calls:
            named = (
                ref_call_text(c.get("name"), c.get("arguments"))
                for c in calls
                if isinstance(c, Mapping)
            )
            parts.append("-> " + ", ".join(named))
        return " ".join(parts) or "(empty turn)"
    if kind == "llm.turn.started":
        messages = data.get("messages")
        count = len(messages) if isinstance(messages, list) else 0
        detail = f"{count} new message{'s' if count != 1 else ''}"
        if count and isinstance(messages, list) and isinstance(messages[-1], Mapping):
            detail += f", last {_ref_message(messages[-1], limit)}"
        return detail
    if kind == "tool.call.started":
        return ref_call_text(data.get("name"), data.get("arguments"))
    if kind == "tool.call.completed":
        name = ref_excerpt(str(data.get("name", "?")), 40)
        error = data.get("error")
        if isinstance(error, Mapping):
            return f"{name} raised {ref_excerpt(_ref_error(error), limit)}"
        if error:
            return f"{name} raised {ref_value_text(error, limit)}"
        return f"{name} -> {ref_value_text(data.get('output'), limit)}"
    if kind == "run.started":
        return " ".join(
            f"{k}={ref_value_text(data[k], 30)}" for k in ("model", "prompt") if k in data
        )
    if kind == "run.completed":
        detail = f"outcome={ref_value_text(data.get('outcome'), 20)}"
        if "output" in data:
            detail += f" output={ref_value_text(data.get('output'), limit)}"
        return detail
    if kind == "run.failed":
        error = data.get("error")
        if isinstance(error, Mapping):
            return ref_excerpt(_ref_error(error), limit)
        return ref_value_text(error, limit)
    if kind == "replay.divergence":
        return ref_excerpt(f"{data.get('kind', '?')}: {data.get('detail', '')}", limit)
    shown = {k: v for k, v in data.items() if k != "step"}
    return ref_value_text(shown, limit) if shown else ""


def ref_describe_event(event: Event, limit: int = 60) -> str:
    return f"{ref_sanitize(event.type)}  {_ref_describe(event.type, event.data, limit)}".rstrip()


def ref_event_detail(event: Event) -> str:
    described = ref_describe_event(event)
    prefix = ref_sanitize(event.type) + "  "
    detail = described[len(prefix) :] if described.startswith(prefix) else ""
    if event.type == "llm.turn.completed":
        speed = _ref_turn_speed(event.data)
        if speed is not None:
            detail = f"{detail}  ({speed})" if detail else f"({speed})"
    return detail


def _ref_turn_speed(turn: Mapping[str, Any]) -> str | None:
    usage = turn.get("usage")
    tokens = usage.get("output_tokens") if isinstance(usage, Mapping) else None
    latency = turn.get("latency_ms")
    if type(tokens) is not int or not isinstance(latency, int | float):
        return None
    speed = tokens_per_second(tokens, latency)
    if speed is None:
        return None
    seconds = f"{latency:.3g} ms" if latency < 1000 else None
    if seconds is None:
        whole = latency / 1000
        seconds = f"{whole:.3g} s" if whole < 100 else f"{whole:.0f} s"
    rate = f"{speed:.1f}" if speed < 100 else f"{speed:.0f}"
    return f"{tokens} tokens out in {seconds}, {rate} tokens/s"


#: Pieces that each rule of the sanitizer is about, and that the fast paths look for.
_HOSTILE = st.sampled_from(
    ["::", "##", "##[", "##vso[", "##VSO[", "\x1b[31m", "\u202e", "\u2028", "\u2029", "\x7f",
     "\x85", "\n", "\t", "\r", "\x00", "\u00a0", "…", "é", "中", "😀", "\ud800", " ", ":", "#",
     "[", '"', "\\", "{", "get_weather", "city", "user"]
)  # fmt: skip
_TEXT = st.one_of(
    st.text(max_size=12),
    st.lists(st.one_of(_HOSTILE, st.text(max_size=6)), max_size=10).map("".join),
    st.integers(0, 120).map(lambda n: "x" * n),  # around each cut
    st.tuples(st.integers(0, 100), _HOSTILE).map(lambda p: "a" * p[0] + p[1]),
    # long, with the pieces anywhere: before a cut, across it, after it
    st.lists(st.one_of(_HOSTILE, st.integers(1, 40).map("y".__mul__)), max_size=8).map("".join),
)


def _as_json_text(value: Any) -> str:
    """``value`` as the JSON text a Responses API item carries, or broken JSON when it has
    none (a lone surrogate, a number past 64 bits)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return "{broken"


_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),  # past 64 bits, orjson refuses: the repr is shown
    st.floats(allow_nan=False, allow_infinity=False),
    _TEXT,
)
_JSON = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=10,
)
_NAME = st.one_of(st.sampled_from(["get_weather", "search_web", "x" * 45, "x" * 60]), _JSON)
_ARGUMENTS = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(["city", "units", "hours"]), _TEXT), _JSON),
    _JSON,
)
_CALL = st.one_of(
    st.fixed_dictionaries({}, optional={"name": _NAME, "arguments": _ARGUMENTS}), _JSON
)
_MESSAGE = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "role": st.one_of(st.sampled_from(["user", "assistant", "system", "tool"]), _JSON),
            "type": st.one_of(
                st.sampled_from(["function_call", "function_call_output", "message", "x_output"]),
                _JSON,
            ),
            "content": _JSON,
            "name": _NAME,
            "arguments": st.one_of(_ARGUMENTS, _ARGUMENTS.map(_as_json_text)),
            "call_id": _JSON,
            "output": st.one_of(_JSON, st.dictionaries(_TEXT, _JSON).map(_as_json_text)),
        },
    ),
    _JSON,
)
_ERROR = st.one_of(st.fixed_dictionaries({}, optional={"class": _JSON, "message": _JSON}), _JSON)
_DATA = st.fixed_dictionaries(
    {},
    optional={
        "step": st.integers(0, 5),
        "content": _JSON,
        "tool_calls": st.one_of(st.lists(_CALL, max_size=3), _JSON),
        "messages": st.one_of(st.lists(_MESSAGE, max_size=3), _JSON),
        "name": _NAME,
        "arguments": _ARGUMENTS,
        "output": _JSON,
        "error": _ERROR,
        "model": _JSON,
        "prompt": _JSON,
        "outcome": _JSON,
        "kind": _JSON,
        "detail": _JSON,
        "usage": st.one_of(
            st.fixed_dictionaries({}, optional={"output_tokens": _JSON | st.integers(0, 10**6)}),
            _JSON,
        ),
        "latency_ms": st.one_of(st.floats(allow_nan=False), st.integers(-5, 10**7), _JSON),
    },
)
_TYPE = st.one_of(
    st.sampled_from(
        [
            "llm.turn.completed",
            "llm.turn.started",
            "tool.call.started",
            "tool.call.completed",
            "run.started",
            "run.completed",
            "run.failed",
            "replay.divergence",
            "usage.delta",
        ]
    ),
    _TEXT,
)


# The profile's count (100; ``--hypothesis-profile=thorough``: 1000): each example is slow.
@settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TYPE, _DATA, st.integers(1, 100))
def test_the_describers_say_what_their_reference_says(
    kind: str, data: dict[str, Any], limit: int
) -> None:
    event = Event(3, TS, kind, data, data.get("step", 0), None)
    assert event_detail(event) == ref_event_detail(event)
    assert describe_event(event) == ref_describe_event(event)
    assert describe_event(event, limit) == ref_describe_event(event, limit)


@settings(max_examples=300, deadline=None, database=None)
@given(_JSON, st.integers(1, 100))
def test_values_and_calls_are_shown_as_their_reference_shows_them(value: Any, limit: int) -> None:
    assert value_text(value) == ref_value_text(value)
    assert value_text(value, limit) == ref_value_text(value, limit)
    assert call_text("f", value) == ref_call_text("f", value)
    assert call_text(value, {"a": value}, limit) == ref_call_text(value, {"a": value}, limit)


@settings(max_examples=500, deadline=None, database=None)
@given(_TEXT, st.integers(1, 100))
def test_strings_are_shown_as_their_reference_shows_them(text: str, limit: int) -> None:
    assert value_text(text, limit) == ref_value_text(text, limit)
    assert value_text([text], limit) == ref_value_text([text], limit)
    assert call_text(text, {text: text}) == ref_call_text(text, {text: text})


@pytest.mark.parametrize(
    "text",
    [
        "\x7f",
        "a" * 100 + "\x7f",
        "\x7f" + "a" * 100,
        "a" * 58 + "\x7f" + "a" * 40,
        "##[group]",
        "a" * 40 + "##vso[x]" + "a" * 40,
        "a" * 80 + "##[x",
        "::error::x",
        "é" * 100,
        "…" * 20,
        "a\u2028b",
        "a" * 59 + "\u202e" + "a" * 40,
        "\ud800",
    ],
)
def test_the_fast_path_of_a_value_sanitizes_what_it_must(text: str) -> None:
    for limit in (1, 20, 30, 58, 59, 60, 80):
        assert value_text(text, limit) == ref_value_text(text, limit)
        assert value_text({"k": [text]}, limit) == ref_value_text({"k": [text]}, limit)


def test_a_value_one_run_lacks_is_shown_absent() -> None:
    def run(arguments: dict[str, Any]) -> tuple[Event, ...]:
        call = {"step": 1, "name": "f", "arguments": arguments}
        return rollout(("run.started", {}), ("tool.call.started", call), ("run.completed", {}))

    first = compare(run({"x": 1}), run({"x": 1, "y": 2})).first
    assert first is not None
    (change,) = first.changes
    assert change.kind == "added"
    assert is_missing(change.a)
    assert value_text(change.a) == "(absent)"
    assert render_changes(first.changes) == ["data.arguments.y: (absent) -> 2"]
    # Any other bare object is shown as what it is.
    assert value_text(object()).startswith("<object object at 0x")
