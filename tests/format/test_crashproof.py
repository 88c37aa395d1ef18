"""The crash-proof promise: whatever a rollout file holds, nothing reading it crashes.

A valid rollout is mutated one field at a time (its type swapped, a number at an extreme, a
huge or hostile string). Then every ``rollout`` subcommand exits 0, 1 or 2 and never raises,
and pytest, given the file as a test's golden, reports a failure or an error for that test,
never an INTERNALERROR, and still runs the other test. Most such files are refused by the
loader's schema (exit 2); the rest must be read safely by every consumer.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from plugin_agent import IN_PROCESS, WEATHER_TEST, record, write_project

from pytest_rollout.cli import main

#: Bounded and derandomized: the same examples on every run, so CI is repeatable.
CLI_SETTINGS: Final = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
#: Each example is a whole pytest run: a few drawn ones beside the explicit ``@example`` cases.
PYTEST_SETTINGS: Final = settings(CLI_SETTINGS, max_examples=5)

TS: Final = "2026-06-28T12:34:56.000000Z"

#: A valid run of two steps that uses every core type.
BASE: Final[list[tuple[str, dict[str, Any]]]] = [
    (
        "run.started",
        {
            "step": 0,
            "run_id": "r1",
            "test_id": "t::x",
            "model": "m",
            "provider": "p",
            "tools": ["get_weather"],
            "meta": {"k": "v"},
            "prompt": "weather?",
        },
    ),
    (
        "llm.turn.started",
        {
            "step": 1,
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "weather?"},
            ],
            "tools": [{"name": "get_weather", "parameters": {"type": "object"}}],
            "params": {"temperature": 0},
            "messages_hash": "abc",
        },
    ),
    (
        "llm.turn.completed",
        {
            "step": 1,
            "content": "checking",
            "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}],
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "cost_usd": 0.001,
            "model_version": "m-1",
            "latency_ms": 12.5,
        },
    ),
    ("usage.delta", {"step": 1, "cumulative_cost_usd": 0.001}),
    (
        "tool.call.started",
        {"step": 1, "call_id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}},
    ),
    (
        "tool.call.completed",
        {"step": 1, "call_id": "c1", "name": "get_weather", "output": {"t": 21}, "duration_ms": 1},
    ),
    (
        "llm.turn.started",
        {"step": 2, "messages": [{"role": "tool", "content": "21"}], "tools": None, "params": {}},
    ),
    (
        "llm.turn.completed",
        {
            "step": 2,
            "content": "21 degrees",
            "tool_calls": [],
            "usage": {"input_tokens": 20, "output_tokens": 3},
            "cost_usd": 0.002,
        },
    ),
    ("usage.delta", {"step": 2, "cumulative_cost_usd": 0.003}),
    (
        "run.completed",
        {
            "step": 2,
            "outcome": "completed",
            "output": "21 degrees",
            "cost_totals": {"total_cost_usd": 0.003},
            "total_duration_ms": 40.0,
        },
    ),
]


def _paths(value: Any, prefix: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*prefix, index))


#: Every (event index, path inside its data) of the base run, "step" aside.
PATHS: Final = [
    (index, path)
    for index, (_, data) in enumerate(BASE)
    for path in _paths(data, ())
    if path and path[0] != "step"
]

HOSTILE_TEXT: Final = [
    "",
    "\x1b[31mred\x1b[0m",
    "\u202egnp.exe",
    "##[error]fake",
    "line\nbreak\r",
    "NaN",
    "-Infinity",
    "x" * 200_000,
]
EXTREMES: Final[list[Any]] = [
    0,
    -1,
    2**53 + 1,
    2**63,
    2**64 - 1,
    -(2**63),
    1e308,
    -1e308,
    5e-324,
    1.7976931348623157e308,
    True,
    None,
]
SHAPES: Final[list[Any]] = [
    [],
    [1],
    [[]],
    {},
    {"a": []},
    [{"name": ["x"]}],
    [None, 3, "s"],
    {"input_tokens": 2**63},
]
VALUES: Final = st.sampled_from([*EXTREMES, *SHAPES, *HOSTILE_TEXT]) | st.text(max_size=20)


def mutated(index: int, path: tuple[Any, ...], value: Any) -> bytes:
    """The base run with the field at ``path`` of event ``index`` set to ``value``."""
    events = copy.deepcopy(BASE)
    node: Any = events[index][1]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return b"".join(
        orjson.dumps({"ts": TS, "seq": seq, "type": kind, "data": data}) + b"\n"
        for seq, (kind, data) in enumerate(events)
    )


FORMATS: Final = ("neutral", "openai", "anthropic")


def commands(good: Path, bad: Path, tmp: Path) -> list[list[str]]:
    """Every subcommand that reads a rollout, on the mutated file."""
    everything = ("--include-system", "--include-tool-calls", "--include-tool-results")
    forks = [
        ["fork", str(bad), "--step", "1"],
        *(["fork", str(bad), "--step", "2", "--format", shape, *everything] for shape in FORMATS),
    ]
    return [
        ["show", str(bad)],
        ["show", str(bad), "--grep", "x", "--step", "1-2"],
        ["diff", str(good), str(bad)],
        ["diff", str(bad), str(good)],
        ["diff", "--json", str(good), str(bad)],
        ["diff", "--json", str(bad), str(bad)],
        ["check", str(bad)],
        ["check", "--json", str(bad)],
        *forks,
        ["view", str(bad), "--out", str(tmp / "one.html")],
        ["view", str(good), str(bad), "--out", str(tmp / "two.html")],
    ]


def run_all(good: Path, bad: Path, tmp: Path) -> None:
    for argv in commands(good, bad, tmp):
        out = io.StringIO()
        try:
            status = main(argv, out=out)
        except SystemExit as exc:  # argparse only, on arguments this test never gets wrong
            pytest.fail(f"rollout {' '.join(argv)} exited through SystemExit({exc.code})")
        assert status in (0, 1, 2), (argv, status)


@pytest.fixture(scope="module")
def base_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("crash") / "good.jsonl"
    path.write_bytes(mutated(0, ("model",), "m"))
    return path


def test_the_base_run_is_valid_and_every_command_accepts_it(
    base_file: Path, tmp_path: Path
) -> None:
    for argv in commands(base_file, base_file, tmp_path):
        assert main(argv, out=io.StringIO()) in (0, 1), argv


@CLI_SETTINGS
@given(where=st.sampled_from(PATHS), value=VALUES)
@example(where=(1, ("messages",)), value=3)  # fork and drift
@example(where=(2, ("tool_calls",)), value=3)  # fork
@example(where=(0, ("tools",)), value=0)  # drift; INTERNALERROR in pytest
@example(where=(0, ("tools", 0)), value=["x"])  # drift: a tool name that is a list
@example(where=(2, ("usage", "input_tokens")), value=2**63)  # the viewer's token sum
@example(where=(8, ("cumulative_cost_usd",)), value=1e308)  # diff --json
@example(where=(8, ("cumulative_cost_usd",)), value=-1e308)
@example(where=(2, ("tool_calls", 0, "arguments")), value="not an object")
@example(where=(5, ("name",)), value=["x"])
@example(where=(9, ("cost_totals",)), value={"total_cost_usd": "1"})
def test_every_command_exits_0_1_or_2_on_a_mutated_file(
    where: tuple[int, tuple[Any, ...]], value: Any, base_file: Path, tmp_path_factory: Any
) -> None:
    index, path = where
    tmp = tmp_path_factory.mktemp("cmd")
    bad = tmp / "bad.jsonl"
    bad.write_bytes(mutated(index, path, value))
    run_all(base_file, bad, tmp)


OTHER_TEST: Final = """
def test_other():
    assert True
