"""A Gemini agent under the plugin, as a user's suite runs it: recorded against a fake Gemini
service on 127.0.0.1 (fresh response ids, timestamps and latencies on every call),
re-recorded without a byte of its golden changing, replayed with no service at all, and
broken four ways, each failing with its kind, step and attribution.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

pytest.importorskip("google.genai", reason="pip install google-genai")

from plugin_agent import IN_PROCESS, failure_sections

HERE: Final = Path(__file__).parent.parent  # the tests folder, where the helpers are

CONFTEST: Final = """
import os

import pytest
from fake_gemini import Call, FakeGemini, Say

SCRIPT = [
    [Call("get_weather", {"city": "Paris"}), Call("get_time", {"city": "Paris"})],
    Say("Sunny in Paris, 21 degrees, at noon."),
]


@pytest.fixture
def service(monkeypatch):
    if os.environ.get("MODEL_OFFLINE"):
        yield "http://127.0.0.1:9"  # nothing listens there
        return
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    with FakeGemini(SCRIPT) as fake:
        yield fake.base_url
    with open("requests.log", "a", encoding="utf-8") as log:
        log.write(f"{len(fake.requests)}\\n")
"""

TEST: Final = """
import os

import pytest
from gemini_agents import TOOLS, agent


@pytest.mark.parametrize("change", ["argument", "system", "drop-tool", "model"])
def test_gemini_agent(rollout, golden, service, change):
    applied = change if os.environ.get("APPLY_CHANGE") == "1" else ""
    client = rollout.gemini(http_options={"base_url": service})
    tools = rollout.tools(TOOLS)
    with rollout.run(prompt="Weather in Paris?") as run, client:
        run.output = agent(client, "Weather in Paris?", tools, change=applied)
    assert rollout == golden
"""

HARNESS: Final = "(attributed to the harness: the agent's prompt, model or tools)"
EXPECTED: Final = {
    "argument": (
        "at step 1: tool_call_mismatch (attributed to the agent)",
        'Divergence: call #1 of step 1: recorded get_weather(city="Paris"), '
        'got get_weather(city="PARIS")',
    ),
    "system": (
        f"at step 1: prompt_mismatch {HARNESS}",
        "Divergence: the request differs from the recorded one at messages[0].content",
    ),
    "drop-tool": (
        f"at step 1: prompt_mismatch {HARNESS}",
        "Divergence: the request differs from the recorded one at tools[0].functionDeclarations",
    ),
    # The run names its model from its first request: the runs differ from their start,
    # where replay's own prompt_mismatch (params.model) is at step 1.
    "model": (
        f"at step 0: setup_mismatch {HARNESS}",
        "Divergence: first difference in data.model",
    ),
}
NO_TRUNCATION: Final = ("-o", "truncation_limit_lines=0", "-o", "truncation_limit_chars=0")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*IN_PROCESS, "-p", "no:cacheprovider", *args)


def _goldens(pytester: pytest.Pytester) -> dict[str, bytes]:
    root = pytester.path / "golden"
    return {p.name: p.read_bytes() for p in sorted(root.rglob("*.jsonl*"))}


def _requests(pytester: pytest.Pytester) -> list[int]:
    log = pytester.path / "requests.log"
    if not log.exists():
        return []
    counts = [int(n) for n in log.read_text(encoding="utf-8").split()]
    log.unlink()
    return counts


def test_a_gemini_agent_records_stably_replays_offline_and_catches_four_breaks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        fake_gemini=(HERE / "fake_gemini.py").read_text(encoding="utf-8"),
        gemini_agents=(HERE / "gemini_agents.py").read_text(encoding="utf-8"),
        conftest=CONFTEST,
        test_weather_on_gemini=TEST,
    )
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    _run(pytester, "--rollout-record").assert_outcomes(passed=4)
    assert _requests(pytester) == [2, 2, 2, 2]
    recorded = _goldens(pytester)
    assert len(recorded) == 8  # four goldens and their receipts

    # New response ids, times and latencies: the goldens do not change by a byte.
    _run(pytester, "--rollout-record").assert_outcomes(passed=4)
    assert _requests(pytester) == [2, 2, 2, 2]
    assert _goldens(pytester) == recorded

    monkeypatch.setenv("MODEL_OFFLINE", "1")
    result = _run(pytester)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*4 golden(s) compared: 8/8 turns served*"])

    monkeypatch.setenv("APPLY_CHANGE", "1")
    result = _run(pytester, *NO_TRUNCATION)
    result.assert_outcomes(failed=4)
    sections = failure_sections(result)
    for change, (headline, divergence) in EXPECTED.items():
        text = " ".join(
            line.removeprefix("E").strip() for line in sections[f"test_gemini_agent[{change}]"]
        )
        assert f"this run left its golden {headline}" in text, change
        assert divergence in text, change
    assert _requests(pytester) == []  # no service ran, and nothing asked for one
    assert _goldens(pytester) == recorded
