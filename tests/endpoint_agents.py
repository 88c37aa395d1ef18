"""Agents in another process, for the recording endpoint's tests: a Python one on the OpenAI SDK
and a Node one on bare ``fetch`` (no npm package), both asking a question, then a follow-up
as a stream, and printing ``<first answer> | <streamed answer>``.

Each reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` as an OpenAI client does (what
``rollout.endpoint().env()`` gives); ``AGENT_EXTRA`` set asks one more question. An HTTP
error is printed on stderr with its status and body, and the process exits 3.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import pytest

QUESTION: Final = "What is the weather in Paris?"
FOLLOW_UP: Final = "And tomorrow?"
EXTRA: Final = "And next week?"
FIRST_ANSWER: Final = "It is sunny in Paris, 21 degrees."
SECOND_ANSWER: Final = "Tomorrow brings rain and 14 degrees."
ANSWER: Final = f"{FIRST_ANSWER} | {SECOND_ANSWER}"

PYTHON_AGENT: Final = """
import os
import sys

import openai

client = openai.OpenAI(max_retries=0)
model = "gpt-4o-mini"
messages = [{"role": "user", "content": sys.argv[1]}]
try:
    first = client.chat.completions.create(model=model, messages=messages)
    answer = first.choices[0].message.content
    messages.append({"role": "assistant", "content": answer})
    messages.append({"role": "user", "content": "@FOLLOW_UP@"})
    options = {"stream_options": {"include_usage": True}}
    with client.chat.completions.stream(model=model, messages=messages, **options) as events:
        second = events.get_final_completion().choices[0].message.content
    if os.environ.get("AGENT_EXTRA"):
        messages.append({"role": "assistant", "content": second})
        messages.append({"role": "user", "content": "@EXTRA@"})
        client.chat.completions.create(model=model, messages=messages)
except openai.APIStatusError as exc:
    print(f"HTTP {exc.status_code}: {exc.response.text}", file=sys.stderr)
    sys.exit(3)
print(f"{answer} | {second}")
""".replace("@FOLLOW_UP@", FOLLOW_UP).replace("@EXTRA@", EXTRA)

NODE_AGENT: Final = """
const base = process.env.OPENAI_BASE_URL;
const headers = {
  "content-type": "application/json",
  authorization: `Bearer ${process.env.OPENAI_API_KEY}`,
};
const model = "gpt-4o-mini";

async function post(body) {
  const response = await fetch(`${base}/chat/completions`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    process.stderr.write(`HTTP ${response.status}: ${await response.text()}\\n`);
    process.exit(3);
  }
  return response;
}

async function streamed(body) {
  const response = await post({ ...body, stream: true });
  const decoder = new TextDecoder();
  let buffer = "";
  let text = "";
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf("\\n\\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of frame.split("\\n")) {
        if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
        const delta = JSON.parse(line.slice(6)).choices[0]?.delta;
        if (delta?.content) text += delta.content;
      }
    }
  }
  return text;
}

const messages = [{ role: "user", content: process.argv[2] }];
const first = await (await post({ model, messages })).json();
const answer = first.choices[0].message.content;
messages.push({ role: "assistant", content: answer }, { role: "user", content: "@FOLLOW_UP@" });
const second = await streamed({ model, messages });
if (process.env.AGENT_EXTRA) {
  messages.push({ role: "assistant", content: second }, { role: "user", content: "@EXTRA@" });
  await post({ model, messages });
}
console.log(`${answer} | ${second}`);
""".replace("@FOLLOW_UP@", FOLLOW_UP).replace("@EXTRA@", EXTRA)

NODE: Final = shutil.which("node") or "/usr/bin/node"


def node_or_skip() -> str:
    """The Node executable, or a skip that says why there is none."""
    if not os.path.exists(NODE):
        pytest.skip("Node.js is not installed (apt-get install nodejs): the Node agent needs it")
    return NODE


def agent_command(kind: str, folder: Path) -> list[str]:
    """The command that runs the ``kind`` agent (``"python"`` or ``"node"``)."""
    if kind == "node":
        script = folder / "agent.mjs"
        script.write_text(NODE_AGENT, encoding="utf-8")
        return [node_or_skip(), str(script)]
    script = folder / "agent.py"
    script.write_text(PYTHON_AGENT, encoding="utf-8")
    return [sys.executable, str(script)]


def run_agent(
    command: Sequence[str], env: Mapping[str, str], question: str = QUESTION, **extra: str
) -> subprocess.CompletedProcess[str]:
    """Run an agent with ``env`` over this process's environment (and ``extra``)."""
    return subprocess.run(
        [*command, question],
        env={**os.environ, **env, **extra},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
