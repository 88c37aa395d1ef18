"""A ``RolloutSession`` as the plugin builds one for a test, for tests that drive a session
directly (no pytest run): the SDK, replay and analyzer tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_rollout import ToolCall, Turn
from pytest_rollout.format.loader import Rollout
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.session import Mode, RolloutSession
from pytest_rollout.session.engine import AuditSink
from pytest_rollout.session.setup import RunSetup
from pytest_rollout.store.golden_store import LoadedGolden

TEST_ID = "t.py::test_agent"
GOLDEN_PATH = "golden/t/test_agent.jsonl"


def new_session(
    mode: Mode = Mode.RECORD,
    golden: Rollout | LoadedGolden | None = None,
    *,
    recorder: Recorder | None = None,
    audit: AuditSink | None = None,
    **setup: Any,
) -> RolloutSession:
    """A session of the test ``TEST_ID`` in ``mode``, replaying ``golden`` (as the store
    opens it, from ``GOLDEN_PATH``), recording into a fresh in-memory recorder unless
    ``recorder`` is given; ``setup`` goes to its :class:`RunSetup` as it is."""
    if isinstance(golden, Rollout):
        golden = LoadedGolden.of(golden, GOLDEN_PATH)
    run_setup = RunSetup(test_id=TEST_ID, mode=mode, golden_path=Path(GOLDEN_PATH), **setup)
    return RolloutSession(run_setup, recorder or Recorder(), golden, audit)


class Scripted:
    """A provider answering from a script of turns (:func:`scripted_turns`: the third is
    costly, the fourth calls an action)."""

    model = "gpt-4o-mini"

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = list(turns)

    def complete(self, messages: Any, tools: Any = None, **params: Any) -> Turn:
        return self.turns.pop(0)


def scripted_turns() -> list[Turn]:
    usage = {"input_tokens": 1000, "output_tokens": 50}
    lookup = ToolCall("c1", "lookup", {"city": "Paris"})
    return [
        Turn(None, [lookup], usage, 0.001, "gpt-4o-mini"),
        Turn(None, [ToolCall("c2", "lookup", {"city": "Paris"})], usage, 0.001, "gpt-4o-mini"),
        Turn(None, [ToolCall("c3", "lookup", {"city": "Paris"})], usage, 0.009, "gpt-4o-mini"),
        Turn(None, [ToolCall("c4", "delete_file", {"path": "/tmp/x"})], usage, 0.001, None),
        Turn("done", [], {"input_tokens": 110000, "output_tokens": 10}, 0.001, "gpt-4o-mini"),
    ]


TOOLS_SCHEMA = [{"type": "function", "function": {"name": "lookup"}}, {"name": "delete_file"}]


def scripted_agent(session: RolloutSession, live: Any = None) -> str:
    llm = session.provider(live)
    tools = session.tools(
        {"lookup": lambda city: {"city": city, "sky": "sunny"}, "delete_file": lambda path: None}
    )
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    with session.run(prompt="Weather in Paris?") as run:
        while True:
            turn = llm.complete(messages, TOOLS_SCHEMA)
            if not turn.tool_calls:
                run.output = turn.content
                break
            for call in turn.tool_calls:
                result = tools[call.name](**call.arguments)
                messages.append({"role": "tool", "content": str(result)})
    session.close()
    return str(run.output)
