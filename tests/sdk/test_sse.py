"""Server-sent event streams are read as the specification says and written back losslessly."""

from __future__ import annotations

from typing import Any, Literal

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rollout.sdk.sse import parse_frames, render_frames

OPENAI_CHUNKS = (
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":'
    b'[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":'
    b'[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
    b"data: [DONE]\n\n"
)

ANTHROPIC_EVENTS = (
    b"event: message_start\r\n"
    b'data: {"type":"message_start","message":{"id":"msg_1","model":"claude-sonnet-4-5"}}\r\n'
    b"\r\n"
    b"event: ping\r\n"
    b'data: {"type": "ping"}\r\n'
    b"\r\n"
    b"event: message_stop\r\n"
    b'data: {"type":"message_stop"}\r\n'
    b"\r\n"
)


def test_openai_chunks_and_done() -> None:
    frames = parse_frames(OPENAI_CHUNKS)
    assert [f.get("event") for f in frames] == [None, None, None]
    assert "event" not in frames[0]
    assert frames[1]["data"]["choices"][0]["delta"] == {"content": "Hi"}
    assert frames[2] == {"data": "[DONE]"}


def test_crlf_stream_with_event_names() -> None:
    frames = parse_frames(ANTHROPIC_EVENTS)
    assert [f["event"] for f in frames] == ["message_start", "ping", "message_stop"]
    assert frames[0]["data"]["message"]["model"] == "claude-sonnet-4-5"
    assert frames[1]["data"] == {"type": "ping"}


@pytest.mark.parametrize("newline", [b"\n", b"\r", b"\r\n"])
def test_every_line_ending_reads_the_same(newline: bytes) -> None:
    stream = newline.join([b"event: a", b"data: 1", b"", b"data: x", b"", b""])
    assert parse_frames(stream) == [{"event": "a", "data": 1}, {"data": "x"}]


def test_mixed_line_endings() -> None:
    assert parse_frames(b"data: 1\r\n\rdata: 2\n\r\ndata: 3\r\r") == [
        {"data": 1},
        {"data": 2},
        {"data": 3},
    ]


def test_data_lines_are_joined_with_newlines() -> None:
    assert parse_frames(b"data: first\ndata: second\n\n") == [{"data": "first\nsecond"}]
    assert parse_frames(b'data: {"a":\ndata: 1}\n\n') == [{"data": {"a": 1}}]


def test_comments_ids_retry_and_unknown_fields_are_dropped() -> None:
    stream = b": keep-alive\n\nid: 7\nretry: 3000\nfoo: bar\ndata: {}\n\nid: 8\n\n: bye\n\n"
    assert parse_frames(stream) == [{"data": {}}]


def test_one_space_after_the_colon_is_removed() -> None:
    assert parse_frames(b"data:x\n\ndata: x\n\ndata:  x\n\n") == [
        {"data": "x"},
        {"data": "x"},
        {"data": " x"},
    ]


def test_a_field_with_no_colon_has_an_empty_value() -> None:
    assert parse_frames(b"data\n\n") == [{"data": ""}]
    assert parse_frames(b"event: ping\ndata\n\n") == [{"event": "ping", "data": ""}]


def test_an_event_without_data_is_kept_with_empty_data() -> None:
    assert parse_frames(b"event: ping\n\n") == [{"event": "ping", "data": ""}]


def test_an_empty_event_name_is_no_event() -> None:
    assert parse_frames(b"event:\ndata: 1\n\n") == [{"data": 1}]


def test_a_stream_cut_short_keeps_its_last_frame() -> None:
    cut = OPENAI_CHUNKS[: OPENAI_CHUNKS.index(b"data: [DONE]")] + b'data: {"partial": true}'
    frames = parse_frames(cut)
    assert len(frames) == 3
    assert frames[-1] == {"data": {"partial": True}}
    assert parse_frames(b"event: message_stop\ndata: {}\n") == [
        {"event": "message_stop", "data": {}}
    ]


