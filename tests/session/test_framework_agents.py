"""Runs with several agents, on real agent frameworks against the fake service.

One support desk per stack (``multi_agents.py``): the OpenAI Agents SDK (a handoff and an
agent run as a tool), LangGraph (a supervisor and two workers, one made by ``create_agent``,
one a graph built by hand), pydantic-ai (an agent that delegates to another inside a tool),
AutoGen (a ``Swarm`` that hands off), CrewAI (a crew of two; it pins the OpenAI SDK's 2.x
line, so ``.ci/frameworks`` runs it, with ``-k crewai``) and a hand-written loop naming its
agents with ``rollout.agent``. The project holding them all is recorded, recorded again
and replayed with the service gone, once for all the tests here (the first test makes the
runs, in its pytester, and the others read what they did). What a user relies on:

* the golden names the agent on each turn and tool call, as the framework says who acts;
* a ``handoff`` is recorded wherever control passes, by the agent that passed it;
* re-recording leaves every golden byte-identical, and the unchanged desk replays green;
* a break in one agent's tool call is reported with that agent's name, at its step.

How LangGraph's and AutoGen's names are read is also checked on its own, without a run.
"""

from __future__ import annotations

import contextvars
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from multi_agents import STACKS, USER_TESTS
from plugin_agent import IN_PROCESS, failure_sections

from pytest_rollout.session.frameworks import langchain
from pytest_rollout.session.frameworks.autogen import agent_name

SLOW: Final = pytest.mark.slow  # real agent frameworks

HERE: Final = Path(__file__).parent.parent  # the tests folder, where the helpers are
#: Every warning reaches the inner run's summary (the outer suite turns warnings into errors).
SHOW_WARNINGS: Final = ("-W", "always::Warning")
NO_TRUNCATION: Final = ("-o", "truncation_limit_lines=0", "-o", "truncation_limit_chars=0")
_OUTCOME: Final = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+?)(?: - (.*))?$")
_HEADLINE: Final = re.compile(r"left its golden at step (\d+) \(([^)]+)\): (\w+) \(attributed")
_BODY_STEP: Final = re.compile(r"First divergence at step (\d+)")
#: The events an agent does (each must name it).
_ACTS: Final = (
    "llm.turn.started",
    "llm.turn.completed",
    "tool.call.started",
    "tool.call.completed",
)


