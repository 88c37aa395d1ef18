"""The SDK tests of docs/sdk-agents.md, run as written: recorded against the fake service,
then replayed with the service switched off.

The page's tests build their clients with no ``transport=``, so they would reach the real
service when recording; here a ``conftest.py`` puts the scripted fake where the network
transport would be, which is all a test of the page's code needs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pydantic_ai.models.openai  # noqa: F401  (see plugin/test_plugin_sdk.py: imported once)
import pytest
from plugin_agent import CLOSE_LEFTOVER_LOOP, IN_PROCESS

pytestmark = pytest.mark.slow  # inner pytest runs of the documented tests

ROOT: Final = Path(__file__).resolve().parents[2]
HERE: Final = Path(__file__).parent.parent  # the tests folder, where the helpers are

_BLOCK: Final = re.compile(r"```python\n# (test_\w+\.py)\n(.*?)```", re.DOTALL)

#: The page that shows one test per SDK, each in a block that starts with its file name.
PAGE: Final = ROOT / "docs" / "sdk-agents.md"

#: Which fake service each documented test talks to.
SERVICES: Final = {
    "test_openai_agent": "openai.chat",
    "test_responses_agent": "openai.responses",
    "test_anthropic_agent": "anthropic.messages",
    "test_pydantic_ai_agent": "openai.chat",
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
        script = [Call("get_weather", {{"city": "Paris"}}), Say("Sunny in Paris, 21 degrees.")]
        transport = FakeModel(SERVICES[request.module.__name__], script).transport()
    monkeypatch.setattr(httpx2, "HTTPTransport", lambda **_: transport)
    monkeypatch.setattr(httpx2, "AsyncHTTPTransport", lambda **_: transport)
    if not os.environ.get("MODEL_OFFLINE"):
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
"""


def documented_tests() -> dict[str, str]:
    """The SDK test files shown in docs/sdk-agents.md, by file name."""
    page = PAGE.read_text(encoding="utf-8")
    return dict(_BLOCK.findall(page))


def test_the_docs_show_one_test_per_sdk() -> None:
    assert sorted(documented_tests()) == sorted(f"{name}.py" for name in SERVICES)


def test_the_documented_sdk_tests_record_and_replay_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {name.removesuffix(".py"): source for name, source in documented_tests().items()}
    pytester.makepyfile(
        fake_models=(HERE / "fake_models.py").read_text(encoding="utf-8"),
        conftest=CONFTEST.format(services=SERVICES) + CLOSE_LEFTOVER_LOOP,
        **files,
    )
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # The README shows no API its SDK has deprecated: a user copying it sees no warning.
    args = (*IN_PROCESS, "-p", "no:cacheprovider", "-W", "error::DeprecationWarning")
    pytester.runpytest_inprocess(*args, "--rollout-record").assert_outcomes(passed=4)
    monkeypatch.setenv("MODEL_OFFLINE", "1")
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["4 golden(s) compared: 8/8 turns served, 4/4 tool calls matched, 0 diverged"]
    )
