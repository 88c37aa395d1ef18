"""Gemini agents recorded and replayed, below pytest: the real google-genai SDK, our
transport, and a fake Gemini service on 127.0.0.1 that hands out fresh response ids,
timestamps and uneven latencies.

Each agent is recorded live from the fake, then replayed with the fake stopped: sync and
async, streamed and not, on the Gemini API and on Vertex AI (with no Google credentials in
replay). A changed agent diverges with the kind and attribution of its change.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

genai = pytest.importorskip("google.genai", reason="pip install google-genai")

from fake_gemini import Call, Fail, FakeGemini, Say  # noqa: E402
from gemini_agents import MODEL, SYSTEM, TOOLS, agent, async_agent  # noqa: E402
from sessions import new_session  # noqa: E402

from pytest_rollout import ReplayDivergenceError  # noqa: E402
from pytest_rollout.diff.divergence import DivergenceKind  # noqa: E402
from pytest_rollout.format.events import (  # noqa: E402
    LLM_TURN_COMPLETED,
    LLM_TURN_FAILED,
    LLM_TURN_STARTED,
    TOOL_CALL_COMPLETED,
)
from pytest_rollout.format.loader import Rollout  # noqa: E402
from pytest_rollout.sdk.clients import MissingPackageError  # noqa: E402
from pytest_rollout.session import Mode, RolloutSession  # noqa: E402

PROMPT = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris, 21 degrees."
#: Two function calls in one turn, then the answer.
SCRIPT = (
    [Call("get_weather", {"city": "Paris"}), Call("get_time", {"city": "Paris"})],
    Say(ANSWER),
)
VERTEX = {"vertexai": True, "project": "my-project", "location": "us-central1"}


def _vertex_recording() -> dict[str, Any]:
    """Vertex AI as recorded: the credentials a user has (a token, here)."""
    from google.oauth2.credentials import Credentials

    credentials = Credentials(token="test-token")  # type: ignore[no-untyped-call]
    return {**VERTEX, "credentials": credentials}


def _client(session: RolloutSession, base_url: str | None, *, aio: bool, **kwargs: Any) -> Any:
    if base_url is not None:
        kwargs["http_options"] = {"base_url": base_url}
    return session.async_gemini(**kwargs) if aio else session.gemini(**kwargs)


def _run(
    session: RolloutSession,
    client: Any,
    *,
    aio: bool = False,
    stream: bool = False,
    change: str = "",
    prompt: str = PROMPT,
) -> str:
    tools = session.tools(TOOLS)

    async def run_async() -> str:
        try:
            return await async_agent(client, prompt, tools, stream=stream, change=change)
        finally:
            await client.aclose()  # its connections belong to this event loop

    with session.run(prompt=prompt) as run:
        if aio:
            run.output = asyncio.run(run_async())
        else:
            with client:  # closes its connections
                run.output = agent(client, prompt, tools, stream=stream, change=change)
    session.close()
    return str(run.output)


def _record(
    *, aio: bool = False, stream: bool = False, script: Any = SCRIPT, **fake: Any
) -> tuple[Rollout, FakeGemini]:
    vertex = fake.pop("vertex", False)
    with FakeGemini(script, **fake) as service:
        session = new_session(Mode.RECORD)
        kwargs = _vertex_recording() if vertex else {"api_key": "test-key"}
        client = _client(session, service.base_url, aio=aio, **kwargs)
        _run(session, client, aio=aio, stream=stream)
    assert service.remaining == 0
    return session.recorder.rollout(), service


def _replay(
    golden: Rollout, *, aio: bool = False, stream: bool = False, change: str = "", **kwargs: Any
) -> tuple[RolloutSession, str]:
    replay = new_session(Mode.DRY, golden)
    # The stopped fake's address: a request that went live would be refused.
    client = _client(replay, kwargs.pop("base_url", None), aio=aio, **kwargs)
    return replay, _run(replay, client, aio=aio, stream=stream, change=change)


SHAPES = [
    pytest.param(aio, stream, id=f"{'async' if aio else 'sync'}-{'stream' if stream else 'json'}")
    for aio in (False, True)
    for stream in (False, True)
]


@pytest.mark.parametrize(("aio", "stream"), SHAPES)
def test_a_recorded_gemini_run_replays_with_the_service_stopped(aio: bool, stream: bool) -> None:
    golden, service = _record(aio=aio, stream=stream)
    assert len(service.requests) == 2
    path = service.requests[0][0]
    assert path.endswith(":streamGenerateContent?alt=sse" if stream else ":generateContent")
    replay, answer = _replay(golden, aio=aio, stream=stream, base_url=service.base_url)
    assert answer == ANSWER
    assert replay.verdict().matched, replay.verdict().divergences
    assert replay.engine.divergences() == []
    assert len(service.requests) == 2  # nothing reached the service


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_each_gemini_call_is_one_turn_with_parallel_calls_usage_and_cost(stream: bool) -> None:
    golden, _ = _record(stream=stream, cached=40)
    events = golden.events
    assert events[0].data["provider"] == "gemini"
    assert events[0].data["model"] == MODEL
    started = [e.data for e in events if e.type == LLM_TURN_STARTED]
    first_request = started[0]
    assert first_request["messages"][0] == {"role": "system", "content": SYSTEM}
    assert first_request["messages"][1] == {"role": "user", "parts": [{"text": PROMPT}]}
    assert first_request["params"]["model"] == MODEL
    assert first_request["params"].get("stream", False) is stream
    declared = first_request["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declared] == ["get_weather", "get_time"]
    first, last = (e.data for e in events if e.type == LLM_TURN_COMPLETED)
    assert first["content"] is None
    assert [(c["name"], c["arguments"]) for c in first["tool_calls"]] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"city": "Paris"}),
    ]
    ids = [c["id"] for c in first["tool_calls"]]
    assert len(set(ids)) == 2  # the service named none: each got one of its own
    assert all(ids)
    results = [e.data for e in events if e.type == TOOL_CALL_COMPLETED]
    assert [r["call_id"] for r in results] == ids
    assert last["content"] == ANSWER
    for data in (first, last):
        usage = data["usage"]
        assert usage["input_tokens"] > 40
        assert usage["output_tokens"] > 0
        assert usage["cache_read_tokens"] == 40
        # gemini-2.5-flash: $0.30 in (a tenth of it cached), $2.50 out, per million tokens
        expected = ((usage["input_tokens"] - 40) * 0.30 + 40 * 0.03) / 1e6
        expected += usage["output_tokens"] * 2.50 / 1e6
        assert data["cost_usd"] == pytest.approx(expected)
        assert ("frames" if stream else "json") in data["raw"]
    totals = events[-1].data["cost_totals"]["total_cost_usd"]
    assert totals == pytest.approx(first["cost_usd"] + last["cost_usd"])


def test_fresh_response_ids_and_times_do_not_change_the_request_keys() -> None:
    golden, _ = _record(call_ids=True)
    again, _ = _record(call_ids=True)
    keys = [
        [e.data["messages_hash"] for e in r.events if e.type == LLM_TURN_STARTED]
        for r in (golden, again)
    ]
    assert keys[0] == keys[1]
    # the ids the service gave are the calls' ids, and the agent sends them back
    first = next(e.data for e in golden.events if e.type == LLM_TURN_COMPLETED)
    second = [e.data for e in golden.events if e.type == LLM_TURN_STARTED][1]
    sent = [p["functionResponse"]["id"] for p in second["messages"][1]["parts"]]
    assert sent == [c["id"] for c in first["tool_calls"]]
    replay, answer = _replay(golden)
    assert answer == ANSWER
    assert replay.verdict().matched


def _divergence(replay: RolloutSession) -> Any:
    assert replay.engine.replay is not None
    return replay.engine.replay.divergences[0]


def _replay_changed(change: str) -> Any:
    golden, service = _record()
    replay = new_session(Mode.DRY, golden)
    client = _client(replay, service.base_url, aio=False)
    with pytest.raises(ReplayDivergenceError):
        _run(replay, client, change=change)
    assert len(service.requests) == 2
    return _divergence(replay)


def test_a_changed_tool_argument_is_the_agents_tool_call_mismatch() -> None:
    divergence = _replay_changed("argument")
    assert divergence.kind is DivergenceKind.TOOL_CALL_MISMATCH
    assert divergence.attribution == "agent"
    assert divergence.step == 1


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        (
            "system",
            "the request differs from the recorded one at messages[0].content: recorded "
            '…tant. Use the tools.", got …tant. Use the tools. Answer in French."',
        ),
        ("drop-tool", "the request differs from the recorded one at tools[0].functionDeclarations"),
        (
            "model",
            "the request differs from the recorded one at params.model: "
            'recorded "gemini-2.5-flash", got "gemini-2.5-pro"',
        ),
    ],
)
def test_a_changed_system_instruction_tool_list_or_model_is_the_harnesss_prompt_mismatch(
    change: str, detail: str
) -> None:
    divergence = _replay_changed(change)
    assert divergence.kind is DivergenceKind.PROMPT_MISMATCH
    assert divergence.attribution == "harness"
    assert divergence.step == 1
    assert divergence.detail.startswith(detail)


def test_a_tool_error_is_recorded_and_raised_again_in_replay() -> None:
    script = (Call("get_weather", {"city": "Atlantis"}), Say("There is no weather there."))
    with FakeGemini(script) as service:
        session = new_session(Mode.RECORD)
        client = _client(session, service.base_url, aio=False, api_key="test-key")
        assert _run(session, client, prompt="Atlantis?") == "There is no weather there."
    golden = session.recorder.rollout()
    [failed] = [e.data for e in golden.events if e.type == TOOL_CALL_COMPLETED]
    assert failed["error"]["class"] == "LookupError"
    # the agent told the model, and the model's next request says so
    second = [e.data for e in golden.events if e.type == LLM_TURN_STARTED][1]
    response = second["messages"][1]["parts"][0]["functionResponse"]["response"]
    assert response == {"error": "LookupError: no weather station in Atlantis"}
    replay = new_session(Mode.DRY, golden)
    assert _run(replay, replay.gemini(), prompt="Atlantis?") == "There is no weather there."
    assert replay.verdict().matched


def test_an_error_response_the_agent_handles_replays_as_the_same_error() -> None:
    from google.genai import errors

    def ask(session: RolloutSession, client: Any) -> str:
        with session.run() as run:
            try:
                client.models.generate_content(model=MODEL, contents="hi")
            except errors.ClientError as exc:
                run.output = f"{exc.code} {exc.status}"
        session.close()
        return str(run.output)

    with FakeGemini([Fail(400, "The prompt is too long.")]) as service:
        session = new_session(Mode.RECORD)
        client = _client(session, service.base_url, aio=False, api_key="test-key")
        assert ask(session, client) == "400 INVALID_ARGUMENT"
    golden = session.recorder.rollout()
    [failed] = [e.data for e in golden.events if e.type == LLM_TURN_FAILED]
    assert failed["response"]["status"] == 400
    replay = new_session(Mode.DRY, golden)
    assert ask(replay, replay.gemini()) == "400 INVALID_ARGUMENT"
    assert replay.verdict().matched


def test_vertex_ai_records_and_replays_without_google_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    golden, service = _record(vertex=True, call_ids=True)
    path = service.requests[0][0]
    assert path.startswith("/v1beta1/projects/my-project/locations/us-central1/publishers/")
    assert path.endswith(f"/models/{MODEL}:generateContent")
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)

    def no_credentials(*_: Any, **__: Any) -> Any:
        raise AssertionError("replay looked for Google credentials")

    monkeypatch.setattr("google.auth.default", no_credentials)
    replay, answer = _replay(golden, vertexai=True, location="us-central1")
    assert answer == ANSWER
    assert replay.verdict().matched
    assert len(service.requests) == 2


def test_replay_needs_no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    golden, _ = _record()
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    replay, answer = _replay(golden, aio=True)
    assert answer == ANSWER
    assert replay.verdict().matched


def test_http_options_with_a_client_of_their_own_are_refused() -> None:
    import httpx2

    from pytest_rollout import RolloutError

    session = new_session(Mode.RECORD)
    with pytest.raises(RolloutError, match=r"pass it as rollout\.gemini\(transport=\.\.\.\)"):
        session.gemini(api_key="k", http_options={"httpx_client": httpx2.Client()})


def test_a_missing_sdk_names_the_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "google.genai", None)
    session = new_session(Mode.RECORD)
    with pytest.raises(MissingPackageError) as raised:
        session.async_gemini()
    assert str(raised.value) == (
        "rollout.async_gemini() needs the google-genai package, which is not installed: "
        "pip install google-genai"
    )


def test_a_gemini_run_forks_into_gemini_contents() -> None:
    from pytest_rollout.replay.fork import fork

    golden, _ = _record()
    result = fork(
        golden.events,
        1,
        format="gemini",
        include_system=True,
        include_tool_calls=True,
        include_tool_results=True,
    )
    assert result.system == SYSTEM
    [user, model, answers] = result.messages
    assert user == {"role": "user", "parts": [{"text": PROMPT}]}
    calls = [p["functionCall"] for p in model["parts"]]
    assert model["role"] == "model"
    assert [(c["name"], c["args"]) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"city": "Paris"}),
    ]
    responses = [p["functionResponse"] for p in answers["parts"]]
    assert answers["role"] == "user"
    assert [r["id"] for r in responses] == [c["id"] for c in calls]
    assert responses[0]["response"] == {"output": {"city": "Paris", "sky": "sunny", "celsius": 21}}
    # the SDK takes them as they are
    from google.genai import types

    assert [types.Content.model_validate(m).role for m in result.messages] == [
        "user",
        "model",
        "user",
    ]
    # by default: the opening question only
    assert fork(golden.events, 1, format="gemini").messages == [user]


def test_a_pydantic_ai_agent_on_rollout_gemini_records_and_replays() -> None:
    """pydantic-ai's Google model takes a ``google.genai.Client``: ``rollout.gemini()``."""
    pytest.importorskip("pydantic_ai.models.google", reason="pip install pydantic-ai-slim[google]")
    from pydantic_ai import Agent, Tool
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    def run(session: RolloutSession, **kwargs: Any) -> str:
        provider = GoogleProvider(client=session.gemini(**kwargs))
        tools = session.tools(TOOLS)
        agent = Agent(
            GoogleModel(MODEL, provider=provider),
            instructions=SYSTEM,
            tools=[Tool(tools["get_weather"]), Tool(tools["get_time"])],
        )

        async def ask() -> str:
            try:
                return (await agent.run(PROMPT)).output
            finally:
                await provider.client.aio.aclose()

        with session.run(prompt=PROMPT) as handle:
            handle.output = asyncio.run(ask())
        session.close()
        return str(handle.output)

    from pytest_rollout.diff.volatile import Volatile
    from pytest_rollout.session.setup import RunSetup

    # pydantic-ai names the calls Gemini left unnamed itself, with a fresh uuid each run,
    # and sends the names back: declared volatile, as docs/sdk-agents.md says.
    pyd_ai_ids = Volatile().with_declared([("pyd_ai_call", "pyd_ai_[0-9a-f]{32}")])
    options = RunSetup().options.extended(volatile=pyd_ai_ids)
    with FakeGemini(SCRIPT) as service:
        session = new_session(Mode.RECORD, options=options)
        http = {"base_url": service.base_url}
        assert run(session, api_key="test-key", http_options=http) == ANSWER
    golden = session.recorder.rollout()
    [first, _] = [e.data for e in golden.events if e.type == LLM_TURN_COMPLETED]
    assert [c["name"] for c in first["tool_calls"]] == ["get_weather", "get_time"]
    replay = new_session(Mode.DRY, golden, options=options)
    assert run(replay, http_options={"base_url": service.base_url}) == ANSWER
    assert replay.verdict().matched
    assert len(service.requests) == 2


