"""A dry-replay divergence reaches the agent as itself, through either SDK, sync or async.

The Anthropic SDK (and the OpenAI SDK before 3.20) wraps whatever its HTTP client raises
in a retried ``APIConnectionError`` ("Connection error."), except its own errors. Replay's
refusal of a request must reach the agent as the ``ReplayDivergenceError`` it is on both:
sent once (never retried, even with the SDK's default ``max_retries=2``), recorded once,
the live service never called, and the test's failure report naming the divergence's kind
and step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import anthropic
import httpx2
import openai
import orjson
import pytest
from fake_models import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, offline_transport
from plugin_agent import IN_PROCESS, failure_sections
from sessions import new_session

from pytest_rollout.sdk.exchange import UnrecordedRequestError
from pytest_rollout.session import Mode, RolloutSession

HERE: Final = Path(__file__).parent.parent  # the tests folder, where the helpers are

#: A user's test around an SDK agent, the SDK client built by hand on ``rollout.http_client``
#: (so the SDK's own default ``max_retries`` applies). The system prompt changes with
#: ``CHANGE_SYSTEM``, through monkeypatch, for the test only: ``sdk_agents`` may be the module
#: this process has imported already, and a prompt changed for good would reach the tests
#: that run after this one. What the agent saw is written to ``seen.jsonl``.
DIVERGING_TEST: Final = """
import asyncio
import os

import anthropic
import openai
import orjson
import pytest
import sdk_agents
from fake_models import Call, FakeModel, Say
from pytest_rollout.format.events import REPLAY_DIVERGENCE
from sdk_agents import AGENTS, get_weather


@pytest.fixture(autouse=True)
def system_prompt(monkeypatch):
    if os.environ.get("CHANGE_SYSTEM"):
        monkeypatch.setattr(sdk_agents, "SYSTEM", "You are a terse weather assistant.")


CASES = [
    (api, asynchronous, stream)
    for api in ("anthropic.messages", "openai.chat", "openai.responses")
    for asynchronous in (False, True)
    for stream in (False, True)
]
CLIENTS = {
    ("anthropic", False): (anthropic.Anthropic, "http://fake.test"),
    ("anthropic", True): (anthropic.AsyncAnthropic, "http://fake.test"),
    ("openai", False): (openai.OpenAI, "http://fake.test/v1"),
    ("openai", True): (openai.AsyncOpenAI, "http://fake.test/v1"),
}
PROMPT = "What is the weather in Paris?"


def build(rollout, api, asynchronous, live, sent):
    package = AGENTS[api][0]
    cls, base = CLIENTS[package, asynchronous]

    def count(request):
        sent.append(request.headers.get("x-stainless-retry-count"))

    async def acount(request):
        count(request)

    if asynchronous:
        http = rollout.async_http_client(transport=live, event_hooks={"request": [acount]})
    else:
        http = rollout.http_client(transport=live, event_hooks={"request": [count]})
    return cls(api_key="sk-test", base_url=base, http_client=http)


@pytest.mark.parametrize("api,asynchronous,stream", CASES)
def test_agent(rollout, golden, request, api, asynchronous, stream):
    if os.environ.get("MODEL_OFFLINE"):
        live = FakeModel.offline(api)
    else:
        live = FakeModel(api, [Call("get_weather", {"city": "Paris"}), Say("Sunny.")])
    sent = []
    client = build(rollout, api, asynchronous, live.transport(), sent)
    tools = rollout.tools({"get_weather": get_weather})
    seen = None
    try:
        with rollout.run(prompt=PROMPT) as run:
            if asynchronous:
                run.output = asyncio.run(AGENTS[api][2](client, PROMPT, tools, stream=stream))
            else:
                run.output = AGENTS[api][1](client, PROMPT, tools, stream=stream)
    except Exception as exc:
        seen = exc
        raise
    finally:
        facts = {
            "test": request.node.name,
            "error": None if seen is None else f"{type(seen).__module__}.{type(seen).__name__}",
            "message": str(seen),
            "sdk_error": isinstance(seen, (anthropic.AnthropicError, openai.OpenAIError)),
            "api_error": isinstance(seen, (anthropic.APIError, openai.APIError)),
            "sent": sent,
            "divergences": sum(e.type == REPLAY_DIVERGENCE for e in rollout.events()),
            "live": len(live.requests),
        }
        with open("seen.jsonl", "ab") as out:
            out.write(orjson.dumps(facts) + b"\\n")
    assert rollout == golden


def test_swallowed(rollout):
    if os.environ.get("MODEL_OFFLINE"):
        live = FakeModel.offline("anthropic.messages")
    else:
        script = [Call("get_weather", {"city": "Paris"}), Say("Sunny.")]
        live = FakeModel("anthropic.messages", script)
    client = build(rollout, "anthropic.messages", False, live.transport(), [])
    tools = rollout.tools({"get_weather": get_weather})
    with rollout.run(prompt=PROMPT) as run:
        try:
            run.output = AGENTS["anthropic.messages"][1](client, PROMPT, tools)
        except anthropic.AnthropicError:  # the agent gives up quietly
            run.output = "Sorry, no weather today."
    assert run.output
