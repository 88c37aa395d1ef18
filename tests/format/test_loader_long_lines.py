"""Lines of megabytes (a tool's output of a big file, or of escaped control characters): a
run the recorder wrote is read in bulk, any other line by line, and every limit and check
holds on both paths (docs/file-format.md). What they cost is measured by the benchmark
(benchmarks/bench_core.py), not here.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from test_loader_bulk import bulk, line_by_line

from pytest_rollout import Limits, Recorder, RolloutFormatError, loads

#: 64 Ki control characters, each escaped (``\u0000``, ``\n``, ...): about 350 KB of JSON.
CONTROLS = "".join(map(chr, range(32))) * 2048
LONG = 200_000  # longer than the 100,000-byte line that may hold the element limit


def recorded(output: Any, *, extra: dict[str, Any] | None = None) -> bytes:
    """A run the recorder wrote, whose one tool call returned ``output``."""
    r = Recorder(clock=lambda: 1_782_650_096_000_000_000)
    r.emit("run.started", {})
    r.emit("llm.turn.started", {"messages": []})
    r.emit("tool.call.completed", {"call_id": "c1", "name": "dump", "output": output})
    if extra is not None:
        r.emit("my.custom", extra)
    r.emit("run.completed", {"outcome": "completed"})
    r.close()
    return r.getvalue()


def spaced(data: bytes) -> bytes:
    """The same run written by ``json.dumps`` (spaces after separators, non-ASCII kept)."""
    lines = (json.dumps(orjson.loads(line), ensure_ascii=False) for line in data.splitlines())
    return "".join(line + "\n" for line in lines).encode()


def refused(data: bytes, limits: Limits | None = None) -> str:
    with pytest.raises(RolloutFormatError) as info:
        loads(data, path="run.jsonl", limits=limits or Limits())
    return str(info.value)


@pytest.mark.parametrize(
    "output",
    [CONTROLS, "x" * LONG, "é" * LONG, [0] * 90_000, {"rows": [CONTROLS] * 3}],
    ids=["escaped controls", "one string", "non-ASCII", "90,000 elements", "a few strings"],
)
def test_a_recorded_run_with_lines_of_megabytes_is_read_in_bulk(output: Any) -> None:
    data = recorded(output)
    assert max(map(len, data.split(b"\n"))) > Limits().elements
    events = bulk(data)
    assert events is not None
    assert events == line_by_line(data)
    assert loads(data).events == events
    assert events[2].data["output"] == output


@pytest.mark.parametrize(
    "output",
    [CONTROLS, "x" * LONG, [0] * 90_000, {"rows": [CONTROLS] * 3}],
    ids=["escaped controls", "one string", "90,000 elements", "a few strings"],
)
def test_the_same_run_written_otherwise_loads_the_same_events(output: Any) -> None:
    data = recorded(output)
    other = spaced(data)
    assert bulk(other) is None
    assert loads(other).events == loads(data).events


def test_commas_in_a_long_string_go_line_by_line_and_are_accepted() -> None:
    """Commas inside strings are no elements: the bulk path's bound cannot clear them, and
    the exact count of the line-by-line path accepts them."""
    data = recorded("," * 150_000 + "[{" * 1000)
    assert bulk(data) is None
    assert loads(data).events == line_by_line(data)


def test_a_long_line_of_too_many_elements_is_refused() -> None:
    data = recorded([0] * 100_000)
    assert bulk(data) is None
    assert refused(data) == "run.jsonl:3: more than 100000 JSON elements in one line"


def test_a_long_line_over_the_line_limit_is_refused() -> None:
    data = recorded("x" * LONG)
    limits = Limits(line_bytes=150_000)
    assert bulk(data, limits) is None
    assert refused(data, limits).startswith("run.jsonl:3: line is ")
    assert "over the 150000-byte limit" in refused(data, limits)


def test_a_deep_line_beside_a_long_one_is_refused() -> None:
    deep: Any = []
    for _ in range(12):
        deep = [deep]
    data = recorded("x" * LONG, extra={"deep": deep})
    limits = Limits(depth=10)
    assert bulk(data, limits) is None
    assert refused(data, limits) == "run.jsonl:4: JSON nesting deeper than 10 levels"


def _tool_line(output: bytes, *, space: bytes = b"") -> bytes:
    """A ``tool.call.completed`` line at seq 2 whose data's last fields are ``output``
    (raw JSON text), with ``space`` after each separator of the rest."""
    head = b'{"ts":"t","seq":2,"type":"tool.call.completed","data":{"step":1,'
    head = head.replace(b",", b"," + space).replace(b'":', b'":' + space)
    return head + output + b"}}"


def _run_around(line: bytes) -> bytes:
    start = orjson.dumps({"ts": "t", "seq": 0, "type": "run.started", "data": {}})
    turn = orjson.dumps({"ts": "t", "seq": 1, "type": "llm.turn.started", "data": {"step": 1}})
    end = orjson.dumps({"ts": "t", "seq": 3, "type": "run.completed", "data": {"step": 1}})
    return b"\n".join([start, turn, line, end]) + b"\n"


STRING = b'"' + b"\\u0000\\u0001\\n" * 30_000 + b'"'  # a few elements in 420 KB
ELEMENTS = b"[" + b"0, " * 40_000 + b"0]"  # 40,001 elements in 120 KB


@pytest.mark.parametrize("space", [b"", b" "], ids=["compact", "spaced"])
@pytest.mark.parametrize("value", [STRING, ELEMENTS], ids=["few elements", "many elements"])
def test_a_duplicate_key_in_a_long_line_is_refused(value: bytes, space: bytes) -> None:
    line = _tool_line(b'"output":%s,"output":%s' % (value, value), space=space)
    assert refused(_run_around(line)) == 'run.jsonl:3: duplicate key "output"'


@pytest.mark.parametrize("space", [b"", b" "], ids=["compact", "spaced"])
@pytest.mark.parametrize("value", [STRING, ELEMENTS], ids=["few elements", "many elements"])
def test_a_duplicate_key_hidden_by_escaped_colons_is_refused(value: bytes, space: bytes) -> None:
    """A colon written as ``\\u003a`` would make up for a dropped key's colon in a count."""
    output = b'"output":%s,"note":"a\\u003ab","note":"ab"' % value
    line = _tool_line(output, space=space)
    assert refused(_run_around(line)) == 'run.jsonl:3: duplicate key "note"'


