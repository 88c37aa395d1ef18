"""Fork: the conversation up to a step, in each shape, with conservative defaults."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, TypedDict

import pytest
from sessions import new_session

from pytest_rollout import Recorder, RolloutError
from pytest_rollout.cli import main
from pytest_rollout.format.events import Event
from pytest_rollout.replay.fork import ForkError, fork

SYSTEM = {"role": "system", "content": "You are terse."}
USER = {"role": "user", "content": "Weather in Oslo, in fahrenheit?"}


def _run() -> tuple[Event, ...]:
    """Two tool-calling turns and a final answer; the second tool fails."""
    recorder = Recorder(clock=lambda: 1_700_000_000_000_000_000)
    emit = recorder.emit
    emit("run.started", {"run_id": "r", "prompt": USER["content"]})
    emit("llm.turn.started", {"messages": [SYSTEM, USER]})
    emit(
        "llm.turn.completed",
        {
            "content": None,
            "tool_calls": [{"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}],
        },
    )
    emit("tool.call.started", {"call_id": "c1", "name": "weather", "arguments": {"city": "Oslo"}})
    emit("tool.call.completed", {"call_id": "c1", "name": "weather", "output": {"temp_c": 4}})
    emit("llm.turn.started", {"messages": [{"role": "tool", "content": "{...}"}]})
    emit(
        "llm.turn.completed",
        {
            "content": "Converting.",
            "tool_calls": [{"id": "c2", "name": "convert", "arguments": {"celsius": 4}}],
        },
    )
    emit("tool.call.started", {"call_id": "c2", "name": "convert", "arguments": {"celsius": 4}})
    emit(
        "tool.call.completed",
        {"call_id": "c2", "name": "convert", "error": {"class": "ValueError", "message": "no"}},
    )
    emit("llm.turn.started", {"messages": [{"role": "user", "content": "Just Celsius then."}]})
    emit("llm.turn.completed", {"content": "4°C in Oslo.", "tool_calls": []})
    emit("run.completed", {"outcome": "completed", "output": "4°C in Oslo."})
    recorder.close()
    return recorder.rollout().events


EVENTS = _run()


class Inclusions(TypedDict, total=False):
    include_system: bool
    include_tool_calls: bool
    include_tool_results: bool


EVERYTHING: Inclusions = {
    "include_system": True,
    "include_tool_calls": True,
    "include_tool_results": True,
}


def test_defaults_leave_out_system_tool_calls_and_results() -> None:
    result = fork(EVENTS, 3)
    assert result.messages == [
        USER,
        {"role": "assistant", "content": "Converting."},
        {"role": "user", "content": "Just Celsius then."},
        {"role": "assistant", "content": "4°C in Oslo."},
    ]
    assert (result.from_step, result.original_steps, result.original_outcome) == (3, 3, "completed")
    assert result.restored == 4


def test_step_zero_is_the_opening_request() -> None:
    assert fork(EVENTS, 0, include_system=True).messages == [SYSTEM, USER]


def test_neutral_with_everything() -> None:
    assert fork(EVENTS, 2, **EVERYTHING).messages == [
        SYSTEM,
        USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "weather", "content": {"temp_c": 4}},
        {
            "role": "assistant",
            "content": "Converting.",
            "tool_calls": [{"id": "c2", "name": "convert", "arguments": {"celsius": 4}}],
        },
        {
            "role": "tool",
            "tool_call_id": "c2",
            "name": "convert",
            "content": {"class": "ValueError", "message": "no"},
            "is_error": True,
        },
    ]


def test_openai_shape() -> None:
    result = fork(EVENTS, 1, format="openai", **EVERYTHING)
    assert result.messages == [
        SYSTEM,
        USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp_c":4}'},
    ]


def test_anthropic_shape_puts_system_aside_and_results_in_the_next_user_turn() -> None:
    result = fork(EVENTS, 3, format="anthropic", **EVERYTHING)
    assert result.system == "You are terse."
    assert result.messages == [
        {"role": "user", "content": [{"type": "text", "text": USER["content"]}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Oslo"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": '{"temp_c":4}'}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Converting."},
                {"type": "tool_use", "id": "c2", "name": "convert", "input": {"celsius": 4}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c2",
                    "content": '{"class":"ValueError","message":"no"}',
                    "is_error": True,
                },
                {"type": "text", "text": "Just Celsius then."},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "4°C in Oslo."}]},
    ]
    assert result.restored == 7


def test_anthropic_default_has_no_system() -> None:
    result = fork(EVENTS, 0, format="anthropic")
    assert result.system is None
    assert result.to_json_obj()["restored"] == 1


@pytest.mark.parametrize(
    ("calls", "results"), [(True, False), (False, True)], ids=["calls-only", "results-only"]
)
def test_tool_calls_without_results_are_refused(calls: bool, results: bool) -> None:
    with pytest.raises(ForkError, match="tool calls and their results go together"):
        fork(EVENTS, 2, include_tool_calls=calls, include_tool_results=results)


@pytest.mark.parametrize("step", [-1, 4, 1_000])
def test_a_step_outside_the_run_is_refused(step: int) -> None:
    with pytest.raises(ForkError, match=f"cannot fork at step {step}") as info:
        fork(EVENTS, step)
    assert isinstance(info.value, RolloutError)


def _write(tmp_path: Path, events: tuple[Event, ...]) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(orjson_line(e) for e in events))
    return path


def orjson_line(event: Event) -> bytes:
    import orjson

    return orjson.dumps(event.to_json_obj()) + b"\n"


def _cli(*args: str) -> tuple[int, dict[str, Any] | str]:
    out = io.StringIO()
    code = main(["fork", *args], out=out)
    text = out.getvalue()
    return code, json.loads(text) if code == 0 else text


def test_cli_prints_the_fork_as_json(tmp_path: Path) -> None:
    path = _write(tmp_path, EVENTS)
    code, data = _cli(
        str(path),
        "--step",
        "1",
        "--format",
        "openai",
        "--include-system",
        "--include-tool-calls",
        "--include-tool-results",
    )
    assert code == 0
    assert isinstance(data, dict)
    assert data["messages"] == fork(EVENTS, 1, format="openai", **EVERYTHING).messages
    assert (data["from_step"], data["original_steps"], data["restored"]) == (1, 3, 4)


def test_cli_refusals_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, EVENTS)
    assert main(["fork", str(path), "--step", "9"]) == 2
    assert capsys.readouterr().err == (
        "rollout: error: cannot fork at step 9: the run has 3 step(s) (0 to 3)\n"
    )
    assert main(["fork", str(path), "--step", "1", "--include-tool-calls"]) == 2
    assert "go together" in capsys.readouterr().err
    assert main(["fork", str(tmp_path / "missing.jsonl"), "--step", "1"]) == 2


def test_cli_output_is_terminal_safe(tmp_path: Path) -> None:
    recorder = Recorder()
    recorder.emit("run.started", {})
    hostile = "\x1b[2J\u202egnp.exe ##[group]x\n::error::boom"
    recorder.emit("llm.turn.started", {"messages": [{"role": "user", "content": hostile}]})
    recorder.emit("llm.turn.completed", {"content": hostile, "tool_calls": []})
    recorder.emit("run.completed", {"outcome": "completed"})
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(recorder.getvalue())
    out = io.StringIO()
    assert main(["fork", str(path), "--step", "1"], out=out) == 0
    text = out.getvalue()
    assert text.isascii()
    assert "\x1b" not in text
    assert "##[" not in text
    assert not any(line.lstrip().startswith("::") for line in text.splitlines())
    assert json.loads(text)["messages"][0]["content"] == hostile


def test_fork_inside_a_test_uses_the_golden() -> None:
    from pytest_rollout.format.loader import Rollout
    from pytest_rollout.session import Mode

    session = new_session(Mode.DRY, Rollout("g.jsonl", EVENTS))
    assert session.fork(1).messages == fork(EVENTS, 1).messages


def _change_everything(value: Any) -> None:
    """Change every dict and list inside ``value`` in place."""
    if isinstance(value, dict):
        for item in list(value.values()):
            _change_everything(item)
        value["changed"] = True
    elif isinstance(value, list):
        for item in value:
            _change_everything(item)
        value.append("changed")


@pytest.mark.parametrize("shape", ["neutral", "openai", "responses", "anthropic"])
def test_a_fork_shares_nothing_with_the_run(shape: str) -> None:
    run = _run()
    kept = json.dumps([e.data for e in run])
    result = fork(run, 2, format=shape, include_tool_calls=True, include_tool_results=True)
    _change_everything(result.messages)  # a caller going on with the conversation
    assert json.dumps([e.data for e in run]) == kept


def _off_schema(*events: tuple[str, int, dict[str, Any]]) -> tuple[Event, ...]:
    """Events built in memory, past the loader and its schema."""
    return tuple(Event(seq, "t", kind, data, step) for seq, (kind, step, data) in enumerate(events))


@pytest.mark.parametrize("shape", ["neutral", "openai", "anthropic"])
def test_messages_and_tool_calls_of_the_wrong_type_are_read_as_none(shape: str) -> None:
    events = _off_schema(
        ("run.started", 0, {}),
        ("llm.turn.started", 1, {"messages": 3}),
        ("llm.turn.completed", 1, {"content": "hi", "tool_calls": 3}),
        ("run.completed", 1, {}),
    )
    result = fork(events, 1, format=shape, include_tool_calls=True, include_tool_results=True)
    assert [m["role"] for m in result.messages] == ["assistant"]


def test_a_file_the_schema_refuses_is_exit_2_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b'{"ts":"t","seq":0,"type":"run.started","data":{}}\n'
        b'{"ts":"t","seq":1,"type":"llm.turn.started","data":{"step":1,"messages":3}}\n'
        b'{"ts":"t","seq":2,"type":"run.completed","data":{}}\n'
    )
    assert main(["fork", str(path), "--step", "1"], out=io.StringIO()) == 2
    assert capsys.readouterr().err == (
        f"rollout: error: {path}:2: data.messages must be an array, a string or null, "
        "got an integer\n"
    )
