"""Shared pieces of the plugin's pytester end-to-end tests (``tests/test_plugin_*.py``).

Each test writes a small project into its pytester directory: ``agent.py`` (a scripted LLM,
two tools and an agent loop, from ``data/plugin_agent.py.txt``) and one or more test files
that use the ``rollout`` and ``golden`` fixtures, as a user's suite would. Goldens are
recorded in-process (fast); the behaviour under test runs in-process, and again under
pytest-xdist with ``-n 2`` in a subprocess (xdist in-process is not reliable) only where
workers could change it: what the controller gathers from them (the summary counts, the
unused goldens, the HTML report, CI annotations and job summary, unsaved runs), a report
crossing from a worker, goldens written by several workers, receipts. Everything else runs
in-process only: each xdist run costs seconds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import pytest

AGENT_SOURCE: Final = (Path(__file__).parent / "data" / "plugin_agent.py.txt").read_text(
    encoding="utf-8"
)

#: Extra arguments that run the behaviour under test under pytest-xdist with two workers.
N2: Final = ("-n", "2")
#: Run the behaviour under test as is, and under pytest-xdist with two workers.
XDIST: Final = pytest.mark.parametrize(
    "xdist", [pytest.param((), id="serial"), pytest.param(N2, id="xdist")]
)

#: One user test: the agent answers a weather question; ``AGENT_CHANGE`` changes the agent.
WEATHER_TEST: Final = """
import os

from agent import TOOLS, ScriptedLLM, agent


def test_weather(rollout, golden):
    llm = rollout.provider(ScriptedLLM())
    tools = rollout.tools(TOOLS)
    question = "What is the weather in Paris?"
    with rollout.run(prompt=question) as run:
        run.output = agent(llm, tools, question, os.environ.get("AGENT_CHANGE", ""))
    assert rollout == golden
"""

#: Plugins that the test extra installs and these runs have no use for, each costing a
#: pytest start dearly: Hypothesis imports all of itself in every run's terminal summary,
#: and langsmith's plugin (installed with langchain-core) imports langsmith, about 1.5 s a
#: process. A subprocess run with them starts in 3.3 s, without them in 0.6 s.
UNUSED_PLUGINS: Final = (
    *("-p", "no:hypothesispytest"),
    *("-p", "no:langsmith_plugin"),
    *("-p", "no:anyio"),
    *("-p", "no:pytest_cov"),
)
#: In-process, pytest_rollout is already imported, so the inner run warns that it cannot
#: rewrite its asserts: a fact of pytester, not something a user would see.
IN_PROCESS: Final = (*UNUSED_PLUGINS, "-W", "ignore::pytest.PytestAssertRewriteWarning")

_SECTION: Final = re.compile(r"^_{3,} (.+?) _{3,}$")

#: A ``conftest.py`` that points the OpenAI SDK at the test suite's fake service (a tool call,
#: then the answer ``FAKE_ANSWER``), or with ``MODEL_OFFLINE`` set at a transport that
#: refuses every request: a replay that reaches for the network fails.
FAKE_ANSWER: Final = "Sunny."
FAKE_SERVICE_CONFTEST: Final = f"""
import os

import httpx2
import pytest
from fake_models import Call, FakeModel, Say, offline_transport


@pytest.fixture(autouse=True)
def fake_service(monkeypatch):
    if os.environ.get("MODEL_OFFLINE"):
        transport = offline_transport()
    else:
        script = [Call("get_weather", {{"city": "Paris"}}), Say({FAKE_ANSWER!r})]
        transport = FakeModel("openai.chat", script).transport()
    monkeypatch.setattr(httpx2, "HTTPTransport", lambda **_: transport)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
"""


_SDK_WEATHER_TEST: Final = """
import json
{imports}
TOOLS = [{{"type": "function", "function": {{"name": "get_weather", "parameters": {{
    "type": "object", "properties": {{"city": {{"type": "string"}}}}}}}}}}]


def get_weather(city: str) -> dict:
    return {{"city": city, "sky": "sunny"}}


