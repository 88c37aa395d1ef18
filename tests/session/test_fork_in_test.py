"""``rollout.fork(step, override={...})`` below pytest: a run answered from its golden up to
step N, with replacements at N, and live after N (docs/replay.md, "Fork inside a test").

A research agent takes four turns (search, lookup, summarize, answer); its golden is recorded
once, then forked in dry and full replay, with provider agents and with SDK clients.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fake_models import APIS, OPENAI_BASE_URL, OPENAI_CHAT, Call, FakeModel, Say
from sdk_agents import AGENTS
from sessions import new_session

from pytest_rollout import ReplayDivergenceError, RolloutError, ToolCall, Turn
from pytest_rollout.format.events import LLM_TURN_COMPLETED, RUN_STARTED, TOOL_CALL_COMPLETED
from pytest_rollout.format.loader import loads
from pytest_rollout.replay.fork import ForkError, ForkResult
from pytest_rollout.session import Mode, RolloutSession
from pytest_rollout.store.golden_store import LoadedGolden

QUESTION = "Who wrote the report?"


class Model:
    """Decides from the tool results so far; counts the turns it is asked for."""

    model = "fake-1"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, messages: list[Any], tools: Any = None, **params: Any) -> Turn:
        self.calls += 1
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if not results:
            return Turn(None, [ToolCall("call_s", "search", {"query": "report"})])
        if len(results) == 1:
            return Turn(None, [ToolCall("call_l", "lookup", {"doc": results[0]})])
        if len(results) == 2:
            return Turn(None, [ToolCall("call_m", "summarize", {"text": str(results[1])})])
        return Turn(f"answer: {results[-1]}")


@dataclass
class Tools:
    """The agent's tools, counting the calls that ran."""

    ran: list[str]
    docs: list[Any] = field(default_factory=list)

    def search(self, query: str) -> str:
        self.ran.append("search")
        return "doc-7"

    def lookup(self, doc: str) -> str:
        self.ran.append("lookup")
        self.docs.append(doc)
        return "written by Ada"

    def summarize(self, text: str) -> str:
        self.ran.append("summarize")
        return f"in short, {text}"


