"""Typed tool results: a result that is not plain JSON is recorded with its type and replayed
as an object of that type, with the same ``str()`` and ``repr()``; a golden's type names are
looked up, never imported or called."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import os
import sys
import types
import uuid
from collections.abc import Iterator
from importlib.machinery import ModuleSpec
from typing import Any, NamedTuple

import attrs
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rollout import RolloutWarning
from pytest_rollout.format.jsonable import to_json_data
from pytest_rollout.format.typed import type_tag
from pytest_rollout.replay.rebuild import (
    UnrebuildableError,
    allowed_classes,
    rebuild_result,
    resolve_class,
)

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class Sky(enum.Enum):
    RAIN = "rain"
    SUN = "sun"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: float


@dataclasses.dataclass
class Forecast:
    city: str
    day: datetime.date
    sky: Sky
    points: list[Point]
    best: Point | None = None
    by_name: dict[str, Point] = dataclasses.field(default_factory=dict)
    span: tuple[int, ...] = ()
    checked: int = dataclasses.field(init=False, default=0)


class Reading(NamedTuple):
    station: str
    at: datetime.datetime
    point: Point


@attrs.define
class Receipt:
    total: decimal.Decimal
    id: uuid.UUID
    _note: str = "kept"


@attrs.frozen
class Basket:
    receipts: list[Receipt]
    sky: Sky


class Order(pydantic.BaseModel):
    name: str
    at: datetime.datetime
    tags: tuple[str, ...] = ()
    point: Point | None = None


class Wrapped(pydantic.BaseModel):
    order: Order
    level: Level


UTC = datetime.UTC
HOURS_5 = datetime.timedelta(hours=5)
AT = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)

KINDS: dict[str, Any] = {
    "enum": Sky.RAIN,
    "int-enum": Level.HIGH,
    "dataclass": Point(1, 2.5),
    "nested-dataclass": Forecast(
        "Paris",
        datetime.date(2024, 5, 6),
        Sky.SUN,
        [Point(1, 2.0), Point(3, 4.5)],
        Point(5, 6.0),
        {"north": Point(7, 8.0)},
        (1, 2),
    ),
    "namedtuple": Reading("Oslo", AT, Point(0, 0.5)),
    "attrs": Receipt(decimal.Decimal("10.50"), uuid.UUID(int=7), "paid"),
    "nested-attrs": Basket([Receipt(decimal.Decimal("1"), uuid.UUID(int=1))], Sky.RAIN),
    "pydantic": Order(name="tea", at=AT, tags=("hot",), point=Point(1, 1.0)),
    "nested-pydantic": Wrapped(
        order=Order(name="tea", at=AT.replace(tzinfo=None)), level=Level.LOW
    ),
    "datetime": AT,
    "datetime-offset": datetime.datetime(
        2024, 1, 2, tzinfo=datetime.timezone(-datetime.timedelta(hours=5))
    ),
    "naive-datetime": datetime.datetime(2024, 1, 2, 3, 4),
    "date": datetime.date(2024, 2, 29),
    "time": datetime.time(23, 59, 1, 5),
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "decimal": decimal.Decimal("-3.140"),
    "tuple": (1, "two", [3]),
    "set": {3, 1, 2},
    "frozenset": frozenset({"a"}),
}


def replayed(value: Any) -> Any:
    """``value`` recorded (its JSON and its type) and given back by replay, for a tool whose
    return annotation names its class."""
    allowed = allowed_classes(type(value))
    return rebuild_result(to_json_data(value), type_tag(value), tool="lookup", allowed=allowed)


@pytest.mark.parametrize("value", KINDS.values(), ids=KINDS.keys())
def test_a_typed_result_is_replayed_as_its_own_type(value: Any) -> None:
    rebuilt = replayed(value)
    assert type(rebuilt) is type(value)
    assert str(rebuilt) == str(value)
    assert repr(rebuilt) == repr(value)


@pytest.mark.parametrize("value", [None, True, 3, 2.5, "text", [1, {"a": None}], {"k": [1]}])
def test_plain_json_has_no_type_and_comes_back_as_it_is(value: Any) -> None:
    assert type_tag(value) is None
    assert rebuild_result(value, None) is value


def test_the_type_is_named_by_module_and_qualified_name() -> None:
    assert type_tag(Point(1, 2.0)) == f"{__name__}:Point"
    assert type_tag((1, 2)) == "builtins:tuple"
    assert type_tag(AT) == "datetime:datetime"
    assert type_tag(decimal.Decimal(1)) == "decimal:Decimal"


points = st.builds(
    Point, st.integers(-(2**53), 2**53), st.floats(allow_nan=False, allow_infinity=False)
)
datetimes = st.datetimes(
    timezones=st.one_of(st.none(), st.just(UTC)),
    min_value=datetime.datetime(1900, 1, 1),
    max_value=datetime.datetime(2200, 1, 1),
).map(lambda d: d.replace(fold=0))  # ISO 8601 text has no fold
forecasts = st.builds(
    Forecast,
    st.text(max_size=10),
    st.dates(),
    st.sampled_from(Sky),
    st.lists(points, max_size=3),
    st.none() | points,
    st.dictionaries(st.text(max_size=5), points, max_size=2),
    st.lists(st.integers(0, 9), max_size=3).map(tuple),
)


@SETTINGS
@given(st.one_of(forecasts, st.builds(Reading, st.text(max_size=10), datetimes, points), datetimes))
def test_round_trips_keep_str_and_repr(value: Any) -> None:
    rebuilt = replayed(value)
    assert (type(rebuilt), str(rebuilt), repr(rebuilt)) == (type(value), str(value), repr(value))


WARNING = (
    "tool 'lookup' returned an object of type {type} when it was recorded, and replay cannot "
    "rebuild it ({reason}): the agent gets the recorded JSON value instead. {fix} "
    "(docs/replay.md#typed-tool-results)."
)
BAD_SKY = "'green' is not a valid Sky"
NOT_AN_OBJECT = "the recorded value is not an object"
HOOK_FIX = "Rebuild the type in a pytest_rollout_rebuild_result hook"
NOT_NAMED = "the tool's return annotation does not name it, nor a class whose fields do"


def test_an_unimported_module_is_a_warning_that_says_to_import_it() -> None:
    expected = WARNING.format(
        type="shop.models:Receipt",
        reason="its module shop.models is not imported",
        fix="Import shop.models before the tool is replayed, or rebuild the type in a "
        "pytest_rollout_rebuild_result hook",
    )
    with pytest.warns(RolloutWarning) as caught:
        value = rebuild_result({"total": "1"}, "shop.models:Receipt", tool="lookup")
    assert value == {"total": "1"}
    assert [str(w.message) for w in caught] == [expected]


@pytest.mark.parametrize(
    ("value", "type_name", "reason"),
    [
        ("green", f"{__name__}:Sky", "'green' is not a valid Sky"),
        ({"x": 1}, "builtins:object", NOT_NAMED),
        ({"x": 1}, f"{__name__}:Reading", NOT_NAMED),
        ({"x": 1, "z": 2}, f"{__name__}:Point", "the class has no field 'z'"),
        ([1], "uuid:UUID", "the recorded value is not text but list"),
        ({}, "Point", "the recorded type name is not of the form module:qualname"),
        ({}, f"{__name__}:Missing", f"{__name__} defines no class named Missing"),
        (
            "<unrecordable Widget>",
            f"{__name__}:Forecast",
            "the recorded value is not an object but str",
        ),
    ],
    ids=[
        "bad-enum-value",
        "not-a-kind",
        "not-named",
        "unknown-field",
        "not-text",
        "no-module",
        "no-class",
        "placeholder",
    ],
)
def test_a_value_that_cannot_be_rebuilt_is_a_warning_never_a_silent_dict(
    value: Any, type_name: str, reason: str
) -> None:
    expected = WARNING.format(type=type_name, reason=reason, fix=HOOK_FIX)
    allowed = allowed_classes(Forecast)  # a tool that says it returns a Forecast
    with pytest.warns(RolloutWarning) as caught:
        assert rebuild_result(value, type_name, tool="lookup", allowed=allowed) == value
    assert [str(w.message) for w in caught] == [expected]


class _ImportSpy:
    """A meta path finder that notes every module Python is asked to import."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        self.asked.append(name)
        return None


