"""``rollout fork --format responses``: the conversation as OpenAI Responses API input items."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from test_fork import EVENTS, SYSTEM, USER
from test_fork_sdk import COMBINATIONS, STEPS

from pytest_rollout import Recorder
from pytest_rollout.cli import main
from pytest_rollout.replay.fork import fork

EVERYTHING = {"include_system": True, "include_tool_calls": True, "include_tool_results": True}


def test_the_whole_conversation_as_input_items() -> None:
    result = fork(EVENTS, 3, format="responses", **EVERYTHING)
    assert result.messages == [
        {"type": "message", "role": "system", "content": SYSTEM["content"]},
        {"type": "message", "role": "user", "content": USER["content"]},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "weather",
            "arguments": '{"city":"Oslo"}',
        },
        {"type": "function_call_output", "call_id": "c1", "output": '{"temp_c":4}'},
        {"type": "message", "role": "assistant", "content": "Converting."},
        {"type": "function_call", "call_id": "c2", "name": "convert", "arguments": '{"celsius":4}'},
        {
            "type": "function_call_output",
            "call_id": "c2",
            "output": '{"class":"ValueError","message":"no"}',
        },
        {"type": "message", "role": "user", "content": "Just Celsius then."},
        {"type": "message", "role": "assistant", "content": "4°C in Oslo."},
    ]
    assert result.system is None  # the system prompt is an input item, not a parameter
    assert result.restored == 9


def test_defaults_keep_only_the_text() -> None:
    result = fork(EVENTS, 1, format="responses")
    assert result.messages == [{"type": "message", "role": "user", "content": USER["content"]}]


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("options", COMBINATIONS)
def test_the_responses_sdk_accepts_each_item(options: dict[str, bool], step: int) -> None:
    pydantic = pytest.importorskip("pydantic")
    pytest.importorskip("openai.types.responses")
    from openai.types.responses import EasyInputMessageParam, ResponseFunctionToolCallParam
    from openai.types.responses.response_input_param import FunctionCallOutput

    shapes: dict[str, Any] = {
        "message": EasyInputMessageParam,
        "function_call": ResponseFunctionToolCallParam,
        "function_call_output": FunctionCallOutput,
    }
    result = fork(EVENTS, step, format="responses", **options)
    for item in result.messages:
        adapter = pydantic.TypeAdapter(shapes[item["type"]])
        assert adapter.validate_python(item) == item
    calls = {i["call_id"] for i in result.messages if i["type"] == "function_call"}
    outputs = {i["call_id"] for i in result.messages if i["type"] == "function_call_output"}
    assert calls == outputs  # every call has its output, joined by call_id


def test_rollout_fork_format_responses(tmp_path: Path) -> None:
    recorder = Recorder(clock=lambda: 1_700_000_000_000_000_000)
    recorder.emit("run.started", {"prompt": "Hi"})
    recorder.emit("llm.turn.started", {"messages": [{"role": "user", "content": "Hi"}]})
    recorder.emit("llm.turn.completed", {"content": "Hello!", "tool_calls": []})
    recorder.emit("run.completed", {"outcome": "completed"})
    recorder.close()
    path = tmp_path / "hi.jsonl"
    path.write_bytes(recorder.getvalue())
    out = io.StringIO()
    assert main(["fork", str(path), "--step", "1", "--format", "responses"], out=out) == 0
    assert json.loads(out.getvalue()) == {
        "format": "responses",
        "from_step": 1,
        "original_steps": 1,
        "original_outcome": "completed",
        "restored": 2,
        "messages": [
            {"type": "message", "role": "user", "content": "Hi"},
            {"type": "message", "role": "assistant", "content": "Hello!"},
        ],
    }
