"""A golden changed by anyone, and sealed again (a receipt proves integrity, not authorship),
never makes its test pass or skip, never makes replay build a class the test did not allow,
and never puts an escape sequence or a CI workflow command on pytest's output.

One project is recorded once: a test whose agent calls a tool returning a dataclass and a
tool that raises, through ``rollout.provider``, and a test whose agent talks to the OpenAI SDK
(the golden holds the raw responses). Hypothesis then changes one value of a golden (a typed
result's class or data, a recorded error's class or message, a raw response's text or call,
a tool's output) to hostile text, numbers, nesting or class names, seals it, and replays the
project offline. Every change the agent's code can see fails its test; the others (a class
name the agent never looks at, replayed under that name) may pass, and never skip.

``probe.py`` holds classes whose construction leaves a line in a log: a
dataclass with ``__post_init__``, an enum with ``_missing_``, a ``date`` subclass; the tests
import it, none of its classes is named by a tool's signature, so none may be built.

The example count is bounded for CI (``--hypothesis-profile=thorough`` draws ten times more).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from hostile import EVIL, assert_printable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plugin_agent import run_showing_warnings, sdk_weather_test, write_sdk_project

from pytest_rollout.cli import main as rollout_main

PROBE: Final = """
import dataclasses
import datetime
import enum
import os


def built(what):
    with open(os.environ["PROBE_LOG"], "a", encoding="utf-8") as log:
        log.write(what + "\\n")


@dataclasses.dataclass
class Gadget:
    city: str = ""
    celsius: int = 0

    def __post_init__(self):
        built("Gadget")


class Lenient(enum.Enum):
    A = "a"

    @classmethod
    def _missing_(cls, value):
        built("Lenient._missing_")
        return cls.A


class Day(datetime.date):
    @classmethod
    def fromisoformat(cls, text):
        built("Day.fromisoformat")
        return super().fromisoformat(text)
"""

TOOLS_TEST: Final = """
import dataclasses

import probe  # loaded, never named by a tool: none of its classes may be built
from pytest_rollout import ToolCall, Turn


@dataclasses.dataclass
class Forecast:
    city: str
    celsius: int


class LLM:
    model = "scripted"

    def complete(self, messages, tools=None, **params):
        if not any(m["role"] == "tool" for m in messages):
            calls = [ToolCall("c1", "forecast", {"city": "Paris"}),
                     ToolCall("c2", "fetch", {"q": "orders"})]
            return Turn("", tool_calls=calls)
        return Turn("It is 21 in Paris; orders are down.")


def forecast(city: str) -> Forecast:
    return Forecast(city, 21)


def fetch(q: str) -> str:
    raise ValueError("the service is down")


def test_agent(rollout, golden):
    llm = rollout.provider(LLM())
    tools = dict(zip(["forecast", "fetch"], rollout.tools([forecast, fetch])))
    messages = [{"role": "user", "content": "go"}]
    with rollout.run(prompt="go") as run:
        turn = llm.complete(messages)
        for call in turn.tool_calls:
            try:
                content = repr(tools[call.name](**call.arguments))
            except Exception as exc:  # the message only, as many agents show it
                content = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        run.output = llm.complete(messages).content
    assert rollout == golden
