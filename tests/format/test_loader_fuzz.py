"""Fuzzing the strict loader: it only ever raises RolloutFormatError, and agrees with an oracle.

The oracle below is a deliberately naive re-implementation of docs/file-format.md on top of the
standard library's ``json`` (hooks for duplicate keys, integers and constants, a recursive
walk for depth, elements and lone surrogates). For every input the loader must either refuse
at the same line as the oracle, or accept exactly the events the oracle accepts.
"""

from __future__ import annotations

import gc
import json
import math
import re
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_rollout import Limits, Rollout, RolloutFormatError, loads
from pytest_rollout.format.schema import SCHEMA, schema_problem

MIB = 1024 * 1024
FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
DEFAULT = Limits()
FEW = settings(FUZZ, max_examples=30)
SMALL = Limits(line_bytes=400, events=8, total_bytes=3000, depth=5, elements=25, max_step=6)
LIMITS = st.sampled_from([DEFAULT, SMALL])
MANY = "more than 100000 JSON elements in one line"
CORE_TYPES = [
    "run.started",
    "run.completed",
    "run.failed",
    "llm.turn.started",
    "llm.turn.completed",
    "tool.call.started",
    "tool.call.completed",
    "usage.delta",
    "note",
]


# -- the oracle ------------------------------------------------------------------------------


class _Bad(Exception):
    pass


def _no_surrogates(text: str) -> str:
    if any("\ud800" <= c <= "\udfff" for c in text):
        raise _Bad("lone surrogate")
    return text


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [_no_surrogates(key) for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _Bad("duplicate key")
    return dict(pairs)


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 20 or not -(2**63) <= int(text) <= 2**64 - 1:
        raise _Bad("integer beyond 64 bits")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Bad("infinite float")
    return value


def _constant(text: str) -> Any:
    raise _Bad(f"constant {text}")


def _measure(value: Any, depth: int, stats: list[int]) -> None:
    """stats = [elements, max container depth]; also refuses lone surrogates in strings."""
    stats[0] += 1
    if isinstance(value, str):
        _no_surrogates(value)
    elif isinstance(value, (dict, list)):
        stats[1] = max(stats[1], depth)
        for child in value.values() if isinstance(value, dict) else value:
            _measure(child, depth + 1, stats)


def _oracle_line(raw: bytes, limits: Limits) -> Any:
    if len(raw) > limits.line_bytes:
        raise _Bad("line too long")
    try:
        text = raw.decode("utf-8")  # strict: refuses invalid UTF-8 and encoded surrogates
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_int=_int,
            parse_float=_float,
            parse_constant=_constant,
        )
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise _Bad(str(exc)) from None
    stats = [0, 0]
    _measure(value, 1, stats)
    if stats[0] > limits.elements or stats[1] > limits.depth:
        raise _Bad("too big")
    return value


_ABSENT = object()


def _is_int(value: Any) -> bool:
    return type(value) is int


def _oracle_envelope(obj: Any) -> bool:
    """Whether ``obj`` is an event object: the four fields of their types, seq >= 0, a type."""
    return (
        type(obj) is dict
        and type(obj.get("ts")) is str
        and _is_int(obj.get("seq"))
        and type(obj.get("type")) is str
        and type(obj.get("data")) is dict
        and obj["seq"] >= 0
        and bool(obj["type"])
    )


def _oracle_step(etype: str, raw_step: Any, step: int, first: bool, limits: Limits) -> int | None:
    """The event's step after the one before it at ``step``, or None if it is refused."""
    if raw_step is not _ABSENT and not (_is_int(raw_step) and 0 <= raw_step <= limits.max_step):
        return None
    if first:
        return 0 if etype == "run.started" and raw_step in (_ABSENT, 0) else None
    new_step: int = step if raw_step is _ABSENT else raw_step
    carrying = etype.startswith(("llm.turn.", "tool.call."))
    if (
        etype == "run.started"
        or new_step < step
        or (carrying and (raw_step is _ABSENT or new_step < 1))
    ):
        return None
    return new_step


