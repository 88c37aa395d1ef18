"""The Gemini test of docs/sdk-agents.md, run as written: recorded against the fake Gemini
service on 127.0.0.1 (the SDK pointed at it by ``GOOGLE_GEMINI_BASE_URL``, as a user's
proxy would be), then replayed with no service and no API key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest

pytest.importorskip("google.genai", reason="pip install google-genai")

from plugin_agent import IN_PROCESS

pytestmark = pytest.mark.slow  # inner pytest runs of the documented test

ROOT: Final = Path(__file__).resolve().parents[2]
HERE: Final = Path(__file__).parent.parent  # the tests folder, where the helpers are
PAGE: Final = ROOT / "docs" / "sdk-agents.md"

CONFTEST: Final = """
import os

import pytest
from fake_gemini import Call, FakeGemini, Say


@pytest.fixture(autouse=True)
def fake_service(monkeypatch):
    if os.environ.get("MODEL_OFFLINE"):
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
        yield
        return
    script = [Call("get_weather", {"city": "Paris"}), Say("Sunny in Paris, 21 degrees.")]
    with FakeGemini(script) as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.base_url)
        monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
        yield
"""


def documented_test() -> str:
    """The first Python block of the page's Gemini section."""
    page = PAGE.read_text(encoding="utf-8")
    section = page.split("## Gemini and Vertex AI", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_the_documented_gemini_test_records_and_replays_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        fake_gemini=(HERE / "fake_gemini.py").read_text(encoding="utf-8"),
        conftest=CONFTEST,
        test_gemini_agent=documented_test(),
    )
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    args = (*IN_PROCESS, "-p", "no:cacheprovider", "-W", "error::DeprecationWarning")
    pytester.runpytest_inprocess(*args, "--rollout-record").assert_outcomes(passed=1)
    monkeypatch.setenv("MODEL_OFFLINE", "1")
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 golden(s) compared: 2/2 turns served, 1/1 tool calls*"])
