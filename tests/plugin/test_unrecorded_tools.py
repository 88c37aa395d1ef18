"""Tools that ran outside ``rollout.tools`` are named: a warning when recording, a failure
(or, ``rollout_unrecorded_tools = warn``, a warning) in dry replay, a line in ``rollout check``.
"""

from __future__ import annotations

import io
from typing import Final

import pytest
from plugin_agent import run_showing_warnings, sdk_weather_test, write_sdk_project

from pytest_rollout.cli import main as rollout_main
from pytest_rollout.diff.integrity import unrecorded_calls, unrecorded_text
from pytest_rollout.format.events import (
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    RUN_COMPLETED,
    RUN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
)
from pytest_rollout.format.loader import loads
from pytest_rollout.format.recorder import Recorder

#: An agent whose tool is called directly, never through rollout.tools.
UNWRAPPED: Final = sdk_weather_test("test_weather", wrapped=False)

TEXT: Final = (
    "tool calls ran outside rollout.tools, so they were not recorded and a replay would run "
    'them live: "get_weather" (step 1, call call_*). Wrap the tools and give the agent what '
    "comes back: tools = rollout.tools([get_weather]) (a framework's decorated tools and MCP "
    "tools: docs/frameworks.md)"
)


def _glob(text: str) -> str:
    """``text`` as an fnmatch pattern matching itself (``[`` is a class there)."""
    return text.replace("[", "[[]")


def _project(pytester: pytest.Pytester) -> None:
    write_sdk_project(pytester, test_unwrapped_weather=UNWRAPPED)


def test_recording_warns_naming_the_unwrapped_tool_and_replay_fails_with_the_same_text(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester)
    recorded = run_showing_warnings(pytester, "--rollout-record")
    recorded.assert_outcomes(passed=1, warnings=1)
    recorded.stdout.fnmatch_lines(["*RolloutWarning: " + _glob(TEXT)])

    golden = pytester.path / "golden" / "test_unwrapped_weather" / "test_weather.jsonl"
    out = io.StringIO()
    assert rollout_main(["check", str(golden)], out=out) == 1
    assert "turn 1 announced call call_" in out.getvalue()
    assert '(tool "get_weather") but no tool.call.started follows before the next turn' in (
        out.getvalue()
    )

    monkeypatch.setenv("MODEL_OFFLINE", "1")
    replayed = run_showing_warnings(pytester)
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(
        [
            "golden/test_unwrapped_weather/test_weather.jsonl: " + _glob(TEXT),
            "This dry replay would run them live, so it stops here. Wrap them, then re-record: "
            "pytest --rollout-record test_unwrapped_weather.py::test_weather (or set "
            'rollout_unrecorded_tools = warn, or @pytest.mark.rollout(unrecorded_tools="warn") '
            "on this test, to let them run live)",
        ]
    )

    marked = UNWRAPPED.replace(
        "def test_weather(", '@pytest.mark.rollout(unrecorded_tools="warn")\ndef test_weather('
    )
    pytester.makepyfile(test_unwrapped_weather="import pytest\n" + marked)
    warned_here = run_showing_warnings(pytester)
    warned_here.assert_outcomes(passed=1, warnings=1)
    pytester.makepyfile(test_unwrapped_weather=UNWRAPPED)

    pytester.makeini("[pytest]\nrollout_unrecorded_tools = warn\n")
    warned = run_showing_warnings(pytester)
    warned.assert_outcomes(passed=1, warnings=1)
    warned.stdout.fnmatch_lines(
        ["*RolloutWarning: golden/test_unwrapped_weather/test_weather.jsonl: " + _glob(TEXT)]
    )


def test_a_bad_unrecorded_tools_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nrollout_unrecorded_tools = sometimes\n")
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = run_showing_warnings(pytester)
    result.stderr.fnmatch_lines(
        ["*rollout_unrecorded_tools must be fail or warn, got 'sometimes'*"]
    )


