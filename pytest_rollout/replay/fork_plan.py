"""A fork inside a test (docs/replay.md, "Fork inside a test"): what a run forked from its
golden at step N replays, and what replaces the golden's answers at N.

:func:`cut` gives the recording a forked run is answered from: the golden's model turns up
to and including step N (the turn at N replaced when the fork gives another) and its tool
calls before N; at N, the golden's calls with their replacements put in, or, when the turn
at N is replaced, the calls of the new turn that a replacement answers. Nothing after N is
kept: the run's later turns and calls go live (:meth:`~.recorded.Replay.fork`).

A replacement is named by a tool call's id or by a tool's name (every call of that name at
N); the key :data:`TURN` names the model turn itself. Nothing here knows how a test wrote
its replacements: the session turns each into a :class:`Replacement`, a tool's result as a
recording holds one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..diff.canonical import arguments_hash
from ..safety.sanitize import sanitize
from .fork import ForkError
from .recorded import RecordedCall, RecordedTurn, Recording
from .turn import Turn

__all__ = ["TURN", "ForkPlan", "Replacement", "cut"]

#: The override key that replaces the model turn at the fork's step.
TURN: Final = "turn"
#: How many of a step's calls an error message lists.
_LISTED: Final = 8


@dataclass(frozen=True, slots=True)
class Replacement:
    """A tool's result as a recording holds one: its JSON ``output`` (with ``output_type``
    when the value was not plain JSON), or the ``error`` it raised."""

    output: Any = None
    error: Mapping[str, Any] | None = None
    output_type: str | None = None


@dataclass(frozen=True, slots=True)
class ForkPlan:
    """A run forked from its golden: at ``step``, the ``replacements`` by call id or tool
    name and the replacement ``turn`` (``None``: the golden's); ``origin`` is the
    ``forked_from`` object its ``run.started`` carries; ``source`` names the golden in
    messages."""

    step: int
    replacements: Mapping[str, Replacement] = field(default_factory=dict)
    turn: Turn | None = None
    origin: Mapping[str, Any] = field(default_factory=dict)
    source: str = "the golden"

    @property
    def call(self) -> str:
        """How the test asked for it, for messages: ``rollout.fork(2, override=...)``."""
        return f"rollout.fork({self.step}, override=...)"

    @property
    def not_compared(self) -> str:
        """Why ``rollout == golden`` refuses a forked run."""
        return (
            f"a fork is not compared with its golden: this run follows it up to step "
            f"{self.step} and goes its own way after it, by design ({self.call}). Assert on "
            f"the run itself (rollout.tool_calls, rollout.events()); a divergence up to step "
            f"{self.step} still fails the test"
        )


def cut(
    recording: Recording, plan: ForkPlan, redact: Callable[[Any], Any]
) -> tuple[Recording, dict[str, RecordedCall]]:
    """The recording a run forked by ``plan`` replays, and the replacements by tool name
    for the calls of a replaced turn that the recording cannot hold (a name names calls of
    any arguments). Raises :class:`~.fork.ForkError` when the golden
    has no turn at the step, or a replacement names no call of it. ``redact`` redacts a
    replaced turn's arguments as the golden's were (the agent's calls are matched so)."""
    step = plan.step
    turns = [turn for turn in recording.turns if turn.step <= step]
    at_step = [turn for turn in turns if turn.step == step]
    if not recording.turns:
        raise ForkError(
            f"{plan.call} cannot fork {sanitize(plan.source)}: a fork goes on from one of its "
            f"model turns, and it has none"
        )
    if step < 1 or not at_step:
        last = recording.turns[-1].step
        raise ForkError(
            f"{plan.call} cannot fork {sanitize(plan.source)} at step {step}: a fork goes on "
            f"from one of its model turns, and it has {len(recording.turns)} (steps 1 to "
            f"{last}). Fork at a step from 1 to {last}"
        )
    calls = {s: list(found) for s, found in recording.calls.items() if s < step}
    by_name: dict[str, RecordedCall] = {}
    if plan.turn is None:
        golden = recording.calls.get(step, [])
        _check_keys(plan, [(c.call_id, c.name) for c in golden], "its")
        calls[step] = [_replaced(call, plan) for call in golden]
    else:
        new = plan.turn.tool_calls
        _check_keys(plan, [(c.id, c.name) for c in new], "the replacement turn's")
        answered = [c for c in new if c.id in plan.replacements or c.name in plan.replacements]
        calls[step] = [
            _answered(c.id, c.name, c.arguments, i, plan, redact) for i, c in enumerate(answered)
        ]
        named = {c.name for c in new} & set(plan.replacements)
        by_name = {name: _answered(None, name, None, -1, plan, redact) for name in named}
        replaced = dataclasses.replace(at_step[0], turn=plan.turn.to_event_data(), failed=False)
        turns = [replaced if turn is at_step[0] else turn for turn in turns]
    kept = Recording(turns=[_fresh(turn) for turn in turns], calls=calls)
    return kept, by_name


def _fresh(turn: RecordedTurn) -> RecordedTurn:
    return dataclasses.replace(turn, consumed=False)


def _check_keys(plan: ForkPlan, calls: Sequence[tuple[Any, str]], whose: str) -> None:
    """Every replacement names a call of the step, by id or by tool name."""
    ids = {call_id for call_id, _ in calls if isinstance(call_id, str) and call_id}
    names = {name for _, name in calls}
    unknown = [key for key in plan.replacements if key not in ids and key not in names]
    if not unknown:
        return
    if calls:
        listed = ", ".join(f"{name} ({call_id})" for call_id, name in calls[:_LISTED])
        more = f" and {len(calls) - _LISTED} more" if len(calls) > _LISTED else ""
        held = f"{whose} calls at step {plan.step} are {listed}{more}"
    else:
        held = f"{whose} turn at step {plan.step} made no tool call"
    raise ForkError(
        f"{plan.call} replaces {sanitize(repr(unknown[0]))}, which names no tool call of "
        f"step {plan.step} in {sanitize(plan.source)}: {sanitize(held)}. Name a call by its "
        f'id or its tool\'s name, or the model turn itself by "{TURN}"'
    )


def _replacement(plan: ForkPlan, call_id: Any, name: str) -> Replacement | None:
    """The replacement of a call: by its id, else by its tool's name."""
    found = plan.replacements.get(call_id) if isinstance(call_id, str) else None
    return found if found is not None else plan.replacements.get(name)


def _replaced(call: RecordedCall, plan: ForkPlan) -> RecordedCall:
    """A golden call of the fork's step, answered by its replacement when it has one."""
    found = _replacement(plan, call.call_id, call.name)
    if found is None:
        return dataclasses.replace(call, consumed=False)
    return dataclasses.replace(
        call,
        output=found.output,
        error=found.error,
        output_type=found.output_type,
        consumed=False,
    )


def _answered(
    call_id: Any,
    name: str,
    arguments: Any,
    position: int,
    plan: ForkPlan,
    redact: Callable[[Any], Any],
) -> RecordedCall:
    """A call of a replaced turn, answered by its replacement (as if recorded so)."""
    found = _replacement(plan, call_id, name)
    assert found is not None  # only the calls a replacement names get here
    recorded_arguments = redact(arguments)
    return RecordedCall(
        step=plan.step,
        position=position,
        call_id=call_id,
        name=name,
        arguments=recorded_arguments,
        args_hash=arguments_hash(recorded_arguments),
        output=found.output,
        error=found.error,
        output_type=found.output_type,
    )
