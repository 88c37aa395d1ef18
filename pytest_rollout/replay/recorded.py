"""Replay (docs/replay.md): a recording is the world, and replay never reaches the live system.

:class:`Replay` holds a recorded run and answers from it: the LLM turns in order (each
checked against the request the harness rendered, by the hash of its canonical form; a
caller with several requests open at once lets a request match one of the next few turns),
and the tool calls of each step (each answered by the first recorded call of the step not
used yet with the same name and hash of the canonical arguments, so calls run in parallel
replay in whatever order they are made). A model error the agent handled was recorded as a
failed turn with its HTTP response, and is served like any other turn.
Anything it cannot answer is a :class:`~pytest_rollout.diff.divergence.Divergence`, raised to the
caller as :class:`~pytest_rollout.ReplayDivergenceError`; nothing runs live in its place.
A replay made a fork (:meth:`Replay.fork`) answers the run up to the fork's step and
nothing after it: there, the run goes live by design.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..diff.canonical import (
    DEFAULT_OPTIONS,
    announced_calls,
    arguments_hash,
    canonicalize_event,
    renamed,
    tool_order,
)
from ..diff.compare import field_changes
from ..diff.divergence import Divergence, DivergenceKind, ReplayDivergenceError
from ..diff.text import call_text, string_change, value_text
from ..diff.volatile import Renaming, Volatile
from ..format.events import (
    LLM_TURN_COMPLETED,
    LLM_TURN_FAILED,
    LLM_TURN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    Event,
)
from ..format.jsonable import to_json_data
from ..format.loader import Rollout, load
from ..safety.sanitize import sanitize
from .history import TurnRequest, _as_is, new_messages, request_hash
from .turn import Turn

__all__ = ["RecordedCall", "RecordedProvider", "RecordedTurn", "Recording", "Replay"]


@dataclass(slots=True)
class RecordedCall:
    """A recorded tool call. ``position`` is its place among the calls of its step, in the
    order the step's turn announced them; ``output_type`` names the type of a result that
    was not plain JSON (``module:qualname``), when the recording says."""

    step: int
    position: int
    call_id: Any
    name: str
    arguments: Any
    args_hash: str
    output: Any = None
    error: Mapping[str, Any] | None = None
    consumed: bool = False
    output_type: str | None = None


@dataclass(slots=True)
class RecordedTurn:
    """A recorded model turn: the ``llm.turn.completed`` payload, or (``failed``) the
    ``llm.turn.failed`` payload of an error response the agent handled, whose ``response``
    holds the HTTP status, content type and body to answer with again."""

    step: int
    request: dict[str, Any] | None
    turn: dict[str, Any]
    consumed: bool = False
    failed: bool = False


@dataclass(slots=True)
class Recording:
    """A recorded run indexed for replay: its turns in order, its tool calls by step (each
    step's in the order its turn announced them)."""

    turns: list[RecordedTurn] = field(default_factory=list)
    calls: dict[int, list[RecordedCall]] = field(default_factory=dict)

    @property
    def keyed_as_is(self) -> bool:
        """Whether the recorded request keys were taken with their volatile values as they
        were (a golden recorded before they were renamed, or with renaming off): a live
        request is then keyed the same way."""
        for turn in self.turns:
            request = turn.request
            if request and request.get("messages_hash") is not None:
                return request.get("key_volatile") is None
        return False

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> Recording:
        recording = cls()
        requests: dict[int, dict[str, Any]] = {}
        announced: dict[int, list[str]] = {}
        # Completions queue per (step, call id) and pair with starts in order, so calls that
        # share an id (or have none) each get their own result.
        completions: dict[tuple[int, str], deque[Event]] = {}
        started: dict[int, list[Event]] = {}
        for event in events:
            kind = event.type
            if kind == LLM_TURN_STARTED:
                requests[event.step] = event.data
            elif kind == LLM_TURN_COMPLETED:
                recording.turns.append(
                    RecordedTurn(event.step, requests.get(event.step), event.data)
                )
                announced.setdefault(event.step, []).extend(announced_calls(event.data))
            elif kind == LLM_TURN_FAILED and isinstance(event.data.get("response"), Mapping):
                turn = RecordedTurn(event.step, requests.get(event.step), event.data, failed=True)
                recording.turns.append(turn)
            elif kind == TOOL_CALL_STARTED:
                started.setdefault(event.step, []).append(event)
            elif kind == TOOL_CALL_COMPLETED:
                completions.setdefault(_call_key(event), deque()).append(event)
        for step, starts in started.items():
            # Paired in the order recorded, placed in the order announced.
            done = [_completion(completions, event) for event in starts]
            order = tool_order(announced.get(step, ()), starts) or range(len(starts))
            recording.calls[step] = [
                _recorded_call(starts[i], done[i], position) for position, i in enumerate(order)
            ]
        return recording


def _completion(completions: dict[tuple[int, str], deque[Event]], start: Event) -> Event | None:
    queue = completions.get(_call_key(start))
    return queue.popleft() if queue else None


def _recorded_call(start: Event, done: Event | None, position: int) -> RecordedCall:
    arguments = start.data.get("arguments")
    result = {} if done is None else done.data
    output_type = result.get("output_type")
    return RecordedCall(
        step=start.step,
        position=position,
        call_id=start.data.get("call_id"),
        name=str(start.data.get("name")),
        arguments=arguments,
        args_hash=arguments_hash(arguments),
        output=result.get("output"),
        error=result.get("error"),
        output_type=output_type if isinstance(output_type, str) else None,
    )


def _keyed_otherwise(recorded: RecordedTurn, request: TurnRequest) -> str:
    """What to do when the recorded key was taken with other volatile rules than the live
    one (empty when they agree)."""
    was = (recorded.request or {}).get("key_volatile")
    if was == request.key_volatile:
        return ""
    return (
        f" (the golden's request keys were taken with {_rules(was)}, this run's with "
        f"{_rules(request.key_volatile)}: re-record the golden with --rollout-record after "
        f"changing what is volatile)"
    )


def _rules(fingerprint: Any) -> str:
    if fingerprint is None:
        return "volatile values as they are"
    return f"volatile rules {sanitize(str(fingerprint))}"


def _call_key(event: Event) -> tuple[int, str]:
    return event.step, orjson.dumps(event.data.get("call_id")).decode()


class Replay:
    """The state of one replay: what has been served, and every divergence so far."""

    def __init__(
        self,
        recording: Recording,
        source: str = "the recording",
        redact: Callable[[Any], Any] | None = None,
        volatile: Volatile | None = None,
    ) -> None:
        self.recording = recording
        self.source = source
        #: The rules a live request's volatile values are renamed by, for its report.
        self.volatile = volatile
        # The recording was redacted before it was written, so a live request or call is
        # matched (and shown) as it would have been recorded: redacted the same way.
        self.redact: Callable[[Any], Any] = _as_is if redact is None else redact
        self.divergences: list[Divergence] = []
        #: Turns before this index are served or passed by (a live turn of a later step).
        self._floor = 0
        #: How many calls the agent made at each step, answered or not.
        self._attempts: dict[int, int] = {}
        #: The recorded calls (step, position) an attempt was refused against, and how many
        #: attempts at each step had no recorded counterpart at all.
        self._refused: set[tuple[int, int]] = set()
        self._unanswered: dict[int, int] = {}
        # Tool calls and model requests may arrive from several threads at once: each
        # claims its recorded counterpart under this lock.
        self._lock = threading.Lock()
        self._checked_steps: set[int] = set()
        #: The fork this replay answers (``None``: the whole recording is the world).
        self._fork: _Fork | None = None

    @classmethod
    def from_rollout(
        cls,
        rollout: Rollout,
        source: str | None = None,
        redact: Callable[[Any], Any] | None = None,
        volatile: Volatile | None = None,
    ) -> Replay:
        recording = Recording.from_events(rollout.events)
        return cls(recording, source or rollout.path, redact, volatile)

    def fork(
        self,
        recording: Recording,
        step: int,
        *,
        live_at_step: bool = False,
        by_name: Mapping[str, RecordedCall] | None = None,
    ) -> None:
        """Answer ``recording`` (the golden cut at ``step``, see
        :func:`~.fork_plan.cut`) from now on, as a fork: nothing after ``step`` is
        answered (:meth:`claim_call` gives ``None``, and the caller runs the call live),
        nor, when ``live_at_step`` (the turn at ``step`` was replaced), a call of ``step``
        that ``recording`` does not hold, unless ``by_name`` answers its tool. Only a replay
        that has answered nothing yet is forked."""
        with self._lock:
            if self._attempts or self.divergences or self._floor:
                raise RuntimeError("a replay is forked before it answers anything")
            if any(turn.consumed for turn in self.recording.turns):
                raise RuntimeError("a replay is forked before it answers anything")
            self.recording = recording
            self._fork = _Fork(step, live_at_step, dict(by_name or {}))

    @property
    def serving(self) -> bool:
        """Whether a recorded turn is left to serve (a fork goes live once none is)."""
        with self._lock:
            return self._first_open() is not None

    def diverge(self, kind: DivergenceKind, step: int, detail: str) -> ReplayDivergenceError:
        """Note a divergence of this replay, and the error that tells the agent of it."""
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
            call = self._first_unmade(earlier)
            if call is not None:
                raise self.diverge(
                    DivergenceKind.MISSING_CALL,
                    earlier,
                    f"the recording has call #{call.position + 1} of step {earlier}, "
                    f"{call_text(call.name, call.arguments)}, but the agent moved on to "
                    f"the next turn without making it",
                )

    def _first_unmade(self, step: int) -> RecordedCall | None:
        """The first recorded call of ``step`` the agent never made. An attempt that was
        refused is a divergence of its own: the call it was refused against, and for each
        attempt with no counterpart one call not made, are not reported again."""
        refused = self._refused
        unmade = (
            call
            for call in self.recording.calls.get(step, ())
            if not call.consumed and (step, call.position) not in refused
        )
        return next(itertools.islice(unmade, self._unanswered.get(step, 0), None), None)

    def live_turn(self, step: int) -> None:
        """A live provider answers turn ``step`` (full replay): the recorded turn of that
        step is accounted for, and the calls of earlier steps must have been made."""
        self.begin_turn(step)
        if step <= len(self.recording.turns):
            self.recording.turns[step - 1].consumed = True
        self._floor = max(self._floor, step)

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

    def next_turn(self, request: TurnRequest, lookahead: int = 0) -> Mapping[str, Any]:
        """What :meth:`serve_turn` serves, as recorded: the ``llm.turn.completed`` payload
        (with the raw response, when an SDK client recorded it), or the ``llm.turn.failed``
        payload of a handled error response. ``request`` carries the hash of the whole
        request, computed once by the caller. See :meth:`next_recorded_turn`."""
        return self.next_recorded_turn(request, lookahead).turn

    def next_recorded_turn(self, request: TurnRequest, lookahead: int = 0) -> RecordedTurn:
        """The recorded turn that answers ``request``: the first turn not served yet, or,
        when the caller has ``lookahead`` other model requests open (whose arrival order
        varies from run to run), the first of the next ``lookahead + 1`` turns not served
        yet whose request matches. Calls of earlier steps not made yet are found at the end
        of the run rather than here when requests overlap."""
        with self._lock:
            return self._claim_turn(request, lookahead)

    def _claim_turn(self, request: TurnRequest, lookahead: int) -> RecordedTurn:
        turns = self.recording.turns
        first = self._first_open()
        step = len(turns) + 1 if first is None else first + 1
        if lookahead <= 0:
            self.begin_turn(step)
        if first is None:
            raise self.diverge(
                DivergenceKind.UNRECORDED_TURN,
                step,
                f"the agent asked for turn {step} but {self.source} holds only "
                f"{len(turns)} turn(s)",
            )
        recorded = self._matching(first, request.messages_hash, lookahead)
        if recorded is None:
            redact = self.redact
            detail = self._request_difference(
                turns[first],
                redact(list(request.messages)),
                redact(request.tools),
                redact(dict(request.params)),
                request.key_volatile,
            )
            raise self.diverge(
                DivergenceKind.PROMPT_MISMATCH,
                turns[first].step,
                detail + _keyed_otherwise(turns[first], request),
            )
        recorded.consumed = True
        return recorded

    def _first_open(self) -> int | None:
        """The index of the first turn not served (nor passed by), if any is left."""
        turns = self.recording.turns
        index = self._floor
        while index < len(turns) and turns[index].consumed:
            index += 1
        self._floor = index
        return index if index < len(turns) else None

    def _matching(self, first: int, digest: str, lookahead: int) -> RecordedTurn | None:
        """The first turn not served among the ``lookahead + 1`` from index ``first`` whose
        request hash is ``digest`` (or was not recorded)."""
        window = 0
        for recorded in itertools.islice(self.recording.turns, first, None):
            if recorded.consumed:
                continue
            expected = (recorded.request or {}).get("messages_hash")
            if expected is None or expected == digest:
                return recorded
            window += 1
            if window > lookahead:
                break
        return None

    def _request_difference(
        self,
        recorded: RecordedTurn,
        fresh: Sequence[Any],
        tools: Any,
        params: Mapping[str, Any],
        key_volatile: str | None,
    ) -> str:
        """The first difference between a request and the recorded one, their volatile
        values renamed as their keys rename them (what differs is then what counts)."""
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
        was_event, got_event = canonicalize_event(old), canonicalize_event(new)
        if key_volatile is not None and self.volatile is not None:
            options = DEFAULT_OPTIONS.extended(volatile=self.volatile)
            was_event = renamed(was_event, options, Renaming(self.volatile))
            got_event = renamed(got_event, options, Renaming(self.volatile))
        changes = field_changes(was_event, got_event)
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
        """The recorded result of the agent's next tool call in ``step``: the first call of
        the step not answered yet with the same name and arguments, in whatever order the
        agent makes them. Else a call of that name not answered yet is a mismatch, and a
        call with no such counterpart is not in the recording."""
        found = self.claim_call(step, name, arguments)
        if found is None:  # only a fork runs calls live, and its caller asks claim_call
            raise RuntimeError(f"call {name} of step {step} is a fork's to run live")
        return found

    def claim_call(self, step: int, name: str, arguments: Any) -> RecordedCall | None:
        """:meth:`answer_call`, or ``None`` for a call that a fork runs live (one after its
        step, or one of a replaced turn that no replacement answers: see :meth:`fork`)."""
        fork = self._fork
        if fork is not None and step > fork.step:
            return None
        arguments = self.redact(arguments)
        with self._lock:
            return self._claim_call(step, name, arguments)

    def _claim_call(self, step: int, name: str, arguments: Any) -> RecordedCall | None:
        attempt = self._attempts.get(step, 0) + 1
        self._attempts[step] = attempt
        calls = self.recording.calls.get(step, [])
        digest = arguments_hash(arguments)
        same_name: RecordedCall | None = None
        for call in calls:
            if call.consumed or call.name != name:
                continue
            if call.args_hash == digest:
                call.consumed = True
                return call
            if same_name is None:
                same_name = call
        fork = self._fork
        if fork is not None and fork.live_at_step and step == fork.step:
            return fork.by_name.get(name)  # a replaced turn's call: live unless answered
        if same_name is not None:
            self._refused.add((step, same_name.position))
            raise self.diverge(
                DivergenceKind.TOOL_CALL_MISMATCH,
                step,
                f"call #{same_name.position + 1} of step {step}: recorded "
                f"{call_text(same_name.name, same_name.arguments)}, "
                f"got {call_text(name, arguments)}",
            )
        self._unanswered[step] = self._unanswered.get(step, 0) + 1
        raise self.diverge(
            DivergenceKind.UNRECORDED_CALL,
            step,
            f"call #{attempt} of step {step}, {call_text(name, arguments)}, is not "
            f"in the recording (it holds {len(calls)} call(s) at this step)",
        )

    # -- the end -----------------------------------------------------------------

    def leftovers(self) -> list[Divergence]:
        """What the run left unconsumed: recorded turns never asked for, calls never made."""
        found: list[Divergence] = []
        for step in sorted(self.recording.calls):
            call = None if step in self._checked_steps else self._first_unmade(step)
            if call is not None:
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


@dataclass(frozen=True, slots=True)
class _Fork:
    """Where a forked replay stops answering (see :meth:`Replay.fork`)."""

    step: int
    live_at_step: bool
    by_name: Mapping[str, RecordedCall]


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
