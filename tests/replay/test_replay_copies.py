"""What replay hands the agent is its own: a tool's recorded result and a turn's tool-call
arguments are copies, so an agent that changes them in place (sorts a list, adds a key)
still replays its golden, and the golden it is compared with stays as recorded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from plugin_agent import IN_PROCESS
from sessions import new_session

from pytest_rollout import ToolCall, Turn
from pytest_rollout.format.loader import loads
from pytest_rollout.session import Mode, RolloutSession


@dataclass
class Rows:
    items: list[int] = field(default_factory=list)


def _rows_as_list(query: str) -> Any:
    return [{"id": 3}, {"id": 1}]


def _rows_as_object(query: str) -> Rows:
    return Rows([3, 1])


def _sort_in_place(rows: Any) -> None:
    if isinstance(rows, Rows):
        rows.items.sort()
        rows.items.append(99)
    else:
        rows.sort(key=lambda row: row["id"])
        rows.append({"id": 99})


class Scripted:
    model = "gpt-4o-mini"

    def __init__(self) -> None:
        arguments = {"query": "rows", "filters": {"ids": [3, 1]}}
        self.turns = [
            Turn(None, [ToolCall("c1", "rows", arguments)], {"input_tokens": 9}, None, None),
            Turn("done", [], {"input_tokens": 9, "output_tokens": 1}, None, None),
        ]

    def complete(self, messages: Any, tools: Any = None, **params: Any) -> Turn:
        return self.turns.pop(0)


def _agent(session: RolloutSession, tool: Callable[..., Any], live: Any = None) -> None:
    llm = session.provider(live)
    tools = session.tools({"rows": tool})
    messages: list[Any] = [{"role": "user", "content": "Rows?"}]
    with session.run(prompt="Rows?") as run:
        while (turn := llm.complete(messages)).tool_calls:
            for call in turn.tool_calls:
                call.arguments["filters"]["ids"].sort()  # the agent tidies the arguments
                rows = tools[call.name](query=call.arguments["query"])
                _sort_in_place(rows)  # ... and works on the result in place
                messages.append({"role": "tool", "content": repr(rows)})
        run.output = turn.content
    session.close()


@pytest.mark.parametrize("tool", [_rows_as_list, _rows_as_object])
def test_an_agent_that_changes_what_replay_gave_it_still_matches(
    tool: Callable[..., Any],
) -> None:
    recording = new_session(Mode.RECORD)
    _agent(recording, tool, Scripted())
    data = recording.recorder.getvalue()
    golden = loads(data, path="golden.jsonl")
    replay = new_session(Mode.DRY, golden)
    _agent(replay, tool)
    verdict = replay.engine.verdict()
    assert verdict.matched, verdict.report.comparison.first
    assert golden == loads(data, path="golden.jsonl")  # the golden is as recorded


USER_TEST = """
from pytest_rollout import ToolCall, Turn


class Scripted:
    def __init__(self):
        self.turns = [Turn(None, [ToolCall("c1", "rows", {"query": "all"})]), Turn("done")]

    def complete(self, messages, tools=None, **params):
        return self.turns.pop(0)


def rows(query):
    return [{"id": 3}, {"id": 1}]


def test_rows(rollout, golden):
    llm = rollout.provider(Scripted())
    tools = rollout.tools({"rows": rows})
    with rollout.run(prompt="Rows?") as run:
        turn = llm.complete([{"role": "user", "content": "Rows?"}])
        found = tools["rows"](**turn.tool_calls[0].arguments)
        found.sort(key=lambda row: row["id"])
        llm.complete([{"role": "tool", "content": repr(found)}])
        run.output = found[0]["id"]
    assert rollout == golden
"""


def test_a_suite_whose_agent_sorts_a_tool_result_in_place_replays(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_rows=USER_TEST)
    args = (*IN_PROCESS, "-p", "no:cacheprovider")
    pytester.runpytest_inprocess(*args, "--rollout-record").assert_outcomes(passed=1)
    result = pytester.runpytest_inprocess(*args, "--rollout-compare=golden/")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["1 golden(s) compared: 2/2 turns served, 1/1 tool calls matched, 0 diverged"]
    )
