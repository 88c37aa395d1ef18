"""The strict loader (docs/file-format.md): valid files, and every limit and rule on bad input.

Every refusal is checked for its type, its exact 1-based line (or ``None`` for a whole-file
refusal), its path and a distinctive fragment of its reason.
"""

from __future__ import annotations

import json
import os
import pickle
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from fifo import beside_fifo

from pytest_rollout import Limits, Rollout, RolloutError, RolloutFormatError, load, loads

MIB = 1024 * 1024
TS = "2026-06-28T12:34:56.123456Z"


# -- building rollout bytes ---------------------------------------------------------------


def ev(seq: int, etype: str, data: dict[str, Any] | None = None, *, ts: str = TS) -> bytes:
    """One event line (without its newline), written as the recorder writes it."""
    return orjson.dumps({"ts": ts, "seq": seq, "type": etype, "data": data or {}})


def doc(*lines: bytes, end: bytes = b"\n") -> bytes:
    """Lines joined with ``\\n``, with ``end`` after the last one."""
    return b"\n".join(lines) + end


START = ev(0, "run.started", {"run_id": "r1", "step": 0})


def done(seq: int, step: int = 1) -> bytes:
    return ev(seq, "run.completed", {"step": step, "outcome": "completed"})


def turn(seq: int, step: int, etype: str = "llm.turn.started") -> bytes:
    return ev(seq, etype, {"step": step})


def body(seq: int, raw_data: bytes) -> bytes:
    """An event line whose ``data`` is given as raw JSON text (for what orjson can't write)."""
    return b'{"ts":"%s","seq":%d,"type":"note","data":%s}' % (TS.encode(), seq, raw_data)


def with_middle(*middle: bytes) -> bytes:
    """A valid frame around ``middle`` lines: run.started on line 1, the terminal event last."""
    return doc(START, *middle, done(100))


