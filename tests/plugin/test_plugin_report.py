"""The failure report a user reads: pinned line by line, 100 columns wide, never raw.

The report (docs/replay.md): it names the golden, the first divergent step with its kind and
attribution, both sides of that step, the field difference, the step counts, the score, the
cost delta and the commands to fork and diff; untrusted text from the recording is shown
escaped, so no terminal escape, bidi override or CI workflow command reaches the log.
"""

from __future__ import annotations

import re

import pytest
from plugin_agent import (
    WEATHER_TEST,
    XDIST,
    failure_sections,
    record,
    run,
    write_project,
)

#: pytest shortens assertion explanations outside CI; some runs read the whole report.
NO_TRUNCATION = ("-o", "truncation_limit_lines=0", "-o", "truncation_limit_chars=0")
WIDTH = 100


def literal(line: str) -> str:
    """``line`` as an fnmatch pattern that matches only itself."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in line)


# The whole report for one realistic failure: the agent upper-cases a tool argument.
TOOL_CALL_MISMATCH_REPORT = [
    "this run left its golden at step 1: tool_call_mismatch (attributed to the agent)",
    "Golden: golden/test_weather/test_weather.jsonl",
    'Divergence: call #1 of step 1: recorded get_weather(city="Paris"), '
    'got get_weather(city="PARIS")',
    "First divergence at step 1 (diverged)",
    "  golden did:",
    '    llm.turn.started  2 new messages, last user: "What is the weather in Paris?"',
    '    llm.turn.completed  "Let me look that up." -> get_weather(city="Paris"), '
    'get_time(city="Paris")',
    '    usage.delta  {"cumulative_cost_usd":0.00025}',
    '  > tool.call.started  get_weather(city="Paris")',
    '    tool.call.completed  get_weather -> {"city":"Paris","sky":"light rain","temp_c":18.5}',
    '    tool.call.started  get_time(city="Paris")',
    '    tool.call.completed  get_time -> "12:00"',
    "  this run did:",
    '    llm.turn.started  2 new messages, last user: "What is the weather in Paris?"',
    '    llm.turn.completed  "Let me look that up." -> get_weather(city="Paris"), '
    'get_time(city="Paris")',
    '    usage.delta  {"cumulative_cost_usd":0.00025}',
    '  > tool.call.started  get_weather(city="PARIS")',
    "    tool.call.completed  get_weather raised ReplayDivergenceError: "
    "tool_call_mismatch at step 1 (at…",
    "    replay.divergence  tool_call_mismatch: call #1 of step 1: "
    "recorded get_weather(… (+44 chars)",
    "    run.failed  ReplayDivergenceError: tool_call_mismatch at step 1 (attribu… (+103 chars)",
    "  Difference (event 4 of the step):",
    '    data.arguments.city: "Paris" -> "PARIS"',
    "  After it: 1 more step differs (1 only in golden)",
    "Steps 0-2: 1 identical, 1 diverged, 1 only in golden, 0 only in this run",
    "Score: golden wins 4-2: outcome (this run failed where golden completed), "
    "errors (golden 0 vs this",
    "    run 2); this run takes cost (golden $0.0008 vs this run $0.00025), "
    "steps (golden 2 vs this run",
    "    1)",
    "Cost: golden $0.0008, this run $0.00025 (-$0.00055)",
    "Fork the conversation from the last good event (step 1's model turn):",
    "  rollout fork golden/test_weather/test_weather.jsonl --step 1",
    "This run was saved; compare it with its golden:",
    "  rollout diff golden/test_weather/test_weather.jsonl "
    ".pytest_cache/d/rollout/runs/test_weather/test_weather.jsonl",
]


@XDIST
def test_tool_call_mismatch_report_is_pinned(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_CHANGE", "argument")

    result = run(pytester, xdist)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_weather _*",
            *([] if not xdist else ["[[]gw?[]] *"]),
            *(literal(line) for line in TOOL_CALL_MISMATCH_REPORT),
            "*= rollout =*",
            "1 golden(s) compared: 1/2 turns served, 0/2 tool calls matched, 1 diverged",
        ],
        consecutive=True,
    )


HOSTILE_TEST = """
import os

