"""Wrapped tools: each call recorded through the engine, answered from the golden in replay.

A call's arguments are recorded as one object, named by the tool's signature the way
``inspect.Signature.bind`` names them. Binding is the same for every call of one shape (the
count of positional arguments and the keyword names, in order), so :class:`Binder` binds
each shape once and keeps where every argument goes: later calls of that shape only copy
their values into place.

A call answers a tool call its model turn announced: :class:`AnnouncedCalls` finds which,
by name and arguments, to record the announced call id with it. The calls a turn announced
that no wrapped tool answered before the next turn (or the run's end) ran outside
``rollout.tools``: :class:`AnnouncedCalls` gives them back.

A tool's context parameter (pydantic-ai's ``RunContext``, the Agents SDK's
``RunContextWrapper`` or ``ToolContext``, first in the signature) is never recorded: the
model did not announce it. :func:`call_recorded` and :func:`acall_recorded` record one call
whose arguments are known already (a framework's tool wrappers, ``session/frameworks/``).
"""

from __future__ import annotations

import inspect
import time
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import wraps
from typing import Any, Final, Protocol

import orjson

from ..format.jsonable import (
    encode_event,
    json_default,
    snapshot,
    snapshot_value,
)
from ..replay.turn import ToolCall

__all__ = [
    "AnnouncedCalls",
    "Binder",
    "ToolRecorder",
    "acall_recorded",
    "bind_arguments",
    "call_recorded",
    "context_first",
    "return_annotation",
    "wrap_tool",
]

#: The annotations of a framework's context parameter (matched by name, so that no framework
#: is imported to recognise one).
_CONTEXT_TYPES: Final = frozenset({"RunContext", "RunContextWrapper", "ToolContext"})


#: Where a recorded argument comes from: its name, then a positional argument's index, a
#: keyword's name, or (a ``*args`` parameter) the index its positional arguments start at.
_Place = tuple[str, int, Any]
_POSITIONAL: Final = 0
_KEYWORD: Final = 1
_REST: Final = 2
#: The places of a call whose arguments are recorded as given: keywords only, in the order
#: of the signature (a copy of them is the arguments object). Told apart by identity.
_AS_GIVEN: Final[tuple[_Place, ...]] = (("", _KEYWORD, ""),)
#: The most call shapes a tool remembers (a tool is called in a few shapes, not thousands).
_MAX_SHAPES: Final = 64


