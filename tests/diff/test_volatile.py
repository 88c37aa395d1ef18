"""Volatile values: which are found, how they are numbered, and what a comparison of two runs
then says (docs/replay.md, "Dates, ids and other values that change every run")."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rollout.diff.canonical import DEFAULT_OPTIONS, canonicalize
from pytest_rollout.diff.compare import compare
from pytest_rollout.diff.drift import drift_report
from pytest_rollout.diff.render import Labels, render_divergence
from pytest_rollout.diff.volatile import BUILTIN, NOTHING, Renaming, Volatile, parse_declared
from pytest_rollout.format.events import Event


def renamed(text: str, volatile: Volatile = BUILTIN) -> str:
    return Renaming(volatile).rename(text.encode()).decode()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Today is 2026-12-01.", "Today is <date#1>."),
        ("at 2026-12-01T09:14:03Z", "at <timestamp#1>"),
        ("at 2026-12-01T09:14:03.123456+05:30 then", "at <timestamp#1> then"),
        ("at 2026-12-01 09:14:03.123456+00:00", "at <timestamp#1>"),
        ("at 2026-12-01T09:14", "at <timestamp#1>"),
        ("id 4f0c1e2a-1b2c-4d3e-8f90-0123456789AB.", "id <uuid#1>."),
        ("ulid", "ulid"),
        ('"01ARZ3NDEKTSV4RRFFQ69G5FAV"', '"<ulid#1>"'),
        ("msg_01XFDUDYJgAACzvnptvVoYEL", "<message_id#1>"),
        ("chatcmpl-AbCdEf123456789xyz", "<completion_id#1>"),
        ("req_011CVabc123def456", "<request_id#1>"),
        ("resp_67cb71b351908190a308f3859487620d", "<response_id#1>"),
        ("toolu_01A09q90qw90lq917835lq9", "<call_id#1>"),
    ],
)
def test_built_in_kinds_are_renamed(text: str, expected: str) -> None:
    assert renamed(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "gpt-4o-mini-2024-07-18",  # a model's snapshot: a changed model must still show
        "report-2026-12-01.csv",
        "backup_2026-12-01",
        "1234-56-78",  # not a month and a day
        "2026-13-01",
        "run_python",  # a tool's name, not an id: no digit
        "call_id",
        "msg_short123",  # too short for an id
        "12345",
        "x4f0c1e2a-1b2c-4d3e-8f90-0123456789ab",
        "01ARZ3NDEKTSV4RRFFQ69G5FAV inside text",
    ],
)
def test_what_only_looks_volatile_is_kept(text: str) -> None:
    assert renamed(text) == text


def test_the_same_value_keeps_its_placeholder_and_kinds_count_apart() -> None:
    day, other = "2026-12-01", "2026-12-02"
    order = str(uuid.UUID(int=7))
    text = f"{day} {order} {other} {day} {order}"
    assert renamed(text) == "<date#1> <uuid#1> <date#2> <date#1> <uuid#1>"


def test_declared_patterns_add_to_the_built_in_kinds_and_can_stand_alone() -> None:
    label, pattern = parse_declared("order=ORD-[0-9]{6}")
    declared = Volatile(declared=((label, pattern),))
    assert renamed("ORD-123456 on 2026-12-01", declared) == "<order#1> on <date#1>"
    alone = Volatile(builtin=False, declared=((label, pattern),))
    assert renamed("ORD-123456 on 2026-12-01", alone) == "<order#1> on 2026-12-01"
    assert renamed("ORD-123456 on 2026-12-01", NOTHING) == "ORD-123456 on 2026-12-01"


def test_a_declared_match_never_leaves_its_json_string() -> None:
    greedy = Volatile(builtin=False, declared=(parse_declared("any=a.*b"),))
    assert renamed('["a","b"]', greedy) == '["a","b"]'


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("order", "is not LABEL=REGEX or LABEL@PATH"),
        ("Order=x", "must be a lowercase word"),
        ("order=(", "not a regular expression"),
        ("order=x*", "matches the empty string"),
    ],
)
def test_a_bad_declaration_says_where_and_why(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=r"^rollout_volatile: ") as error:
        parse_declared(text)
    assert reason in str(error.value)


def test_the_fingerprint_names_the_rules() -> None:
    assert Volatile().fingerprint == "builtin-1"
    declared = Volatile().with_declared([("order", "ORD-[0-9]+")])
    assert declared.fingerprint.startswith("builtin-1+")
    assert declared.fingerprint != Volatile().with_declared([("order", "ORD-[0-9]*")]).fingerprint
    assert NOTHING.fingerprint == "none"


# -- two runs ------------------------------------------------------------------------------


def run(day: str, returned: str, passed: str, extra: str = "") -> list[Event]:
    """A dated prompt, a tool that returns an order id, and a call that passes one on."""
    prompt = f"Today is {day}.{extra}"
    events: list[tuple[str, dict[str, Any], int]] = [
        ("run.started", {"run_id": str(uuid.uuid4())}, 0),
        ("llm.turn.started", {"messages": [{"role": "system", "content": prompt}]}, 1),
        ("llm.turn.completed", {"tool_calls": [{"id": "c1", "name": "get_order"}]}, 1),
        ("tool.call.started", {"call_id": "c1", "name": "get_order", "arguments": {}}, 1),
        ("tool.call.completed", {"call_id": "c1", "name": "get_order", "output": returned}, 1),
        ("llm.turn.completed", {"tool_calls": [{"id": "c2", "name": "cancel"}]}, 2),
        ("tool.call.started", {"call_id": "c2", "name": "cancel", "arguments": {"id": passed}}, 2),
        ("run.completed", {"outcome": "completed"}, 2),
    ]
    return [Event(i, "2026-01-01T00:00:00Z", t, d, s, i + 1) for i, (t, d, s) in enumerate(events)]


ORDER_A, ORDER_B, ORDER_C = (str(uuid.UUID(int=n)) for n in (11, 22, 33))


def test_a_run_a_day_later_with_fresh_ids_matches() -> None:
    golden = run("2026-12-01", ORDER_A, ORDER_A)
    assert compare(golden, run("2026-12-02", ORDER_B, ORDER_B)).identical


def test_passing_another_id_than_the_one_returned_diverges_and_says_which_relation_broke() -> None:
    golden = run("2026-12-01", ORDER_A, ORDER_A)
    comparison = compare(golden, run("2026-12-02", ORDER_B, ORDER_C))
    assert not comparison.identical
    assert comparison.first is not None
    assert comparison.first.step == 2
    text = "\n".join(render_divergence(comparison, Labels("golden", "this run", owned=True)))
    assert (
        "    data.arguments.id: another value than in its golden\n"
        "        its golden: <uuid#1> (the value returned by get_order at step 1)\n"
        "        this run: <uuid#2> (a value first seen here)"
    ) in text
    # The events the report shows are the recorded ones.
    assert ORDER_C in text


def test_text_that_differs_around_a_placeholder_is_shown_as_recorded() -> None:
    golden = run("2026-12-01", ORDER_A, ORDER_A)
    later = run("2026-12-02", ORDER_B, ORDER_B, extra=" Yesterday was 2026-12-01.")
    comparison = compare(golden, later)
    assert comparison.first is not None
    assert comparison.first.step == 1
    text = "\n".join(render_divergence(comparison, Labels("golden", "this run", owned=True)))
    assert '"Today is 2026-12-01." -> "Today is 2026-12-02. Yesterday was 2026-12-01."' in text


def test_renaming_off_compares_values_as_they_are() -> None:
    options = DEFAULT_OPTIONS.extended(volatile=NOTHING)
    golden = run("2026-12-01", ORDER_A, ORDER_A)
    assert not compare(golden, run("2026-12-02", ORDER_B, ORDER_B), options).identical


def test_an_exact_path_keeps_its_value_compared() -> None:
    options = DEFAULT_OPTIONS.extended(exact_paths=["tool.call.started:arguments.id"])
    golden = run("2026-12-01", ORDER_A, ORDER_A)
    comparison = compare(golden, run("2026-12-02", ORDER_B, ORDER_B), options)
    assert comparison.first is not None
    assert [c.path for c in comparison.first.changes] == ["data.arguments.id"]
    assert compare(golden, run("2026-12-02", ORDER_B, ORDER_A), options).identical


# -- one function for every verdict -------------------------------------------------------

VALUES = st.sampled_from(
    [
        "2026-12-01",
        "2026-12-02T09:14:03Z",
        str(uuid.UUID(int=1)),
        str(uuid.UUID(int=2)),
        "msg_01XFDUDYJgAACzvnptvVoYEL",
        "plain",
    ]
)
BOUNDED = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _fresh(value: str, n: int) -> str:
    """A value of the same kind as ``value``, different for each ``n``."""
    if value == "plain":
        return value
    if value.startswith("msg_"):
        return f"msg_01{n:022d}"
    if len(value) == 36:
        return str(uuid.UUID(int=1000 + n))
    if "T" in value:
        return f"2027-01-{1 + n % 28:02d}T10:00:0{n % 10}Z"
    return f"2027-02-{1 + n % 28:02d}"


def _runs(slots: list[str], templates: list[str]) -> list[Event]:
    events: list[Event] = [Event(0, "t", "run.started", {}, 0, 1)]
    for i, template in enumerate(templates):
        data: dict[str, Any] = {"text": template.format(*slots), "n": i}
        events.append(Event(i + 1, "t", "note", data, i + 1, i + 2))
    return events


@BOUNDED
@given(
    st.lists(VALUES, min_size=1, max_size=4),
    st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=3), min_size=1, max_size=5),
    st.data(),
)
def test_renaming_to_fresh_values_keeps_the_canonical_bytes_and_a_changed_relation_does_not(
    values: list[str], uses: list[list[int]], data: st.DataObject
) -> None:
    distinct = list(dict.fromkeys(values))
    templates = [" ".join(f"{{{u % len(distinct)}}}" for u in use) for use in uses]
    golden = _runs(distinct, templates)
    fresh = [_fresh(v, n) for n, v in enumerate(distinct)]
    later = _runs(fresh, templates)
    keys = [e.key for e in canonicalize(golden)]
    assert keys == [e.key for e in canonicalize(later)]
    assert compare(golden, later).identical
    # One use of a volatile value swapped for another value of the run: a relation changed.
    swappable = [
        (t, k)
        for t, use in enumerate(uses)
        for k, u in enumerate(use)
        if distinct[u % len(distinct)] != "plain"
    ]
    if not swappable:
        return
    t, k = data.draw(st.sampled_from(swappable))
    was = uses[t][k] % len(distinct)
    # Another volatile value the run uses elsewhere: the use joins that value's relations.
    elsewhere = {
        u % len(distinct)
        for i, use in enumerate(uses)
        for j, u in enumerate(use)
        if (i, j) != (t, k) and distinct[u % len(distinct)] != "plain"
    }
    if not elsewhere - {was}:
        return
    now = data.draw(st.sampled_from(sorted(elsewhere - {was})))
    changed = [list(use) for use in uses]
    changed[t][k] = now
    moved = [" ".join(f"{{{u % len(distinct)}}}" for u in use) for use in changed]
    broken = _runs(fresh, moved)
    assert keys != [e.key for e in canonicalize(broken)]
    assert not compare(golden, broken).identical


def test_an_answer_that_only_says_another_date_is_the_same_outcome() -> None:
    golden = run("2026-12-01", ORDER_A, ORDER_A)
    later = run("2026-12-02", ORDER_B, ORDER_B)
    golden[-1] = golden[-1]._replace(data={"outcome": "completed", "output": "Sent 2026-12-01"})
    later[-1] = later[-1]._replace(data={"outcome": "completed", "output": "Sent 2026-12-02"})
    assert drift_report(golden, later).outcome_diff == "identical"
    later[-1] = later[-1]._replace(data={"outcome": "completed", "output": "Sent at 2026-12-02"})
    assert drift_report(golden, later).outcome_diff == "changed"


def _thread(call_id: str, previous: str, observed: str | None = None) -> list[Event]:
    """A code agent that writes its call's id into the text it sends back (``observed``: the
    id it writes there, if not the call's), and a tool runner that continues a thread by the
    previous message's id."""
    text = f"Observation for call {observed or call_id}: 18C"
    params = {"thread": {"previous_message_id": previous}}
    events: list[tuple[str, dict[str, Any], int]] = [
        ("run.started", {}, 0),
        ("llm.turn.started", {"messages": [{"role": "user", "content": "Weather?"}]}, 1),
        ("llm.turn.completed", {"content": f"Calling {call_id}", "tool_calls": []}, 1),
        (
            "llm.turn.started",
            {"messages": [{"role": "user", "content": text}], "params": params},
            2,
        ),
        ("llm.turn.completed", {"content": "It is 18C.", "tool_calls": []}, 2),
        ("run.completed", {"outcome": "completed"}, 2),
    ]
    return [Event(i, "t", t, d, s, i + 1) for i, (t, d, s) in enumerate(events)]


