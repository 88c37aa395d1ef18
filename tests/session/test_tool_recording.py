"""Recording a wrapped tool's calls: each event encoded once, into the lines the recorder makes
of any event.

A tool call's arguments and result go from the agent to the file in one encoding; these
tests pin that the lines are byte for byte those of recording the plain data, whatever the
values hold (placeholders included), that secrets are still redacted, that the agent can
change its values afterwards, and that arguments are named as the signature names them.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import itertools
import typing
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath
from typing import Any, Literal

import orjson
import pytest

from pytest_rollout import ToolCall, Turn
from pytest_rollout.format.events import (
    RUN_COMPLETED,
    RUN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
)
from pytest_rollout.format.jsonable import to_json_data_or_placeholder
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.safety.redact import Redactor
from pytest_rollout.session import RolloutSession
from pytest_rollout.session.setup import RunSetup
from pytest_rollout.session.tools import Binder, bind_arguments


def _clock() -> Callable[[], int]:
    ticks = itertools.count(1_780_000_000_000_000_000, 1_000)
    return lambda: next(ticks)


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: float


class Model:
    """Looks like a pydantic model to the recorder."""

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        return {"kind": "model", "mode": mode}


class Opaque:
    """Nothing the recorder knows how to write."""


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


#: Values a tool may be called with or return, from the plain to the unrecordable.
VALUES: list[Any] = [
    {"query": "weather in Paris", "limit": 3, "ratio": 0.1 + 0.2, "ok": True, "none": None},
    {"nested": {"rows": [[1, "a", 2.5], [2, "b", -0.0]], "empty": {}}},
    {"tuple": (1, 2), "set": {3, 1, 2}, "bytes": b"raw\xff", "path": PurePosixPath("/tmp/x")},
    {"model": Model(), "point": Point(1, 2.5), "when": datetime.date(2026, 7, 1)},
    {"colour": Colour.RED, "nan": float("nan"), "inf": float("inf"), "big": 2**63},
    {1: "integer key", "1": "string key"},
    {"opaque": Opaque()},
    {"huge": 2**80},
    {"surrogate": "\ud800"},
    {"deep": _deep(300)},
    "just text",
    [1, "two", 3.0],
    None,
]


class ScriptedModel:
    model = "scripted"

    def __init__(self, turns: list[Turn]) -> None:
        self._turns: Iterator[Turn] = iter(turns)

    def complete(self, messages: Any, tools: Any = None, **params: Any) -> Turn:
        return next(self._turns)


def _session(recorder: Recorder) -> RolloutSession:
    return RolloutSession(RunSetup(test_id="test_tools.py::test_agent"), recorder)


def _first_turn(session: RolloutSession) -> None:
    """A model turn that asks for nothing: tool calls are made at step 1."""
    llm = session.provider(ScriptedModel([Turn("thinking", [])]))
    llm.complete([{"role": "user", "content": "go"}])


def _tool_lines(value: Any) -> bytes:
    """The lines of one wrapped call taking and returning ``value``."""
    recorder = Recorder(clock=_clock())
    session = _session(recorder)
    tool = session.tools({"echo": lambda value: value})["echo"]
    with session.run():
        _first_turn(session)
        tool(value)
    session.close()
    return recorder.getvalue()


def _plain_lines(value: Any) -> bytes:
    """The same events emitted as plain data, the way they were recorded before."""
    recorder = Recorder(clock=_clock())
    session = _session(recorder)
    session.tools({"echo": lambda value: value})
    with session.run():
        _first_turn(session)
        plain = to_json_data_or_placeholder
        recorder.emit(
            TOOL_CALL_STARTED,
            {"call_id": None, "name": "echo", "arguments": plain({"value": value})},
        )
        done = {"call_id": None, "name": "echo", "duration_ms": 0.0, "output": plain(value)}
        recorder.emit(TOOL_CALL_COMPLETED, done)
    session.close()
    return recorder.getvalue()


def _without_timings(lines: bytes) -> list[dict[str, Any]]:
    events = [orjson.loads(line) for line in lines.splitlines()]
    for event in events:
        for key in ("duration_ms", "total_duration_ms", "latency_ms", "run_id"):
            event["data"].pop(key, None)
    return events


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_a_tool_call_is_recorded_as_its_plain_data_would_be(value: Any) -> None:
    recorded, plain = _tool_lines(value), _plain_lines(value)
    ours = recorded.splitlines()
    theirs = plain.splitlines()
    assert len(ours) == len(theirs) == 6
    # The call's start carries no timing: its line is the same, byte for byte.
    assert ours[3] == theirs[3]
    # The end differs only by its duration; every other byte is the same.
    assert _without_timings(recorded) == _without_timings(plain)
    duration = orjson.loads(ours[4])["data"]["duration_ms"]
    assert ours[4].replace(orjson.dumps(duration), b"0.0", 1) == theirs[4]


def test_unrecordable_values_become_placeholders_and_the_test_goes_on() -> None:
    events = _without_timings(_tool_lines({"opaque": Opaque()}))
    assert events[3]["data"]["arguments"] == "<unrecordable dict>"
    assert events[4]["data"]["output"] == "<unrecordable dict>"
    assert [e["type"] for e in events][3:] == [
        TOOL_CALL_STARTED,
        TOOL_CALL_COMPLETED,
        RUN_COMPLETED,
    ]


def test_values_are_not_read_back_when_nothing_compares_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In record mode, with no analyzer, audit or announced call, the arguments and the
    result are encoded once and never decoded again."""
    recorder = Recorder(clock=_clock())
    session = _session(recorder)
    tool = session.tools({"search": lambda query, limit=5: {"hits": [query] * limit}})["search"]
    reads: list[bytes] = []
    real_loads = orjson.loads

    def counting_loads(data: Any) -> Any:
        reads.append(bytes(data))
        return real_loads(data)

    with session.run():
        _first_turn(session)
        monkeypatch.setattr(orjson, "loads", counting_loads)
        tool("paris", limit=2)
        monkeypatch.setattr(orjson, "loads", real_loads)
    session.close()
    assert reads == []
    [started] = [e for e in recorder.rollout().events if e.type == TOOL_CALL_STARTED]
    assert started.data["arguments"] == {"query": "paris", "limit": 2}


