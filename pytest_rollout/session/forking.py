"""A test's run made a fork of its golden: ``rollout.fork(step, override={...})``
(docs/replay.md, "Fork inside a test").

The run is answered from the golden up to step N, with the test's replacements at N (a tool
call's result named by its call id or its tool's name, or the model turn itself under
``"turn"``), and goes live after it: later model turns ask the test's live provider, later
tool calls run the tools. Its ``run.started`` says where it came from (``forked_from``). The
plan is checked whole before anything changes: a fork that cannot be made leaves the run as
it was.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import RolloutError
from ..format.jsonable import to_json_data
from ..format.loader import read_rollout_bytes
from ..format.typed import type_tag
from ..replay.fork import ForkError, forked_from, original_run_id
from ..replay.fork_plan import TURN, ForkPlan, Replacement, cut
from ..replay.mode import Mode
from ..replay.turn import coerce_turn
from ..safety.sanitize import sanitize
from ..store.golden_store import LoadedGolden
from .engine import Engine
from .exceptions import tool_error_data

__all__ = ["prepare_fork", "sdk_refusal"]


def prepare_fork(engine: Engine, step: int, override: Any) -> tuple[ForkPlan, Callable[[], None]]:
    """Check that ``engine``'s run can become a fork of its golden at ``step`` with the
    replacements of ``override``: the fork's plan, and what makes the run that fork. Raises
    :class:`~pytest_rollout.errors.RolloutError` saying why it cannot: no golden is
    replayed, the run began already or is a fork already, the golden has no model turn at
    ``step``, a key names no call of that step, a value cannot be recorded."""
    __tracebackhide__ = True  # a usage error: the traceback ends in the test
    call = f"rollout.fork({step!r}, override=...)"
    if isinstance(step, bool) or not isinstance(step, int):
        raise ForkError(f"{call}: the step is a number, got {type(step).__name__}")
    if engine.mode is Mode.RECORD:
        raise ForkError(
            f"{call} goes on from this test's golden, and a test run with --rollout-record "
            f"replays none: run this test without --rollout-record (it replays its golden "
            f"up to step {step}, then runs live)"
        )
    events = engine.require_golden().events
    golden = engine.golden
    replay = engine.replay
    assert golden is not None
    assert replay is not None
    if engine.fork is not None:
        raise ForkError(f"{call}: this run is a fork of its golden already (a run forks once)")
    if engine.run_written:
        raise ForkError(
            f"{call} comes after the run began: a run becomes a fork before it records "
            f"anything. Call it before the agent's first model turn or tool call (before "
            f"the rollout.run() block, or first thing in it)"
        )
    turn, replacements = _replacements(call, override)
    origin = forked_from(original_run_id(events), _digest(call, golden), step)
    plan = ForkPlan(step, replacements, turn, origin, golden.shown)
    recording, by_name = cut(replay.recording, plan, engine.redact)

    def make_fork() -> None:
        replay.fork(recording, step, live_at_step=turn is not None, by_name=by_name)
        engine.fork = plan

    return plan, make_fork


def sdk_refusal(plan: ForkPlan) -> ForkError:
    """Why an SDK client cannot take part in a fork whose model turn is replaced."""
    return ForkError(
        f"{plan.call} replaces the model turn at step {plan.step}, and an SDK client is "
        f"answered with the golden's recorded HTTP response, which a replacement turn does "
        f"not have: replace the turn in an agent on rollout.provider(...), or replace the "
        f"tool results of step {plan.step} instead"
    )


def _replacements(call: str, override: Any) -> tuple[Any, dict[str, Replacement]]:
    """The replacement turn (``None``: none) and the replacements by call id or tool name."""
    if not isinstance(override, Mapping):
        raise ForkError(
            f"{call}: override maps tool call ids or tool names to their new results, and "
            f'"{TURN}" to a new model turn; got a {type(override).__name__}'
        )
    turn = None
    found: dict[str, Replacement] = {}
    for key, value in override.items():
        if not isinstance(key, str):
            raise ForkError(
                f"{call}: override's keys are tool call ids, tool names or "
                f'"{TURN}", got {sanitize(repr(key))}'
            )
        if key == TURN:
            try:
                turn = coerce_turn(value)
            except TypeError as exc:
                raise ForkError(f'{call}: override["{TURN}"]: {sanitize(str(exc))}') from None
        else:
            found[key] = _replacement(call, key, value)
    return turn, found


def _replacement(call: str, key: str, value: Any) -> Replacement:
    """A tool's new result, as a recording holds one (an exception: the error it raises)."""
    if isinstance(value, Exception):
        return Replacement(error=tool_error_data(value))
    try:
        output = to_json_data(value)
    except TypeError as exc:
        raise ForkError(
            f"{call}: the result given for {sanitize(repr(key))} cannot be recorded: "
            f"{sanitize(str(exc))}"
        ) from None
    return Replacement(output=output, output_type=type_tag(value))


def _digest(call: str, golden: LoadedGolden) -> str:
    """The sha256 of the golden's bytes: as the store read them, else read again."""
    if golden.sha256 is not None:
        return golden.sha256
    try:
        data = read_rollout_bytes(golden.path)
    except (OSError, RolloutError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ForkError(
            f"{call}: the golden {sanitize(golden.shown)} cannot be read to name it as the "
            f"fork's origin: {sanitize(str(reason))}"
        ) from None
    return hashlib.sha256(data).hexdigest()
