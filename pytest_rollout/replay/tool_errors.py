"""Tool errors as a recording holds them, and the exceptions replay raises for them.

A tool error is recorded as its ``class`` (the name) and ``message`` (its ``str()``), and,
for a tool's own exception class, its ``type`` (``module:qualname``) and, when they are not
just the message, its ``args`` (see :func:`pytest_rollout.session.exceptions.tool_error_data`).
Replay raises the same class again when it can: a built-in exception, or a class found
(never imported, see :func:`~pytest_rollout.replay.rebuild.resolve_class`) whose instance
built from the recorded args has the recorded message as its ``str()``. Otherwise it raises a
:class:`RecordedToolError` subclass named like the original class, whose ``str()`` is the
recorded message: an agent that shows the error to its model shows the same text. A class
that would steer the test run (pytest's outcomes, ``unittest.SkipTest``, ``StopIteration``)
is never raised: a golden naming one gets a plain :class:`RecordedToolError`, so it cannot
make a test skip. Whenever the class raised is not named like the recorded one (that, or a
name that is not a Python name), the run records the class raised, not the golden's, so the
verdict shows the difference instead of passing over it (``StopIteration`` excepted: an
``except Exception`` treats it like its stand-in).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
from collections.abc import Mapping
from typing import Any, Final

from ..safety.sanitize import sanitize
from .rebuild import UnrebuildableError, resolve_class

__all__ = ["RECORDED_ERROR", "RecordedToolError", "rebuild_error"]


class RecordedToolError(Exception):
    """A replayed tool call whose recording says it raised an exception that cannot be
    rebuilt as itself. Raised as a subclass named like the recorded class; its ``str()`` is
    the recorded message, ``error_class`` the recorded class name."""

    __module__ = "pytest_rollout"

    def __init__(self, error_class: str, message: str) -> None:
        self.error_class = error_class
        self.message = message
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (RecordedToolError, (self.error_class, self.message))


#: The attribute of a rebuilt exception that holds the error as it was recorded.
RECORDED_ERROR: Final = "rollout_recorded_error"
#: The longest class name given to a stand-in class (a golden's text).
_MAX_NAME: Final = 200


@functools.lru_cache(maxsize=256)
def _stand_in(name: str, type_name: str) -> type[RecordedToolError]:
    """The :class:`RecordedToolError` subclass standing in for class ``name`` (the same
    class for every error of that name, so ``except`` and ``type() is`` agree)."""
    module, _, qualname = type_name.partition(":")
    namespace = {"__module__": module or "pytest_rollout", "__qualname__": qualname or name}
    return type(name, (RecordedToolError,), namespace)


#: The packages whose exceptions steer the test run rather than report a tool's failure:
#: pytest's outcomes, ``unittest.SkipTest`` (pytest skips a test that raises it), pluggy's,
#: and this project's own (a divergence it did not find).
_RUNNER_PACKAGES: Final = frozenset({"_pytest", "pytest", "unittest", "pluggy", "pytest_rollout"})


def _steers(cls: type) -> bool:
    """Whether raising ``cls`` would steer the run (skip the test, end an iteration) instead
    of failing the agent's tool call: a golden naming one never gets it raised."""
    if issubclass(cls, (StopIteration, StopAsyncIteration)):
        return True
    return any(c.__module__.partition(".")[0] in _RUNNER_PACKAGES for c in cls.__mro__)


def _ends_an_iteration(name: str) -> bool:
    """``StopIteration`` and its async twin: an ordinary tool error (``next()`` of an empty
    iterator) that an ``except Exception`` catches like the stand-in replay raises."""
    return name in ("StopIteration", "StopAsyncIteration")


def _names_a_runner_class(name: str, type_name: str) -> bool:
    """Whether a recorded error names a class that steers the run (see :func:`_steers`),
    imported or not: its stand-in is not named like it either."""
    if type_name.partition(":")[0].partition(".")[0] in _RUNNER_PACKAGES:
        return True
    found = getattr(builtins, name, None)
    return (
        isinstance(found, type)
        and issubclass(found, BaseException)
        and (not issubclass(found, Exception) or _steers(found))
    )


def _recorded_args(error: Mapping[str, Any], message: str) -> tuple[Any, ...]:
    args = error.get("args")
    return tuple(args) if isinstance(args, list) else (message,)


def _same_class(error: Mapping[str, Any], name: str, message: str) -> BaseException | None:
    """The recorded exception rebuilt as its own class, or ``None``: a built-in exception,
    or an already imported ``Exception`` subclass whose ``str()`` from the recorded args is
    the recorded message."""
    type_name = error.get("type")
    found: Any = getattr(builtins, name, None)
    if isinstance(type_name, str) and not type_name.startswith("builtins:"):
        try:
            found = resolve_class(type_name)
        except UnrebuildableError:
            return None
    if not (isinstance(found, type) and issubclass(found, Exception)) or _steers(found):
        return None
    args = _recorded_args(error, message)
    with contextlib.suppress(Exception):  # a class with another signature
        rebuilt = found(*args)
        if str(rebuilt) == message:
            return rebuilt
    if found.__module__ == "builtins":
        with contextlib.suppress(Exception):
            return found(message)  # a built-in error of one argument: KeyError quotes it again
    return None


def rebuild_error(error: Mapping[str, Any]) -> BaseException:
    """The exception a recorded tool error stands for.

    The exception keeps the error as recorded (``RECORDED_ERROR``), so that it is recorded
    again as it was, whatever its own ``str()`` gives."""
    name = str(error.get("class", "Exception"))
    message = str(error.get("message", ""))
    rebuilt = _same_class(error, name, message)
    recorded = {k: error[k] for k in ("class", "message", "type", "args") if k in error}
    recorded.update({"class": name, "message": message})
    if rebuilt is None:
        type_name = error.get("type")
        tag = type_name[:_MAX_NAME] if isinstance(type_name, str) else ""
        if sanitize(tag) != tag:  # the name a traceback prints: no escapes, no commands
            tag = ""
        if _names_a_runner_class(name, tag):
            rebuilt = RecordedToolError(name, message)  # named in its text, never by its class
        else:
            stand_in = name if name.isidentifier() and len(name) <= _MAX_NAME else "Error"
            rebuilt = _stand_in(stand_in, tag)(name, message)
        raised = type(rebuilt).__name__
        if raised != name and not _ends_an_iteration(name):
            # The agent did not get the class the golden names: the run records the class it
            # got, so the verdict shows the difference instead of passing over it.
            recorded = {"class": raised, "message": message}
    with contextlib.suppress(Exception):  # a class that takes no attributes
        setattr(rebuilt, RECORDED_ERROR, recorded)
    return rebuilt