def test_changing_a_value_after_the_call_leaves_the_recording_alone() -> None:
    result: dict[str, Any] = {"rows": [1, 2]}
    arguments: dict[str, Any] = {"filters": ["a"]}
    recorder = Recorder(clock=_clock())
    session = _session(recorder)
    tool = session.tools({"query": lambda filters: result})["query"]
    with session.run():
        _first_turn(session)
        tool(**arguments)
        result["rows"].append(3)
        arguments["filters"].append("b")
    session.close()
    started, completed = recorder.rollout().events[3:5]
    assert started.data["arguments"] == {"filters": ["a"]}
    assert completed.data["output"] == {"rows": [1, 2]}


def test_a_secret_in_a_tool_call_is_redacted_before_it_is_written(tmp_path: Any) -> None:
    path = tmp_path / "run.jsonl"
    recorder = Recorder(path, redactor=Redactor(environ={}), clock=_clock())
    session = _session(recorder)
    tool = session.tools({"login": lambda user, api_key: {"token": "ghp_" + "a" * 36}})["login"]
    with session.run():
        _first_turn(session)
        tool("ada", api_key="sk-live-123456789")
    session.close()
    written = path.read_bytes()
    assert b"sk-live-123456789" not in written
    assert b"ghp_" + b"a" * 36 not in written
    started, completed = recorder.rollout().events[3:5]
    assert started.data["arguments"]["user"] == "ada"
    assert started.data["arguments"]["api_key"].startswith("[REDACTED:")
    assert completed.data["output"]["token"].startswith("[REDACTED:")


def test_in_mode_none_a_tool_call_holding_a_secret_is_withheld() -> None:
    recorder = Recorder(redactor=Redactor("none", environ={}), clock=_clock())
    session = _session(recorder)
    tool = session.tools({"login": lambda api_key: "ok"})["login"]
    with session.run():
        _first_turn(session)
        tool(api_key="sk-live-123456789")
    session.close()
    assert recorder.stats.withheld == 1
    types = [e.type for e in recorder.rollout().events]
    assert TOOL_CALL_STARTED not in types
    assert TOOL_CALL_COMPLETED in types


def test_a_call_claims_the_announced_call_with_equal_arguments_in_any_key_order() -> None:
    calls = [
        ToolCall("call_a", "lookup", {"city": "Oslo", "unit": "c"}),
        ToolCall("call_b", "lookup", {"unit": "f", "city": "Paris"}),
    ]
    recorder = Recorder(clock=_clock())
    session = _session(recorder)
    llm = session.provider(ScriptedModel([Turn(None, calls), Turn("done", [])]))
    tool = session.tools({"lookup": lambda city, unit: f"{city}:{unit}"})["lookup"]
    with session.run():
        llm.complete([{"role": "user", "content": "weather"}])
        tool(city="Paris", unit="f")  # the second call, its keys in the other order
        tool(city="Oslo", unit="x")  # changed on the way: the remaining call by name
        llm.complete([{"role": "user", "content": "weather"}])
    session.close()
    started = [e.data for e in recorder.rollout().events if e.type == TOOL_CALL_STARTED]
    assert [s["call_id"] for s in started] == ["call_b", "call_a"]
    assert started[0]["arguments"] == {"city": "Paris", "unit": "f"}


# -- the recorder's side ------------------------------------------------------------------


