"""Prompt-cache tokens read from each API's usage: parts of ``input_tokens``, kept only when
the API reports some (a recording without cache use has no cache fields)."""

from __future__ import annotations

from typing import Any

from pytest_rollout.sdk.wire_anthropic import _anthropic_frames, _anthropic_json
from pytest_rollout.sdk.wire_openai import _chat_json, _responses_json

CHOICES: Any = [{"message": {"role": "assistant", "content": "hi"}}]
OUTPUT: Any = [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}]


def test_openai_chat_cached_tokens() -> None:
    usage = {"prompt_tokens": 1200, "completion_tokens": 5}
    cached = {**usage, "prompt_tokens_details": {"cached_tokens": 1024}}
    assert _chat_json({"model": "gpt-4o", "choices": CHOICES, "usage": cached}).usage == {
        "input_tokens": 1200,
        "output_tokens": 5,
        "cache_read_tokens": 1024,
    }
    none = {**usage, "prompt_tokens_details": {"cached_tokens": 0}}
    assert _chat_json({"model": "gpt-4o", "choices": CHOICES, "usage": none}).usage == {
        "input_tokens": 1200,
        "output_tokens": 5,
    }


def test_openai_responses_cached_tokens() -> None:
    usage = {
        "input_tokens": 1200,
        "output_tokens": 5,
        "input_tokens_details": {"cached_tokens": 64},
    }
    turn = _responses_json({"model": "gpt-4o", "output": OUTPUT, "usage": usage})
    assert turn.usage == {
        "input_tokens": 1200,
        "output_tokens": 5,
        "cache_read_tokens": 64,
    }


def test_anthropic_cache_reads_and_writes_count_in_the_input() -> None:
    usage = {
        "input_tokens": 20,
        "output_tokens": 5,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 200,
    }
    body = {"model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "hi"}]}
    assert _anthropic_json({**body, "usage": usage}).usage == {
        "input_tokens": 1220,
        "output_tokens": 5,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 200,
    }


def test_anthropic_stream_cache_tokens() -> None:
    start = {
        "type": "message_start",
        "message": {
            "model": "claude-sonnet-4-5",
            "usage": {
                "input_tokens": 20,
                "output_tokens": 1,
                "cache_read_input_tokens": 1000,
            },
        },
    }
    delta = {"type": "message_delta", "usage": {"output_tokens": 7}}
    frames = [
        {"event": "message_start", "data": start},
        {"event": "message_delta", "data": delta},
    ]
    assert _anthropic_frames(frames).usage == {
        "input_tokens": 1020,
        "output_tokens": 7,
        "cache_read_tokens": 1000,
    }