"""

CASES: Final = 12


def _project(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        fake_models=(HERE / "fake_models.py").read_text(encoding="utf-8"),
        sdk_agents=(HERE / "sdk_agents.py").read_text(encoding="utf-8"),
        test_diverging_sdk_agent=DIVERGING_TEST,
    )


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*IN_PROCESS, "-p", "no:cacheprovider", *args)


def _seen(pytester: pytest.Pytester) -> dict[str, dict[str, object]]:
    path = pytester.path / "seen.jsonl"
    facts = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    path.unlink()
    return {str(fact["test"]): fact for fact in facts}


def test_a_divergence_reaches_the_agent_unwrapped_sent_once_and_is_reported(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester)
    _run(pytester, "--rollout-record").assert_outcomes(passed=CASES + 1)
    _seen(pytester)
    monkeypatch.setenv("MODEL_OFFLINE", "1")
    monkeypatch.setenv("CHANGE_SYSTEM", "1")

    result = _run(pytester, "-o", "truncation_limit_lines=0", "-o", "truncation_limit_chars=0")

    result.assert_outcomes(failed=CASES + 1)
    seen = _seen(pytester)
    assert len(seen) == CASES
    for name, fact in seen.items():
        # The agent gets the divergence itself, not "APIConnectionError: Connection error."
        assert fact["error"] == "pytest_rollout.ReplayDivergenceError", name
        assert str(fact["message"]).startswith(
            "prompt_mismatch at step 1 "
            "(attributed to the harness: the agent's prompt, model or tools): the request differs"
        ), name
        # Each SDK lets its own errors through: the divergence is one (never an API error,
        # which an agent might handle as the service's answer).
        assert fact["sdk_error"] is True, name
        assert fact["api_error"] is False, name
        assert fact["sent"] == ["0"], name  # sent once: the SDK did not retry it
        assert fact["divergences"] == 1, name
        assert fact["live"] == 0, name
    sections = failure_sections(result)
    # An agent that swallows the error (and a test that compares nothing) fails the same.
    assert len(sections) == CASES + 1
    for name, lines in sections.items():
        assert lines[0] == (
            "this run left its golden at step 1: prompt_mismatch "
            "(attributed to the harness: the agent's prompt, model or tools)"
        ), name
        assert lines[2].startswith(
            "Divergence: the request differs from the recorded one at messages[0].content:"
        ), name
        text = "\n".join(lines)
        if name != "test_swallowed":
            assert "run.failed  ReplayDivergenceError: prompt_mismatch at step 1" in text, name
    assert "APIConnectionError" not in result.stdout.str()


def _replay_session() -> RolloutSession:
    """Dry replay of a run that made no model call."""
    recording = new_session(Mode.RECORD)
    with recording.run():
        pass
    recording.close()
    return new_session(Mode.DRY, recording.recorder.rollout())


@pytest.mark.parametrize("package", ["anthropic", "openai"])
def test_a_request_that_is_not_a_model_call_is_refused_once_and_unwrapped(package: str) -> None:
    """``models.list()`` in dry replay: the refusal is the agent's error, sent once."""
    sent: list[str | None] = []

    def count(request: httpx2.Request) -> None:
        sent.append(request.headers.get("x-stainless-retry-count"))

    session = _replay_session()
    http = session.http_client(transport=offline_transport(), event_hooks={"request": [count]})
    client: anthropic.Anthropic | openai.OpenAI
    if package == "anthropic":
        client = anthropic.Anthropic(api_key="sk", base_url=ANTHROPIC_BASE_URL, http_client=http)
    else:
        client = openai.OpenAI(api_key="sk", base_url=OPENAI_BASE_URL, http_client=http)
    with session.run(), pytest.raises(UnrecordedRequestError, match="is not a model call"):
        client.models.list()
    assert sent == ["0"]


@pytest.mark.parametrize(
    ("version", "headers", "unwrapped"),
    [
        # 2.x and early 3.x wrap any exception but their own in a retried APIConnectionError.
        ("2.54.0", {"x-stainless-package-version": "2.54.0"}, True),
        ("3.3.0", {"x-stainless-package-version": "3.3.0"}, True),
        # Later 3.x releases let their own errors through as well: the same error works.
        ("3.57.0", {"x-stainless-package-version": "3.57.0"}, True),
        # A request another SDK built (another version, or the Anthropic SDK's header).
        ("2.54.0", {"x-stainless-package-version": "2.16.0"}, False),
        (
            "2.54.0",
            {"x-stainless-package-version": "2.54.0", "anthropic-version": "2023-06-01"},
            False,
        ),
    ],
)
def test_an_openai_request_gets_its_refusal_as_an_sdk_error(
    monkeypatch: pytest.MonkeyPatch, version: str, headers: dict[str, str], unwrapped: bool
) -> None:
    """The OpenAI SDK lets only ``OpenAIError`` through unwrapped and unretried on every
    line that wraps, so the refusal gains that base for the requests it built, and keeps
    its own class and text."""
    from pytest_rollout.sdk.transport import _for_the_agent

    monkeypatch.setattr(openai, "__version__", version)
    request = httpx2.Request("POST", OPENAI_BASE_URL + "/chat/completions", headers=headers)
    exc = UnrecordedRequestError("GET /v1/models is not a model call")
    _for_the_agent(exc, request)
    assert isinstance(exc, UnrecordedRequestError)
    assert type(exc).__name__ == "UnrecordedRequestError"
    assert isinstance(exc, openai.OpenAIError) is unwrapped
    assert not isinstance(exc, openai.APIError)
    assert str(exc) == "GET /v1/models is not a model call"