"""

SDK_TEST: Final = sdk_weather_test(
    "test_sdk", wrapped=True, imports="import probe  # loaded, never named by a tool\n"
)

#: Classes a golden may name: the test runner's outcomes, the interpreter's exits, the
#: probe's gadgets, this project's own errors, and names that are not names at all.
CLASS_NAMES: Final = [
    "unittest.case:SkipTest",
    "_pytest.outcomes:Skipped",
    "_pytest.outcomes:XFailed",
    "_pytest.outcomes:Exit",
    "_pytest.outcomes:Failed",
    "builtins:KeyboardInterrupt",
    "builtins:SystemExit",
    "builtins:GeneratorExit",
    "builtins:StopIteration",
    "probe:Gadget",
    "probe:Lenient",
    "probe:Day",
    "test_hostile_tools:Forecast",
    "decimal:Decimal",
    "datetime:date",
    "pytest_rollout:ReplayDivergenceError",
    "os:system",
    "\x1b[2J:Evil\u202e",
    "::error::x",
]
#: Errors replay refuses to raise as themselves: each would steer the test run, or is no
#: Python name. The agent gets another class than the golden names, so the run must fail.
REFUSED_ERRORS: Final = [
    ("SkipTest", "unittest.case:SkipTest"),
    ("Skipped", "_pytest.outcomes:Skipped"),
    ("XFailed", "_pytest.outcomes:XFailed"),
    ("Exit", "_pytest.outcomes:Exit"),
    ("Failed", "_pytest.outcomes:Failed"),
    ("KeyboardInterrupt", "builtins:KeyboardInterrupt"),
    ("SystemExit", None),
    ("GeneratorExit", None),
    ("ReplayDivergenceError", "pytest_rollout:ReplayDivergenceError"),
    (EVIL, None),
    ("\x1b[2J", "::error::x:Evil"),
]

hostile_text = st.one_of(
    st.sampled_from([EVIL, "\x1b]8;;http://evil\x07link\x1b]8;;\x07", "##vso[task.complete]x"]),
    st.sampled_from(["::error file=a.py::boom", "##teamcity[testFailed name='x']", "\u202edown"]),
    st.text(max_size=20),
)
hostile_value = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.sampled_from(["1E+999999999", "2024-01-02", "b", "a", "NaN"]),
        hostile_text,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(hostile_text, inner, max_size=3)
    ),
    max_leaves=6,
)


def _lines(golden: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in golden.read_bytes().splitlines()]


def _event(lines: list[dict[str, Any]], kind: str, index: int = 0) -> dict[str, Any]:
    data: dict[str, Any] = [e for e in lines if e["type"] == kind][index]["data"]
    return data


def _change(
    data: st.DataObject, tools: list[dict[str, Any]], sdk: list[dict[str, Any]]
) -> tuple[str, bool]:
    """Change one value of one of the goldens in place: what was changed, and whether the
    agent's code sees the change (then the test must fail; else it must at least not skip)."""
    where = data.draw(
        st.sampled_from(
            [
                "typed class",
                "typed value",
                "refused error",
                "error hint",
                "error message",
                "tool output",
                "raw text",
                "raw call",
                "turn content",
            ]
        )
    )
    forecast = _event(tools, "tool.call.completed", 0)
    error = _event(tools, "tool.call.completed", 1)["error"]
    if where == "typed class":
        forecast["output_type"] = data.draw(st.sampled_from(CLASS_NAMES))
    elif where == "typed value":
        forecast["output"] = data.draw(hostile_value)
    elif where == "refused error":
        error["class"], hint = data.draw(st.sampled_from(REFUSED_ERRORS))
        error.pop("type", None) if hint is None else error.update(type=hint)
    elif where == "error hint":  # a class name and module the agent never looks at
        error["class"] = data.draw(st.sampled_from(["ValueError", "SkipTest", "Oops"]))
        error["type"] = data.draw(st.sampled_from(CLASS_NAMES))
    elif where == "error message":
        error["message"] = data.draw(hostile_text)
    elif where == "tool output":
        _event(sdk, "tool.call.completed")["output"] = data.draw(hostile_value)
    elif where == "raw text":
        raw = _event(sdk, "llm.turn.completed", 1)["raw"]["json"]
        raw["choices"][0]["message"]["content"] = data.draw(hostile_text)
    elif where == "raw call":
        raw = _event(sdk, "llm.turn.completed", 0)["raw"]["json"]
        function = raw["choices"][0]["message"]["tool_calls"][0]["function"]
        function[data.draw(st.sampled_from(["name", "arguments"]))] = data.draw(hostile_text)
    else:
        _event(tools, "llm.turn.completed", 1)["content"] = data.draw(hostile_text)
    return where, where != "error hint"


def _write(golden: Path, lines: list[dict[str, Any]]) -> None:
    golden.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    assert rollout_main(["seal", str(golden)]) == 0


def test_a_changed_golden_never_passes_builds_nothing_and_prints_nothing_raw(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_sdk_project(
        pytester, probe=PROBE, test_hostile_tools=TOOLS_TEST, test_hostile_sdk=SDK_TEST
    )
    log = tmp_path / "built.log"
    monkeypatch.setenv("PROBE_LOG", str(log))
    run_showing_warnings(pytester, "--rollout-record").assert_outcomes(passed=2)
    tools_golden = pytester.path / "golden" / "test_hostile_tools" / "test_agent.jsonl"
    sdk_golden = pytester.path / "golden" / "test_hostile_sdk" / "test_sdk.jsonl"
    recorded = {path: path.read_bytes() for path in (tools_golden, sdk_golden)}
    monkeypatch.setenv("MODEL_OFFLINE", "1")
    run_showing_warnings(pytester).assert_outcomes(passed=2)  # as recorded, both replay green

    @settings(
        max_examples=10,  # each example is a whole pytest run
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.data())
    def replay_a_changed_golden(data: st.DataObject) -> None:
        tools, sdk = _lines(tools_golden), _lines(sdk_golden)
        where, seen = _change(data, tools, sdk)
        for path, lines in ((tools_golden, tools), (sdk_golden, sdk)):
            _write(path, lines)
        changed = [p.name for p in recorded if p.read_bytes() != _resealed(p, recorded[p])]
        log.write_text("")
        result = run_showing_warnings(pytester)
        out = result.stdout.str() + result.stderr.str()
        outcomes = result.parseoutcomes()
        note = f"{where} in {changed}:\n{out[-3000:]}"
        assert "INTERNALERROR" not in out, note
        assert outcomes.get("skipped", 0) == outcomes.get("xfailed", 0) == 0, note
        if seen:
            assert outcomes.get("passed", 0) == 2 - len(changed), note
        assert log.read_text() == "", note
        assert_printable(out)
        for path, original in recorded.items():
            path.write_bytes(original)
            assert rollout_main(["seal", str(path)]) == 0

    replay_a_changed_golden()


def _resealed(path: Path, original: bytes) -> bytes:
    """The original golden as ``_write`` would have written it back unchanged."""
    return b"".join(orjson.dumps(orjson.loads(line)) + b"\n" for line in original.splitlines())
