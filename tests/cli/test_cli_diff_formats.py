"""``rollout diff --format json`` (validated against its published schema) and ``--format
markdown`` (parsed as CommonMark with GitHub's tables), for a bot to post on a review."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from command import diff, write_lines
from hostile import EVIL, assert_printable
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schemas" / "diff-1.json").read_text(encoding="utf-8"))
GOLDENS = sorted((ROOT / "examples" / "weather" / "golden").rglob("*.jsonl"))


def pair(tmp_path: Path, answer: str = "Hi!", prompt: str = "hi") -> tuple[Path, Path]:
    def run(name: str, content: str, asked: str, city: str) -> Path:
        call = {"id": "c1", "name": "get_weather", "arguments": {"city": city}}
        return write_lines(
            tmp_path / name,
            ("run.started", {"prompt": asked}),
            ("llm.turn.started", {"step": 1, "messages": []}),
            ("llm.turn.completed", {"step": 1, "content": None, "tool_calls": [call]}),
            (
                "tool.call.started",
                {"step": 1, "call_id": "c1", "name": "get_weather", "arguments": {"city": city}},
            ),
            (
                "tool.call.completed",
                {"step": 1, "call_id": "c1", "name": "get_weather", "output": "sunny"},
            ),
            ("llm.turn.started", {"step": 2, "messages": []}),
            ("llm.turn.completed", {"step": 2, "content": content, "cost_usd": 0.001}),
            ("run.completed", {"step": 2, "outcome": "completed"}),
        )

    return run("a.jsonl", "Hello there!", "hi", "Paris"), run("b.jsonl", answer, prompt, "Rome")


def as_json(*args: str | Path) -> tuple[int, Any]:
    status, out = diff(*args, "--format", "json")
    return status, json.loads(out)


@pytest.mark.parametrize(
    "runs",
    [(GOLDENS[0], GOLDENS[0]), (GOLDENS[0], GOLDENS[1]), (GOLDENS[1], GOLDENS[-1])],
    ids=["same", "other prompt", "other golden"],
)
def test_the_json_follows_its_published_schema(runs: tuple[Path, Path]) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    status, data = as_json(*runs)
    jsonschema.validate(data, SCHEMA)
    assert status == diff(*runs)[0]  # the exit status is the text format's
    assert data["matched"] is (status == 0)


def test_the_json_of_a_changed_call_names_the_call_and_the_first_change(tmp_path: Path) -> None:
    a, b = pair(tmp_path)
    status, data = as_json(a, b)
    jsonschema.validate(data, SCHEMA)
    assert status == 1
    assert data["schema"] == "pytest-rollout/diff/1"
    assert data["headline"] == "B left A at step 1: tool_call_mismatch (attributed to the agent)"
    assert data["first_change"] == 'data.tool_calls[0].arguments.city: "Paris" -> "Rome"'
    assert data["divergent_tool_calls"][0]["b"] == {
        "name": "get_weather",
        "arguments": {"city": "Rome"},
    }
    assert diff(a, b, "--json") == diff(a, b, "--format", "json")


def test_the_markdown_of_a_pair(tmp_path: Path) -> None:
    a, b = pair(tmp_path)
    assert diff(a, b, "--format", "markdown") == (
        1,
        "## rollout diff\n\n"
        f"A: ` {a} `  \n"
        f"B: ` {b} `\n\n"
        "B left A at step 1: tool\\_call\\_mismatch \\(attributed to the agent\\)\n\n"
        "| | |\n"
        "| --- | --- |\n"
        "| Step | 1 |\n"
        "| Kind | tool\\_call\\_mismatch |\n"
        "| Attributed to | agent |\n"
        "| Divergence | first difference in data.tool\\_calls\\[0\\].arguments.city |\n"
        '| First change | data.tool\\_calls\\[0\\].arguments.city: "Paris" \\-\\> "Rome" |\n'
        "| Score | tie 0\\-0 |\n"
        "| Cost change | +$0.00 |\n\n"
        f"Fork from the last good step \\(0\\): ` rollout fork {a} --step 0 `\n",
    )
    html = MarkdownIt("commonmark").enable("table").render(diff(a, b, "--format", "markdown")[1])
    assert "<td>tool_call_mismatch</td>" in html


def test_the_markdown_of_the_same_run_says_so(tmp_path: Path) -> None:
    a, _ = pair(tmp_path)
    assert diff(a, a, "--format", "markdown") == (
        0,
        f"## rollout diff\n\nA: ` {a} `  \nB: ` {a} `\n\nB matches A\n",
    )


def test_recorded_text_cannot_become_markup_or_escapes(tmp_path: Path) -> None:
    hostile = EVIL + " | <img src=x onerror=alert(1)> [x](javascript:alert(1)) `"
    a, b = pair(tmp_path, answer=hostile, prompt=hostile)
    status, markdown = diff(a, b, "--format", "markdown")
    assert status == 1
    assert_printable(markdown.replace("\n", " "))
    html = MarkdownIt("commonmark").enable("table").render(markdown)
    assert "<img" not in html
    assert "<a " not in html
    assert html.count("<tr>") == 8  # the table's rows stay whole