"""


@pytest.fixture
def weather_project(pytester: pytest.Pytester) -> tuple[Path, bytes]:
    """A project whose ``test_weather`` has a recorded golden, and another test beside it:
    the golden's path and its recorded bytes."""
    write_project(pytester, test_weather=WEATHER_TEST, test_other=OTHER_TEST)
    record(pytester).assert_outcomes(passed=2)
    (golden,) = pytester.path.glob("golden/**/*.jsonl")
    return golden, golden.read_bytes()


def _as_golden(golden: Path, data: bytes) -> None:
    """Put ``data`` in place as the golden, sealed as ``rollout seal`` does when it can."""
    golden.write_bytes(data)
    main(["seal", str(golden)], out=io.StringIO())


@PYTEST_SETTINGS
@given(where=st.sampled_from(PATHS), value=VALUES)
@example(where=(0, ("tools",)), value=0)
@example(where=(1, ("messages",)), value=3)
def test_pytest_reports_a_mutated_golden_as_that_test_failing(
    where: tuple[int, tuple[Any, ...]],
    value: Any,
    pytester: pytest.Pytester,
    weather_project: tuple[Path, bytes],
) -> None:
    # The recorded golden, mutated at the same place as the base run (when it has it).
    golden, original = weather_project
    index, path = where
    recorded = [orjson.loads(line) for line in original.splitlines()]
    kinds = [event["type"] for event in recorded]
    kind = BASE[index][0]
    if kind not in kinds:
        return
    event = recorded[kinds.index(kind)]
    node = event["data"]
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
        if node is None or (isinstance(node, list) and not node):
            return
        if isinstance(node, list):
            node = node[0]
    if not isinstance(node, dict):
        return
    node[path[-1]] = value
    _as_golden(golden, b"".join(orjson.dumps(e) + b"\n" for e in recorded))
    result = pytester.runpytest_inprocess(*IN_PROCESS, "-v")
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text, text[-3000:]
    assert "test_other.py::test_other PASSED" in text, text[-3000:]
    assert result.ret in (0, 1), text[-3000:]
