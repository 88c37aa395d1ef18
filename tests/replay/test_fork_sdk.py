"""Fork output is accepted by the SDKs' own request types, for every option combination."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pytest
from test_fork import EVENTS, SYSTEM

from pytest_rollout.replay.fork import fork

pydantic = pytest.importorskip("pydantic")

COMBINATIONS = [
    {"include_system": system, "include_tool_calls": tools, "include_tool_results": tools}
    for system, tools in itertools.product([False, True], repeat=2)
]
STEPS = range(4)


def _ids(options: Mapping[str, bool]) -> str:
    on = [k.removeprefix("include_") for k, v in options.items() if v]
    return "+".join(dict.fromkeys(on)) or "defaults"


def _consume(value: Any) -> None:
    """Walk a validated value: pydantic checks Iterable fields only as they are iterated."""
    if isinstance(value, Mapping):
        for item in value.values():
            _consume(item)
    elif isinstance(value, Iterable) and not isinstance(value, str | bytes):
        for item in value:
            _consume(item)


def _cases() -> Iterator[Any]:
    for options, step in itertools.product(COMBINATIONS, STEPS):
        yield pytest.param(options, step, id=f"{_ids(options)}-step{step}")


@pytest.mark.parametrize(("options", "step"), list(_cases()))
def test_openai_chat_completions_accepts_the_fork(options: dict[str, bool], step: int) -> None:
    pytest.importorskip("openai.types.chat")
    from openai.types.chat import ChatCompletionMessageParam

    result = fork(EVENTS, step, format="openai", **options)
    adapter = pydantic.TypeAdapter(list[ChatCompletionMessageParam])
    _consume(adapter.validate_python(result.messages))
    roles = [m["role"] for m in result.messages]
    assert ("system" in roles) == options["include_system"]
    assert ("tool" in roles) == (options["include_tool_results"] and step >= 1)
    has_calls = any("tool_calls" in m for m in result.messages)
    assert has_calls == (options["include_tool_calls"] and step >= 1)


@pytest.mark.parametrize(("options", "step"), list(_cases()))
def test_anthropic_messages_accepts_the_fork(options: dict[str, bool], step: int) -> None:
    pytest.importorskip("anthropic.types")
    from anthropic.types import MessageParam

    result = fork(EVENTS, step, format="anthropic", **options)
    adapter = pydantic.TypeAdapter(list[MessageParam])
    _consume(adapter.validate_python(result.messages))
    assert (result.system == SYSTEM["content"]) == options["include_system"]
    roles = [m["role"] for m in result.messages]
    assert all(a != b for a, b in itertools.pairwise(roles)), "turns must alternate"
    blocks = [b["type"] for m in result.messages for b in m["content"]]
    assert ("tool_use" in blocks) == (options["include_tool_calls"] and step >= 1)
    assert ("tool_result" in blocks) == (options["include_tool_results"] and step >= 1)


def test_an_invalid_message_is_refused_by_the_check() -> None:
    pytest.importorskip("openai.types.chat")
    from openai.types.chat import ChatCompletionMessageParam

    adapter = pydantic.TypeAdapter(list[ChatCompletionMessageParam])
    with pytest.raises(pydantic.ValidationError):
        adapter.validate_python([{"role": "tool", "content": "no tool_call_id"}])
