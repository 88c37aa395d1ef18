"""The integrity check of a rollout (docs/cli.md): offline, nothing is executed.

A consistent run has every ``tool.call.started`` answer a call that the turn just before it
(the most recent ``llm.turn.completed``, at the same step) announced, under the same tool
name and with the same canonical arguments; every started call completed later in the file;
and no ``call_id`` used twice; and every call a turn announced is made (some
``tool.call.started`` answers it before the next turn), else the agent ran that tool outside
``rollout.tools``, unrecorded. :func:`check` walks the events once and lists every place
where that does not hold; :func:`unrecorded_calls` finds the last kind alone, and
:func:`unrecorded_text` says what to do about them (the warning when recording, the failure
of a dry replay and ``rollout check`` share its words).

Arguments are compared as canonical bytes (sorted keys, exact numbers), the way replay
matches them, so ``1`` and ``1.0`` differ. Reasons quote file content only through
:func:`~pytest_rollout.diff.render.value_text`, so they are sanitized and capped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from ..format.events import (
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    Event,
)
from .canonical import arguments_hash, canonical_bytes
from .text import value_text

__all__ = [
    "IntegrityReport",
    "Mismatch",
    "UnrecordedCall",
    "check",
    "forced_function",
    "framework_call",
    "unrecorded_calls",
    "unrecorded_text",
]

#: Calls a framework answers itself, never through a tool function: pydantic-ai's output
#: tool and the Agents SDK's handoffs (their default names). They are never "unrecorded".
_FRAMEWORK_NAMES: Final = frozenset({"final_result"})
_FRAMEWORK_PREFIXES: Final = ("final_result_", "transfer_to_")


def forced_function(params: Any) -> str | None:
    """The function a request forces the model to call (its ``tool_choice``: OpenAI's
    ``{"type": "function", "function": {"name": ...}}`` or ``{"type": "function", "name":
    ...}``, Anthropic's ``{"type": "tool", "name": ...}``), if any. A forced call is how
    structured output is asked for (instructor's tools mode, ``pydantic_function_tool``):
    the SDK turns it into the response, and no tool runs."""
    choice = params.get("tool_choice") if isinstance(params, Mapping) else None
    if not isinstance(choice, Mapping) or choice.get("type") not in ("function", "tool"):
        return None
    inner = choice.get("function")
    name = inner.get("name") if isinstance(inner, Mapping) else choice.get("name")
    return name if isinstance(name, str) and name else None


def framework_call(name: Any) -> bool:
    """Whether a call of tool ``name`` is one a framework answers itself (no tool runs)."""
    return isinstance(name, str) and (
        name in _FRAMEWORK_NAMES or name.startswith(_FRAMEWORK_PREFIXES)
    )


@dataclass(frozen=True, slots=True)
class UnrecordedCall:
    """A call a turn announced that no recorded tool call answered: the tool ran outside
    ``rollout.tools`` (or not at all). ``step`` and ``line`` are the announcing turn's."""

    step: int
    call_id: str | None
    name: str
    line: int | None = None

    def reason(self) -> str:
        """What ``rollout check`` says of it."""
        return (
            f"turn {self.step} announced call {self.call_id} (tool {value_text(self.name, 40)}) "
            f"but no tool.call.started follows before the next turn"
        )


def unrecorded_text(calls: Sequence[UnrecordedCall]) -> str:
    """Why calls were not recorded and how to record them: one paragraph, the same in the
    recording's warning, a dry replay's failure and the docs."""
    names = list(dict.fromkeys(call.name for call in calls))
    listed = ", ".join(
        f"{value_text(c.name, 40)} (step {c.step}, call {c.call_id})" for c in calls[:10]
    )
    if len(calls) > 10:
        listed += f" and {len(calls) - 10} more"
    wrapped = ", ".join(value_text(n, 40).strip('"') for n in names[:10])
    return (
        f"tool calls ran outside rollout.tools, so they were not recorded and a replay "
        f"would run them live: {listed}. Wrap the tools and give the agent what comes back: "
        f"tools = rollout.tools([{wrapped}]) (a framework's decorated tools and MCP "
        f"tools: docs/frameworks.md)"
    )


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One broken rule: where it is (step, call id, 1-based file line) and why.

    ``call_id`` is the recorded id (its JSON text if it is not a string), or ``None`` when
    the event has none. ``line`` is ``None`` for events that never touched a file.
    """

    step: int
    call_id: str | None
    line: int | None
    reason: str

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "call_id": self.call_id,
            "line": self.line,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class IntegrityReport:
    """The result of :func:`check`: how much was replayed and every mismatch found."""

    events: int
    steps: int
    mismatches: tuple[Mismatch, ...]
    #: Calls a turn announced in its text, not as structured calls (a ReAct or code agent):
    #: they have no id to check, and break no rule.
    text_calls: tuple[Mismatch, ...] = ()

    @property
    def matched(self) -> bool:
        return not self.mismatches

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "steps": self.steps,
            "matched": self.matched,
            "mismatches": [m.to_json_obj() for m in self.mismatches],
            "text_calls": [m.to_json_obj() for m in self.text_calls],
        }


@dataclass(frozen=True, slots=True)
class _Announced:
    name: Any
    arguments: Any


@dataclass(slots=True)
class _Started:
    event: Event
    completed: bool = False


def _key(call_id: Any) -> bytes:
    """A hashable key for a call id of any JSON type (``1`` and ``"1"`` stay apart)."""
    try:
        return canonical_bytes(call_id)
    except orjson.JSONEncodeError:  # only for events built in memory, never for a loaded file
        return repr(call_id).encode()


def _id_text(call_id: Any) -> str | None:
    if call_id is None or isinstance(call_id, str):
        return call_id
    return _key(call_id).decode(errors="replace")


def _same_arguments(a: Any, b: Any) -> bool:
    try:
        return arguments_hash(a) == arguments_hash(b)
    except orjson.JSONEncodeError:  # only for events built in memory
        return bool(a == b)


def _where(event: Event) -> str:
    return f"line {event.line}" if event.line is not None else f"seq {event.seq}"


class _Checker:
    def __init__(self) -> None:
        self.found: list[tuple[int, int, Mismatch]] = []  # (seq, order found, mismatch)
        self.turn: Event | None = None
        self.announced: dict[bytes, _Announced] = {}
        self.ever_announced: dict[bytes, Event] = {}
        self.started: dict[bytes, _Started] = {}
        self.unnamed: list[_Started] = []  # started calls whose call_id is null
        self.open_unnamed: dict[bytes, deque[_Started]] = {}  # ... not yet completed, by name
        self.completions: dict[bytes, Event] = {}
        self.waiting: dict[bytes, tuple[Any, Any]] = {}  # announced by self.turn, not made
        self.unrecorded: list[UnrecordedCall] = []
        self.candidates: list[tuple[Event, Any, Any]] = []  # (turn, id, name)
        self.seen: set[bytes] = set()  # the call ids of every tool event
        self.text_calls: list[Mismatch] = []  # calls the turn before announced in its text
        self.forced: dict[int, str] = {}  # the function each step's request forces, if any

    def close_turn(self, following: Event | None = None) -> None:
        """The calls the current turn announced that no start answered are unrecorded,
        unless their id shows up in a tool event elsewhere (then that event is flagged), or
        another agent took the ``following`` turn: a call that runs another agent (an agent
        used as a tool, a delegation) was answered by that agent's own turns."""
        turn = self.turn
        if turn is None:
            return
        if turn.data.get("remote") is True or _handed_to_another(turn, following):
            # Asked for by an agent in another process, which ran its tools there, or
            # answered by the other agent that took the next turn.
            self.waiting = {}
            return
        for call_id, name in self.waiting.values():
            if not framework_call(name) and name != self.forced.get(turn.step):
                self.candidates.append((turn, call_id, name))
        self.waiting = {}

    def flag_unrecorded(self) -> None:
        for turn, call_id, name in self.candidates:
            if _key(call_id) in self.seen:
                continue
            name_text = name if isinstance(name, str) else _id_text(name) or "?"
            call = UnrecordedCall(turn.step, _id_text(call_id), name_text, turn.line)
            self.unrecorded.append(call)
            self.flag(turn, call_id, call.reason())

    def flag(self, event: Event, call_id: Any, reason: str) -> None:
        mismatch = Mismatch(event.step, _id_text(call_id), event.line, reason)
        self.found.append((event.seq, len(self.found), mismatch))

    def on_request(self, event: Event) -> None:
        """A model request: the function it forces answers itself (structured output)."""
        forced = forced_function(event.data.get("params"))
        if forced is not None:
            self.forced[event.step] = forced

    def on_turn(self, event: Event) -> None:
        self.close_turn(event)
        self.turn = event
        self.announced = {}
        calls = event.data.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            if not isinstance(call, Mapping):
                continue
            call_id = call.get("id")
            if call_id is None:
                continue  # the call it names cannot be answered; its start is flagged
            key = _key(call_id)
            if key in self.announced:
                self.flag(event, call_id, "the turn announces this call_id twice")
                continue
            self.announced[key] = _Announced(call.get("name"), call.get("arguments"))
            self.ever_announced.setdefault(key, event)
            self.waiting[key] = (call_id, call.get("name"))

    def on_started(self, event: Event) -> None:
        data = event.data
        call_id = data.get("call_id")
        self.made(call_id, data.get("name"))
        self.seen.add(_key(call_id))
        if call_id is None:
            call = _Started(event)
            self.unnamed.append(call)
            self.open_unnamed.setdefault(_key(data.get("name")), deque()).append(call)
            reason = self.unannounced_reason()
            if reason is not None:
                self.text_calls.append(Mismatch(event.step, None, event.line, reason))
                return
            self.flag(event, None, "not announced: the call has no call_id (it is null)")
            return
        key = _key(call_id)
        earlier = self.started.get(key)
        if earlier is not None:
            self.flag(
                event,
                call_id,
                f"call_id reused: a call with this id already started on {_where(earlier.event)}",
            )
            return
        self.started[key] = _Started(event)
        self.compare_with_announcement(event, key, call_id)

    def unannounced_reason(self) -> str | None:
        """Why a call with no id after the current turn breaks no rule (``None``: it
        does): the turn announced its calls in its text, or its only structured call is the
        function its request forced, which the SDK turned into the answer (structured
        output) that the agent's own code then acted on."""
        turn = self.turn
        if turn is None:
            return None
        if self.announced_in_text():
            return (
                f"announced in the text of the step {turn.step} turn ({_where(turn)}), "
                f"which has no structured calls: replay matches it by tool and arguments"
            )
        forced = self.forced.get(turn.step)
        if (
            forced is not None
            and self.announced
            and all(a.name == forced for a in self.announced.values())
        ):
            return (
                f"made by the agent's code after the step {turn.step} turn ({_where(turn)}), "
                f"whose only call is the function its request forced ({forced}, "
                f"structured output): replay matches it by tool and arguments"
            )
        return None

    def announced_in_text(self) -> bool:
        """Whether the turn before a call with no id announced its calls in its text: it
        says something and announces no structured call (a ReAct or code agent)."""
        turn = self.turn
        if turn is None or self.announced or turn.data.get("tool_calls"):
            return False
        content = turn.data.get("content")
        return isinstance(content, str) and bool(content.strip())

    def made(self, call_id: Any, name: Any) -> None:
        """A start answers the waiting call with its id, else the first one of its tool
        (then it is flagged for its id, not as a tool that ran unrecorded)."""
        if call_id is not None and self.waiting.pop(_key(call_id), None) is not None:
            return
        for key, (_, waiting_name) in self.waiting.items():
            if _key(waiting_name) == _key(name):
                del self.waiting[key]
                return

    def compare_with_announcement(self, event: Event, key: bytes, call_id: Any) -> None:
        turn = self.turn
        if turn is None:
            self.flag(event, call_id, "not announced: no llm.turn.completed comes before it")
            return
        announced = self.announced.get(key)
        if announced is None:
            reason = f"not announced by the turn before it (step {turn.step}, {_where(turn)})"
            first = self.ever_announced.get(key)
            if first is not None:
                reason += f"; an earlier turn announced it (step {first.step}, {_where(first)})"
            self.flag(event, call_id, reason)
            return
        if turn.step != event.step:
            self.flag(
                event,
                call_id,
                f"announced by the step {turn.step} turn ({_where(turn)}) "
                f"but recorded at step {event.step}",
            )
        name = event.data.get("name")
        if _key(name) != _key(announced.name):
            self.flag(
                event,
                call_id,
                f"tool name {value_text(name, 40)} differs from the announced "
                f"{value_text(announced.name, 40)} ({_where(turn)})",
            )
        arguments = event.data.get("arguments")
        if not _same_arguments(arguments, announced.arguments):
            self.flag(
                event,
                call_id,
                f"arguments {value_text(arguments)} differ from the announced "
                f"{value_text(announced.arguments)} ({_where(turn)})",
            )

    def on_completed(self, event: Event) -> None:
        data = event.data
        call_id = data.get("call_id")
        self.seen.add(_key(call_id))
        if call_id is None:
            # Pair with the oldest open null-id call of the same name: its start is already
            # flagged, and that call is not left "never completed".
            waiting = self.open_unnamed.get(_key(data.get("name")))
            if waiting:
                waiting.popleft().completed = True
                return
            self.flag(event, None, "completed without a start: the completion has no call_id")
            return
        key = _key(call_id)
        earlier = self.completions.get(key)
        if earlier is not None:
            self.flag(
                event,
                call_id,
                f"call_id reused: this call already completed on {_where(earlier)}",
            )
            return
        self.completions[key] = event
        started = self.started.get(key)
        if started is None:
            self.flag(
                event,
                call_id,
                "completed without a start: no tool.call.started with this call_id before it",
            )
            return
        started.completed = True
        name = data.get("name")
        started_name = started.event.data.get("name")
        if _key(name) != _key(started_name):
            self.flag(
                event,
                call_id,
                f"completed as tool {value_text(name, 40)} but started as "
                f"{value_text(started_name, 40)} ({_where(started.event)})",
            )

    def finish(self) -> None:
        # The last turn's calls, never made: the run stopped there (an agent that reads only
        # the text of its last turn), which is not a tool run outside rollout.tools.
        self.waiting = {}
        self.flag_unrecorded()
        for call in [*self.started.values(), *self.unnamed]:
            if not call.completed:
                self.flag(
                    call.event,
                    call.event.data.get("call_id"),
                    "started but never completed: no tool.call.completed with this call_id follows",
                )

    @property
    def mismatches(self) -> tuple[Mismatch, ...]:
        return tuple(mismatch for _, _, mismatch in sorted(self.found, key=lambda f: f[:2]))


def _handed_to_another(turn: Event, following: Event | None) -> bool:
    """Whether another named agent took the turn after ``turn``."""
    agent = turn.data.get("agent")
    other = None if following is None else following.data.get("agent")
    return isinstance(agent, str) and isinstance(other, str) and agent != other


def _walk(events: Sequence[Event]) -> _Checker:
    checker = _Checker()
    for event in events:
        kind = event.type
        if kind == LLM_TURN_STARTED:
            checker.on_request(event)
        elif kind == LLM_TURN_COMPLETED:
            checker.on_turn(event)
        elif kind == TOOL_CALL_STARTED:
            checker.on_started(event)
        elif kind == TOOL_CALL_COMPLETED:
            checker.on_completed(event)
    checker.finish()
    return checker


def unrecorded_calls(events: Sequence[Event]) -> list[UnrecordedCall]:
    """The calls turns announced that no recorded tool call answered, in file order (the
    calls a framework answers itself left out: :func:`framework_call`)."""
    return _walk(events).unrecorded


def check(events: Sequence[Event]) -> IntegrityReport:
    """Check the tool calls of a run against the turns that announced them (docs/cli.md).

    Mismatches are listed in file order; several can share a line (a call with another
    name and other arguments than announced is two).
    """
    checker = _walk(events)
    return IntegrityReport(
        events=len(events),
        steps=events[-1].step if events else 0,
        mismatches=checker.mismatches,
        text_calls=tuple(checker.text_calls),
    )
