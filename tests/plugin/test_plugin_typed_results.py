"""End to end: an agent that shows its model ``str()`` of typed tool results and of a tool's own
exception replays green, from no live tool call; a type replay cannot rebuild is a warning,
and a conftest hook can rebuild it."""

from __future__ import annotations

import pytest
from plugin_agent import IN_PROCESS

import pytest_rollout

TOOLS_MODULE = '''
import dataclasses, datetime, decimal, enum, uuid
from pathlib import Path
from typing import NamedTuple

import attrs, pydantic

LOG = Path(__file__).with_name("calls.log")


def log(what):
    with LOG.open("a", encoding="utf-8") as handle:
        handle.write(what + "\\n")


class Sky(enum.Enum):
    RAIN = "rain"


@dataclasses.dataclass
class Point:
    x: int
    y: float


@dataclasses.dataclass
class Weather:
    city: str
    sky: Sky
    at: Point


class Reading(NamedTuple):
    station: str
    at: datetime.datetime


@attrs.define
class Receipt:
    total: decimal.Decimal
    id: uuid.UUID


class Order(pydantic.BaseModel):
    name: str
    when: datetime.date


class StationDown(Exception):
    def __init__(self, station, code):
        super().__init__(station, code)
        self.station, self.code = station, code

    def __str__(self):
        return f"station {self.station} is down ({self.code})"


class Opaque(str):
    """Recorded as its text; a kind of type replay does not rebuild by itself."""

    def __repr__(self):
        return f"Opaque({str(self)!r})"


RESULTS = {
    "weather": Weather("Paris", Sky.RAIN, Point(1, 2.5)),
    "reading": Reading("Oslo", datetime.datetime(2024, 5, 6, 7, 8, tzinfo=datetime.UTC)),
    "receipt": Receipt(decimal.Decimal("9.90"), uuid.UUID(int=42)),
    "order": Order(name="tea", when=datetime.date(2024, 5, 6)),
    "span": (1, "two"),
    "opaque": Opaque("box"),
}


def make_tool(name):
    def tool():
        log(name)
        if name == "broken":
            raise StationDown("Oslo", 503)
        return RESULTS[name]
    if name in RESULTS:  # as `def weather() -> Weather:` says
        tool.__annotations__["return"] = type(RESULTS[name])
    return tool


TOOLS = {name: make_tool(name) for name in [*RESULTS, "broken"]}
'''

AGENT_TEST = """
from pytest_rollout import ToolCall, Turn

from typed_tools import TOOLS, log

NAMES = {names}


class ShowingLLM:
    model = "scripted-1"

    def complete(self, messages, tools=None, **params):
        log("llm")
        if len(messages) == 1:
            return Turn(None, [ToolCall(f"call_{{n}}", n, {{}}) for n in NAMES], model=self.model)
        return Turn("done", [], model=self.model)


def test_typed(rollout, golden):
    llm = rollout.provider(ShowingLLM())
    tools = rollout.tools({{n: TOOLS[n] for n in NAMES}})
    with rollout.run(prompt="go") as run:
        messages = [{{"role": "user", "content": "go"}}]
        turn = llm.complete(messages)
        for call in turn.tool_calls:
            try:
                result = tools[call.name]()
                shown = f"{{type(result).__name__}} {{result}} {{result!r}}"
            except Exception as exc:
                shown = f"error {{type(exc).__name__}}: {{exc}}"
            messages.append({{"role": "tool", "content": shown}})
        run.output = llm.complete(messages).content
    assert rollout == golden
"""

TYPED = ["weather", "reading", "receipt", "order", "span", "broken"]


def _project(pytester: pytest.Pytester, names: list[str]) -> None:
    pytester.makepyfile(typed_tools=TOOLS_MODULE, test_typed=AGENT_TEST.format(names=names))


def _live_calls(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "calls.log"
    calls = log.read_text(encoding="utf-8").split() if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def test_typed_results_and_a_tools_own_error_replay_as_they_were_recorded(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, TYPED)
    pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record").assert_outcomes(passed=1)
    assert _live_calls(pytester) == ["llm", *TYPED, "llm"]
    golden = pytest_rollout.load(pytester.path / "golden" / "test_typed" / "test_typed.jsonl")
    done = [e.data for e in golden.events if e.type == "tool.call.completed"]
    assert [d.get("output_type") for d in done] == [
        "typed_tools:Weather",
        "typed_tools:Reading",
        "typed_tools:Receipt",
        "typed_tools:Order",
        "builtins:tuple",
        None,
    ]
    assert done[-1]["error"] == {
        "class": "StationDown",
        "message": "station Oslo is down (503)",
        "type": "typed_tools:StationDown",
        "args": ["Oslo", 503],
    }

    result = pytester.runpytest_inprocess(*IN_PROCESS)

    result.assert_outcomes(passed=1)
    assert _live_calls(pytester) == []


def test_a_type_replay_cannot_rebuild_is_a_warning_and_a_hook_can_rebuild_it(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, ["opaque"])
    pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record").assert_outcomes(passed=1)
    _live_calls(pytester)

    result = pytester.runpytest_inprocess(
        *IN_PROCESS, "-W", "always::pytest_rollout.RolloutWarning"
    )
    result.assert_outcomes(failed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*RolloutWarning: tool 'opaque' returned an object of type typed_tools:Opaque when "
            "it was recorded, and replay cannot rebuild it (it is not a kind of type that "
            "replay rebuilds): the agent gets the recorded JSON value instead. Rebuild the "
            "type in a pytest_rollout_rebuild_result hook (docs/replay.md#typed-tool-results)."
        ]
    )

    pytester.makeconftest(
        """
        import typed_tools

        def pytest_rollout_rebuild_result(type_name, value):
            if type_name == "typed_tools:Opaque":
                return typed_tools.Opaque(value)
        """
    )
    result = pytester.runpytest_inprocess(*IN_PROCESS)
    result.assert_outcomes(passed=1)
    assert _live_calls(pytester) == []