@pytest.fixture
def import_spy() -> Iterator[_ImportSpy]:
    spy = _ImportSpy()
    sys.meta_path.insert(0, spy)
    try:
        yield spy
    finally:
        sys.meta_path.remove(spy)


@pytest.mark.parametrize(
    ("type_name", "reason"),
    [
        ("antigravity:Fly", "its module antigravity is not imported"),
        ("this:Zen", "its module this is not imported"),
        ("os:system", "system in os is not a class"),
        ("os:path.join", "path.join in os is not a class"),
        (f"{__name__}:Point.__init__", f"{__name__} defines no class named Point.__init__"),
        (f"{__name__}:Point.__class__", f"{__name__} defines no class named Point.__class__"),
        ("builtins:eval", "eval in builtins is not a class"),
    ],
)
def test_hostile_type_names_never_import_or_call_anything(
    type_name: str, reason: str, import_spy: _ImportSpy, monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[Any] = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a))
    with pytest.raises(UnrebuildableError, match=reason.replace(".", r"\.")):
        resolve_class(type_name)
    with pytest.warns(RolloutWarning, match="cannot rebuild"):
        rebuild_result("echo pwned", type_name, tool="lookup")
    assert called == []
    assert import_spy.asked == []
    assert "antigravity" not in sys.modules