from agent import TOOLS, ScriptedLLM, agent

APPLY = os.environ.get("APPLY_CHANGE") == "1"
QUESTION = "What is the weather in Evil?"


def test_argument_changed(rollout, golden):
    tools = rollout.tools(TOOLS)
    with rollout.run(prompt=QUESTION) as run:
        llm = rollout.provider(ScriptedLLM())
        run.output = agent(llm, tools, QUESTION, "argument" if APPLY else "")
    assert rollout == golden


def test_answer_changed(rollout, golden):
    tools = rollout.tools(TOOLS)
    with rollout.run(prompt=QUESTION) as run:
        llm = rollout.provider(ScriptedLLM())
        run.output = agent(llm, tools, QUESTION, "post-process" if APPLY else "")
    assert rollout == golden
"""

#: The command lines stay whole so that they can be copied; every other line fits.
COMMANDS = ("  rollout fork ", "  rollout diff ")


def report_lines(lines: list[str]) -> list[str]:
    """A failure section's report lines, without pytest's own ``E`` prefix and traceback."""
    start = next(i for i, line in enumerate(lines) if "this run left its golden" in line)
    first, *rest = lines[start:]
    if not first.startswith("E "):
        # The plugin's own report, ending with the assertion's location when it replaced
        # pytest's (cut short) explanation.
        if len(rest) >= 2 and rest[-2] == "" and rest[-1].endswith(": AssertionError"):
            rest = rest[:-2]
        return [first, *rest]
    # E, then pytest's indent, then "assert " and the report's first line; later lines of
    # the explanation are indented two more spaces.
    indent = 1 + len(first) - 1 - len(first[1:].lstrip())
    return [
        first[indent:].removeprefix("assert "),
        *(line[indent + 2 :] for line in rest if line.startswith("E")),
    ]


def test_report_fits_100_columns_and_never_prints_hostile_text_raw(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_hostile=HOSTILE_TEST)
    record(pytester).assert_outcomes(passed=2)
    monkeypatch.setenv("APPLY_CHANGE", "1")

    result = run(pytester, (), *NO_TRUNCATION)

    result.assert_outcomes(failed=2)
    sections = failure_sections(result)
    assert sorted(sections) == ["test_answer_changed", "test_argument_changed"]
    for name, lines in sections.items():
        report = report_lines(lines)
        assert report[-1].startswith("  rollout diff golden/test_hostile/"), name
        too_wide = [line for line in report if len(line) > WIDTH and not line.startswith(COMMANDS)]
        assert too_wide == [], name
        # The hostile text did reach the report, escaped.
        assert "\\u202eexe.txt\\u2028" in "\n".join(report), name
    everything = [*result.outlines, *result.errlines]
    for line in everything:
        assert "\x1b" not in line
        assert "\u202e" not in line
        assert "\u2028" not in line
        assert "##[" not in line
        assert not re.match(r"^(E\s+)?\s*::", line), line
    # The tool's error message, escaped where the golden's step is shown.
    assert (
        "get_time raised LookupError: \\x1b[31mred\\x1b[0m \\u202eexe.txt\\u2028\\n::err…"
    ) in "\n".join(sections["test_argument_changed"])


SWALLOWED_TEST = """
import os

from agent import TOOLS, ScriptedLLM, agent

CHANGE = "argument" if os.environ.get("APPLY_CHANGE") == "1" else ""


def test_swallowed(rollout, golden):
    tools = rollout.tools(TOOLS)
    question = "What is the weather in Paris?"
    with rollout.run(prompt=question) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), tools, question, CHANGE, True)
    assert rollout == golden
