"""``rollout.endpoint()`` in a user's suite: a Node agent (bare ``fetch``, one streamed request)
recorded with ``--rollout-record`` through the ``rollout`` fixture from a fake service on
127.0.0.1, re-recorded to the same bytes, and replayed with the service stopped; a Python
agent whose tools run in its own process, replayed and then broken four ways; the Claude
Agent SDK the same way, where its CLI is installed."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from endpoint_agents import ANSWER, NODE_AGENT, node_or_skip
from fake_models import OPENAI_CHAT, Call, FakeModel, Say
from fake_service import FakeService
from plugin_agent import IN_PROCESS

pytestmark = pytest.mark.slow  # inner pytest runs, servers and agent processes

NODE_TEST = """
import os
import subprocess

AGENT = os.path.join(os.path.dirname(__file__), "agent.mjs")


def test_node_agent(rollout, golden):
    endpoint = rollout.endpoint(upstream=os.environ.get("FAKE_UPSTREAM"))
    question = "What is the weather in Paris?"
    with rollout.run(prompt=question) as run:
        done = subprocess.run(
            [os.environ["NODE"], AGENT, question],
            env={**os.environ, **endpoint.env()},
            capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr
        run.output = done.stdout.strip()
    assert rollout == golden
"""

REAL_KEY = "sk-endpoint-suite-0123456789abcdefghijklmnop"


def _golden(pytester: pytest.Pytester) -> Path:
    [path] = (pytester.path / "golden").rglob("*.jsonl")
    return path


def test_a_node_agent_records_rerecords_and_replays_offline_through_the_fixture(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NODE", node_or_skip())
    monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
    pytester.makefile(".mjs", agent=NODE_AGENT)
    pytester.makepyfile(test_node=NODE_TEST)
    answers = {
        "What is the weather in Paris?": Say(ANSWER.split(" | ")[0]),
        "And tomorrow?": Say(ANSWER.split(" | ")[1]),
    }
    with FakeService(FakeModel(OPENAI_CHAT, answers=answers)) as service:
        monkeypatch.setenv("FAKE_UPSTREAM", service.url)
        pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record").assert_outcomes(passed=1)
        written = _golden(pytester).read_bytes()
        result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record")
        result.assert_outcomes(passed=1)
        hits = service.hits
    assert hits == 4
    assert _golden(pytester).read_bytes() == written  # fresh ids and times: same bytes
    assert REAL_KEY.encode() not in written
    assert b"rollout-endpoint" not in written
    result = pytester.runpytest_inprocess(*IN_PROCESS)
    result.assert_outcomes(passed=1)
    assert service.hits == hits


CLAUDE_TEST = """
import os
import subprocess


def test_claude_agent(rollout, golden):
    endpoint = rollout.endpoint()
    with rollout.run(prompt="Say hello") as run:
        done = subprocess.run(
            ["claude", "-p", "Say hello", "--max-turns", "1"],
            env={**os.environ, **endpoint.env()},
            capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == 0, done.stderr
        run.output = done.stdout.strip()
    assert rollout == golden
"""


def test_the_claude_cli_records_through_the_endpoint(pytester: pytest.Pytester) -> None:
    if shutil.which("claude") is None:
        pytest.skip(
            "the Claude Agent SDK's CLI (claude) is not installed: npm install -g "
            "@anthropic-ai/claude-code, and ANTHROPIC_API_KEY to record"
        )
    pytester.makepyfile(test_claude=CLAUDE_TEST)
    pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record").assert_outcomes(passed=1)
    pytester.runpytest_inprocess(*IN_PROCESS).assert_outcomes(passed=1)


SUNNY = "It is sunny in Paris."

TOOL_AGENT = """
import json
import os
import sys

import openai

client = openai.OpenAI(max_retries=0)
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
change = os.environ.get("AGENT_CHANGE", "")
if change == "dropped-tool":
    tools.append({"type": "function", "function": {"name": "get_time", "parameters": {}}})
    tools = tools[1:]
messages = [{"role": "user", "content": sys.argv[1]}]
if change == "system-prompt":
    messages.insert(0, {"role": "system", "content": "Answer in French."})
model = "gpt-4o" if change == "model" else "gpt-4o-mini"
while True:
    reply = client.chat.completions.create(model=model, messages=messages, tools=tools)
    message = reply.choices[0].message
    if not message.tool_calls:
        print(message.content)
        break
    messages.append(message.model_dump(exclude_none=True))
    for call in message.tool_calls:  # the tool runs here, in this process
        city = json.loads(call.function.arguments)["city"]
        weather = "rainy" if change == "tool-result" else "sunny"
        result = f"{weather} in {city}"
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
"""

TOOL_TEST = """
import os
import subprocess
import sys

AGENT = os.path.join(os.path.dirname(__file__), "tool_agent.py")


def test_tool_agent(rollout, golden):
    endpoint = rollout.endpoint(upstream=os.environ.get("FAKE_UPSTREAM"))
    with rollout.run(prompt="Weather in Paris?") as run:
        done = subprocess.run(
            [sys.executable, AGENT, "Weather in Paris?"],
            env={**os.environ, **endpoint.env()},
            capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr
        run.output = done.stdout.strip()
    assert rollout == golden
"""


#: Each change of the agent in the subprocess, and the headline its replay fails with. Its
#: tools run there: a changed tool result reaches the golden only as the next request.
BREAKS = {
    "tool-result": "*left its golden at step 2: prompt_mismatch (attributed to the harness*",
    "system-prompt": "*left its golden at step 1: prompt_mismatch (attributed to the harness*",
    "dropped-tool": "*left its golden at step 1: prompt_mismatch (attributed to the harness*",
    "model": "*left its golden at step 0: setup_mismatch (attributed to the harness*",
}


def test_a_tool_using_agent_in_another_process_replays_and_its_changes_are_caught(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
    (pytester.path / "tool_agent.py").write_text(TOOL_AGENT)
    pytester.makepyfile(test_tool=TOOL_TEST)
    script: list[Call | Say] = [Call("get_weather", {"city": "Paris"}), Say(SUNNY)]
    # Its tools run in the subprocess: a warning that tools ran outside rollout.tools would
    # be an error here, and the default unrecorded-tools policy would refuse the replay.
    strict = (*IN_PROCESS, "-W", "error::pytest_rollout.RolloutWarning")
    with FakeService(FakeModel(OPENAI_CHAT, script)) as service:
        monkeypatch.setenv("FAKE_UPSTREAM", service.url)
        pytester.runpytest_inprocess(*strict, "--rollout-record").assert_outcomes(passed=1)
    golden = _golden(pytester)
    turns = [line for line in golden.read_text().splitlines() if "llm.turn.completed" in line]
    assert len(turns) == 2
    assert all('"remote":true' in line for line in turns)
    check = pytester.run(sys.executable, "-m", "pytest_rollout", "check", str(golden))
    assert check.ret == 0, check.outlines
    pytester.runpytest_inprocess(*strict).assert_outcomes(passed=1)
    for change, headline in BREAKS.items():  # one recording, replayed with each change
        monkeypatch.setenv("AGENT_CHANGE", change)

        result = pytester.runpytest_inprocess(*strict)

        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([headline])