def oracle(data: bytes, limits: Limits) -> list[tuple[Any, ...]] | tuple[str, int | None]:
    """The accepted events as (seq, ts, type, data, step, line), or ("refused", line)."""
    if len(data) > limits.total_bytes:
        return ("refused", None)
    events: list[tuple[Any, ...]] = []
    step = 0
    terminal = False
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip(b" \t\r"):
            continue
        try:
            obj = _oracle_line(raw, limits)
        except _Bad:
            return ("refused", lineno)
        if not _oracle_envelope(obj):
            return ("refused", lineno)
        etype: str = obj["type"]
        raw_step = obj["data"].get("step", _ABSENT)
        if terminal or len(events) >= limits.events or (events and obj["seq"] <= events[-1][0]):
            return ("refused", lineno)
        new_step = _oracle_step(etype, raw_step, step, not events, limits)
        if new_step is None or schema_problem(etype, obj["data"]) is not None:
            return ("refused", lineno)
        step = new_step
        terminal = etype in ("run.completed", "run.failed")
        events.append((obj["seq"], obj["ts"], etype, obj["data"], step, lineno))
    if not events:
        return ("refused", None)
    if not terminal:
        return ("refused", events[-1][5])
    return events


def outcome(data: bytes, limits: Limits) -> list[tuple[Any, ...]] | tuple[str, int | None]:
    """What the loader does with ``data``, in the oracle's terms; anything else escapes."""
    refusal: RolloutFormatError | None = None
    try:
        rollout = loads(data, path="fuzz.jsonl", limits=limits)
    except RolloutFormatError as err:
        refusal = err
    if refusal is not None:
        assert refusal.path == "fuzz.jsonl"
        assert refusal.line is None or 1 <= refusal.line <= data.count(b"\n") + 1
        assert refusal.reason
        return ("refused", refusal.line)
    assert isinstance(rollout, Rollout)
    return [(e.seq, e.ts, e.type, e.data, e.step, e.line) for e in rollout.events]


def agrees(data: bytes, limits: Limits = DEFAULT) -> None:
    got = outcome(data, limits)
    assert got == oracle(data, limits), data[:300]


# -- strategies ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Obj:
    """A JSON object as written: its pairs in order, duplicates allowed."""

    pairs: tuple[tuple[str, Any], ...]


KEYS = st.sampled_from(["a", "b", "step", "seq", "ts", "type", "data", "a:", "é", "\u2028"])
# Every code point, lone surrogates included (hypothesis leaves them out by default).
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=6)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**66), 2**66),
    st.sampled_from([2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "x", "[1,2]", '{"a":1}', "\\u003a", "\u2028\u2029\u0085"]),
    ANY_TEXT,
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    pairs = st.lists(st.tuples(st.one_of(KEYS, ANY_TEXT), children), max_size=4)
    return st.lists(children, max_size=4) | pairs.map(lambda p: Obj(tuple(p)))


VALUES = st.recursive(SCALARS, _containers, max_leaves=12)


def render(value: Any, ascii_only: bool, compact: bool) -> str:
    """JSON text for ``value``; NaN and Infinity are written as Python's json writes them."""
    comma, colon = (",", ":") if compact else (", ", ": ")
    if isinstance(value, Obj):
        items = (
            f"{json.dumps(k, ensure_ascii=ascii_only)}{colon}{render(v, ascii_only, compact)}"
            for k, v in value.pairs
        )
        return "{" + comma.join(items) + "}"
    if isinstance(value, list):
        return "[" + comma.join(render(v, ascii_only, compact) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only, allow_nan=True)


@st.composite
def event_lines(draw: st.DrawFn) -> bytes:
    """A line that is usually an event envelope, with hostile data here and there."""
    if draw(st.integers(0, 9)) == 0:
        value: Any = draw(VALUES)
    else:
        data_pairs: list[tuple[str, Any]] = draw(st.lists(st.tuples(KEYS, VALUES), max_size=3))
        if draw(st.booleans()):
            step = draw(st.one_of(st.integers(-1, 8), st.sampled_from([None, True, 1.0, "1"])))
            data_pairs.insert(draw(st.integers(0, len(data_pairs))), ("step", step))
        envelope: list[tuple[str, Any]] = [
            ("ts", draw(st.sampled_from(["2026-06-28T00:00:00Z", "", 5]))),
            ("seq", draw(st.one_of(st.integers(-1, 12), st.sampled_from([True, 1.0, "3"])))),
            ("type", draw(st.one_of(st.sampled_from([*CORE_TYPES, ""]), ANY_TEXT))),
            ("data", Obj(tuple(data_pairs))),
        ]
        envelope = draw(st.permutations(envelope))
        if draw(st.integers(0, 7)) == 0:
            envelope.pop(draw(st.integers(0, len(envelope) - 1)))
        value = Obj(tuple(envelope))
    text = render(value, draw(st.booleans()), draw(st.booleans()))
    return text.encode("utf-8", "surrogatepass")