def nested(levels: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def refuse(
    data: bytes, limits: Limits | None = None, path: str = "run.jsonl", *, tolerant: bool = False
) -> RolloutFormatError:
    with pytest.raises(RolloutFormatError) as info:
        loads(data, path=path, limits=limits or Limits(), tolerant=tolerant)
    return info.value


def check(err: RolloutFormatError, path: str, line: int | None, fragment: str) -> None:
    assert err.path == path
    assert err.line == line
    assert fragment in err.reason, err.reason
    where = path if line is None else f"{path}:{line}"
    assert str(err) == f"{where}: {err.reason}"


# -- valid files ---------------------------------------------------------------------------


def test_valid_file_loads_events_in_order(tmp_path: Path) -> None:
    lines = [
        START,
        turn(1, 1),
        ev(2, "llm.turn.completed", {"step": 1, "content": "hi", "tool_calls": []}),
        ev(3, "tool.call.started", {"step": 1, "call_id": "c1", "name": "f", "arguments": {}}),
        ev(4, "usage.delta", {"cumulative_cost_usd": 0.5}),  # no step: inherits 1
        turn(5, 2),
        ev(6, "custom.thing", {"x": [1, 2, {"y": None}]}),  # no step: inherits 2
        done(7, step=2),
    ]
    path = tmp_path / "run.jsonl"
    path.write_bytes(doc(*lines))
    rollout = load(path)
    assert isinstance(rollout, Rollout)
    assert rollout.path == str(path)
    assert [e.seq for e in rollout.events] == list(range(8))
    assert [e.step for e in rollout.events] == [0, 1, 1, 1, 1, 2, 2, 2]
    assert [e.line for e in rollout.events] == list(range(1, 9))
    assert rollout.events[1].type == "llm.turn.started"
    assert rollout.events[6].data == {"x": [1, 2, {"y": None}]}
    assert rollout.events[0].ts == TS
    assert rollout.steps == 2
    assert [e.to_json_obj() for e in rollout.events] == [json.loads(x) for x in lines]


def test_loads_and_load_agree(tmp_path: Path) -> None:
    data = with_middle(turn(1, 1))
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    assert load(path).events == loads(data).events
    assert load(str(path)).path == str(path)
    assert loads(data).path == "<bytes>"
    assert loads(data, path="x").path == "x"


def test_blank_lines_are_skipped_but_counted() -> None:
    data = b"\n\n" + START + b"\n   \n\t\r\n" + turn(1, 1) + b"\n\n" + done(2) + b"\n\n\n"
    rollout = loads(data)
    assert [e.line for e in rollout.events] == [3, 6, 8]
    # A bad line after blank lines is reported at its own line number.
    err = refuse(b"\n\n" + START + b"\n \n\nnope\n" + done(2))
    check(err, "run.jsonl", 6, "invalid JSON")


@pytest.mark.parametrize("blank", [b"\n", b"\r\n"])
def test_lines_past_a_million_blank_ones_keep_their_numbers(blank: bytes) -> None:
    """More lines than events: not cut at once, but one at a time (or split, when few)."""
    for count in (150_000, 1_200_000):
        data = START + blank * count + turn(1, 1) + b"\n \n" + done(2) + b"\n" * count
        lines = [e.line for e in loads(data).events]
        assert lines == [1, count + 1, count + 3]
        err = refuse(START + blank * count + b"nope\n" + done(2))
        check(err, "run.jsonl", count + 1, "invalid JSON")


def test_final_line_without_trailing_newline() -> None:
    rollout = loads(doc(START, turn(1, 1), done(2), end=b""))
    assert [e.type for e in rollout.events][-1] == "run.completed"
    assert rollout.events[-1].line == 3


def test_crlf_line_endings() -> None:
    rollout = loads(b"\r\n".join([START, turn(1, 1), done(2)]) + b"\r\n")
    assert [e.line for e in rollout.events] == [1, 2, 3]
    assert rollout.events[1].data == {"step": 1}


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085", "\r"])
def test_unicode_line_separators_inside_strings_do_not_split(char: str) -> None:
    # orjson writes U+2028, U+2029 and U+0085 raw (as UTF-8); \r is written escaped.
    text = f"a{char}b{char}"
    line = ev(1, "note", {"text": text, text: 1})
    assert (char.encode() in line) == (char != "\r")
    rollout = loads(doc(START, line, done(2)))
    assert len(rollout.events) == 3
    assert rollout.events[1].data == {"text": text, text: 1}
    assert rollout.events[2].line == 3


def test_extreme_64_bit_integers_are_exact() -> None:
    values = [2**64 - 1, -(2**63), 2**63, 10**19, -(10**18)]
    rollout = loads(with_middle(body(1, json.dumps({"v": values}).encode())))
    got = rollout.events[1].data["v"]
    assert got == values
    assert all(type(v) is int for v in got)


def test_step_boundaries_are_accepted() -> None:
    rollout = loads(doc(START, turn(1, 1), turn(2, 1_000_000), done(3, step=1_000_000)))
    assert rollout.steps == 1_000_000
    # Steps may stay equal, and a non-step-carrying event may sit at step 0.
    rollout = loads(doc(START, ev(1, "note", {"step": 0}), ev(2, "note"), done(3, step=0)))
    assert [e.step for e in rollout.events] == [0, 0, 0, 0]


def test_run_failed_is_terminal() -> None:
    rollout = loads(doc(START, turn(1, 1), ev(2, "run.failed", {"step": 1, "error": {}})))
    assert rollout.events[-1].type == "run.failed"


def test_structural_characters_inside_strings_are_not_counted() -> None:
    # A long line whose strings are full of commas, brackets, colons and escaped quotes
    # stays far below the element and depth limits: only structure counts.
    noise = '[{,:"\\' * 30_000
    line = ev(1, "note", {"noise": noise, "list": ["[", "{", ","] * 10})
    assert len(line) > Limits().elements
    rollout = loads(with_middle(line))
    assert rollout.events[1].data["noise"] == noise


def test_depth_exactly_at_the_limit_is_accepted() -> None:
    # root object (1) + data (2) + 98 lists = 100 levels; a scalar leaf is not a level.
    extras: tuple[dict[str, Any], ...] = ({}, {"x": [], "y": {}})
    for extra in extras:
        data = {"v": nested(98, 1), **extra}
        rollout = loads(with_middle(ev(1, "note", data)))
        assert rollout.events[1].data == data


def test_elements_exactly_at_the_limit_are_accepted() -> None:
    # root (1) + ts, seq, type, data (4) + the list (1) + its items = the default 100,000.
    items = [0] * (100_000 - 6)
    line = ev(1, "note", {"v": items})
    assert loads(with_middle(line)).events[1].data["v"] == items
    err = refuse(with_middle(ev(1, "note", {"v": [*items, 0]})))
    check(err, "run.jsonl", 2, "more than 100000 JSON elements in one line")


def test_line_of_exactly_the_default_size_is_accepted() -> None:
    frame = ev(1, "note", {"pad": ""})
    pad = "x" * (16 * MIB - len(frame))
    line = ev(1, "note", {"pad": pad})
    assert len(line) == 16 * MIB
    assert loads(with_middle(line)).events[1].data["pad"] == pad
    err = refuse(with_middle(ev(1, "note", {"pad": pad + "x"})))
    check(err, "run.jsonl", 2, f"line is {16 * MIB + 1} bytes, over the {16 * MIB}-byte limit")


def test_custom_limits_at_their_boundaries_are_accepted() -> None:
    data = doc(START, turn(1, 1), done(2))
    exact = Limits(
        line_bytes=max(len(x) for x in data.split(b"\n")),
        events=3,
        total_bytes=len(data),
        max_step=1,
    )
    assert len(loads(data, limits=exact).events) == 3


# -- the bad-input table --------------------------------------------------------------------


@dataclass(frozen=True)
class Bad:
    id: str
    data: bytes
    line: int | None
    reason: str
    limits: Limits = field(default_factory=Limits)


def _duplicate_behind_escaped_colon() -> bytes:
    # "a\u003a" and "a:" are the same key; the raw line has one colon fewer than orjson's
    # rendering, which would hide the dropped duplicate from a naive colon count.
    return body(1, b'{"a\\u003a":1,"a:":2}')


BAD: list[Bad] = [
    # -- not JSON, not an object ------------------------------------------------------------
    Bad("non-json", with_middle(b"this is not json"), 2, "invalid JSON at column 1"),
    Bad("truncated-json", with_middle(START[:-5]), 2, "invalid JSON"),
    Bad("two-objects-one-line", with_middle(b"{}{}"), 2, "invalid JSON"),
    Bad("vertical-tab-line", with_middle(b"\x0b"), 2, "invalid JSON"),
    Bad("array", with_middle(b"[1, 2]"), 2, "expected a JSON object, got an array"),
    Bad("string", with_middle(b'"run.started"'), 2, "expected a JSON object, got a string"),
    Bad("integer", with_middle(b"42"), 2, "expected a JSON object, got an integer"),
    Bad("float", with_middle(b"4.5"), 2, "expected a JSON object, got a number"),
    Bad("null", with_middle(b"null"), 2, "expected a JSON object, got null"),
    Bad("bool", with_middle(b"true"), 2, "expected a JSON object, got a boolean"),
    # -- the envelope ---------------------------------------------------------------------
    *(
        Bad(
            f"missing-{key}",
            with_middle(
                orjson.dumps({k: v for k, v in json.loads(turn(1, 1)).items() if k != key})
            ),
            2,
            f'missing field "{key}"',
        )
        for key in ("ts", "seq", "type", "data")
    ),
    Bad(
        "ts-int",
        with_middle(b'{"ts":5,"seq":1,"type":"n","data":{}}'),
        2,
        'field "ts" must be a string, got an integer',
    ),
    Bad(
        "ts-null",
        with_middle(b'{"ts":null,"seq":1,"type":"n","data":{}}'),
        2,
        'field "ts" must be a string, got null',
    ),
    Bad(
        "seq-bool",
        with_middle(b'{"ts":"t","seq":true,"type":"n","data":{}}'),
        2,
        'field "seq" must be an integer, got a boolean',
    ),
    Bad(
        "seq-string",
        with_middle(b'{"ts":"t","seq":"1","type":"n","data":{}}'),
        2,
        'field "seq" must be an integer, got a string',
    ),
    Bad(
        "seq-float",
        with_middle(b'{"ts":"t","seq":1.0,"type":"n","data":{}}'),
        2,
        'field "seq" must be an integer, got a number',
    ),
    Bad(
        "type-int",
        with_middle(b'{"ts":"t","seq":1,"type":3,"data":{}}'),
        2,
        'field "type" must be a string, got an integer',
    ),
    Bad(
        "data-list",
        with_middle(b'{"ts":"t","seq":1,"type":"n","data":[]}'),
        2,
        'field "data" must be an object, got an array',
    ),
    Bad(
        "data-string",
        with_middle(b'{"ts":"t","seq":1,"type":"n","data":"{}"}'),
        2,
        'field "data" must be an object, got a string',
    ),
    Bad("negative-seq-first", doc(ev(-1, "run.started"), done(1)), 1, "seq must not be negative"),
    Bad("negative-seq", with_middle(ev(-5, "note")), 2, "seq must not be negative, got -5"),
    Bad("repeated-seq", doc(START, turn(1, 1), turn(1, 1), done(3)), 3, "seq 1 does not increase"),
    Bad(
        "decreasing-seq", doc(START, turn(5, 1), turn(4, 1), done(6)), 3, "seq 4 does not increase"
    ),
    Bad("empty-type", with_middle(ev(1, "")), 2, 'field "type" is empty'),
    # -- duplicate keys -----------------------------------------------------------------
    Bad(
        "duplicate-top-level",
        with_middle(b'{"ts":"t","seq":1,"seq":2,"type":"n","data":{}}'),
        2,
        'duplicate key "seq"',
    ),
    Bad(
        "duplicate-data-identical",
        with_middle(b'{"ts":"t","seq":1,"type":"n","data":{"step":1,"step":1}}'),
        2,
        'duplicate key "step"',
    ),
    Bad("duplicate-nested", with_middle(body(1, b'{"a":[{"b":1,"b":2}]}')), 2, 'duplicate key "b"'),
    Bad(
        "duplicate-colon-in-values",
        with_middle(body(1, b'{"k":"x:y","k":"::::"}')),
        2,
        'duplicate key "k"',
    ),
    Bad(
        "duplicate-escaped-letter",
        with_middle(body(1, b'{"a":1,"\\u0061":2}')),
        2,
        'duplicate key "a"',
    ),
    Bad(
        "duplicate-behind-escaped-colon",
        with_middle(_duplicate_behind_escaped_colon()),
        2,
        'duplicate key "a:"',
    ),
    # -- numbers ------------------------------------------------------------------------
    Bad("nan", with_middle(body(1, b'{"x":NaN}')), 2, "invalid JSON"),
    Bad("infinity", with_middle(body(1, b'{"x":Infinity}')), 2, "invalid JSON"),
    Bad("minus-infinity", with_middle(body(1, b'{"x":-Infinity}')), 2, "invalid JSON"),
    Bad("overflowing-float", with_middle(body(1, b'{"x":1e400}')), 2, "infinity"),
    Bad("overflowing-negative-float", with_middle(body(1, b'{"x":-1e400}')), 2, "infinity"),
    Bad(
        "int-2**64",
        with_middle(body(1, b'{"x":18446744073709551616}')),
        2,
        "integer 18446744073709551616 is beyond 64 bits",
    ),
    Bad(
        "int-below-int64",
        with_middle(body(1, b'{"x":-9223372036854775809}')),
        2,
        "is beyond 64 bits",
    ),
    Bad(
        "int-10**30-in-list", with_middle(body(1, b'{"x":[1,%d]}' % 10**30)), 2, "is beyond 64 bits"
    ),
    Bad("int-5000-digits", with_middle(body(1, b'{"x":' + b"7" * 5000 + b"}")), 2, "invalid JSON"),
    Bad("int-300-digits", with_middle(body(1, b'{"x":-' + b"9" * 300 + b"}")), 2, "beyond 64 bits"),
    Bad(
        "seq-2**64",
        with_middle(ev(1, "note").replace(b'"seq":1', b'"seq":18446744073709551616')),
        2,
        "beyond 64 bits",
    ),
    # -- strings and encoding ---------------------------------------------------------------
    Bad("lone-high-surrogate", with_middle(body(1, b'{"x":"\\ud800"}')), 2, "surrogate"),
    Bad("lone-low-surrogate", with_middle(body(1, b'{"x":"\\udc00 "}')), 2, "surrogate"),
    Bad(
        "high-surrogate-then-letter",
        with_middle(body(1, b'{"x":"\\ud83d\\u0041"}')),
        2,
        "surrogate",
    ),
    Bad("lone-surrogate-key", with_middle(body(1, b'{"\\udfff":1}')), 2, "surrogate"),
    Bad(
        "cesu-surrogate-bytes",
        with_middle(body(1, b'{"x":"\xed\xa0\xbd\xed\xb8\x80"}')),
        2,
        "UTF-8",
    ),
    Bad("invalid-utf8", with_middle(body(1, b'{"x":"\xff\xfe"}')), 2, "UTF-8"),
    Bad("overlong-utf8", with_middle(body(1, b'{"x":"\xc0\xaf"}')), 2, "UTF-8"),
    Bad("bom-at-file-start", b"\xef\xbb\xbf" + with_middle(), 1, "byte order mark"),
    Bad("bom-on-later-line", with_middle(b"\xef\xbb\xbf" + turn(1, 1)), 2, "invalid JSON"),
    Bad("raw-control-char", with_middle(body(1, b'{"x":"a\x01b"}')), 2, "invalid JSON"),
    # -- limits (small custom limits; the real defaults are tested separately) -----------------
    Bad(
        "line-too-long",
        with_middle(ev(1, "n", {"p": "x" * 200})),
        2,
        "over the 150-byte limit",
        Limits(line_bytes=150),
    ),
    Bad(
        "too-many-events",
        doc(START, turn(1, 1), turn(2, 2), done(3)),
        4,
        "more than 3 events",
        Limits(events=3),
    ),
    Bad(
        "too-deep",
        with_middle(ev(1, "n", {"v": nested(9, 0)})),
        2,
        "nesting deeper than 10 levels",
        Limits(depth=10),
    ),
    Bad(
        "too-deep-objects",
        with_middle(body(1, b'{"a":' * 9 + b"{}" + b"}" * 9)),
        2,
        "deeper than 10",
        Limits(depth=10),
    ),
    Bad(
        "too-many-elements",
        with_middle(ev(1, "n", {"v": list(range(45))})),
        2,
        "more than 50 JSON elements",
        Limits(elements=50),
    ),
    Bad(
        "too-many-empty-containers",
        with_middle(ev(1, "n", {"v": [[]] * 45})),
        2,
        "more than 50 JSON elements",
        Limits(elements=50),
    ),
    Bad(
        "too-many-elements-in-invalid-line",
        with_middle(b"[" + b"0," * 100),
        2,
        "more than 50 JSON elements",
        Limits(elements=50),
    ),
    Bad(
        "total-bytes",
        with_middle(ev(1, "n", {"p": "x" * 100})),
        None,
        "over the 300-byte limit",
        Limits(total_bytes=300),
    ),
    # -- steps --------------------------------------------------------------------------
    Bad(
        "step-negative",
        with_middle(ev(1, "note", {"step": -1})),
        2,
        "step must be an integer from 0 to 1000000, got -1",
    ),
    Bad("step-too-large", doc(START, turn(1, 1_000_001), done(2)), 2, "got 1000001"),
    Bad(
        "step-huge-custom",
        doc(START, turn(1, 11), done(2)),
        2,
        "from 0 to 10, got 11",
        Limits(max_step=10),
    ),
    Bad("step-bool", with_middle(ev(1, "note", {"step": True})), 2, "got true"),
    Bad("step-float", with_middle(ev(1, "note", {"step": 1.0})), 2, "got 1.0"),
    Bad("step-string", with_middle(ev(1, "note", {"step": "1"})), 2, 'got "1"'),
    Bad("step-null", with_middle(ev(1, "note", {"step": None})), 2, "got null"),
    Bad("step-list", with_middle(ev(1, "note", {"step": [1]})), 2, "got [1]"),
    Bad(
        "step-on-run-started-is-checked",
        doc(ev(0, "run.started", {"step": -3}), done(1)),
        1,
        "got -3",
    ),
    Bad(
        "steps-decrease",
        doc(START, turn(1, 2), ev(2, "note", {"step": 1}), done(3, 2)),
        3,
        "step 1 goes back (the previous event was at step 2)",
    ),
    Bad("terminal-step-decreases", doc(START, turn(1, 2), done(2, step=1)), 3, "step 1 goes back"),
    # -- run.started ------------------------------------------------------------------
    Bad(
        "run-started-not-first",
        doc(ev(0, "note"), START.replace(b'"seq":0', b'"seq":1'), done(2)),
        1,
        'the first event must be run.started, got "note"',
    ),
    Bad("first-is-turn", doc(turn(0, 1), done(1)), 1, "must be run.started"),
    Bad(
        "run-started-twice",
        doc(START, ev(1, "run.started"), done(2)),
        2,
        "run.started appears more than once",
    ),
    Bad(
        "run-started-twice-later",
        doc(START, turn(1, 1), ev(2, "run.started", {"step": 1}), done(3)),
        3,
        "more than once",
    ),
    Bad(
        "run-started-at-step-1",
        doc(ev(0, "run.started", {"step": 1}), done(1)),
        1,
        "run.started must be at step 0, got 1",
    ),
    # -- step-carrying types ------------------------------------------------------------
    *(
        Bad(
            f"{etype}-at-step-0",
            doc(START, ev(1, etype, {"step": 0}), done(2)),
            2,
            f'"{etype}" must carry a step of 1 or more, got 0',
        )
        for etype in (
            "llm.turn.started",
            "llm.turn.completed",
            "tool.call.started",
            "tool.call.completed",
            "llm.turn.custom",
        )
    ),
    *(
        Bad(
            f"{etype}-without-step",
            doc(START, turn(1, 1), ev(2, etype), done(3)),
            3,
            f'"{etype}" must carry a step of 1 or more, got null',
        )
        for etype in ("llm.turn.completed", "tool.call.started", "tool.call.x")
    ),
    # -- the terminal event ----------------------------------------------------------------
    Bad(
        "event-after-terminal",
        doc(START, done(1), turn(2, 1)),
        3,
        "event after the terminal event on line 2",
    ),
    Bad(
        "event-after-terminal-blank-lines",
        doc(START, done(1), b"", b" ", ev(2, "note")),
        5,
        "on line 2",
    ),
    Bad(
        "two-terminals",
        doc(START, done(1), ev(2, "run.failed", {"step": 1})),
        3,
        "after the terminal event",
    ),
    Bad(
        "no-terminal",
        doc(START, turn(1, 1), ev(2, "note")),
        3,
        "no terminal event (run.completed or run.failed)",
    ),
    Bad("no-terminal-only-start", doc(START, b"", b""), 1, "no terminal event"),
    Bad("no-terminal-truncated", doc(START, turn(1, 1)) + done(2)[:20], 3, "invalid JSON"),
    # -- empty ------------------------------------------------------------------------
    Bad("empty-file", b"", None, "no events: the file is empty"),
    Bad("only-blank-lines", b"\n \n\t\r\n\r\n   ", None, "no events"),
]


@pytest.mark.parametrize("case", BAD, ids=[case.id for case in BAD])
def test_bad_input_is_refused_with_its_line(case: Bad, tmp_path: Path) -> None:
    err = refuse(case.data, case.limits, path="bad.jsonl")
    check(err, "bad.jsonl", case.line, case.reason)
    assert isinstance(err, RolloutError)
    # The same bytes from a file: the same line and reason, the file's path.
    path = tmp_path / "bad.jsonl"
    path.write_bytes(case.data)
    with pytest.raises(RolloutFormatError) as info:
        load(path, limits=case.limits)
    check(info.value, str(path), case.line, case.reason)
    assert info.value.reason == err.reason


def test_digit_runs_inside_strings_and_keys_are_fine() -> None:
    line = body(1, b'{"12345678901234567890123":"99999999999999999999999","x\\u003a":"\\u003a"}')
    rollout = loads(with_middle(line))
    assert rollout.events[1].data == {
        "12345678901234567890123": "99999999999999999999999",
        "x:": ":",
    }


def test_surrogate_pair_escapes_are_accepted() -> None:
    rollout = loads(with_middle(body(1, b'{"x":"\\ud83d\\ude00"}')))
    assert rollout.events[1].data == {"x": "\U0001f600"}


# -- limits at their real defaults ----------------------------------------------------------


def test_default_line_limit_refuses_before_parsing() -> None:
    # 16 MiB + 1 of '[': no parser ever sees it.
    err = refuse(with_middle(b"[" * (16 * MIB + 1)))
    check(err, "run.jsonl", 2, "over the 16777216-byte limit")


def test_default_depth_limit() -> None:
    err = refuse(with_middle(ev(1, "note", {"v": nested(99, 1)})))
    check(err, "run.jsonl", 2, "JSON nesting deeper than 100 levels")
    # Deeper than orjson's own limit: still the one typed error.
    err = refuse(with_middle(b"[" * 5000 + b"]" * 5000))
    check(err, "run.jsonl", 2, "invalid JSON")


def test_default_total_bytes_limit_from_a_sparse_file(tmp_path: Path) -> None:
    # A sparse file just over 256 MiB is refused from its size, before it is read.
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.truncate(256 * MIB + 1)
    with pytest.raises(RolloutFormatError) as info:
        load(path)
    check(info.value, str(path), None, "file is 268435457 bytes, over the 268435456-byte limit")


def test_total_bytes_limit_in_loads_and_load(tmp_path: Path) -> None:
    data = with_middle(turn(1, 1))
    limits = Limits(total_bytes=len(data) - 1)
    check(refuse(data, limits), "run.jsonl", None, f"file is {len(data)} bytes")
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    with pytest.raises(RolloutFormatError) as info:
        load(path, limits=limits)
    check(info.value, str(path), None, f"over the {len(data) - 1}-byte limit")
    assert len(load(path, limits=Limits(total_bytes=len(data))).events) == 3


def test_custom_depth_beyond_what_orjson_can_write_is_still_a_typed_error() -> None:
    # With a depth limit raised past orjson's writer (255) and Python's recursion limit,
    # the duplicate/integer checks must not leak TypeError or RecursionError.
    deep = body(1, b'{"v":' + b"[" * 400 + b"1" + b"]" * 400 + b"}")
    assert len(loads(with_middle(deep), limits=Limits(depth=1000)).events) == 3
    dup = body(1, b'{"a":1,"a":' + b"[" * 400 + b"1" + b"]" * 400 + b"}")
    check(refuse(with_middle(dup), Limits(depth=1000)), "run.jsonl", 2, 'duplicate key "a"')
    long_int = body(1, b'{"a":' + b"[" * 1020 + b"1" * 25 + b"]" * 1020 + b"}")
    err = refuse(with_middle(long_int), Limits(depth=2000))
    check(err, "run.jsonl", 2, "JSON nesting too deep to check")


# -- files that are not regular files ----------------------------------------------------


def test_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RolloutFormatError) as info:
        load(tmp_path)
    check(info.value, str(tmp_path), None, "directory")