def test_emit_payload_records_the_bytes_as_given_with_the_step_of_their_type() -> None:
    given, emitted = Recorder(clock=_clock()), Recorder(clock=_clock())
    data = {"call_id": None, "name": "t", "arguments": {"b": 1, "a": [1.5, None]}}
    for recorder in (given, emitted):
        recorder.emit(RUN_STARTED, {"run_id": "r"})
        recorder.emit("llm.turn.started", {"messages": []})
    given.emit_payload(TOOL_CALL_STARTED, orjson.dumps(data))
    emitted.emit(TOOL_CALL_STARTED, data)
    for recorder in (given, emitted):
        recorder.emit(RUN_COMPLETED, {"outcome": "completed"})
    assert given.getvalue() == emitted.getvalue()
    assert given.rollout().events[-2].step == 1


def test_emit_payload_counts_what_is_not_bytes_and_still_ends_the_run() -> None:
    recorder = Recorder(clock=_clock())
    recorder.emit(RUN_STARTED, {"run_id": "r"})
    recorder.emit("llm.turn.started", {"messages": []})
    recorder.emit_payload(TOOL_CALL_STARTED, {"not": "bytes"})  # type: ignore[arg-type]
    recorder.emit_payload(RUN_COMPLETED, "nor this")  # type: ignore[arg-type]
    recorder.close()
    stats = recorder.stats
    assert stats.encode_errors == 2
    types = [e.type for e in recorder.rollout().events]
    assert types == [RUN_STARTED, "llm.turn.started", "recorder.drop_detected", RUN_COMPLETED]


# -- naming the arguments -----------------------------------------------------------------


def plain_fn(a: Any, b: Any = 2) -> None: ...
def star_fn(a: Any, *rest: Any, key: Any = None, **extra: Any) -> None: ...
def only_fn(a: Any, /, b: Any, *, c: Any) -> None: ...
def kwargs_fn(a: Any, /, **extra: Any) -> None: ...
def empty_fn() -> None: ...


CALLS: list[tuple[Callable[..., None], tuple[Any, ...], dict[str, Any]]] = [
    (plain_fn, (1,), {}),
    (plain_fn, (1, 3), {}),
    (plain_fn, (), {"b": 3, "a": 1}),
    (plain_fn, (), {"a": 1, "b": 3}),
    (plain_fn, (1,), {"b": 3}),
    (plain_fn, (1, 2, 3), {}),  # refused by the signature
    (plain_fn, (), {"c": 1}),  # refused by the signature
    (star_fn, (1, 2, 3), {"key": 4, "z": 5, "y": 6}),
    (star_fn, (1,), {}),
    (only_fn, (1,), {"c": 3, "b": 2}),
    (only_fn, (), {"a": 1, "b": 2, "c": 3}),  # positional-only by name: refused
    (kwargs_fn, (1,), {"a": 2, "b": 3}),  # "a" goes to **extra
    (empty_fn, (), {}),
    (empty_fn, (1,), {}),
]


@pytest.mark.parametrize(("fn", "args", "kwargs"), CALLS)
def test_arguments_are_named_as_the_signature_binds_them(
    fn: Callable[..., None], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    signature = inspect.signature(fn)
    binder = Binder(signature)
    expected = bind_arguments(signature, args, kwargs)
    for _ in range(3):  # the first call binds its shape, the next ones reuse it
        got = binder(args, kwargs)
        assert got == expected
        assert list(got) == list(expected)  # in the same order, so the same bytes


def test_a_call_without_a_signature_keeps_its_arguments_as_given() -> None:
    binder = Binder(None)
    assert binder((1, 2), {"k": 3}) == {"args": [1, 2], "k": 3}
    assert binder((), {"k": 3}) == {"k": 3}


def _unit_tool(city: str, unit: Literal["c", "f"] = "c") -> dict[str, str]:
    """A tool whose annotations this module holds as text (``from __future__ import
    annotations``), naming ``Literal``, which the wrapper's own module does not import."""
    return {"city": city, "unit": unit}


async def _async_unit_tool(city: str, unit: Literal["c", "f"] = "c") -> Later:
    return Later()


class Later:
    pass


def test_a_wrapped_tool_carries_its_annotations_as_types() -> None:
    """A framework that builds the tool's schema by resolving its hints in the wrapper's
    globals (AutoGen) gets the tool's own types."""
    session = RolloutSession(RunSetup(), Recorder())
    sync_tool, async_tool = session.tools([_unit_tool, _async_unit_tool])
    for tool in (sync_tool, async_tool):
        hints = typing.get_type_hints(tool, tool.__globals__)
        assert hints["unit"] == Literal["c", "f"]
        assert hints["city"] is str
    assert typing.get_type_hints(async_tool)["return"] is Later


def test_annotations_that_do_not_resolve_stay_as_text() -> None:
    def tool(city: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
        return str(city)

    session = RolloutSession(RunSetup(), Recorder())
    (wrapped,) = session.tools([tool])
    assert wrapped.__annotations__ == {"city": "Missing", "return": "str"}
