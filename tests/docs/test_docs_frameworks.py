"""The framework tests of docs/frameworks.md, run as written: recorded against the fake
service (two parallel tool calls, then an answer), then replayed with the service off.

As in ``test_readme_sdk.py``, a ``conftest.py`` puts the scripted fake where the network
transport would be. A framework that is not installed skips with the line that installs it.
"""

from __future__ import annotations

import io
import re
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

_BLOCK: Final = re.compile(r"```python\n# (test_\w+\.py)\n(.*?)```", re.DOTALL)

#: Each documented test: the fake service it talks to, and the packages it needs.
DOCUMENTED: Final = {
    "test_agents_sdk_agent": ("openai.responses", ("agents",), "openai-agents"),
    "test_langgraph_agent": (
        "openai.chat",
        ("langchain.agents", "langchain_openai"),
        "langchain langchain-openai",
    ),
    "test_pydantic_ai_tools": ("openai.chat", ("pydantic_ai",), "pydantic-ai-slim[openai]"),
}

CONFTEST: Final = """
import os

import httpx2
import pytest
from fake_models import Call, FakeModel, Say, offline_transport

SERVICES = {services!r}


@pytest.fixture(autouse=True)
def fake_service(request, monkeypatch):
    if os.environ.get("MODEL_OFFLINE"):
        transport = offline_transport()
    else:
        script = [
            [Call("get_weather", {{"city": "Paris"}}), Call("get_weather", {{"city": "Oslo"}})],
            Say("Sunny in Paris and in Oslo."),
        ]
        transport = FakeModel(SERVICES[request.module.__name__], script).transport()
    monkeypatch.setattr(httpx2, "HTTPTransport", lambda **_: transport)
    monkeypatch.setattr(httpx2, "AsyncHTTPTransport", lambda **_: transport)
    if not os.environ.get("MODEL_OFFLINE"):
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
"""


def documented_tests() -> dict[str, str]:
    """The test files shown in docs/frameworks.md, by module name."""
    page = PAGE.read_text(encoding="utf-8")
    return {name.removesuffix(".py"): source for name, source in _BLOCK.findall(page)}


def test_the_page_shows_one_test_per_framework() -> None:
    assert sorted(documented_tests()) == sorted(DOCUMENTED)


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_a_documented_framework_test_records_checks_and_replays_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    service, modules, pip = DOCUMENTED[name]
    for module in modules:
        pytest.importorskip(module, reason=f"needs {module}: pip install {pip}")
    pytester.makepyfile(
        fake_models=(HERE / "fake_models.py").read_text(encoding="utf-8"),
        conftest=CONFTEST.format(services={name: service}) + CLOSE_LEFTOVER_LOOP,
        **{name: documented_tests()[name]},
    )
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # The page shows no API its framework has deprecated: a user copying it sees no warning.
    args = (
        *IN_PROCESS,
        "-p",
        "no:cacheprovider",
        "-W",
        "error::pytest_rollout.RolloutWarning",
        "-W",
        "error::DeprecationWarning",
    )
    pytester.runpytest_inprocess(*args, "--rollout-record").assert_outcomes(passed=1)

    # Both tool calls were recorded, each answering the call the turn announced.
    golden = pytester.path / "golden" / name / "test_weather_agent.jsonl"
    events = [orjson.loads(line) for line in golden.read_bytes().splitlines()]
    started = [e["data"] for e in events if e["type"] == "tool.call.started"]
    assert [(s["name"], s["arguments"]) for s in started] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Oslo"}),
    ] or sorted(s["arguments"]["city"] for s in started) == ["Oslo", "Paris"]
    assert all(s["call_id"] for s in started)
    out = io.StringIO()
    assert rollout_main(["check", str(golden)], out=out) == 0
    assert f"{golden}: matched" in out.getvalue()

    monkeypatch.setenv("MODEL_OFFLINE", "1")
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["1 golden(s) compared"])
