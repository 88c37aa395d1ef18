"""The framework tests of docs/frameworks.md, run as written: recorded against the fake
service (two parallel tool calls, then an answer), then replayed with the service off.

As in ``test_readme_sdk.py``, a ``conftest.py`` puts the scripted fake where the network
transport would be: under ``httpx2`` and, for the frameworks on the OpenAI SDK's 2.x line,
under ``httpx``. A framework that is not installed skips with the line that installs it.
Those that cannot install beside the test extra (they pin ``openai<3``) run in a venv of
their own: ``.ci/frameworks`` installs them and runs this file there.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson
import pytest
from plugin_agent import CLOSE_LEFTOVER_LOOP, IN_PROCESS

from pytest_rollout.cli import main as rollout_main

pytestmark = pytest.mark.slow  # real agent frameworks, inner pytest runs

ROOT: Final = Path(__file__).resolve().parents[2]
HERE: Final = Path(__file__).parent.parent  # the tests folder, where the helpers are
PAGE: Final = ROOT / "docs" / "frameworks.md"

#: A code block of the page that is a file (``# name.py`` on its first line).
_BLOCK: Final = re.compile(r"```python\n# (\w+\.py)\n(.*?)```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Documented:
    """A documented test: the fake service it talks to, the modules that tell whether its
    framework is installed and the line that installs it, the scripted conversation it has
    (``SCRIPTS`` below), the cities its tool is called for, and whether the framework's own
    deprecation warnings are let through (the page itself must show no deprecated API)."""

    service: str
    modules: tuple[str, ...]
    pip: str
    script: str = "answer"
    cities: tuple[str, ...] = ("Paris", "Oslo")
    own_deprecations: bool = False
    #: Run each inner pytest in a process of its own: the framework's modules cannot be
    #: imported again in one process (numpy), or keep state across imports (instructor's
    #: registry of modes), which an in-process run's forgetting of modules breaks.
    fresh_process: bool = False


DOCUMENTED: Final = {
    "test_agents_sdk_agent": Documented("openai.responses", ("agents",), "openai-agents"),
    "test_langgraph_agent": Documented(
        "openai.chat", ("langchain.agents", "langchain_openai"), "langchain langchain-openai"
    ),
    "test_pydantic_ai_tools": Documented(
        "openai.chat", ("pydantic_ai",), "pydantic-ai-slim[openai]"
    ),
    "test_smolagents_agent": Documented(
        "openai.chat", ("smolagents",), "smolagents", script="final_answer"
    ),
    "test_autogen_agent": Documented(
        "openai.chat",
        ("autogen_agentchat", "autogen_ext.models.openai"),
        "autogen-agentchat autogen-ext[openai]",
    ),
    "test_agno_agent": Documented("openai.chat", ("agno.agent",), "agno"),
    "test_strands_agent": Documented("openai.chat", ("strands",), "strands-agents"),
    "test_anthropic_tool_runner": Documented("anthropic.messages", ("anthropic",), "anthropic"),
    "test_mcp_client_agent": Documented("openai.chat", ("mcp",), "mcp"),
    "test_mcp_agent": Documented("openai.responses", ("agents", "mcp"), "openai-agents mcp"),
    "test_pydantic_ai_mcp_agent": Documented(
        "openai.chat", ("pydantic_ai", "fastmcp"), '"pydantic-ai-slim[mcp]"'
    ),
    # On the OpenAI SDK's 2.x line: .ci/frameworks.
    "test_llamaindex_agent": Documented(
        "openai.chat",
        ("llama_index.core", "llama_index.llms.openai"),
        "llama-index-core llama-index-llms-openai",
        own_deprecations=True,
        fresh_process=True,
    ),
    "test_crewai_agent": Documented(
        "openai.chat",
        ("crewai",),
        "crewai",
        script="one_city",
        cities=("Paris",),
        own_deprecations=True,
        fresh_process=True,
    ),
    "test_instructor_agent": Documented(
        "openai.chat",
        ("instructor",),
        "instructor",
        script="extraction",
        cities=(),
        fresh_process=True,
    ),
}

CONFTEST: Final = """
import os

import httpx2
import pytest
from fake_models import Call, FakeModel, Say, offline_transport

SERVICES = {services!r}
BOTH = [Call("get_weather", {{"city": "Paris"}}), Call("get_weather", {{"city": "Oslo"}})]
SCRIPTS = {{
    "answer": [BOTH, Say("Sunny in Paris and in Oslo.")],
    "final_answer": [BOTH, Call("final_answer", {{"answer": "Sunny in Paris and in Oslo."}})],
    "one_city": [Call("get_weather", {{"city": "Paris"}}), Say("Sunny in Paris.")],
    # A forced function as the response format; the first answer fails validation.
    "extraction": [
        Call("WeatherRequest", {{"city": "Paris", "unit": "Celsius"}}),
        Call("WeatherRequest", {{"city": "Paris", "unit": "celsius"}}),
    ],
}}


