"""Tool errors as a recording holds them, and the exceptions replay raises for them."""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["RECORDED_ERROR", "RecordedToolError", "rebuild_error"]


class RecordedToolError(Exception):
    """A replayed tool call whose recording says it raised an exception of a class that
    cannot be rebuilt safely (not a built-in exception)."""

    __module__ = "pytest_rollout"

    def __init__(self, error_class: str, message: str) -> None:
        self.error_class = error_class
        self.message = message
        super().__init__(f"{error_class}: {message}")


#: The attribute of a rebuilt exception that holds the error as it was recorded.
RECORDED_ERROR: Final = "rollout_recorded_error"


def rebuild_error(error: Mapping[str, Any]) -> BaseException:
    """The exception a recorded tool error stands for: built-ins are rebuilt as themselves.

    The exception keeps the recorded ``{class, message}`` (``RECORDED_ERROR``), so that it is
    recorded again as it was, whatever its own ``str()`` gives (``KeyError`` quotes its
    message; a class that could not be rebuilt is a RecordedToolError)."""
    name = str(error.get("class", "Exception"))
    message = str(error.get("message", ""))
    rebuilt: BaseException = RecordedToolError(name, message)
    found = getattr(builtins, name, None)
    if isinstance(found, type) and issubclass(found, Exception):
        with contextlib.suppress(Exception):  # an exception class with another signature
            rebuilt = found(message)
    setattr(rebuilt, RECORDED_ERROR, {"class": name, "message": message})
    return rebuilt
