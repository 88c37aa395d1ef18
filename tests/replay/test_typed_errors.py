"""Typed tool errors: a tool's own exception is recorded with its type and args, and replay
raises the same class again when it can, else a stand-in whose ``str()`` is the recorded
message; either way it is recorded again as it was."""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_rollout.replay.tool_errors import RECORDED_ERROR, RecordedToolError, rebuild_error
from pytest_rollout.session.exceptions import error_data, tool_error_data


class StationDown(Exception):
    """A tool's own error, rebuilt from its args."""

    def __init__(self, station: str, code: int) -> None:
        super().__init__(station, code)
        self.station = station
        self.code = code

    def __str__(self) -> str:
        return f"station {self.station} is down ({self.code})"


class Quota(Exception):
    """A tool's own error whose ``str()`` depends on state its args do not hold."""

    def __init__(self, left: int) -> None:
        super().__init__(left)
        self.when = id(self)

    def __str__(self) -> str:
        return f"quota exhausted at {self.when}"


def test_a_tools_own_error_is_recorded_with_its_type_and_args() -> None:
    assert tool_error_data(StationDown("Oslo", 503)) == {
        "class": "StationDown",
        "message": "station Oslo is down (503)",
        "type": f"{__name__}:StationDown",
        "args": ["Oslo", 503],
    }


def test_a_builtin_error_is_recorded_as_before() -> None:
    assert tool_error_data(LookupError("no station")) == {
        "class": "LookupError",
        "message": "no station",
    }
    # Args that are not just the message are kept, so replay can raise the same text.
    assert tool_error_data(KeyError("city")) == {
        "class": "KeyError",
        "message": "'city'",
        "args": ["city"],
    }
    # Args that are not plain JSON are left out.
    assert "args" not in tool_error_data(ValueError(("a", 1), {1}))


def test_a_tools_own_error_is_raised_again_as_itself() -> None:
    recorded = tool_error_data(StationDown("Oslo", 503))
    rebuilt = rebuild_error(recorded)
    assert type(rebuilt) is StationDown
    assert str(rebuilt) == "station Oslo is down (503)"
    assert tool_error_data(rebuilt) == recorded
    assert error_data(rebuilt) == {"class": "StationDown", "message": recorded["message"]}


def test_a_builtin_error_is_raised_again_with_the_same_text() -> None:
    rebuilt = rebuild_error(tool_error_data(KeyError("city")))
    assert type(rebuilt) is KeyError
    assert str(rebuilt) == "'city'"


@pytest.mark.parametrize(
    "error",
    [
        {"class": "Quota", "message": "quota exhausted at 1", "type": f"{__name__}:Quota"},
        {"class": "Gone", "message": "left the building", "type": "shop.errors:Gone"},
        {"class": "StationDown", "message": "offline"},  # recorded before types were
        {"class": "system", "message": "echo pwned", "type": "os:system", "args": ["id"]},
    ],
    ids=["str-differs", "not-imported", "no-type", "hostile"],
)
def test_an_error_that_cannot_be_rebuilt_is_a_stand_in_with_the_recorded_text(
    error: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[Any] = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a))
    rebuilt = rebuild_error(error)
    assert isinstance(rebuilt, RecordedToolError)
    assert type(rebuilt).__name__ == error["class"]
    assert str(rebuilt) == error["message"]
    assert (rebuilt.error_class, rebuilt.message) == (error["class"], error["message"])
    assert f"{type(rebuilt).__name__}: {rebuilt}" == f"{error['class']}: {error['message']}"
    assert tool_error_data(rebuilt) == error
    assert called == []


def test_stand_ins_of_one_class_are_one_class() -> None:
    error = {"class": "Gone", "message": "x", "type": "shop.errors:Gone"}
    assert type(rebuild_error(error)) is type(rebuild_error({**error, "message": "y"}))


def test_a_class_name_that_is_not_an_identifier_gets_a_plain_stand_in() -> None:
    rebuilt = rebuild_error({"class": "Bad Name\x1b[31m", "message": "m"})
    assert type(rebuilt).__name__ == "Error"
    assert isinstance(rebuilt, RecordedToolError)
    assert rebuilt.error_class == "Bad Name\x1b[31m"
    assert getattr(rebuilt, RECORDED_ERROR) == {"class": "Error", "message": "m"}


@pytest.mark.parametrize(
    "error",
    [
        {"class": "SkipTest", "type": "unittest.case:SkipTest"},
        {"class": "Skipped", "type": "_pytest.outcomes:Skipped"},
        {"class": "Exit", "type": "_pytest.outcomes:Exit"},
        {"class": "XFailed", "type": "_pytest.outcomes:XFailed"},
        {"class": "KeyboardInterrupt", "type": "builtins:KeyboardInterrupt"},
        {"class": "SystemExit"},
        {"class": "StopIteration", "type": "builtins:StopIteration"},
        {"class": "GeneratorExit"},
        {"class": "ReplayDivergenceError", "type": "pytest_rollout:ReplayDivergenceError"},
    ],
    ids=lambda e: e["class"],
)
def test_a_golden_naming_a_class_that_steers_the_run_gets_a_plain_recorded_error(
    error: dict[str, Any],
) -> None:
    """A hostile golden must not make a test skip, exit or stop an iteration: the class it
    names is never raised, nor a stand-in named like it, only its name as text."""
    import unittest

    rebuilt = rebuild_error({**error, "message": "stop here"})
    assert type(rebuilt) is RecordedToolError
    assert not isinstance(rebuilt, unittest.SkipTest)
    assert (rebuilt.error_class, str(rebuilt)) == (error["class"], "stop here")
    # The run records what was raised, so its verdict sees the golden said otherwise; only
    # StopIteration, which an ``except Exception`` treats like the stand-in, keeps its name.
    recorded = getattr(rebuilt, RECORDED_ERROR)
    if error["class"] == "StopIteration":
        assert recorded == {**error, "message": "stop here"}
    else:
        assert recorded == {"class": "RecordedToolError", "message": "stop here"}


def test_a_stand_in_is_never_named_with_escapes_or_workflow_commands() -> None:
    for tag in ("shop\x1b[31m:Gone", "::error::x:Gone", "shop:Gone\u202e"):
        rebuilt = rebuild_error({"class": "Gone", "message": "x", "type": tag})
        assert type(rebuilt).__name__ == "Gone"
        assert (type(rebuilt).__module__, type(rebuilt).__qualname__) == ("pytest_rollout", "Gone")