def httpx_transport(transport):
    \"\"\"The fake behind an ``httpx`` transport, for clients on the OpenAI SDK's 2.x line.\"\"\"
    import httpx

    def handle(request):
        answer = transport.handle_request(
            httpx2.Request(
                request.method, str(request.url), headers=request.headers.raw,
                content=request.read(),
            )
        )
        return httpx.Response(answer.status_code, headers=answer.headers.raw, content=answer.read())

    return httpx.MockTransport(handle)


@pytest.fixture(autouse=True)
def fake_service(request, monkeypatch):
    service, script = SERVICES[request.module.__name__]
    if os.environ.get("MODEL_OFFLINE"):
        transport = offline_transport()
    else:
        transport = FakeModel(service, SCRIPTS[script]).transport()
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setattr(httpx2, "HTTPTransport", lambda **_: transport)
    monkeypatch.setattr(httpx2, "AsyncHTTPTransport", lambda **_: transport)
    try:
        import httpx
    except ImportError:
        return
    other = httpx_transport(transport)
    monkeypatch.setattr(httpx, "HTTPTransport", lambda **_: other)
    monkeypatch.setattr(httpx, "AsyncHTTPTransport", lambda **_: other)
"""


def documented_files() -> dict[str, str]:
    """The files shown in docs/frameworks.md (tests and the modules beside them), by name."""
    page = PAGE.read_text(encoding="utf-8")
    return {name.removesuffix(".py"): source for name, source in _BLOCK.findall(page)}


def documented_tests() -> dict[str, str]:
    """The test files shown in docs/frameworks.md, by module name."""
    return {n: source for n, source in documented_files().items() if n.startswith("test_")}


def test_the_page_shows_one_test_per_framework() -> None:
    assert sorted(documented_tests()) == sorted(DOCUMENTED)


@pytest.fixture
def documented(name: str) -> Documented:
    """The documented test ``name``, its framework imported: before ``pytester`` is set up,
    which drops what a test imported when it ends, and numpy cannot be imported twice."""
    found = DOCUMENTED[name]
    for module in found.modules:
        pytest.importorskip(module, reason=f"needs {module}: pip install {found.pip}")
    return found


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_a_documented_framework_test_records_checks_and_replays_offline(
    documented: Documented, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    files = documented_files()
    support = {n: source for n, source in files.items() if not n.startswith("test_")}
    pytester.makepyfile(
        fake_models=(HERE / "fake_models.py").read_text(encoding="utf-8"),
        conftest=CONFTEST.format(services={name: (documented.service, documented.script)})
        + CLOSE_LEFTOVER_LOOP,
        **support,
        **{name: files[name]},
    )
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # The page shows no API its framework has deprecated: a user copying it sees no warning.
    deprecations = "ignore" if documented.own_deprecations else "error"
    args = (
        *IN_PROCESS,
        *("-p", "no:cacheprovider"),
        *("-W", "error::pytest_rollout.RolloutWarning"),
        *("-W", f"{deprecations}::DeprecationWarning"),
    )
    run = (
        pytester.runpytest_subprocess if documented.fresh_process else pytester.runpytest_inprocess
    )
    run(*args, "--rollout-record").assert_outcomes(passed=1)

    # Each tool call was recorded, answering the call the turn announced.
    [golden] = (pytester.path / "golden" / name).glob("*.jsonl")
    events = [orjson.loads(line) for line in golden.read_bytes().splitlines()]
    started = [e["data"] for e in events if e["type"] == "tool.call.started"]
    assert [s["name"] for s in started] == ["get_weather"] * len(documented.cities)
    assert sorted(s["arguments"]["city"] for s in started) == sorted(documented.cities)
    assert all(s["call_id"] for s in started)
    out = io.StringIO()
    assert rollout_main(["check", str(golden)], out=out) == 0
    assert f"{golden}: matched" in out.getvalue()

    # Recorded again, it is the same golden.
    before = golden.read_bytes()
    again = run(*args, "--rollout-record")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["0 golden(s) written (0 created, 0 updated), 1 unchanged"])
    assert golden.read_bytes() == before

    monkeypatch.setenv("MODEL_OFFLINE", "1")
    result = run(*args, "-o", "rollout_network=sealed")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["1 golden(s) compared: *turns served, *tool calls matched, 0 diverged"]
    )