def {name}(rollout, golden):
    client = rollout.openai()
    {tools}
    messages = [{{"role": "user", "content": "Weather in Paris?"}}]
    with rollout.run(prompt="Weather in Paris?") as run:
        for _ in range(4):
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                run.output = message.content
                break
            messages.append(
                {{"role": "assistant", "tool_calls": [c.to_dict() for c in message.tool_calls]}}
            )
            for call in message.tool_calls:
                result = weather(**json.loads(call.function.arguments))
                messages.append(
                    {{"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}}
                )
    assert rollout == golden
"""


def sdk_weather_test(name: str, *, wrapped: bool, imports: str = "") -> str:
    """A user's test module: an agent on ``rollout.openai()`` asks the fake service for the
    weather in Paris, runs ``get_weather`` (through ``rollout.tools`` when ``wrapped``, else
    directly, as an agent that forgot to wrap it) and compares with its golden."""
    tools = "(weather,) = rollout.tools([get_weather])" if wrapped else "weather = get_weather"
    return _SDK_WEATHER_TEST.format(name=name, tools=tools, imports=imports)


def write_sdk_project(pytester: pytest.Pytester, **files: str) -> None:
    """Write the fake service, its ``conftest.py`` and ``files`` (``name=source``)."""
    helpers = Path(__file__).parent
    pytester.makepyfile(
        fake_models=(helpers / "fake_models.py").read_text(encoding="utf-8"),
        conftest=FAKE_SERVICE_CONFTEST,
        **files,
    )


def run_showing_warnings(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run pytest in-process, the plugin's warnings shown rather than turned into errors
    (this suite's setting): the verdict decides the outcome."""
    shown = ("-W", "always::pytest_rollout.RolloutWarning")
    return pytester.runpytest_inprocess(*IN_PROCESS, "-p", "no:cacheprovider", *shown, *args)


def write_project(pytester: pytest.Pytester, **test_files: str) -> None:
    """Write ``agent.py`` and the given test files (``name=source``) into the project."""
    pytester.makepyfile(agent=AGENT_SOURCE, **test_files)


def run(pytester: pytest.Pytester, xdist: Sequence[str], *args: str) -> pytest.RunResult:
    """Run pytest in the project: in-process, or in a subprocess when xdist is on."""
    if xdist:
        return run_subprocess(pytester, *xdist, *args)
    return pytester.runpytest_inprocess(*IN_PROCESS, *args)


def run_subprocess(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run pytest in the project in a subprocess, its processes keeping their bytecode.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (as on the machines this suite runs on), every
    process of such a run compiled the package again, and pytest rewrote the asserts of
    each plugin's modules (this one's, syrupy's, xdist's) again: a run under xdist starts
    three processes. Here they keep it in a ``PYTHONPYCACHEPREFIX`` folder beside the
    projects of this worker's tests, so the next run reads it: nothing is written beside the
    sources or into the project, and what a process imports does not change.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPYCACHEPREFIX", str(pytester.path.parent / "bytecode"))
        patch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        return pytester.runpytest_subprocess(*UNUSED_PLUGINS, *args)


def record(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Record the goldens of the project in-process and forget the live calls it made."""
    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record", *args)
    live_calls(pytester)
    return result


def live_calls(pytester: pytest.Pytester) -> list[str]:
    """The live LLM and tool calls made since the last look (``llm``, or a tool's name)."""
    log = pytester.path / "calls.log"
    if not log.exists():
        return []
    calls = log.read_text(encoding="utf-8").split()
    log.unlink()
    return calls


def failure_sections(result: pytest.RunResult) -> dict[str, list[str]]:
    """The lines of each test's section under FAILURES, by the test's name."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in result.outlines:
        found = _SECTION.match(line)
        if found:
            current = sections.setdefault(found.group(1), [])
        elif line.startswith("====="):
            current = None
        elif current is not None:
            current.append(line)
    return sections


def goldens(pytester: pytest.Pytester, directory: str = "golden") -> list[str]:
    """The golden files under ``directory``, as sorted paths relative to it."""
    root = pytester.path / directory
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.jsonl"))


#: pydantic-ai's ``run_sync`` keeps an event loop open for the thread, by design; in a user's
#: suite it lives as long as the process, but pytester runs many sessions in this process,
#: and its garbage collection would surface as a warning in some later test.
CLOSE_LEFTOVER_LOOP: Final = """
import asyncio
import warnings

import pytest


@pytest.fixture(autouse=True)
def close_leftover_event_loop():
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)
"""