def test_missing_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(RolloutFormatError) as info:
        load(path)
    check(info.value, str(path), None, "cannot open: No such file or directory")


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_character_device_is_refused() -> None:
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    with pytest.raises(RolloutFormatError) as info:
        load("/dev/null")
    check(info.value, "/dev/null", None, "is a device, not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    err = beside_fifo(fifo, lambda: load(fifo))
    assert isinstance(err, RolloutFormatError)
    check(err, str(fifo), None, "is a FIFO, not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_symlink_to_fifo_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "run.jsonl"
    link.symlink_to(fifo)
    err = beside_fifo(fifo, lambda: load(link))
    assert isinstance(err, RolloutFormatError)
    check(err, str(link), None, "FIFO")


# -- the error itself --------------------------------------------------------------------


def test_error_is_typed_and_picklable() -> None:
    err = refuse(with_middle(b"nope"), path="some/where.jsonl")
    assert isinstance(err, RolloutError)
    assert issubclass(RolloutFormatError, RolloutError)
    assert issubclass(RolloutError, Exception)
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is RolloutFormatError
    assert (copy.path, copy.line, copy.reason) == ("some/where.jsonl", 2, err.reason)
    assert str(copy) == str(err)
    assert str(err).startswith("some/where.jsonl:2: ")
    whole = RolloutFormatError(Path("x.jsonl"), None, "why")
    assert pickle.loads(pickle.dumps(whole)).line is None
    assert str(whole) == "x.jsonl: why"
    assert whole.path == "x.jsonl"


def test_errors_are_importable_from_the_package() -> None:
    import pytest_rollout

    assert pytest_rollout.RolloutFormatError is RolloutFormatError
    assert pytest_rollout.RolloutError is RolloutError
    assert RolloutFormatError.__module__ == "pytest_rollout"


# -- invalid UTF-8 is named as such ----------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "byte", "column"),
    [
        (b'{"x":"ab\xffc"}', "0xff", 74),
        (b'{"x":"\xed\xa0\xbd"}', "0xed", 72),  # an encoded surrogate
        (b'{"x":"\xc0\xaf"}', "0xc0", 72),  # an overlong encoding
    ],
)
def test_invalid_utf8_names_the_byte_and_its_column(raw: bytes, byte: str, column: int) -> None:
    err = refuse(with_middle(body(1, raw)))
    check(err, "run.jsonl", 2, f"line is not valid UTF-8 (byte {byte} at column {column})")
    assert "surrogates not allowed" not in err.reason


# -- depth and elements are counted outside strings ------------------------------------------


def test_brackets_and_commas_inside_strings_count_for_nothing() -> None:
    text = "[{," * 40_000 + '\\"' + "]}" * 100
    line = ev(1, "note", {"text": text, "list": [[]] * 10, "deep": nested(98, 1)})
    assert len(loads(with_middle(line)).events) == 3


def test_many_empty_containers_within_the_limits_are_accepted() -> None:
    line = ev(1, "note", {"v": [{}] * 99_990})
    assert loads(with_middle(line)).events[1].data["v"] == [{}] * 99_990
    err = refuse(with_middle(ev(1, "note", {"v": [{}] * 100_000})))
    check(err, "run.jsonl", 2, "more than 100000 JSON elements in one line")


def test_depth_is_refused_past_the_limit_among_many_shallow_values() -> None:
    deep = ev(1, "note", {"wide": [[1]] * 1000, "deep": nested(99, "[[[")})
    check(refuse(with_middle(deep)), "run.jsonl", 2, "JSON nesting deeper than 100 levels")
    fits = ev(1, "note", {"wide": [[1]] * 1000, "deep": nested(98, "]]]")})
    assert loads(with_middle(fits)).events


# -- a tolerant load of a run cut short ------------------------------------------------------


def test_a_strict_load_refuses_a_run_cut_short() -> None:
    check(refuse(doc(START, turn(1, 1))), "run.jsonl", 2, "no terminal event")
    check(refuse(START + b"\n" + turn(1, 1)[:-5]), "run.jsonl", 2, "invalid JSON")


def test_a_tolerant_load_keeps_the_whole_events_of_a_run_cut_short() -> None:
    cut = doc(START, turn(1, 1)) + turn(2, 2)[:-7]  # the last line was being written
    rollout = loads(cut, tolerant=True)
    assert [e.seq for e in rollout.events] == [0, 1]
    assert rollout.cut_short_after == 2
    no_end = loads(doc(START, turn(1, 1), turn(2, 2)), tolerant=True)
    assert no_end.cut_short_after == 3
    whole = loads(doc(START, turn(1, 1), done(2)), tolerant=True)
    assert whole.cut_short_after is None
    assert loads(doc(START, turn(1, 1), done(2))).cut_short_after is None


def test_a_tolerant_load_is_strict_about_everything_else(tmp_path: Path) -> None:
    # A whole last line without its newline is kept, and judged like any other line.
    unterminated = loads(doc(START, turn(1, 1), end=b""), tolerant=True)
    assert unterminated.cut_short_after == 2
    bad_middle = doc(START, b"{not json", turn(2, 1)) + b"{cut"
    check(refuse(bad_middle, tolerant=True), "run.jsonl", 2, "invalid JSON")
    check(refuse(b"{cut", tolerant=True), "run.jsonl", None, "no events")
    check(refuse(doc(ev(0, "note")), tolerant=True), "run.jsonl", 1, "the first event must be")
    path = tmp_path / "run.jsonl.partial"
    path.write_bytes(doc(START, turn(1, 1)) + b'{"ts":')
    assert load(path, tolerant=True).cut_short_after == 2