def _unbound(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a call that its signature does not name."""
    return {"args": list(args), **kwargs} if args else dict(kwargs)


def bind_arguments(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """A tool call's arguments as one object, positional ones named by the signature."""
    if signature is None:
        return _unbound(args, kwargs)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return _unbound(args, kwargs)
    arguments: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(value)
        else:
            arguments[name] = list(value) if kind is inspect.Parameter.VAR_POSITIONAL else value
    return arguments


def _places(signature: inspect.Signature, count: int, keywords: tuple[str, ...]) -> list[_Place]:
    """Where each argument of a call of this shape goes, or raise ``TypeError`` when the
    signature does not take such a call. Found by binding stand-ins: the index of each
    positional argument and the name of each keyword one."""
    bound = signature.bind(*range(count), **{k: k for k in keywords})
    places: list[_Place] = []
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            places.extend((key, _KEYWORD, key) for key in value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            places.append((name, _REST, value[0] if value else count))
        else:
            places.append((name, _POSITIONAL if type(value) is int else _KEYWORD, value))
    return places


class Binder:
    """:func:`bind_arguments` for one signature, with each call shape bound once.

    A call's ``kwargs`` is the dict its wrapper received as ``**kwargs`` (a dict of the
    call's own): a call by keywords in the signature's order gives it back as it is."""

    __slots__ = ("_shapes", "_signature")

    def __init__(self, signature: inspect.Signature | None) -> None:
        self._signature = signature
        # By shape: where the arguments go, or None for a call the signature refuses.
        self._shapes: dict[tuple[int, tuple[str, ...]], tuple[_Place, ...] | None] = {}

    def __call__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        shape = (len(args), tuple(kwargs))
        try:
            places = self._shapes[shape]
        except KeyError:
            if not self._learn(shape):
                return bind_arguments(self._signature, args, kwargs)
            places = self._shapes[shape]
        if places is _AS_GIVEN:
            return kwargs  # a call's ``**kwargs`` is a dict of its own
        if places is None:
            return _unbound(args, kwargs)
        arguments: dict[str, Any] = {}
        for name, kind, source in places:
            if kind == _POSITIONAL:
                arguments[name] = args[source]
            elif kind == _KEYWORD:
                arguments[name] = kwargs[source]
            else:
                arguments[name] = list(args[source:])
        return arguments

    def _learn(self, shape: tuple[int, tuple[str, ...]]) -> bool:
        """Bind a new shape and keep where its arguments go; ``False`` when it is not kept
        (no signature, or too many shapes already): such a call is bound whole."""
        if self._signature is None or len(self._shapes) >= _MAX_SHAPES:
            return False
        count, keywords = shape
        try:
            places: tuple[_Place, ...] | None = tuple(_places(self._signature, count, keywords))
        except TypeError:
            places = None
        if not count and places == tuple((k, _KEYWORD, k) for k in keywords):
            places = _AS_GIVEN  # keyword arguments only, in the signature's order
        self._shapes[shape] = places
        return True


class ToolRecorder(Protocol):
    """What a wrapped tool reports its calls to (the session's engine)."""

    def tool_started(self, name: str, bound: Mapping[str, Any]) -> tuple[str | None, int, Any]:
        """Record a call's start: its call id, its step (when it has a recorded answer)
        and its recorded answer (or None)."""
        ...

    def replayed_result(self, name: str, call_id: str | None, step: int, call: Any) -> Any:
        """The recorded answer of a replayed call (or its error raised again)."""
        ...

    def expect_return(self, name: str, fn: Callable[..., Any]) -> None:
        """Tool ``name`` is ``fn`` (what it says it returns helps rebuild its results)."""
        ...

    def tool_returned(self, name: str, call_id: str | None, t0: float, output: Any) -> None:
        """Record a live call's end with its output (``t0``: when it started)."""
        ...

    def tool_failed(self, name: str, call_id: str | None, t0: float, error: BaseException) -> None:
        """Record a live call's end with the error it raised."""
        ...


@dataclass(slots=True)
class _Announced:
    """A tool call announced by a turn, waiting for the agent to make it: its arguments as
    the turn gave them, and as :func:`~pytest_rollout.format.jsonable.snapshot` gives them
    (``expected``: the bytes of the ``tool.call.started`` data of a call that claims it with
    those arguments, or ``None`` when they are not plain JSON)."""

    call_id: str
    name: str
    arguments: Any
    part: Any
    wrapped: bytes | None
    expected: bytes | None
    #: One item until the call is claimed, by taking it: ``list.pop`` is atomic, so of two
    #: threads claiming the call at once exactly one gets it.
    unclaimed: list[None] = field(default_factory=lambda: [None])

    @classmethod
    def of(cls, call: ToolCall) -> _Announced:
        part, wrapped = snapshot(call.arguments)
        expected = None if wrapped is None else _started_bytes(call.id, call.name, part)
        return cls(call.id, call.name, call.arguments, part, wrapped, expected)

    def same_arguments(self, part: Any, wrapped: bytes | None, plain: list[Any]) -> bool:
        """Whether a call's arguments (a snapshot) are this call's, compared as plain data:
        equal bytes are equal data, and other bytes are read back to be compared (the
        call's own plain data once, kept in ``plain``)."""
        if wrapped is not None and wrapped == self.wrapped:
            return True
        if not plain:
            plain.append(snapshot_value(part, wrapped))
        return bool(snapshot_value(self.part, self.wrapped) == plain[0])


def _started_bytes(call_id: str, name: str, part: Any) -> bytes | None:
    """The ``tool.call.started`` data of a call of ``name`` claiming ``call_id`` with the
    arguments of snapshot ``part``, encoded (``None``: an id orjson refuses)."""
    try:
        return orjson.dumps({"call_id": call_id, "name": name, "arguments": part})
    except Exception:
        return None


class AnnouncedCalls:
    """The tool calls the last turn announced, each claimed by the first call that answers
    it: the first unclaimed one with the same name and arguments (as plain data), else
    (arguments changed on the way) the same name.

    A framework may run a turn's calls on threads (LangGraph's ``ToolNode``): each call is
    claimed by taking the one item of its ``unclaimed`` list, which only one thread can do
    (``list.pop`` is atomic), so no lock is taken. Calls left unclaimed when the next turn
    comes ran outside ``rollout.tools``: the plugin names them once the test is over, from
    the recorded events (:func:`~pytest_rollout.diff.integrity.unrecorded_calls`).
    """

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: list[_Announced] = []

    def announce(self, calls: Iterable[ToolCall]) -> None:
        """A turn's tool calls (those of the turn before are forgotten)."""
        self._calls = [_Announced.of(c) for c in calls]

    def started(self, name: str, bound: Mapping[str, Any]) -> tuple[dict[str, Any], bytes | None]:
        """The ``tool.call.started`` data of a call (the id of the announced call it claims,
        and its arguments) and that data encoded, once (``None``: the data is to be recorded
        with :meth:`~..format.recorder.Recorder.emit`, see
        :func:`~..format.jsonable.encode_event`).

        The common call (the agent makes the first call the turn announced under its name,
        with its arguments) is claimed as it is encoded: encoded with that call's id, its
        data is then the very bytes the announced call's data encodes to. Any other call is
        compared by its own encoding, as plain data.
        """
        for call in self._calls:  # a loop, not any(): this is on every call's path
            if call.name == name and call.unclaimed:
                break
        else:
            data: dict[str, Any] = {"call_id": None, "name": name, "arguments": bound}
            return data, encode_event(data, "arguments")
        expected = call.expected
        if expected is not None:
            data = {"call_id": call.call_id, "name": name, "arguments": bound}
            try:
                payload = orjson.dumps(data, default=json_default)
            except Exception:  # orjson refuses a value: see below
                payload = b""
            if payload == expected:
                try:
                    call.unclaimed.pop()
                except IndexError:  # another thread claimed it meanwhile
                    pass
                else:
                    return data, payload
        part, wrapped = snapshot(bound)
        call_id = self._claim(name, part, wrapped)
        data = {"call_id": call_id, "name": name, "arguments": part}
        return data, encode_event(data, "arguments")

    def _claim(self, name: str, part: Any, wrapped: bytes | None) -> str | None:
        plain: list[Any] = []  # the call's plain arguments, once read back
        for exact in (True, False):
            for call in self._calls:
                if not call.unclaimed or call.name != name:
                    continue
                if exact and not call.same_arguments(part, wrapped, plain):
                    continue
                try:
                    call.unclaimed.pop()
                except IndexError:  # claimed meanwhile, on another thread
                    continue
                return call.call_id
        return None


def _context_annotation(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.partition("[")[0].rpartition(".")[2] in _CONTEXT_TYPES
    origin = getattr(annotation, "__origin__", annotation)
    return getattr(origin, "__name__", None) in _CONTEXT_TYPES


def context_first(signature: inspect.Signature | None) -> bool:
    """Whether the first parameter of ``signature`` is a framework's run context."""
    if signature is None or not signature.parameters:
        return False
    first = next(iter(signature.parameters.values()))
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return first.kind in positional and _context_annotation(first.annotation)


def call_recorded(
    engine: ToolRecorder, name: str, arguments: Mapping[str, Any], run: Callable[[], Any]
) -> Any:
    """One call of tool ``name`` with ``arguments``: recorded around ``run()``, or answered
    from the golden without running it."""
    call_id, step, replayed = engine.tool_started(name, arguments)
    if replayed is not None:
        return engine.replayed_result(name, call_id, step, replayed)
    t0 = time.perf_counter()
    try:
        result = run()
    except Exception as exc:
        engine.tool_failed(name, call_id, t0, exc)
        raise
    engine.tool_returned(name, call_id, t0, result)
    return result


async def acall_recorded(
    engine: ToolRecorder,
    name: str,
    arguments: Mapping[str, Any],
    run: Callable[[], Awaitable[Any]],
) -> Any:
    """:func:`call_recorded` of a coroutine: ``run()`` is awaited."""
    call_id, step, replayed = engine.tool_started(name, arguments)
    if replayed is not None:
        return engine.replayed_result(name, call_id, step, replayed)
    t0 = time.perf_counter()
    try:
        result = await run()
    except Exception as exc:
        engine.tool_failed(name, call_id, t0, exc)
        raise
    engine.tool_returned(name, call_id, t0, result)
    return result


def _binder(fn: Callable[..., Any]) -> Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    """How a call of ``fn`` becomes its recorded arguments (its context left out)."""
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None
    if not context_first(signature):
        return Binder(signature).__call__  # a bound method is called faster than an object
    assert signature is not None
    first, *rest = signature.parameters.values()
    bind = Binder(signature.replace(parameters=rest))

    def without_context(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if args:
            return bind(args[1:], kwargs)
        return bind(args, {k: v for k, v in kwargs.items() if k != first.name})

    return without_context


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any] | None:
    """``fn``'s annotations as types, those written as text (``from __future__ import
    annotations``) resolved among the names ``fn`` closes over and its module's (a class
    defined in the test function that defines the tool is one of the former); ``None`` when
    they do not resolve (a name defined later, or only under ``TYPE_CHECKING``)."""
    try:
        closed = inspect.getclosurevars(fn).nonlocals
    except (TypeError, ValueError):
        closed = {}
    try:
        return typing.get_type_hints(fn, localns=dict(closed), include_extras=True)
    except Exception:
        return None


def return_annotation(fn: Callable[..., Any]) -> Any:
    """What ``fn``'s return annotation says, resolved (``None``: it says nothing, or names
    what cannot be found; see :func:`_type_hints`)."""
    fn = inspect.unwrap(fn)
    annotation = getattr(fn, "__annotations__", {}).get("return")
    if not isinstance(annotation, str):
        return annotation
    hints = _type_hints(fn)
    return None if hints is None else hints.get("return")


def _resolved(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """``wrapper`` with ``fn``'s annotations as types where ``fn`` holds them as strings
    (``from __future__ import annotations``): a framework that builds a tool's schema by
    resolving them in the wrapper's globals (AutoGen) would look in this module's, where
    ``Literal`` or the tool's own classes are not. Left as strings when they do not resolve."""
    annotations = getattr(fn, "__annotations__", None)
    if not annotations or not any(isinstance(a, str) for a in annotations.values()):
        return wrapper
    hints = _type_hints(fn)
    if hints is not None:
        wrapper.__annotations__ = {key: hints.get(key, value) for key, value in annotations.items()}
    return wrapper


def wrap_tool(engine: ToolRecorder, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` recorded as tool ``name``: sync or async, as ``fn`` is."""
    bind = _binder(fn)
    engine.expect_return(name, fn)

    if inspect.iscoroutinefunction(fn):

        @wraps(fn)
        async def async_tool(*args: Any, **kwargs: Any) -> Any:
            return await acall_recorded(
                engine, name, bind(args, kwargs), lambda: fn(*args, **kwargs)
            )

        return _resolved(async_tool, fn)

    # call_recorded, inline and with its methods bound once: a wrapped sync tool's own cost
    # is on every call the agent makes (the tool-call benchmark times this path).
    started, clock = engine.tool_started, time.perf_counter

    @wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> Any:
        call_id, step, replayed = started(name, bind(args, kwargs))
        if replayed is not None:
            return engine.replayed_result(name, call_id, step, replayed)
        t0 = clock()
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            engine.tool_failed(name, call_id, t0, exc)
            raise
        engine.tool_returned(name, call_id, t0, result)
        return result

    return _resolved(tool, fn)