# -- LangChain's ChatGoogleGenerativeAI: a user's suite, through rollout.gemini_client_args() --

_LANGCHAIN_TESTS = """
import asyncio
import os

import pytest
from fake_gemini import Call, FakeGemini, Say
from gemini_agents import MODEL, SYSTEM, TOOLS
from langchain.agents import create_agent
from langchain_google_genai import ChatGoogleGenerativeAI

PROMPT = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris, 21 degrees."
SCRIPT = [[Call("get_weather", {"city": "Paris"}), Call("get_time", {"city": "Paris"})],
          Say(ANSWER)]


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_langchain_agent(rollout, golden, aio):
    fake = FakeGemini(list(SCRIPT))
    offline = os.environ.get("MODEL_OFFLINE")
    base_url = "http://127.0.0.1:9" if offline else fake.start().base_url
    try:
        llm = ChatGoogleGenerativeAI(
            model=MODEL,
            api_key="test-key",  # LangChain wants a key even in replay, where none is sent
            base_url=base_url,
            client_args=rollout.gemini_client_args(),  # both of its HTTP clients
            temperature=0,
        )
        tools = rollout.tools(TOOLS)
        agent = create_agent(llm, tools=list(tools.values()), system_prompt=SYSTEM)
        question = {"messages": [("user", PROMPT)]}

        async def ask():
            try:
                return await agent.ainvoke(question)
            finally:
                await llm.aclose()  # its connections belong to this event loop

        with rollout.run(prompt=PROMPT) as run:
            state = asyncio.run(ask()) if aio else agent.invoke(question)
            run.output = state["messages"][-1].text
    finally:
        fake.stop()
    assert run.output == ANSWER
    assert rollout == golden
"""


