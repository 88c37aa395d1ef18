"""MCP servers recorded and replayed, below pytest: the suite's stdio server
(``mcp_server.py``) behind the ``mcp`` package's ``Client``, the Agents SDK's
``MCPServerStdio`` and pydantic-ai's ``MCPToolset``, each wrapped with ``rollout.mcp(...)``,
their agents on the fake model service (fresh ids and times on every call).

Each agent is recorded with the server running, then replayed with the server never started
(it writes a marker file whenever it starts) and the model offline. A changed agent diverges
with the kind and attribution of its change; a server whose tools changed is a
``setup_mismatch`` of the harness.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip("mcp", reason="pip install mcp")

from fake_models import OPENAI_CHAT, OPENAI_RESPONSES, FakeModel, offline_transport
from mcp_agents import (
    ANSWER,
    ERROR_SCRIPT,
    SCRIPT,
    agents_sdk_agent,
    client_agent,
    pydantic_ai_agent,
)
from sessions import new_session

from pytest_rollout import ReplayDivergenceError
from pytest_rollout.cli import main as rollout_main
from pytest_rollout.diff.divergence import DivergenceKind, classify
from pytest_rollout.diff.drift import drift_report
from pytest_rollout.format.events import (
    MCP_TOOLS_LISTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
)
from pytest_rollout.format.loader import Rollout, loads
from pytest_rollout.session import Mode, RolloutSession

pytestmark = pytest.mark.slow  # starts an MCP server process, runs agent frameworks


async def _client_answer(rollout: Any, transport: Any, **kwargs: Any) -> str:
    answer, _ = await client_agent(rollout, transport, **kwargs)
    return answer


#: Each stack: the API its model speaks, its agent, the modules it needs and their pip line.
STACKS: dict[str, tuple[str, Callable[..., Any], str, str]] = {
    "mcp-client": (OPENAI_CHAT, _client_answer, "mcp", "mcp"),
    "agents-sdk": (OPENAI_RESPONSES, agents_sdk_agent, "agents.mcp", "openai-agents"),
    "pydantic-ai": (OPENAI_CHAT, pydantic_ai_agent, "pydantic_ai.mcp", "pydantic-ai-slim[mcp]"),
}


@pytest.fixture(params=list(STACKS))
def stack(request: pytest.FixtureRequest) -> tuple[str, Callable[..., Any]]:
    api, agent, module, pip = STACKS[request.param]
    pytest.importorskip(module, reason=f"pip install {pip}")
    return api, agent


def _run(session: RolloutSession, agent: Callable[..., Any], transport: Any, **kwargs: Any) -> Any:
    with session.run(prompt="Weather in Paris and Oslo?") as run:
        run.output = asyncio.run(agent(session, transport, **kwargs))
    session.close()
    return run.output


def _record(
    api: str, agent: Callable[..., Any], marker: Path, script: Any = SCRIPT, **kwargs: Any
) -> Rollout:
    session = new_session(Mode.RECORD)
    fake = FakeModel(api, script)
    _run(session, agent, fake.transport(), marker=marker, **kwargs)
    assert fake.remaining == 0
    return session.recorder.rollout()


def test_a_recorded_mcp_run_replays_without_starting_the_server(
    stack: tuple[str, Callable[..., Any]], tmp_path: Path
) -> None:
    api, agent = stack
    golden = _record(api, agent, tmp_path / "recorded")
    assert (tmp_path / "recorded").exists()  # the server ran while recording

    [listed, *_] = [e.data for e in golden.events if e.type == MCP_TOOLS_LISTED]
    assert listed["server"] == "weather"
    assert [t["name"] for t in listed["tools"]] == ["get_weather", "lookup_order"]
    assert listed["tools"][0]["inputSchema"]["required"] == ["city"]
    started = [e.data for e in golden.events if e.type == TOOL_CALL_STARTED]
    assert sorted(s["arguments"]["city"] for s in started) == ["Oslo", "Paris"]
    assert all(s["call_id"] for s in started)
    outputs = {
        e.data["call_id"]: e.data["output"] for e in golden.events if e.type == TOOL_CALL_COMPLETED
    }
    paris = next(s["call_id"] for s in started if s["arguments"]["city"] == "Paris")
    assert outputs[paris]["content"] == [{"type": "text", "text": "Sunny in Paris, 21 degrees."}]
    assert outputs[paris]["isError"] is False

    # Recorded again, with fresh ids, times and another server process: the same run.
    again = _record(api, agent, tmp_path / "again")
    assert drift_report(golden.events, again.events).matched

    replay = new_session(Mode.DRY, golden)
    answer = _run(replay, agent, offline_transport(), marker=tmp_path / "replayed")
    assert ANSWER in str(answer)
    assert not (tmp_path / "replayed").exists()  # the server was never started
    verdict = replay.verdict()
    assert verdict.matched, verdict.report.divergences
    assert replay.engine.divergences() == []


def test_a_recorded_mcp_golden_passes_the_integrity_check(tmp_path: Path) -> None:
    golden = _record(OPENAI_CHAT, _client_answer, tmp_path / "marker")
    path = tmp_path / "golden.jsonl"
    path.write_bytes(b"".join(golden_lines(golden)))
    assert loads(path.read_bytes()).events[1].type == MCP_TOOLS_LISTED  # the schema takes it
    out = io.StringIO()
    assert rollout_main(["check", str(path)], out=out) == 0
    assert f"{path}: matched" in out.getvalue()


def golden_lines(golden: Rollout) -> list[bytes]:
    return [orjson.dumps(e.to_json_obj()) + b"\n" for e in golden.events]


def test_an_error_result_is_a_completed_call_and_replays_as_one(tmp_path: Path) -> None:
    session = new_session(Mode.RECORD)
    fake = FakeModel(OPENAI_CHAT, ERROR_SCRIPT)
    with session.run() as run:
        run.output = asyncio.run(client_agent(session, fake.transport(), marker=tmp_path / "m"))
    session.close()
    golden = session.recorder.rollout()
    [completed] = [e.data for e in golden.events if e.type == TOOL_CALL_COMPLETED]
    assert "error" not in completed
    assert completed["output"]["isError"] is True
    message = "Error executing tool get_weather: no weather station in Atlantis"
    assert completed["output"]["content"] == [{"type": "text", "text": message}]

    replay = new_session(Mode.DRY, golden)
    with replay.run() as run:
        run.output = asyncio.run(client_agent(replay, offline_transport(), marker=tmp_path / "r"))
    replay.close()
    _, [result] = run.output
    assert type(result).__module__.startswith("mcp")  # the SDK's own CallToolResult
    assert result.is_error is True
    assert result.content[0].text == message
    assert replay.verdict().matched


def _replay_changed(
    api: str, agent: Callable[..., Any], tmp_path: Path, change: str
) -> tuple[RolloutSession, Any]:
    golden = _record(api, agent, tmp_path / "recorded")
    replay = new_session(Mode.DRY, golden)
    with pytest.raises(ReplayDivergenceError):
        _run(replay, agent, offline_transport(), marker=tmp_path / "replayed", change=change)
    assert not (tmp_path / "replayed").exists()
    assert replay.engine.replay is not None
    return replay, replay.engine.replay.divergences[0]


@pytest.mark.parametrize("name", ["mcp-client", "pydantic-ai"])
def test_a_changed_mcp_tool_argument_is_the_agents_tool_call_mismatch(
    name: str, tmp_path: Path
) -> None:
    api, agent, module, pip = STACKS[name]
    pytest.importorskip(module, reason=f"pip install {pip}")
    golden = _record(api, agent, tmp_path / "recorded")
    replay = new_session(Mode.DRY, golden)
    # The divergence is raised to the agent, whose framework may turn it into its own error.
    with contextlib.suppress(Exception):
        _run(replay, agent, offline_transport(), marker=tmp_path / "replayed", change="argument")
    assert not (tmp_path / "replayed").exists()
    assert replay.engine.replay is not None
    divergence = replay.engine.replay.divergences[0]
    assert divergence.kind is DivergenceKind.TOOL_CALL_MISMATCH
    assert divergence.attribution == "agent"
    assert divergence.step == 1
    assert 'recorded get_weather(city="Paris"), got get_weather(city="PARIS")' in divergence.detail
    assert not replay.verdict().matched


def test_a_tool_dropped_from_the_listing_is_the_harnesss_prompt_mismatch(
    stack: tuple[str, Callable[..., Any]], tmp_path: Path
) -> None:
    api, agent = stack
    _, divergence = _replay_changed(api, agent, tmp_path, "drop-tool")
    assert divergence.kind is DivergenceKind.PROMPT_MISMATCH
    assert divergence.attribution == "harness"
    assert divergence.step == 1
    assert "tools" in divergence.detail


def test_a_server_whose_tool_schema_changed_is_a_setup_mismatch_of_the_harness(
    tmp_path: Path,
) -> None:
    golden = _record(OPENAI_CHAT, _client_answer, tmp_path / "a")
    changed = _record(OPENAI_CHAT, _client_answer, tmp_path / "b", variant="v2")
    report = drift_report(golden.events, changed.events)
    assert not report.matched
    divergence = classify(report.comparison)
    assert divergence is not None
    assert divergence.kind is DivergenceKind.SETUP_MISMATCH
    assert divergence.attribution == "harness"
    assert divergence.step == 0
    assert divergence.detail.startswith("first difference in data.tools[0]")


def test_a_listing_past_the_recording_is_an_unrecorded_call(tmp_path: Path) -> None:
    golden = _record(OPENAI_CHAT, _client_answer, tmp_path / "m")
    replay = new_session(Mode.DRY, golden)

    async def lists_twice() -> None:
        from mcp.client import Client

        async with replay.mcp(Client("http://127.0.0.1:9/mcp"), name="weather") as client:
            await client.list_tools()
            await client.list_tools()

    with replay.run(), pytest.raises(ReplayDivergenceError) as raised:
        asyncio.run(lists_twice())
    replay.close()
    divergence = raised.value.divergence
    assert divergence.kind is DivergenceKind.UNRECORDED_CALL
    assert divergence.detail == (
        "tools/list #2 of the MCP server 'weather' is not in the recording (it holds 1 "
        "listing(s) of that server)"
    )


def test_what_rollout_mcp_cannot_record_is_named() -> None:
    session = new_session(Mode.RECORD)
    with pytest.raises(TypeError, match=r"rollout.mcp\(\) cannot record a builtins.dict; it takes"):
        session.mcp({})