def _mutate(draw: st.DrawFn, data: bytes) -> bytes:
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["truncate", "newline", "insert", "delete", "flip"]))
        at = draw(st.integers(0, len(data)))
        if kind == "truncate":
            data = data[:at]
        elif kind == "newline":
            data = data[:at] + draw(st.sampled_from([b"\n", b"\r\n", b"\n\n", b" \n"])) + data[at:]
        elif kind == "insert":
            chunk = draw(
                st.sampled_from(
                    [b"\xe2\x80\xa8", b"\xef\xbb\xbf", b"\\", b'"', b"{", b"]", b":", b"\xff"]
                )
            )
            data = data[:at] + chunk + data[at:]
        elif at < len(data):
            if kind == "delete":
                data = data[:at] + data[at + 1 :]
            else:
                data = (
                    data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1 :]
                )
    return data


@st.composite
def hostile_files(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(event_lines(), min_size=0, max_size=6))
    if draw(st.booleans()):  # a plausible frame, so later rules get reached
        lines.insert(0, b'{"ts":"t","seq":0,"type":"run.started","data":{}}')
        lines.append(b'{"ts":"t","seq":99,"type":"run.completed","data":{}}')
    data = b"\n".join(lines) + draw(st.sampled_from([b"", b"\n", b"\n\n"]))
    return _mutate(draw, data)


# -- (a) random bytes ----------------------------------------------------------------------

FRAME_HEAD = b'{"ts":"t","seq":0,"type":"run.started","data":{}}\n'
FRAME_TAIL = b'\n{"ts":"t","seq":99,"type":"run.completed","data":{"step":0}}\n'


@FUZZ
@given(data=st.binary(max_size=600), framed=st.booleans(), limits=LIMITS)
@example(data=b"\xef\xbb\xbf{}", framed=False, limits=Limits())
@example(data=b'{"a":1,"a":2}', framed=True, limits=Limits())
@example(data=b"\x0b", framed=True, limits=Limits())
@example(data=b'"' + b'\\",' * 150, framed=True, limits=SMALL)
def test_random_bytes_only_raise_the_typed_error(data: bytes, framed: bool, limits: Limits) -> None:
    if framed:
        data = FRAME_HEAD + data + FRAME_TAIL
    agrees(data, limits)


@FUZZ
@given(
    data=st.lists(st.sampled_from(list(b'[]{},:"\\ 0123456789-.eEtrufalsn\n\r')), max_size=400).map(
        bytes
    ),
    limits=LIMITS,
)
def test_json_alphabet_soup_only_raises_the_typed_error(data: bytes, limits: Limits) -> None:
    # Random bytes are rarely JSON; bytes from JSON's own alphabet reach far more paths.
    agrees(FRAME_HEAD + data + FRAME_TAIL, limits)


# -- (b) random JSON, with mutations -------------------------------------------------------


@settings(FUZZ, max_examples=50)
@given(data=hostile_files(), limits=LIMITS)
def test_random_json_lines_agree_with_the_oracle(data: bytes, limits: Limits) -> None:
    agrees(data, limits)


@FUZZ
@given(value=VALUES, ascii_only=st.booleans(), compact=st.booleans(), limits=LIMITS)
def test_random_json_values_as_event_data(
    value: Any, ascii_only: bool, compact: bool, limits: Limits
) -> None:
    text = render(Obj((("v", value),)), ascii_only, compact).encode("utf-8", "surrogatepass")
    line = b'{"ts":"t","seq":1,"type":"note","data":%s}' % text
    agrees(FRAME_HEAD + line + FRAME_TAIL, limits)


def test_the_oracle_is_not_vacuous() -> None:
    # The differential tests mean something only if both outcomes occur in them.
    good = FRAME_HEAD + FRAME_TAIL
    assert isinstance(oracle(good, Limits()), list)
    assert oracle(
        FRAME_HEAD + b'{"ts":"t","seq":1,"type":"n","data":{"a":1,"a":1}}' + FRAME_TAIL, Limits()
    ) == (
        "refused",
        2,
    )
    agrees(good)
    agrees(FRAME_HEAD + b'{"ts":"t","seq":1,"type":"n","data":{"a":1,"a":1}}' + FRAME_TAIL)


