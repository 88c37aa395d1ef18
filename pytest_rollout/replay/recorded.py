"""Replay (docs/replay.md): a recording is the world, and replay never reaches the live system.

:class:`Replay` holds a recorded run and answers from it: the LLM turns in order (each
checked against the request the harness rendered, by the hash of its canonical form) and the
tool calls of each turn (matched by position, name and a hash of the canonical arguments).
Anything it cannot answer is a :class:`~pytest_rollout.diff.divergence.Divergence`, raised to the
caller as :class:`~pytest_rollout.ReplayDivergenceError`; nothing runs live in its place.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..diff.canonical import arguments_hash, canonicalize_event
from ..diff.compare import field_changes
from ..diff.divergence import Divergence, DivergenceKind, ReplayDivergenceError
from ..diff.text import call_text, string_change, value_text
from ..format.events import (
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    Event,
)
from ..format.jsonable import to_json_data
from ..format.loader import Rollout, load
from .history import TurnRequest, new_messages, request_hash
from .turns import Turn

__all__ = ["RecordedCall", "RecordedProvider", "RecordedTurn", "Recording", "Replay"]


@dataclass(slots=True)
class RecordedCall:
    step: int
    position: int
    call_id: Any
    name: str
    arguments: Any
    args_hash: str
    output: Any = None
    error: Mapping[str, Any] | None = None
    consumed: bool = False


@dataclass(slots=True)
class RecordedTurn:
    step: int
    request: dict[str, Any] | None
    turn: dict[str, Any]
    consumed: bool = False


@dataclass(slots=True)
class Recording:
    """A recorded run indexed for replay: its turns in order, its tool calls by step."""

    turns: list[RecordedTurn] = field(default_factory=list)
    calls: dict[int, list[RecordedCall]] = field(default_factory=dict)

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> Recording:
        recording = cls()
        requests: dict[int, dict[str, Any]] = {}
        # Completions queue per (step, call id) and pair with starts in order, so calls that
        # share an id (or have none) each get their own result.
        completions: dict[tuple[int, str], deque[Event]] = {}
        started: list[Event] = []
        for event in events:
            if event.type == LLM_TURN_STARTED:
                requests[event.step] = event.data
            elif event.type == LLM_TURN_COMPLETED:
                recording.turns.append(
                    RecordedTurn(event.step, requests.get(event.step), event.data)
                )
            elif event.type == TOOL_CALL_STARTED:
                started.append(event)
            elif event.type == TOOL_CALL_COMPLETED:
                completions.setdefault(_call_key(event), deque()).append(event)
        for event in started:
            calls = recording.calls.setdefault(event.step, [])
            queue = completions.get(_call_key(event))
            done = queue.popleft() if queue else None
            arguments = event.data.get("arguments")
            calls.append(
                RecordedCall(
                    step=event.step,
                    position=len(calls),
                    call_id=event.data.get("call_id"),
                    name=str(event.data.get("name")),
                    arguments=arguments,
                    args_hash=arguments_hash(arguments),
                    output=None if done is None else done.data.get("output"),
                    error=None if done is None else done.data.get("error"),
                )
            )
        return recording


def _as_is(value: Any) -> Any:
    return value


def _call_key(event: Event) -> tuple[int, str]:
    return event.step, orjson.dumps(event.data.get("call_id")).decode()


class Replay:
    """The state of one replay: what has been served, and every divergence so far."""

    def __init__(
        self,
        recording: Recording,
        source: str = "the recording",
        redact: Callable[[Any], Any] | None = None,
    ) -> None:
        self.recording = recording
        self.source = source
        # The recording was redacted before it was written, so a live request or call is
        # matched (and shown) as it would have been recorded: redacted the same way.
        self.redact: Callable[[Any], Any] = _as_is if redact is None else redact
        self.divergences: list[Divergence] = []
        self._served = 0
        self._positions: dict[int, int] = {}
        self._checked_steps: set[int] = set()

    @classmethod
    def from_rollout(
        cls,
        rollout: Rollout,
        source: str | None = None,
        redact: Callable[[Any], Any] | None = None,
    ) -> Replay:
        return cls(Recording.from_events(rollout.events), source or rollout.path, redact)

    def _diverge(self, kind: DivergenceKind, step: int, detail: str) -> ReplayDivergenceError:
        divergence = Divergence(kind, step, detail)
        self.divergences.append(divergence)
        return ReplayDivergenceError(divergence)

    # -- turns -------------------------------------------------------------------

    def begin_turn(self, step: int) -> None:
        """A new turn opens ``step``: every recorded call of the steps before must be made."""
        for earlier in sorted(self.recording.calls):
            if earlier >= step or earlier in self._checked_steps:
                continue
            self._checked_steps.add(earlier)
            # A call that was attempted and refused is already a divergence of its own.
            attempted = self._positions.get(earlier, 0)
            missing = self.recording.calls[earlier][attempted:]
            if missing:
                call = missing[0]
                raise self._diverge(
                    DivergenceKind.MISSING_CALL,
                    earlier,
                    f"the recording has call #{call.position + 1} of step {earlier}, "
                    f"{call_text(call.name, call.arguments)}, but the agent moved on to "
                    f"the next turn without making it",
                )

    def live_turn(self, step: int) -> None:
        """A live provider answers turn ``step`` (full replay): the recorded turn of that
        step is accounted for, and the calls of earlier steps must have been made."""
        self.begin_turn(step)
        if step <= len(self.recording.turns):
            self.recording.turns[step - 1].consumed = True
        self._served = max(self._served, step)

    def serve_turn(
        self, messages: Any, tools: Any, params: Mapping[str, Any], fresh: Sequence[Any]
    ) -> Turn:
        """The next recorded turn, if the request matches the recorded one.

        ``fresh`` are the request's messages that are new since the previous turn, used to
        say what differs when the request does not match.
        """
        redact = self.redact
        digest = request_hash(redact(messages), redact(tools), redact(dict(params)))
        request = TurnRequest(fresh, tools, params, digest)
        return Turn.from_event_data(self.next_turn(request))

    def next_turn(self, request: TurnRequest) -> Mapping[str, Any]:
        """What :meth:`serve_turn` serves, as recorded: the ``llm.turn.completed`` payload
        (with the raw response, when an SDK client recorded it). ``request`` carries the
        hash of the whole request, computed once by the caller."""
        step = self._served + 1
        self.begin_turn(step)
        if self._served >= len(self.recording.turns):
            raise self._diverge(
                DivergenceKind.UNRECORDED_TURN,
                step,
                f"the agent asked for turn {step} but {self.source} holds only "
                f"{len(self.recording.turns)} turn(s)",
            )
        recorded = self.recording.turns[self._served]
        expected = (recorded.request or {}).get("messages_hash")
        if expected is not None and expected != request.messages_hash:
            redact = self.redact
            raise self._diverge(
                DivergenceKind.PROMPT_MISMATCH,
                recorded.step,
                self._request_difference(
                    recorded,
                    redact(list(request.messages)),
                    redact(request.tools),
                    redact(dict(request.params)),
                ),
            )
        recorded.consumed = True
        self._served += 1
        return recorded.turn

    def _request_difference(
        self, recorded: RecordedTurn, fresh: Sequence[Any], tools: Any, params: Mapping[str, Any]
    ) -> str:
        request = recorded.request or {}
        old = Event(
            0,
            "",
            LLM_TURN_STARTED,
            {
                "messages": request.get("messages"),
                "tools": request.get("tools"),
                "params": request.get("params"),
            },
            recorded.step,
        )
        new = Event(
            0,
            "",
            LLM_TURN_STARTED,
            {
                "messages": to_json_data(list(fresh)),
                "tools": to_json_data(tools),
                "params": to_json_data(dict(params)),
            },
            recorded.step,
        )
        changes = field_changes(canonicalize_event(old), canonicalize_event(new))
        if not changes:
            return "the request differs from the recorded one in messages before this turn"
        first = changes[0]
        path = first.path.removeprefix("data.")
        if isinstance(first.a, str) and isinstance(first.b, str):
            was, got = string_change(first.a, first.b)
        else:
            was, got = value_text(first.a), value_text(first.b)
        return f"the request differs from the recorded one at {path}: recorded {was}, got {got}"

    # -- tools -------------------------------------------------------------------

    def answer_call(self, step: int, name: str, arguments: Any) -> RecordedCall:
        """The recorded result of the agent's next tool call in ``step``."""
        arguments = self.redact(arguments)
        position = self._positions.get(step, 0)
        self._positions[step] = position + 1
        calls = self.recording.calls.get(step, [])
        if position >= len(calls):
            raise self._diverge(
                DivergenceKind.UNRECORDED_CALL,
                step,
                f"call #{position + 1} of step {step}, {call_text(name, arguments)}, is not "
                f"in the recording (it holds {len(calls)} call(s) at this step)",
            )
        call = calls[position]
        if call.name != name or call.args_hash != arguments_hash(arguments):
            raise self._diverge(
                DivergenceKind.TOOL_CALL_MISMATCH,
                step,
                f"call #{position + 1} of step {step}: recorded "
                f"{call_text(call.name, call.arguments)}, got {call_text(name, arguments)}",
            )
        call.consumed = True
        return call

    # -- the end -----------------------------------------------------------------

    def leftovers(self) -> list[Divergence]:
        """What the run left unconsumed: recorded turns never asked for, calls never made."""
        found: list[Divergence] = []
        for step, calls in sorted(self.recording.calls.items()):
            missing = calls[self._positions.get(step, 0) :]
            if missing and step not in self._checked_steps:
                call = missing[0]
                found.append(
                    Divergence(
                        DivergenceKind.MISSING_CALL,
                        step,
                        f"the recording has call #{call.position + 1} of step {step}, "
                        f"{call_text(call.name, call.arguments)}, which was never made",
                    )
                )
        unserved = [t for t in self.recording.turns if not t.consumed]
        if unserved and not any(d.kind is DivergenceKind.UNRECORDED_TURN for d in self.divergences):
            found.append(
                Divergence(
                    DivergenceKind.UNCONSUMED,
                    unserved[0].step,
                    f"{len(unserved)} recorded turn(s) from step {unserved[0].step} on were "
                    f"never asked for: the run stopped early",
                )
            )
        return found


class RecordedProvider:
    """A provider that serves the LLM turns of a recording, in order, and nothing else.

    It has the provider interface (``complete(messages, tools=None, **params)`` and
    ``acomplete``) so an agent can take it directly. Before serving turn N it checks that
    the request matches the one recorded for turn N.
    """

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self._previous: list[Any] = []

    @classmethod
    def from_file(cls, path: str) -> RecordedProvider:
        return cls(Replay.from_rollout(load(path)))

    def complete(self, messages: Sequence[Any], tools: Any = None, **params: Any) -> Turn:
        plain = to_json_data(list(messages))
        fresh = new_messages(self._previous, plain)
        turn = self.replay.serve_turn(plain, to_json_data(tools), to_json_data(params), fresh)
        self._previous = plain
        return turn

    async def acomplete(self, messages: Sequence[Any], tools: Any = None, **params: Any) -> Turn:
        return self.complete(messages, tools, **params)

    @property
    def remaining(self) -> int:
        """Recorded turns not served yet."""
        return sum(1 for t in self.replay.recording.turns if not t.consumed)