def test_ids_in_text_and_thread_continuations_are_renamed_like_call_ids() -> None:
    golden = _thread("call_8fK2abcdEFGH1234xyz9", "msg_01XFDUDYJgAACzvnptvVoYEL")
    later = _thread("call_Zq91mnopQRST5678uvw0", "msg_01AbCdEfGhIjKlMnOpQrStUv")
    assert compare(golden, later).identical
    other = _thread(
        "call_Zq91mnopQRST5678uvw0",
        "msg_01AbCdEfGhIjKlMnOpQrStUv",
        observed="call_Yy00abcdEFGH1234xyz9",
    )
    assert not compare(golden, other).identical  # the text names another call than it made


def _quoted(call_id: str, quoted: str | None = None) -> list[Event]:
    """A structured call, then the next message quoting its id in text (``quoted``: the id
    it quotes, if not the call's), as smolagents' tool-calling agent does."""
    said = f"Calling tools: [{{'id': '{quoted or call_id}', 'name': 'get_weather'}}]"
    call = {"id": call_id, "name": "get_weather", "arguments": {"city": "Paris"}}
    events: list[tuple[str, dict[str, Any], int]] = [
        ("run.started", {}, 0),
        ("llm.turn.started", {"messages": [{"role": "user", "content": "Weather?"}]}, 1),
        ("llm.turn.completed", {"content": None, "tool_calls": [call]}, 1),
        ("tool.call.started", {"call_id": call_id, "name": "get_weather", "arguments": {}}, 1),
        ("tool.call.completed", {"call_id": call_id, "name": "get_weather", "output": "18C"}, 1),
        ("llm.turn.started", {"messages": [{"role": "assistant", "content": said}]}, 2),
        ("llm.turn.completed", {"content": "It is 18C.", "tool_calls": []}, 2),
        ("run.completed", {"outcome": "completed"}, 2),
    ]
    return [Event(i, "t", t, d, s, i + 1) for i, (t, d, s) in enumerate(events)]