# -- (c) valid rollouts round-trip ---------------------------------------------------------

SAFE_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),  # no lone surrogates
)
SAFE_VALUES = st.recursive(
    SAFE_SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)


TYPED_KEYS = frozenset(field.key for fields in SCHEMA.values() for field in fields)


@st.composite
def valid_rollouts(draw: st.DrawFn) -> tuple[bytes, list[tuple[Any, ...]]]:
    """Bytes of a valid rollout and the events (seq, ts, type, data, step, line) it holds."""
    planned: list[tuple[str, dict[str, Any], int]] = []  # (type, data, effective step)

    def extra() -> dict[str, Any]:
        # Free-form keys only: the typed fields of the core types have tests of their own.
        return draw(
            st.dictionaries(
                st.text(max_size=5).filter(lambda k: k != "step" and k not in TYPED_KEYS),
                SAFE_VALUES,
                max_size=3,
            )
        )

    planned.append(("run.started", {**extra(), **({"step": 0} if draw(st.booleans()) else {})}, 0))
    step = 0
    for _ in range(draw(st.integers(0, 5))):
        step += draw(st.integers(1, 3))
        planned.append(("llm.turn.started", {"step": step, **extra()}, step))
        for _ in range(draw(st.integers(0, 2))):
            planned.append(("tool.call.started", {**extra(), "step": step}, step))
        if draw(st.booleans()):  # a custom event inheriting the step
            planned.append(
                (draw(st.sampled_from(["usage.delta", "my.custom", "hook.failed"])), extra(), step)
            )
    terminal = draw(st.sampled_from(["run.completed", "run.failed"]))
    planned.append((terminal, {"step": step} if draw(st.booleans()) else {}, step))

    eol = draw(st.sampled_from([b"\n", b"\r\n"]))
    chunks: list[bytes] = []
    expected: list[tuple[Any, ...]] = []
    seq = draw(st.integers(0, 3))
    line = 1
    for etype, data, eff in planned:
        for _ in range(draw(st.integers(0, 2))):  # blank lines in between
            chunks.append(draw(st.sampled_from([b"", b"  ", b"\t", b"\r"])) + eol)
            line += 1
        ts = draw(st.sampled_from(["2026-06-28T12:34:56.123456Z", "x\u2028y"]))
        obj = {"ts": ts, "seq": seq, "type": etype, "data": data}
        if draw(st.booleans()):
            text = orjson.dumps(obj)
        else:
            text = json.dumps(obj, ensure_ascii=draw(st.booleans()), indent=None).encode()
        chunks.append(text + eol)
        expected.append((seq, ts, etype, data, eff, line))
        line += 1
        seq += draw(st.integers(1, 3))
    data_bytes = b"".join(chunks)
    if draw(st.booleans()):
        data_bytes = data_bytes[: -len(eol)]  # no final newline
    return data_bytes, expected


@FEW
@given(case=valid_rollouts())
def test_valid_rollouts_round_trip(case: tuple[bytes, list[tuple[Any, ...]]]) -> None:
    data, expected = case
    rollout = loads(data)
    got = [(e.seq, e.ts, e.type, e.data, e.step, e.line) for e in rollout.events]
    assert got == expected
    assert oracle(data, Limits()) == expected
    assert [e.to_json_obj() for e in rollout.events] == [
        {"ts": ts, "seq": seq, "type": t, "data": d} for seq, ts, t, d, _, _ in expected
    ]


@FEW
@given(case=valid_rollouts(), draw=st.data())
def test_truncated_valid_rollouts_agree_with_the_oracle(
    case: tuple[bytes, list[tuple[Any, ...]]], draw: st.DataObject
) -> None:
    data, _ = case
    cut = draw.draw(st.integers(0, len(data)))
    agrees(data[:cut])