@pytest.mark.parametrize("space", [b"", b" "], ids=["compact", "spaced"])
@pytest.mark.parametrize("value", [STRING, ELEMENTS], ids=["few elements", "many elements"])
@pytest.mark.parametrize("big", [b"18446744073709551616", b"-9223372036854775809"])
def test_an_integer_beyond_64_bits_in_a_long_line_is_refused(
    value: bytes, space: bytes, big: bytes
) -> None:
    line = _tool_line(b'"output":%s,"n":%s' % (value, big), space=space)
    assert refused(_run_around(line)) == f"run.jsonl:3: integer {big.decode()} is beyond 64 bits"


@pytest.mark.parametrize("space", [b"", b" "], ids=["compact", "spaced"])
@pytest.mark.parametrize("value", [STRING, ELEMENTS], ids=["few elements", "many elements"])
def test_long_digit_runs_and_escaped_colons_in_strings_are_fine(value: bytes, space: bytes) -> None:
    output = b'"output":%s,"id":"18446744073709551616","at":"12\\u003a30","n":-9223372036854775808'
    line = _tool_line(output % value, space=space)
    data = loads(_run_around(line)).events[2].data
    assert data["id"] == "18446744073709551616"
    assert data["at"] == "12:30"
    assert data["n"] == -(2**63)