def test_a_call_id_quoted_in_text_matches_the_call_it_quotes_across_runs() -> None:
    golden = _quoted("call_8fK2abcdEFGH1234xyz9")
    assert compare(golden, _quoted("call_Zq91mnopQRST5678uvw0")).identical
    other = _quoted("call_Zq91mnopQRST5678uvw0", quoted="call_Yy00abcdEFGH1234xyz9")
    assert not compare(golden, other).identical


# -- values found by their place -----------------------------------------------------------


def _epoch_run(created: int, passed: int) -> list[Event]:
    """A tool that returns when an order was created, in epoch seconds, and a call that
    passes that time on."""
    output = {"order": "A1", "created": created}
    events: list[tuple[str, dict[str, Any], int]] = [
        ("run.started", {}, 0),
        ("llm.turn.completed", {"tool_calls": [{"id": "c1", "name": "get_order"}]}, 1),
        ("tool.call.started", {"call_id": "c1", "name": "get_order", "arguments": {}}, 1),
        ("tool.call.completed", {"call_id": "c1", "name": "get_order", "output": output}, 1),
        ("llm.turn.completed", {"tool_calls": [{"id": "c2", "name": "since"}]}, 2),
        ("tool.call.started", {"call_id": "c2", "name": "since", "arguments": {"t": passed}}, 2),
        ("run.completed", {"outcome": "completed"}, 2),
    ]
    return [Event(i, "t", t, d, s, i + 1) for i, (t, d, s) in enumerate(events)]


