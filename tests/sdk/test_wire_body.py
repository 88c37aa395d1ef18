"""A request body that extends an earlier one is parsed at the cost of its new messages, and
always to exactly what parsing it whole gives."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rollout.sdk.wire import ANTHROPIC_MESSAGES, OPENAI_CHAT, OPENAI_RESPONSES
from pytest_rollout.sdk.wire_api import WireFormatError
from pytest_rollout.sdk.wire_body import BodyCache


class CountingLoads:
    """The whole-body parser, counting the bodies it parsed."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, body: bytes) -> dict[str, Any]:
        self.calls += 1
        value = orjson.loads(body)
        assert isinstance(value, dict)
        return value


def _chat(messages: list[Any], **params: Any) -> bytes:
    return orjson.dumps({"model": "m", "messages": messages, "tools": [{"a": [1]}], **params})


def _turns(count: int) -> list[list[Any]]:
    messages: list[Any] = [{"role": "system", "content": "be brief ] ,"}]
    turns = []
    for number in range(count):
        messages = [*messages, {"role": "user", "content": f"q{number}", "parts": [[number]]}]
        turns.append(messages)
    return turns


def test_a_growing_conversation_is_parsed_whole_twice_then_by_its_new_messages() -> None:
    cache, whole = BodyCache("messages"), CountingLoads()
    for messages in _turns(8):
        body = _chat(messages)
        assert cache.load(body, whole) == orjson.loads(body)
    # The first body, then the second (which shows where the array ends); never again.
    assert whole.calls == 2


def test_the_same_body_sent_again_is_not_parsed_again() -> None:
    cache, whole = BodyCache("messages"), CountingLoads()
    body = _chat([{"role": "user", "content": "hi"}])
    assert cache.load(body, whole) == cache.load(body, whole) == orjson.loads(body)
    assert whole.calls == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # Inserted into an array inside the last message: the message array did not grow.
        (
            b'{"messages":[{"c":[1]}],"model":"m"}',
            b'{"messages":[{"c":[1,2]}],"model":"m"}',
        ),
        # Into a string that holds "]".
        (
            b'{"messages":[{"c":"a]"}],"model":"m"}',
            b'{"messages":[{"c":"a],{}]"}],"model":"m"}',
        ),
        # Into a message array that a later duplicate key overrides.
        (
            b'{"messages":[1],"x":0,"messages":[{"c":1}]}',
            b'{"messages":[1,{"c":2}],"x":0,"messages":[{"c":1}]}',
        ),
        # A rewritten history, and other params.
        (_chat([{"c": 1}, {"c": 2}]), _chat([{"c": 2}, {"c": 3}])),
        (_chat([{"c": 1}]), _chat([{"c": 1}, {"c": 2}], temperature=0.5)),
    ],
)
def test_a_body_that_does_not_extend_the_array_is_parsed_whole(first: bytes, second: bytes) -> None:
    cache, whole = BodyCache("messages"), CountingLoads()
    cache.load(first, whole)
    assert cache.load(second, whole) == orjson.loads(second)
    assert whole.calls == 2


def test_unbalanced_additions_are_parsed_whole() -> None:
    cache, whole = BodyCache("messages"), CountingLoads()
    for messages in _turns(3):
        cache.load(_chat(messages), whole)
    last = _chat(_turns(3)[-1])
    end = last.index(b'],"tools"')
    # What is added closes the message array and opens a new key of the same name.
    sneaky = last[:end] + b'],"messages":[{"c":9}' + last[end:]
    assert cache.load(sneaky, whole) == orjson.loads(sneaky)
    assert orjson.loads(sneaky)["messages"] == [{"c": 9}]


def test_bad_json_in_the_new_messages_raises_as_the_whole_body_does() -> None:
    turns = _turns(3)
    for messages in turns[:2]:
        OPENAI_CHAT.request(_chat(messages))
    body = _chat(turns[2])
    broken = body.replace(b'"q2"', b'"q2', 1)
    with pytest.raises(WireFormatError, match="the body is not JSON"):
        OPENAI_CHAT.request(broken)
    assert OPENAI_CHAT.request(body).messages == turns[2]


def test_each_api_reads_its_own_growing_array() -> None:
    history = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    for count in range(1, 4):
        sent = history[:count]
        chat = OPENAI_CHAT.request(_chat(sent))
        responses = OPENAI_RESPONSES.request(
            orjson.dumps({"model": "m", "instructions": "s", "input": sent})
        )
        anthropic = ANTHROPIC_MESSAGES.request(
            orjson.dumps({"model": "m", "system": "s", "messages": sent, "max_tokens": 5})
        )
        system = [{"role": "system", "content": "s"}]
        assert chat.messages == sent
        assert responses.messages == anthropic.messages == [*system, *sent]


# Bodies written the ways SDKs write them: compact, or with spaces after separators.
_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.text(alphabet='ab],[{}"\\ ', max_size=6),
)
_VALUE = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None, database=None)
@given(
    messages=st.lists(_VALUE, min_size=1, max_size=8),
    splits=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    spaced=st.booleans(),
    tail=st.dictionaries(st.sampled_from(["model", "tools", "x"]), _VALUE, max_size=3),
)
def test_any_growing_body_parses_as_it_does_whole(
    messages: list[Any], splits: list[int], spaced: bool, tail: dict[str, Any]
) -> None:
    cache, whole = BodyCache("messages"), CountingLoads()
    for end in sorted({min(s, len(messages)) for s in splits} | {len(messages)}):
        data = {"messages": messages[:end], **tail}
        body = json.dumps(data).encode() if spaced else orjson.dumps(data)
        assert cache.load(body, whole) == orjson.loads(body)