@st.composite
def mutated_rollouts(draw: st.DrawFn) -> bytes:
    """A valid rollout with a few line-level edits: reaches the structural rules."""
    data, _ = draw(valid_rollouts())
    lines = data.split(b"\n")
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["swap", "dup", "drop", "insert", "restep", "retype"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "drop" and len(lines) > 1:
            del lines[i]
        elif op == "insert":
            lines.insert(i, draw(event_lines()))
        elif op == "restep":
            step = b'"step":%d' % draw(st.integers(-1, 8))
            lines[i] = re.sub(rb'"step": ?-?\d+', step, lines[i], count=1)
        elif op == "retype":
            etype = b'"type":"%s"' % draw(st.sampled_from(CORE_TYPES)).encode()
            lines[i] = re.sub(rb'"type": ?"[^"]*"', etype, lines[i], count=1)
    if draw(st.booleans()):  # renumber seq so that the step and order rules get their turn
        counter = iter(range(len(lines)))
        lines = [
            re.sub(rb'"seq": ?-?\d+', lambda _: b'"seq":%d' % next(counter), line, count=1)
            for line in lines
        ]
    return b"\n".join(lines)


@settings(FUZZ, max_examples=40)
@given(data=mutated_rollouts())
def test_mutated_valid_rollouts_agree_with_the_oracle(data: bytes) -> None:
    agrees(data)


# -- large adversarial inputs: refused, with bounded memory ----------------------------------


# name -> (build the bytes, expected line, reason fragment, bytes of the line orjson parses)
HOSTILE: dict[str, tuple[Callable[[], bytes], int | None, str, int]] = {
    "5MB-open-brackets": (lambda: b"[" * (5 * MIB), 1, MANY, 0),
    "6MB-open-objects": (lambda: b'{"a":' * (6 * MIB // 5), 1, MANY, 0),
    "200k-commas": (lambda: b"," * 200_000, 1, MANY, 0),
    "200k-commas-in-array": (lambda: b"[" + b"0," * 200_000 + b"0]", 1, MANY, 0),
    "16MiB-empty-arrays": (lambda: b"[" + b"[]," * (16 * MIB // 3 - 1) + b"[]]", 1, MANY, 0),
    "16MiB-empty-strings": (lambda: b"[" + b'"",' * (16 * MIB // 3 - 1) + b'""]', 1, MANY, 0),
    "line-over-16MiB": (lambda: b"[" + b"0," * (8 * MIB) + b"0]", 1, "over the 16777216", 0),
    "32MiB-newlines": (lambda: b"\n" * (32 * MIB), None, "no events", 0),
    "32MiB-blank-lines-then-garbage": (
        lambda: b" \r\n\t\n" * (8 * MIB) + b"x",
        16 * MIB + 1,
        "invalid JSON",
        1,
    ),
    "10M-short-lines": (lambda: b"ab\n" * (10 * MIB), 1, "invalid JSON", 2),
    "5MB-escaped-quotes": (lambda: b'"' + b'\\"' * (5 * MIB // 2), 1, "invalid JSON", 5 * MIB + 1),
    "5MB-escaped-quotes-and-commas": (
        lambda: b'["' + b'\\",' * (5 * MIB // 3),
        1,
        "invalid JSON",
        5 * MIB + 3,
    ),
    "5MB-backslashes": (lambda: b'"' + b"\\" * (5 * MIB), 1, "invalid JSON", 5 * MIB + 1),
    "16MiB-quotes": (lambda: b'"' * (16 * MIB), 1, "invalid JSON", 16 * MIB),
    "5MB-digits": (lambda: b"1" * (5 * MIB), 1, "invalid JSON", 5 * MIB),
    "depth-1000": (lambda: b"[" * 1000 + b"]" * 1000, 1, "deeper than 100 levels", 2000),
    "depth-90000": (lambda: b"[" * 90_000 + b"]" * 90_000, 1, "invalid JSON", 180_000),
    "50k-duplicate-keys": (
        lambda: b"{" + b'"a":1,' * 50_000 + b'"a":1}',
        1,
        'duplicate key "a"',
        300_007,
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_large_adversarial_input_is_refused_with_bounded_memory(name: str) -> None:
    build, line, fragment, parsed = HOSTILE[name]
    data = build()
    gc.collect()
    tracemalloc.start()
    try:
        with pytest.raises(RolloutFormatError) as info:
            loads(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.line == line
    assert fragment in info.value.reason, info.value.reason
    # Nothing may cost memory per line or per element. A line that reaches orjson costs what
    # orjson needs for one line (it preallocates about 13-16x the bytes it parses); anything
    # refused before parsing costs at most a copy of the line.
    bound = 64 * MIB + 16 * parsed
    assert peak < bound, (peak, bound)