EPOCHS = (
    "epoch@tool.call.completed:output.created",
    "epoch@tool.call.started:arguments.t",
)


def test_epoch_seconds_are_renamed_only_where_a_path_says_so() -> None:
    options = DEFAULT_OPTIONS.extended(
        volatile=BUILTIN.with_declared(parse_declared(e) for e in EPOCHS)
    )
    golden = _epoch_run(1_733_040_000, 1_733_040_000)
    assert not compare(golden, _epoch_run(1_733_126_400, 1_733_126_400)).identical
    assert compare(golden, _epoch_run(1_733_126_400, 1_733_126_400), options).identical
    broken = compare(golden, _epoch_run(1_733_126_400, 1_733_040_000), options)
    assert broken.first is not None
    assert [(c.path, c.a, c.b) for c in broken.first.changes] == [
        ("data.arguments.t", "<epoch#1>", "<epoch#2>")
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "epoch@tool.call.completed:output.created",
            ("epoch", "@tool.call.completed:output.created"),
        ),
        ("handle=@[a-z]+", ("handle", "(?:@[a-z]+)")),
    ],
)
def test_a_path_entry_and_a_regex_that_begins_with_at_are_told_apart(
    text: str, expected: tuple[str, str]
) -> None:
    assert parse_declared(text) == expected


def test_a_bad_path_entry_names_its_path() -> None:
    with pytest.raises(ValueError, match=r"^rollout_volatile: epoch@a\.\.b: malformed ignore path"):
        parse_declared("epoch@a..b")