def research(session: RolloutSession, llm: Any, tools: Tools) -> str:
    wrapped = session.tools(
        {"search": tools.search, "lookup": tools.lookup, "summarize": tools.summarize}
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    with session.run(prompt=QUESTION) as run:
        while True:
            turn = llm.complete(messages)
            messages.append({"role": "assistant", "content": turn.content})
            if not turn.tool_calls:
                run.output = turn.content
                break
            for call in turn.tool_calls:
                try:
                    result: Any = wrapped[call.name](**call.arguments)
                except LookupError as exc:
                    result = f"failed: {exc}"
                messages.append({"role": "tool", "content": result})
    session.close()
    return str(run.output)


@pytest.fixture
def golden(tmp_path: Path) -> LoadedGolden:
    """The research agent's golden, written to a file (a fork names its digest)."""
    session = new_session(Mode.RECORD)
    assert research(session, session.provider(Model()), Tools([])) == (
        "answer: in short, written by Ada"
    )
    path = tmp_path / "golden.jsonl"
    path.write_bytes(session.recorder.getvalue())
    return LoadedGolden.of(loads(path.read_bytes(), path=str(path)), path)


def _fork(
    golden: LoadedGolden, mode: Mode, step: int, override: dict[str, Any]
) -> tuple[RolloutSession, Model, Tools, str]:
    session = new_session(mode, golden)
    model, tools = Model(), Tools([])
    llm = session.provider(model)
    assert isinstance(session.fork(step, override=override), ForkResult)
    return session, model, tools, research(session, llm, tools)


def _completed(session: RolloutSession) -> list[tuple[int, str, Any]]:
    return [
        (e.step, e.data["name"], e.data.get("output", e.data.get("error")))
        for e in session.events()
        if e.type == TOOL_CALL_COMPLETED
    ]


@pytest.mark.parametrize("mode", [Mode.DRY, Mode.FULL])
def test_a_fork_is_the_golden_up_to_its_step_and_live_after(
    golden: LoadedGolden, mode: Mode
) -> None:
    session, model, tools, answer = _fork(golden, mode, 2, {"lookup": "written by Grace"})
    assert answer == "answer: in short, written by Grace"
    assert model.calls == 2  # turns 3 and 4: 1 and 2 came from the golden
    assert tools.ran == ["summarize"]  # after step 2 the tools run live
    assert _completed(session) == [
        (1, "search", "doc-7"),
        (2, "lookup", "written by Grace"),
        (3, "summarize", "in short, written by Grace"),
    ]
    assert session.engine.divergences() == []
    rollout = golden.require()
    started = session.events()[0]
    assert started.type == RUN_STARTED
    assert started.data["forked_from"] == {
        "run_id": rollout.events[0].data["run_id"],
        "golden": "sha256:" + hashlib.sha256(golden.path.read_bytes()).hexdigest(),
        "step": 2,
    }


def test_a_replacement_is_named_by_call_id_and_may_be_an_error(golden: LoadedGolden) -> None:
    session, _, _, answer = _fork(golden, Mode.DRY, 2, {"call_l": LookupError("archive offline")})
    assert answer == "answer: in short, failed: archive offline"
    assert _completed(session)[1] == (
        2,
        "lookup",
        {"class": "LookupError", "message": "archive offline"},
    )


def test_a_typed_replacement_is_recorded_and_handed_over_as_replay_does(
    golden: LoadedGolden,
) -> None:
    session, _, tools, _ = _fork(golden, Mode.DRY, 1, {"search": ("doc-1", "doc-2")})
    completed = next(e for e in session.events() if e.type == TOOL_CALL_COMPLETED)
    assert completed.data["output"] == ["doc-1", "doc-2"]
    assert completed.data["output_type"] == "builtins:tuple"
    assert tools.docs == [("doc-1", "doc-2")]  # rebuilt, as a recorded tuple would be


def test_the_model_turn_at_the_step_can_be_replaced(golden: LoadedGolden) -> None:
    calls = [
        ToolCall("new_1", "summarize", {"text": "x"}),
        ToolCall("new_2", "search", {"query": "y"}),
    ]
    override = {"turn": Turn("hmm", calls), "new_1": "short"}
    session, model, tools, answer = _fork(golden, Mode.DRY, 2, override)
    # Of the new turn's calls, the one replaced is answered, the other runs live (the golden
    # answered the golden's turn, not this one); the turn after the step is live.
    assert tools.ran == ["search"]
    assert _completed(session)[1:] == [(2, "summarize", "short"), (2, "search", "doc-7")]
    assert model.calls == 1
    assert answer == "answer: doc-7"
    contents = [e.data["content"] for e in session.events() if e.type == LLM_TURN_COMPLETED]
    assert contents == [None, "hmm", "answer: doc-7"]
    assert session.engine.divergences() == []


def test_a_prefix_that_does_not_replay_is_still_a_divergence(golden: LoadedGolden) -> None:
    session = new_session(Mode.DRY, golden)
    model = Model()
    llm = session.provider(model)
    session.fork(2, override={})
    with pytest.raises(ReplayDivergenceError), session.run(prompt=QUESTION):
        llm.complete([{"role": "user", "content": "Who wrote the other report?"}])
    session.close()
    assert session.engine.divergences()[0].kind.value == "prompt_mismatch"
    assert not session.verdict().matched  # the verdict of a fork that diverged: its report
    assert model.calls == 0


def test_a_fork_that_stops_before_its_step_leaves_turns_unconsumed(golden: LoadedGolden) -> None:
    session = new_session(Mode.DRY, golden)
    llm = session.provider(Model())
    session.fork(3, override={})
    with session.run(prompt=QUESTION):
        llm.complete([{"role": "user", "content": QUESTION}])
    session.close()
    (unconsumed,) = [d for d in session.engine.divergences() if d.kind.value == "unconsumed_turn"]
    assert unconsumed.detail.startswith("2 recorded turn(s) from step 2 on")  # not step 4


def test_a_provider_without_a_live_model_says_so_after_the_step(golden: LoadedGolden) -> None:
    session = new_session(Mode.DRY, golden)
    llm = session.recorded_provider()
    session.fork(3, override={})
    with pytest.raises(RolloutError, match="goes on live after step 3, but this provider has no"):
        research(session, llm, Tools([]))


def test_a_refused_fork_changes_nothing(golden: LoadedGolden) -> None:
    session = new_session(Mode.DRY, golden)
    llm = session.provider(Model())
    with pytest.raises(ForkError, match="names no tool call of step 2"):
        session.fork(2, override={"lookup": "x", "nothing": "y"})
    with pytest.raises(ForkError, match=r"cannot fork .* at step 0"):
        session.fork(0, override={})
    assert session.engine.fork is None
    assert research(session, llm, Tools([])) == "answer: in short, written by Ada"
    assert session.verdict().matched


REFUSED = [
    pytest.param(["not", "a", "mapping"], "override maps tool call ids or tool names", id="list"),
    pytest.param({1: "x"}, "override's keys are tool call ids, tool names or", id="key"),
    pytest.param({"turn": 3}, 'override\\["turn"\\]: a provider must return', id="turn"),
    pytest.param({"lookup": object()}, "cannot be recorded", id="value"),
]


@pytest.mark.parametrize(("override", "said"), REFUSED)
def test_an_override_of_the_wrong_shape_is_refused(
    golden: LoadedGolden, override: Any, said: str
) -> None:
    session = new_session(Mode.DRY, golden)
    with pytest.raises(ForkError, match=said):
        session.fork(2, override=override)


def test_a_run_forks_once_and_before_it_records_anything(golden: LoadedGolden) -> None:
    session = new_session(Mode.DRY, golden)
    session.fork(2, override={})
    with pytest.raises(ForkError, match="is a fork of its golden already"):
        session.fork(2, override={})
    began = new_session(Mode.DRY, golden)
    with began.run(prompt=QUESTION):
        began.emit("agent.note", text="first")
        with pytest.raises(ForkError, match="comes after the run began"):
            began.fork(2, override={})


def test_a_fork_needs_a_golden_to_replay(golden: LoadedGolden) -> None:
    with pytest.raises(ForkError, match="a test run with --rollout-record replays none"):
        new_session(Mode.RECORD).fork(1, override={})
    with pytest.raises(RolloutError, match="a replay=False test reads no golden"):
        new_session(Mode.LIVE).fork(1, override={})


def test_without_override_fork_only_gives_the_conversation(golden: LoadedGolden) -> None:
    session = new_session(Mode.DRY, golden)
    conversation = session.fork(2, format="openai")
    assert conversation.from_step == 2
    assert session.engine.fork is None
    research(session, session.provider(Model()), Tools([]))
    assert session.verdict().matched


# -- SDK clients -------------------------------------------------------------------------------

SCRIPT = (
    Call("get_weather", {"city": "Paris"}),
    Call("get_weather", {"city": "Oslo"}),
    Say("Sunny in Paris, cloudy in Oslo."),
)


def _sdk_run(session: RolloutSession, api: str, transport: Any) -> str:
    factory, agent, _ = AGENTS[api]
    base_url = "http://fake.test" if factory == "anthropic" else OPENAI_BASE_URL
    client = getattr(session, factory)(transport=transport, api_key="sk-test", base_url=base_url)
    tools = session.tools({"get_weather": lambda city: {"city": city, "sky": "cloudy"}})
    with session.run(prompt=QUESTION) as run:
        run.output = agent(client, QUESTION, tools, stream=False)
    session.close()
    return str(run.output)


def _sdk_golden(api: str, tmp_path: Path) -> LoadedGolden:
    session = new_session(Mode.RECORD)
    _sdk_run(session, api, FakeModel(api, SCRIPT).transport())
    path = tmp_path / "sdk.jsonl"
    path.write_bytes(session.recorder.getvalue())
    return LoadedGolden.of(session.recorder.rollout(), path)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("mode", [Mode.DRY, Mode.FULL])
def test_an_sdk_client_forks_on_a_tool_result(api: str, mode: Mode, tmp_path: Path) -> None:
    golden = _sdk_golden(api, tmp_path)
    session = new_session(mode, golden)
    session.fork(2, override={"get_weather": {"city": "Oslo", "sky": "snow"}})
    live = FakeModel(api, [Say("Snow in Oslo.")])
    assert _sdk_run(session, api, live.transport()) == "Snow in Oslo."
    assert len(live.requests) == 1  # the turns up to step 2 came from the golden
    assert "snow" in json.dumps(live.requests[0])
    outputs = [e.data["output"] for e in session.events() if e.type == TOOL_CALL_COMPLETED]
    assert outputs == [{"city": "Paris", "sky": "cloudy"}, {"city": "Oslo", "sky": "snow"}]
    assert session.engine.divergences() == []


def test_an_sdk_client_takes_no_replacement_turn(tmp_path: Path) -> None:
    golden = _sdk_golden(OPENAI_CHAT, tmp_path)
    session = new_session(Mode.DRY, golden)
    session.fork(2, override={"turn": Turn("no")})
    with pytest.raises(ForkError, match="an SDK client is answered with the golden's recorded"):
        session.openai(api_key="sk-test", base_url=OPENAI_BASE_URL)


def test_a_dry_fork_comes_before_the_sdk_clients(tmp_path: Path) -> None:
    golden = _sdk_golden(OPENAI_CHAT, tmp_path)
    session = new_session(Mode.DRY, golden)
    session.openai(api_key="sk-test", base_url=OPENAI_BASE_URL)
    with pytest.raises(RolloutError, match="comes after an SDK client was built"):
        session.fork(2, override={})
    assert session.engine.fork is None


def test_a_golden_whose_file_is_gone_cannot_be_named(golden: LoadedGolden) -> None:
    golden.path.unlink()  # the store reads a golden's digest with it; this one has none
    with pytest.raises(ForkError, match="cannot be read to name it as the fork's origin"):
        new_session(Mode.DRY, golden).fork(1, override={})


class Trail:
    """An audit trail that counts every tool as an action."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, Any]] = []

    def is_action(self, tool_name: str) -> bool:
        return True

    def write(self, run_id: str, event_type: str, payload: Any) -> None:
        self.entries.append((payload.get("name"), payload.get("live")))


def test_the_audit_trail_says_which_calls_of_a_fork_ran_live(golden: LoadedGolden) -> None:
    trail = Trail()
    session = new_session(Mode.DRY, golden, audit=trail)
    llm = session.provider(Model())
    session.fork(2, override={"lookup": "written by Grace"})
    research(session, llm, Tools([]))
    calls = [entry for entry in trail.entries if entry[0] is not None]
    assert calls == [("search", False), ("lookup", False), ("summarize", True)]