def test_a_module_level_getattr_is_never_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    lazy = types.ModuleType("lazy_tools")

    def lazy_getattr(name: str) -> Any:
        asked.append(name)
        return Point

    lazy.__getattr__ = lazy_getattr  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "lazy_tools", lazy)
    with pytest.raises(UnrebuildableError, match="lazy_tools defines no class named Point"):
        resolve_class("lazy_tools:Point")
    assert asked == []


class Opaque:
    """A type replay does not rebuild by itself."""

    def __init__(self, label: str) -> None:
        self.label = label

    def __str__(self) -> str:
        return f"<{self.label}>"


def test_a_hook_rebuilds_other_types_and_is_asked_first() -> None:
    asked: list[tuple[str, Any]] = []

    def hook(type_name: str, value: Any) -> Any:
        asked.append((type_name, value))
        return Opaque(value) if type_name.endswith(":Opaque") else None

    rebuilt = rebuild_result("box", f"{__name__}:Opaque", hook)
    assert isinstance(rebuilt, Opaque)
    assert str(rebuilt) == "<box>"
    assert rebuild_result("sun", f"{__name__}:Sky", hook) is Sky.SUN  # declined: built in
    assert asked == [(f"{__name__}:Opaque", "box"), (f"{__name__}:Sky", "sun")]


def test_a_type_name_that_is_not_text_is_a_warning() -> None:
    with pytest.warns(RolloutWarning, match=r"of type \['x'\] .*not text"):
        assert rebuild_result({"a": 1}, ["x"], tool="lookup") == {"a": 1}


# -- a class defined inside the test ---------------------------------------------------------


def _session_round_trip(make_tool: Any) -> tuple[Any, Any, list[Any]]:
    """A tool made by ``make_tool()`` recorded once, then replayed dry with a tool made
    anew (as a test function that defines its class defines it again): the live result,
    the replayed one, and the warnings replay gave."""
    import warnings

    from sessions import new_session

    from pytest_rollout import ToolCall, Turn
    from pytest_rollout.session import Mode

    def agent(session: Any) -> Any:
        provider = session.provider(None if session.engine.mode is Mode.DRY else _OneCall())
        tools = session.tools({"weather": make_tool()})
        with session.run(prompt="Weather?"):
            provider.complete([{"role": "user", "content": "Weather?"}])
            return tools["weather"](city="Paris")

    class _OneCall:
        def complete(self, messages: Any, tools: Any = None, **params: Any) -> Turn:
            return Turn(None, [ToolCall("c1", "weather", {"city": "Paris"})])

    recording = new_session(Mode.RECORD)
    live = agent(recording)
    recording.close()
    replay = new_session(Mode.DRY, recording.recorder.rollout())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replayed = agent(replay)
    return live, replayed, [w for w in caught if issubclass(w.category, RolloutWarning)]


