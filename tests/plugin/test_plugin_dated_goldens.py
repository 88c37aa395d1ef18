"""A suite recorded today replays green tomorrow: the agent's prompt says the date, its tool
returns a fresh order id and timestamp, and nothing is ignored by hand (docs/replay.md,
"Dates, ids and other values that change every run")."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Final

import pytest
import time_machine
from plugin_agent import IN_PROCESS

#: An agent whose system prompt carries today's date, and whose tool answers with a new
#: uuid and the time of the call; ``TWO_DATES`` makes its prompt carry yesterday's date too,
#: ``OTHER_ORDER`` makes it cancel an order it was not given.
DATED_TEST: Final = """
import datetime
import json
import os
import uuid

from pytest_rollout import ToolCall, Turn


class OrderLLM:
    def complete(self, messages, tools=None, **params):
        results = [m for m in messages if m["role"] == "tool"]
        call_id = f"call_{uuid.uuid4().hex}"
        if not results:
            return Turn(None, [ToolCall(call_id, "create_order", {"item": "book"})])
        if len(results) == 1:
            order = json.loads(results[0]["content"])["order_id"]
            if os.environ.get("OTHER_ORDER"):
                order = str(uuid.uuid4())
            return Turn(None, [ToolCall(call_id, "track", {"order_id": order})])
        return Turn("Your book is on its way.")


def create_order(item):
    now = datetime.datetime.now(datetime.timezone.utc)
    return {"order_id": str(uuid.uuid4()), "created_at": now.isoformat(), "item": item}


def track(order_id):
    return {"order_id": order_id, "status": "shipped"}


def agent(llm, tools, question):
    today = datetime.date.today()
    system = f"You help with orders. Today is {today.isoformat()}."
    if os.environ.get("TWO_DATES"):
        system += f" Yesterday was {(today - datetime.timedelta(days=1)).isoformat()}."
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    while True:
        turn = llm.complete(messages, [])
        if not turn.tool_calls:
            return turn.content
        for call in turn.tool_calls:
            result = tools[call.name](**call.arguments)
            messages.append({"role": "assistant", "content": None, "call": call.id})
            messages.append({"role": "tool", "content": json.dumps(result), "call": call.id})


def test_order(rollout, golden):
    llm = rollout.provider(OrderLLM())
    tools = rollout.tools({"create_order": create_order, "track": track})
    question = "Buy me a book."
    with rollout.run(prompt=question) as run:
        run.output = agent(llm, tools, question)
    assert rollout == golden
"""

DAY_ONE: Final = datetime.datetime(2026, 12, 1, 9, 14, 3, tzinfo=datetime.UTC)


def _pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*IN_PROCESS, "-p", "no:cacheprovider", *args)


def _golden_bytes(pytester: pytest.Pytester) -> dict[str, bytes]:
    folder = Path(pytester.path, "golden")
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.json*"))}


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> dict[str, bytes]:
    """The agent's golden, recorded on 1 December."""
    pytester.makepyfile(test_orders=DATED_TEST)
    with time_machine.travel(DAY_ONE, tick=True):
        _pytest(pytester, "--rollout-record").assert_outcomes(passed=1)
    return _golden_bytes(pytester)


def test_a_golden_recorded_yesterday_replays_green_today_and_next_month(
    pytester: pytest.Pytester, recorded: dict[str, bytes]
) -> None:
    for day in (DAY_ONE + datetime.timedelta(days=1), DAY_ONE + datetime.timedelta(days=31)):
        with time_machine.travel(day, tick=True):
            _pytest(pytester, "--rollout-compare=golden/").assert_outcomes(passed=1)
    assert _golden_bytes(pytester) == recorded


def test_re_recording_with_fresh_ids_and_times_leaves_the_golden_byte_identical(
    pytester: pytest.Pytester, recorded: dict[str, bytes]
) -> None:
    with time_machine.travel(DAY_ONE + datetime.timedelta(days=2), tick=True):
        result = _pytest(pytester, "--rollout-record")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["0 golden(s) written (0 created, 0 updated), 1 unchanged"])
    assert _golden_bytes(pytester) == recorded


def test_a_prompt_with_two_dates_where_it_had_one_fails(
    pytester: pytest.Pytester, recorded: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWO_DATES", "1")
    with time_machine.travel(DAY_ONE + datetime.timedelta(days=1), tick=True):
        result = _pytest(pytester, "--rollout-compare=golden/")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "this run left its golden at step 1: prompt_mismatch "
            "(attributed to the harness: the agent's prompt, model or tools)",
            "Golden: golden/test_orders/test_order.jsonl",
            "Divergence: the request differs from the recorded one at messages[0].content: "
            "recorded …. Today is",
            '    <date#1>.", got …. Today is <date#1>. Yesterday was <date#2>."',
        ]
    )


def test_an_agent_that_passes_an_order_it_was_not_given_fails_and_says_which(
    pytester: pytest.Pytester, recorded: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTHER_ORDER", "1")
    with time_machine.travel(DAY_ONE + datetime.timedelta(days=1), tick=True):
        result = _pytest(pytester, "--rollout-compare=golden/", "--rollout-mode=full")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "this run left its golden at step 2: tool_call_mismatch (attributed to the agent)",
            "  Difference (event 2 of the step):",
            "    data.tool_calls[0].arguments.order_id: another value than in its golden",
            "        its golden: <uuid#1> (the value returned by create_order at step 1)",
            "        this run: <uuid#2> (a value first seen here)",
        ]
    )