@dataclass(frozen=True)
class DeskRuns:
    """What the project did: two recordings, and a replay with the service gone (the
    ``break`` tests replay their desk broken). ``stacks``: those whose framework is here."""

    stacks: tuple[str, ...]
    root: Path
    record: pytest.RunResult
    rerecord: pytest.RunResult
    recorded: dict[str, bytes]
    rerecorded: dict[str, bytes]
    replay: pytest.RunResult

    def golden(self, stack: str) -> list[dict[str, Any]]:
        """The events of the stack's unchanged desk, as recorded."""
        path = self.root / "golden" / f"test_{stack}" / f"test_{stack}_desk.jsonl"
        return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (goldens and receipts), by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _inner(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(
        *SHOW_WARNINGS, *IN_PROCESS, "-p", "no:cacheprovider", "-rA", *NO_TRUNCATION, *args
    )


def _installed(stack: str, mp: pytest.MonkeyPatch) -> bool:
    """Whether the stack's framework imports (imported here, before pytester: it forgets
    what an inner run imports, and pydantic does not survive a second import)."""
    for name, value in STACKS[stack].env:
        mp.setenv(name, value)
    try:
        with warnings.catch_warnings():
            # What a framework warns of on import (CrewAI: an ImportWarning) is its own.
            warnings.simplefilter("ignore")
            for module in STACKS[stack].modules:
                import_module(module)
    except ImportError:
        return False
    return True


def _run_desks(
    pytester: pytest.Pytester, mp: pytest.MonkeyPatch, stacks: tuple[str, ...]
) -> DeskRuns:
    files = {"fake_models": (HERE / "fake_models.py").read_text(encoding="utf-8")}
    for stack in stacks:
        files[f"desk_{stack}"] = STACKS[stack].source
        files[f"test_{stack}"] = USER_TESTS.format(
            stack=stack, module=f"desk_{stack}", full=STACKS[stack].full
        )
    pytester.makepyfile(**files)
    record = _inner(pytester, "--rollout-record")
    recorded = _tree(pytester.path / "golden")
    rerecord = _inner(pytester, "--rollout-record")
    rerecorded = _tree(pytester.path / "golden")
    mp.setenv("MODEL_OFFLINE", "1")
    replay = _inner(pytester)
    return DeskRuns(stacks, pytester.path, record, rerecord, recorded, rerecorded, replay)


@pytest.fixture(scope="module")
def done() -> dict[str, DeskRuns]:
    """The runs of the project, made once for all the tests of this module."""
    return {}


@pytest.fixture
def runs(request: pytest.FixtureRequest, done: dict[str, DeskRuns]) -> DeskRuns:
    if "desks" not in done:
        monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
        stacks = tuple(stack for stack in STACKS if _installed(stack, monkeypatch))
        pytester: pytest.Pytester = request.getfixturevalue("pytester")
        done["desks"] = _run_desks(pytester, monkeypatch, stacks)
    return done["desks"]


@pytest.fixture(params=list(STACKS))
def stack(request: pytest.FixtureRequest, runs: DeskRuns) -> str:
    name: str = request.param
    if name not in runs.stacks:
        pytest.skip(f"the {name} desk needs its framework: {STACKS[name].pip}")
    return name


def _outcomes(result: pytest.RunResult) -> dict[str, tuple[str, str]]:
    """Each inner test's outcome and its one-line reason, from the ``-rA`` summary."""
    found: dict[str, tuple[str, str]] = {}
    for line in result.outlines:
        match = _OUTCOME.match(line)
        if match:
            found[match.group(2).split("::", 1)[-1]] = (match.group(1), match.group(3) or "")
    return found


def _outcome(result: pytest.RunResult, test: str) -> str:
    return _outcomes(result).get(test, ("MISSING", ""))[0]


def _section(result: pytest.RunResult, test: str) -> str:
    """An inner test's failure report (empty when it did not fail)."""
    return "\n".join(failure_sections(result).get(test, []))


# -- record ----------------------------------------------------------------------------


@SLOW
def test_every_desk_records(runs: DeskRuns) -> None:
    outcomes = _outcomes(runs.record)
    failed = {name: why for name, (status, why) in outcomes.items() if status != "PASSED"}
    assert failed == {}
    assert len(outcomes) == 2 * len(runs.stacks)


@SLOW
def test_the_golden_names_the_agent_of_every_turn_and_tool_call(runs: DeskRuns, stack: str) -> None:
    events = runs.golden(stack)
    acts = [e for e in events if e["type"] in _ACTS]
    unnamed = [(e["seq"], e["type"]) for e in acts if not isinstance(e["data"].get("agent"), str)]
    assert unnamed == []
    first_acts = list(dict.fromkeys(e["data"]["agent"] for e in acts))
    assert first_acts == list(STACKS[stack].agents)
    # The run's own start and end are nobody's.
    assert "agent" not in events[0]["data"]
    assert "agent" not in events[-1]["data"]


@SLOW
def test_a_handoff_is_recorded_where_control_passes(runs: DeskRuns, stack: str) -> None:
    events = runs.golden(stack)
    handoffs = [(i, e["data"]) for i, e in enumerate(events) if e["type"] == "handoff"]
    assert [(h["from"], h["to"]) for _, h in handoffs] == list(STACKS[stack].handoffs)
    for index, handoff in handoffs:
        assert handoff["agent"] == handoff["from"]  # the agent that passed control names it
        before = [e["data"].get("agent") for e in events[:index] if e["type"] in _ACTS]
        after = [e["data"].get("agent") for e in events[index + 1 :] if e["type"] in _ACTS]
        assert before[-1] == handoff["from"]
        assert after[0] == handoff["to"]


@SLOW
def test_rerecording_leaves_every_golden_byte_identical(runs: DeskRuns) -> None:
    assert runs.recorded, "no golden was written"
    assert sorted(runs.rerecorded) == sorted(runs.recorded)
    changed = sorted(p for p, data in runs.rerecorded.items() if runs.recorded[p] != data)
    assert changed == []
    goldens = sum(path.endswith(".jsonl") for path in runs.recorded)
    summary = f"0 golden(s) written (0 created, 0 updated), {goldens} unchanged"
    assert summary in runs.rerecord.outlines, runs.rerecord.stdout.str()


# -- replay ----------------------------------------------------------------------------


@SLOW
def test_an_unchanged_desk_replays_green_with_the_service_gone(runs: DeskRuns, stack: str) -> None:
    test = f"test_{stack}_desk"
    assert _outcome(runs.replay, test) == "PASSED", _section(runs.replay, test)


@SLOW
def test_a_broken_tool_call_is_reported_with_its_agents_name(runs: DeskRuns, stack: str) -> None:
    test = f"test_{stack}_break[tool_call]"
    assert _outcome(runs.replay, test) == "FAILED"
    report = _section(runs.replay, test)
    headline = _HEADLINE.search(report)
    assert headline is not None, report
    step, agent, kind = headline.groups()
    assert (agent, kind) == (STACKS[stack].broken_agent, "tool_call_mismatch"), report
    body = _BODY_STEP.search(report)
    assert body is not None, report
    assert body.group(1) == step, report
    # The step is the broken agent's own turn in the golden.
    turns = [e["data"] for e in runs.golden(stack) if e["type"] == "llm.turn.completed"]
    assert {t["step"]: t.get("agent") for t in turns}[int(step)] == agent


# -- how names are read ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "agent"),
    [
        # create_agent(..., name="billing") names itself, in its graph and in a parent's.
        (
            {"metadata": {"lc_agent_name": "billing", "langgraph_checkpoint_ns": "model:1"}},
            "billing",
        ),
        # A subgraph is named by the node that runs it, the innermost one.
        ({"metadata": {"langgraph_checkpoint_ns": "weather:1|tools:2"}}, "weather"),
        ({"metadata": {"langgraph_checkpoint_ns": "desk:0|weather:1|model:2"}}, "weather"),
        ({"configurable": {"checkpoint_ns": "weather:1|model:2"}}, "weather"),
        # The nodes of the top-level graph are one agent's loop: nobody is named.
        ({"metadata": {"langgraph_node": "model", "langgraph_checkpoint_ns": "model:1"}}, None),
        ({"metadata": {}}, None),
        # A config of another shape names nobody, and raises nothing.
        ({"metadata": "unexpected"}, None),
    ],
)
def test_a_langgraph_agent_is_named_by_its_graph(
    config: Mapping[str, Any], agent: str | None
) -> None:
    module = pytest.importorskip("langchain_core.runnables.config")
    resolve = langchain.resolver()
    assert resolve is not None

    def inside_a_node() -> str | None:
        module.var_child_runnable_config.set(config)
        return resolve()

    assert contextvars.copy_context().run(inside_a_node) == agent
    assert resolve() is None  # outside any runnable


@pytest.mark.parametrize(
    ("agent_type", "key", "name"),
    [
        ("billing_6f1c", "6f1c", "billing"),  # a team's participant
        ("SelectorGroupChatManager_6f1c", "6f1c", "SelectorGroupChatManager"),
        ("assistant", "default", "assistant"),  # an agent registered on its own
        ("_6f1c", "6f1c", "_6f1c"),  # nothing is left of a name: kept whole
    ],
)
def test_an_autogen_agent_is_named_by_its_participant_name(
    agent_type: str, key: str, name: str
) -> None:
    assert agent_name(agent_type, key) == name