def test_a_langchain_agent_on_gemini_client_args_records_rerecords_and_replays(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangChain's ``ChatGoogleGenerativeAI`` builds its own ``google.genai.Client`` with one
    ``client_args`` for both its HTTP clients: ``rollout.gemini_client_args()``."""
    pytest.importorskip("langchain_google_genai", reason="pip install langchain-google-genai")
    pytest.importorskip("langchain.agents", reason="pip install 'langchain>=1.0'")
    from pathlib import Path

    from plugin_agent import IN_PROCESS

    here = Path(__file__).parent.parent
    pytester.makepyfile(
        fake_gemini=(here / "fake_gemini.py").read_text(encoding="utf-8"),
        gemini_agents=(here / "gemini_agents.py").read_text(encoding="utf-8"),
        test_langchain_gemini=_LANGCHAIN_TESTS,
    )
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    inner = (*IN_PROCESS, "-p", "no:cacheprovider", "-rA")

    def tree() -> dict[str, bytes]:
        root = pytester.path / "golden"
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
        }

    pytester.runpytest_inprocess(*inner, "--rollout-record").assert_outcomes(passed=2)
    recorded = tree()
    assert any(name.endswith(".jsonl") for name in recorded), recorded
    pytester.runpytest_inprocess(*inner, "--rollout-record").assert_outcomes(passed=2)
    assert tree() == recorded  # byte-identical
    monkeypatch.setenv("MODEL_OFFLINE", "1")  # the fake is never started
    pytester.runpytest_inprocess(*inner).assert_outcomes(passed=2)
    assert tree() == recorded


def test_gemini_client_args_keep_the_users_and_add_one_transport_for_both_sides() -> None:
    import httpx2

    session = new_session(Mode.RECORD)
    live = httpx2.MockTransport(lambda request: httpx2.Response(500))
    args = session.gemini_client_args(transport=live, trust_env=False)
    assert args["trust_env"] is False
    # one transport, of the library the SDK then builds both its clients on
    assert isinstance(args["transport"], httpx2.BaseTransport)
    assert isinstance(args["transport"], httpx2.AsyncBaseTransport)