def test_a_class_local_to_the_test_is_rebuilt_from_the_tools_return_annotation() -> None:
    def make_tool() -> Any:
        @dataclasses.dataclass
        class Weather:
            city: str
            celsius: int

        def weather(city: str) -> Weather:  # a text annotation: the module has __future__
            return Weather(city, 18)

        return weather

    live, replayed, warned = _session_round_trip(make_tool)
    assert type(live).__qualname__.endswith("<locals>.Weather")
    assert type(replayed).__qualname__ == type(live).__qualname__
    assert (replayed.city, replayed.celsius) == ("Paris", 18)
    assert warned == []


def test_a_local_class_the_tool_does_not_name_is_still_a_warning() -> None:
    def make_tool() -> Any:
        @dataclasses.dataclass
        class Weather:
            city: str

        def weather(city: str) -> object:
            return Weather(city)

        return weather

    _, replayed, warned = _session_round_trip(make_tool)
    assert replayed == {"city": "Paris"}
    assert len(warned) == 1


# -- what a golden may make replay build ----------------------------------------------------

BUILT: list[str] = []


@dataclasses.dataclass
class Gadget:
    """A class whose construction runs code of its own."""

    command: str

    def __post_init__(self) -> None:
        BUILT.append(f"Gadget({self.command})")


class Lenient(enum.Enum):
    A = "a"

    @classmethod
    def _missing_(cls, value: object) -> Lenient:
        BUILT.append(f"_missing_({value!r})")
        return cls.A


class Day(datetime.date):
    @classmethod
    def fromisoformat(cls, text: str) -> Day:
        BUILT.append(f"fromisoformat({text})")
        return super().fromisoformat(text)


@pytest.mark.parametrize(
    ("value", "type_name", "reason"),
    [
        ({"command": "rm"}, f"{__name__}:Gadget", NOT_NAMED),
        ("2024-01-02", f"{__name__}:Day", NOT_NAMED),
        ("b", f"{__name__}:Lenient", "'b' is not a valid Lenient"),
        ("1E+999999999", "decimal:Decimal", "its exponent is beyond 10000"),
    ],
    ids=["dataclass-not-named", "date-subclass", "enum-missing", "huge-decimal"],
)
def test_a_golden_makes_replay_build_nothing_the_tools_code_did_not_name(
    value: Any, type_name: str, reason: str
) -> None:
    BUILT.clear()
    allowed = allowed_classes(Forecast)  # the tool says it returns a Forecast
    with pytest.warns(RolloutWarning) as caught:
        assert rebuild_result(value, type_name, tool="lookup", allowed=allowed) == value
    assert [str(w.message) for w in caught] == [
        WARNING.format(type=type_name, reason=reason, fix=HOOK_FIX)
    ]
    assert BUILT == []


def test_the_classes_a_return_annotation_allows_are_those_it_reaches_through_fields() -> None:
    assert set(allowed_classes(Forecast).values()) >= {Forecast, Point, Sky, datetime.date}
    assert set(allowed_classes(list[Basket] | None).values()) >= {Basket, Receipt, Sky}
    assert allowed_classes(None) == {}
    assert Gadget not in allowed_classes(Forecast).values()
    # What the annotation names is built, code and all: the tool's own code chose it.
    BUILT.clear()
    built = rebuild_result(
        {"command": "ls"}, f"{__name__}:Gadget", tool="t", allowed=allowed_classes(Gadget)
    )
    assert built == Gadget("ls")
    assert BUILT == ["Gadget(ls)", "Gadget(ls)"]