"""


def test_assert_shows_the_whole_report_at_default_verbosity(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CI", "BUILD_NUMBER"):
        monkeypatch.delenv(name, raising=False)
    write_project(pytester, test_swallowed=SWALLOWED_TEST)
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("APPLY_CHANGE", "1")

    result = run(pytester, ())

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "this run left its golden at step 1: tool_call_mismatch (attributed to the agent)",
            "Score: *",
            "Cost: golden $0.0008, this run $0.00025 (-$0.00055)",
            "  rollout diff golden/test_swallowed/test_swallowed.jsonl *",
            "",
            "test_swallowed.py:*: AssertionError",
        ]
    )
    result.stdout.no_fnmatch_line("*Full output truncated*")


KINDS_TEST = """
import os

import pytest
from agent import TOOLS, ScriptedLLM, agent


@pytest.mark.parametrize("change", ["extra-turn", "system-prompt"])
def test_agent(rollout, golden, change):
    applied = change if os.environ.get("APPLY_CHANGE") == "1" else ""
    tools = rollout.tools(TOOLS)
    question = "What is the weather in Paris?"
    with rollout.run(prompt=question) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), tools, question, applied)
    assert rollout == golden
"""


def test_unrecorded_turn_names_the_golden_as_typed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_details=KINDS_TEST)
    record(pytester).assert_outcomes(passed=2)
    monkeypatch.setenv("APPLY_CHANGE", "1")

    result = run(pytester, (), "-k", "extra-turn")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "Divergence: the agent asked for turn 3 but "
            "golden/test_details/test_agent[[]extra-turn[]].jsonl holds",
            "    only 2 turn(s)",
        ]
    )
    result.stdout.no_fnmatch_line(f"*{pytester.path}*holds only*")


def test_prompt_mismatch_detail_is_cut_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_details=KINDS_TEST)
    record(pytester).assert_outcomes(passed=2)
    monkeypatch.setenv("APPLY_CHANGE", "1")

    result = run(pytester, (), "-k", "system-prompt")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["Divergence: the request differs from the recorded one at *"])
    # An excerpt of a value inside an excerpt of the detail once read "Be bri… (+4… (+7 chars)".
    for line in result.outlines:
        assert re.search(r"\(\+\d*…", line) is None, line


def test_a_long_golden_path_is_never_cut(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden_dir = "a_folder_with_a_rather_long_name_for_its_goldens/" * 3 + "golden"
    write_project(pytester, test_weather=WEATHER_TEST)
    pytester.makeini(f"[pytest]\nrollout_golden_dir = {golden_dir}\n")
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_CHANGE", "argument")

    result = run(pytester, ())

    result.assert_outcomes(failed=1)
    golden = f"{golden_dir}/test_weather/test_weather.jsonl"
    assert len("Golden: " + golden) > WIDTH
    result.stdout.fnmatch_lines([f"Golden: {golden}"])


def test_no_compared_line_when_no_golden_was_compared(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_live="""
import pytest


@pytest.mark.rollout(replay=False)
def test_live(rollout):
    with rollout.run(prompt="hi") as run:
        run.output = "done"
"""
    )

    result = run(pytester, (), "--rollout-report=report.html")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*= rollout =*", "rollout report: report.html"])
    assert not any("golden(s) compared" in line for line in result.outlines)


@XDIST
def test_on_ci_the_report_is_printed_once_and_summed_up_by_its_headline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    """On CI, pytest's short test summary prints a failure's whole message: the report's
    headline is that message, so the report is not printed a second time, and a JUnit XML
    file names the failure by it."""
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_CHANGE", "argument")
    monkeypatch.setenv("CI", "true")

    result = run(pytester, xdist, "--junitxml=junit.xml")

    result.assert_outcomes(failed=1)
    headline = "tool_call_mismatch at step 1 (attributed to the agent): this run left its golden"
    summary = result.outlines[
        result.outlines.index(
            next(line for line in result.outlines if "short test summary info" in line)
        )
        + 1 :
    ]
    assert summary[0] == f"FAILED test_weather.py::test_weather - {headline}"
    assert sum(line == "Score: " or line.startswith("Score: ") for line in result.outlines) == 1
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert f'<failure message="{headline}">' in junit
    assert "First divergence at step 1 (diverged)" in junit
