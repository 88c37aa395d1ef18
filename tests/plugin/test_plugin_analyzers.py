"""End to end: analyzers turned on by ini key and marker, assertion helpers' failures as a
user reads them, and the audit trail written by several xdist workers at once."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from command import python_m
from plugin_agent import (
    IN_PROCESS,
    N2,
    WEATHER_TEST,
    failure_sections,
    record,
    run_subprocess,
    write_project,
)

ANALYZED_TYPES = {
    "tool.decision",
    "context.window.snapshot",
    "llm.request.snapshot",
    "llm.response.meta",
}


def _golden_types(pytester: pytest.Pytester, name: str = "test_weather") -> set[str]:
    path = pytester.path / "golden" / "test_weather" / f"{name}.jsonl"
    return {orjson.loads(line)["type"] for line in path.read_bytes().splitlines()}


def test_the_ini_key_turns_analyzers_on_and_their_goldens_replay(
    pytester: pytest.Pytester,
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    pytester.makeini("[pytest]\nrollout_analyzers = all\n")
    record(pytester).assert_outcomes(passed=1)
    assert _golden_types(pytester) >= ANALYZED_TYPES
    pytester.runpytest_inprocess(*IN_PROCESS).assert_outcomes(passed=1)


def test_the_marker_turns_analyzers_on_for_one_test(pytester: pytest.Pytester) -> None:
    marked = WEATHER_TEST.replace(
        "def test_weather(", '@pytest.mark.rollout(analyzers=["tool_decisions"])\ndef test_weather('
    ).replace("import os\n", "import os\n\nimport pytest\n")
    write_project(pytester, test_weather=marked)
    record(pytester).assert_outcomes(passed=1)
    types = _golden_types(pytester)
    assert "tool.decision" in types
    assert "context.window.snapshot" not in types


def test_an_unknown_analyzer_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    pytester.makeini("[pytest]\nrollout_analyzers = cost_anomaly costs\n")
    result = pytester.runpytest_inprocess(*IN_PROCESS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: unknown analyzer 'costs': choose from all, cost_anomaly*"])


REPEATING_TEST = """
import pytest
from agent import HOSTILE, TOOLS, ScriptedLLM


def test_repeats(rollout):
    tools = rollout.tools({"get_weather": lambda city: {"city": city}})
    llm = rollout.provider(ScriptedLLM())
    with rollout.run():
        llm.complete([{"role": "user", "content": "weather in Paris?"}])
        for _ in range(3):
            tools["get_weather"](city=HOSTILE)
    rollout.assert_no_antipatterns()


# The turns announce tool calls that this test never makes.
@pytest.mark.filterwarnings("ignore:tool calls ran outside rollout.tools")
def test_costs(rollout):
    llm = rollout.provider(ScriptedLLM())
    with rollout.run():
        for _ in range(2):
            llm.complete([{"role": "user", "content": "weather in Paris?"}])
    rollout.assert_cost_below(0.0001)
"""


def test_assertion_failures_read_like_the_golden_report(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_repeats=REPEATING_TEST)
    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record")
    result.assert_outcomes(failed=2)
    sections = failure_sections(result)
    repeats = "\n".join(sections["test_repeats"])
    assert (
        "E       AssertionError: rollout: 1 repeated tool call (the same tool with the same "
        "arguments, 3 or more times):" in repeats
    )
    assert "E         get_weather(city=" in repeats
    assert "called 3 times, at step 1" in repeats
    assert "\x1b" not in result.stdout.str()  # the hostile argument is sanitized
    assert "\n::error::" not in result.stdout.str()
    costs = "\n".join(sections["test_costs"])
    assert "E       AssertionError: rollout: this run cost $0.0003, not below $0.0001" in costs
    assert (
        'E         most expensive: step 1, $0.00015: the turn asked for get_weather(city="Paris"), '
        'get_time(city="Paris")' in costs
    )
    assert "E         cost by step: 1: $0.00015, 2: $0.00015" in costs


AUDITED_TEST = """
import pytest
from agent import ScriptedLLM, TOOLS, agent


def save_note(text: str) -> str:
    return "saved"


@pytest.mark.parametrize("city", ["Paris", "Oslo", "Rome", "Lima"])
def test_audited(rollout, city):
    tools = rollout.tools({**TOOLS, "save_note": save_note})
    with rollout.run(prompt=city) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), tools, f"weather in {city}?")
        tools["save_note"](text=city)
"""


def test_the_audit_trail_is_one_chain_across_xdist_workers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_audited=AUDITED_TEST)
    capture = pytester.path / "runs"
    monkeypatch.setenv("ROLLOUT_DIR", str(capture))
    result = run_subprocess(pytester, *N2, "--rollout-record", "--rollout-audit")
    result.assert_outcomes(passed=4)
    [trail] = list(capture.glob("*/audit.jsonl"))
    entries = [orjson.loads(line) for line in trail.read_bytes().splitlines()]
    kinds = [e["event_type"] for e in entries]
    assert kinds.count("run.started") == 4
    assert kinds.count("run.completed") == 4
    actions = [e["payload"] for e in entries if e["event_type"] == "audit.action"]
    assert sorted(a["arguments"]["text"] for a in actions) == ["Lima", "Oslo", "Paris", "Rome"]
    assert all(a["name"] == "save_note" and a["live"] for a in actions)
    done = python_m("audit", "verify", trail)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"{trail}: 12 entries, chain intact, head sha256:")


def test_the_audit_trail_needs_a_capture_directory(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROLLOUT_DIR", raising=False)
    write_project(pytester, test_weather=WEATHER_TEST)
    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-audit")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: the audit trail is kept in the capture directory: *"])


def test_the_audit_trail_is_not_written_unless_asked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    monkeypatch.setenv("ROLLOUT_DIR", str(pytester.path / "runs"))
    record(pytester).assert_outcomes(passed=1)
    assert not list(Path(pytester.path / "runs").glob("*/audit.jsonl"))


@pytest.mark.parametrize(
    ("ini", "error"),
    [
        (
            "rollout_cost_anomaly_multiplier = -1",
            "ERROR: rollout_cost_anomaly_multiplier must be a finite number above 0, got -1.0",
        ),
        ("rollout_error_chain_calls = many", "ERROR: rollout_error_chain_calls must be a number*"),
        (
            "rollout_context_windows =\n    gpt-4o-mini=lots",
            "ERROR: rollout_context_windows: write each line as MODEL=TOKENS, "
            "got 'gpt-4o-mini=lots'",
        ),
    ],
)
def test_a_bad_analyzer_setting_names_its_ini_key(
    pytester: pytest.Pytester, ini: str, error: str
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    pytester.makeini(f"[pytest]\n{ini}\n")
    result = pytester.runpytest_inprocess(*IN_PROCESS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([error])


def test_the_context_window_table_takes_the_ini_keys(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    pytester.makeini(
        "[pytest]\nrollout_analyzers = context_window\n"
        "rollout_context_windows =\n    scripted=100\nrollout_context_window_threshold = 0.5\n"
    )
    record(pytester).assert_outcomes(passed=1)
    golden = pytester.path / "golden" / "test_weather" / "test_weather.jsonl"
    warnings = [
        orjson.loads(line)["data"]
        for line in golden.read_bytes().splitlines()
        if b'"context.window.warning"' in line
    ]
    assert warnings
    assert {w["limit"] for w in warnings} == {100}
    assert all(w["fraction"] >= 0.5 for w in warnings)