def test_a_frame_cut_inside_its_json_keeps_the_text() -> None:
    assert parse_frames(b'data: {"choices": [') == [{"data": '{"choices": ['}]


def test_empty_and_blank_streams() -> None:
    assert parse_frames(b"") == []
    assert parse_frames(b"\n\n\r\n") == []


def test_leading_bom_is_ignored() -> None:
    assert parse_frames(b"\xef\xbb\xbfdata: 1\n\n") == [{"data": 1}]


def test_undecodable_bytes_are_replaced() -> None:
    assert parse_frames(b"data: caf\xe9\n\n") == [{"data": "caf\ufffd"}]


def test_render_writes_event_then_data_then_a_blank_line() -> None:
    frames: list[dict[str, Any]] = [
        {"event": "message_start", "data": {"type": "message_start"}},
        {"data": "[DONE]"},
    ]
    assert render_frames(frames) == (
        b'event: message_start\ndata: {"type":"message_start"}\n\ndata: [DONE]\n\n'
    )


def test_render_splits_multi_line_text() -> None:
    assert render_frames([{"data": "a\nb"}]) == b"data: a\ndata: b\n\n"


def test_render_quotes_a_string_that_would_read_back_as_json() -> None:
    frames: list[dict[str, Any]] = [{"data": "123"}, {"data": "null"}, {"data": "a\rb"}]
    rendered = render_frames(frames)
    assert rendered == b'data: "123"\n\ndata: "null"\n\ndata: "a\\rb"\n\n'
    assert parse_frames(rendered) == frames


def test_round_trip_of_recorded_streams() -> None:
    for stream in (OPENAI_CHUNKS, ANTHROPIC_EVENTS):
        frames = parse_frames(stream)
        assert parse_frames(render_frames(frames)) == frames


@pytest.mark.parametrize(
    ("frames", "message"),
    [
        ([{"event": "x"}], "no 'data'"),
        (["data: 1"], "not an object"),
        ([{"event": "a\nb", "data": 1}], "invalid event name"),
        ([{"event": 3, "data": 1}], "invalid event name"),
        ([{"data": {1: 2}}], "not JSON-encodable"),
        ([{"data": "\ud800"}], "not valid Unicode"),
    ],
)
def test_render_refuses_frames_it_cannot_write(frames: list[Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        render_frames(frames)


# ---------------------------------------------------------------------- properties

# Lone surrogates (category Cs) are not valid Unicode text, so no frame can carry them.
_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
_text = st.text(st.characters(exclude_categories=_SURROGATES))
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)
_event = st.text(
    st.characters(exclude_categories=_SURROGATES, exclude_characters="\r\n"), min_size=1
)


@st.composite
def _frames(draw: st.DrawFn) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 5))):
        frame: dict[str, Any] = {}
        event = draw(st.none() | _event)
        if event is not None:
            frame["event"] = event
        frame["data"] = draw(_json | _text)
        frames.append(frame)
    return frames


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same JSON kinds (``1``, ``1.0`` and ``True`` differ)."""
    return bool(orjson.dumps(a) == orjson.dumps(b))


@given(_frames())
def test_render_then_parse_gives_the_frames_back(frames: list[dict[str, Any]]) -> None:
    assert _same(parse_frames(render_frames(frames)), frames)


@given(st.binary(max_size=300))
def test_any_bytes_parse_and_round_trip(data: bytes) -> None:
    frames = parse_frames(data)
    assert _same(parse_frames(render_frames(frames)), frames)


@given(st.lists(st.sampled_from([b"data: 1", b"event: e", b": c", b"", b"data:", b"id: 1"])))
def test_line_endings_do_not_matter(lines: list[bytes]) -> None:
    expected = parse_frames(b"\n".join(lines))
    assert parse_frames(b"\r\n".join(lines)) == expected
    assert parse_frames(b"\r".join(lines)) == expected