def test_a_bad_unrecorded_tools_marker_value_fails_that_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_marked="""
import pytest


@pytest.mark.rollout(unrecorded_tools="sometimes")
def test_marked(rollout):
    pass
"""
    )
    result = run_showing_warnings(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*@pytest.mark.rollout(unrecorded_tools=...) must be 'fail' or 'warn', got 'sometimes'*"]
    )


def _turn(recorder: Recorder, *calls: tuple[str, str]) -> None:
    recorder.emit(LLM_TURN_STARTED, {"messages": [], "messages_hash": "h"})
    announced = [{"id": call_id, "name": name, "arguments": {}} for call_id, name in calls]
    recorder.emit(LLM_TURN_COMPLETED, {"content": None, "tool_calls": announced})


def test_a_call_never_made_before_the_next_turn_is_unrecorded_but_not_the_last_turns() -> None:
    recorder = Recorder()
    recorder.emit(RUN_STARTED, {})
    _turn(recorder, ("c1", "get_weather"), ("c2", "lookup"))
    recorder.emit(TOOL_CALL_STARTED, {"call_id": "c1", "name": "get_weather", "arguments": {}})
    recorder.emit(TOOL_CALL_COMPLETED, {"call_id": "c1", "name": "get_weather", "output": 1})
    _turn(recorder, ("c3", "final_result"))  # answered by the framework itself
    _turn(recorder, ("c4", "get_time"))  # the run stops here: never made, not unrecorded
    recorder.emit(RUN_COMPLETED, {"outcome": "completed"})
    calls = unrecorded_calls(loads(recorder.getvalue()).events)
    assert [(c.name, c.call_id, c.step) for c in calls] == [("lookup", "c2", 1)]
    assert "rollout.tools([lookup])" in unrecorded_text(calls)


@pytest.mark.parametrize(
    "choice",
    [
        {"type": "function", "function": {"name": "UserInfo"}},  # Chat Completions
        {"type": "function", "name": "UserInfo"},  # the Responses API
        {"type": "tool", "name": "UserInfo"},  # Anthropic
    ],
)
def test_a_forced_function_is_structured_output_not_an_unrecorded_tool(
    choice: dict[str, object],
) -> None:
    """instructor's tools mode and ``pydantic_function_tool`` force one function and read
    its arguments as the answer: no tool runs, and nothing is left unrecorded."""
    recorder = Recorder()
    recorder.emit(RUN_STARTED, {})
    for attempt in ("c1", "c2"):  # a validation retry asks again: the first call is not made
        params = {"tool_choice": choice}
        recorder.emit(LLM_TURN_STARTED, {"messages": [], "params": params, "messages_hash": "h"})
        call = {"id": attempt, "name": "UserInfo", "arguments": {"name": "Ada"}}
        recorder.emit(LLM_TURN_COMPLETED, {"content": None, "tool_calls": [call]})
    recorder.emit(RUN_COMPLETED, {"outcome": "completed"})
    assert unrecorded_calls(loads(recorder.getvalue()).events) == []


def test_a_call_of_another_function_than_the_forced_one_is_still_unrecorded() -> None:
    recorder = Recorder()
    recorder.emit(RUN_STARTED, {})
    params = {"tool_choice": {"type": "function", "function": {"name": "UserInfo"}}}
    recorder.emit(LLM_TURN_STARTED, {"messages": [], "params": params, "messages_hash": "h"})
    call = {"id": "c1", "name": "delete_file", "arguments": {}}
    recorder.emit(LLM_TURN_COMPLETED, {"content": None, "tool_calls": [call]})
    _turn(recorder)
    recorder.emit(RUN_COMPLETED, {"outcome": "completed"})
    calls = unrecorded_calls(loads(recorder.getvalue()).events)
    assert [(c.name, c.step) for c in calls] == [("delete_file", 1)]
