"""Plain-text rendering of comparisons and events, for terminals and CI logs.

Every string that came from a rollout is sanitized as
:func:`~pytest_rollout.safety.sanitize.excerpt` does it before it is returned (a tool or
role name that sanitizing cannot change is shown as it is), so nothing here can print an
escape sequence or a CI command. A timeline describes every event of a run: the describers
build each line in one pass, and look at each piece no more than its sanitizing needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeGuard

import orjson

from ..format.events import (
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    REPLAY_DIVERGENCE,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    Event,
)
from ..safety.sanitize import excerpt, sanitize
from .text import VALUE_LIMIT, call_text, format_cost, string_change, value_text
from .volatile import Renaming, only_placeholders_differ, placeholders_in

if TYPE_CHECKING:
    # A comparison is rendered only once made: describing a run does not import it.
    from .compare import Comparison, FieldChange, StepStatus
    from .score import Criterion, RunSummary, Score

__all__ = [
    "Labels",
    "describe_data",
    "describe_event",
    "format_cost",
    "render_changes",
    "render_divergence",
    "run_steps",
    "step_counts",
    "step_span",
]


@dataclass(frozen=True, slots=True)
class Labels:
    """How the two runs are named in a report. ``owned``: run ``a`` is ``b``'s own
    reference (a test's golden), so ``b`` leaves *its* golden."""

    a: str = "A"
    b: str = "B"
    owned: bool = False

    @property
    def reference(self) -> str:
        """Run ``a`` as the headline names it: ``its golden``, or ``A``."""
        return f"its {self.a}" if self.owned else self.a


def describe_event(event: Event, limit: int = VALUE_LIMIT) -> str:
    """One line saying what an event did: tool names and arguments, or a content excerpt."""
    return f"{sanitize(event.type)}  {describe_data(event.type, event.data, limit)}".rstrip()


def describe_data(event_type: str, data: Mapping[str, Any], limit: int = VALUE_LIMIT) -> str:
    """What :func:`describe_event` says after the event's type (not stripped)."""
    return _DESCRIBERS.get(event_type, _describe_other)(data, limit)


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)


def _describe_turn_completed(data: Mapping[str, Any], limit: int) -> str:
    parts = []
    content = data.get("content")
    if content:
        parts.append(value_text(content, limit))
    calls = data.get("tool_calls") or []
    if isinstance(calls, list) and calls:
        named = [
            call_text(c.get("name"), c.get("arguments"))
            for c in calls
            if type(c) is dict or isinstance(c, Mapping)
        ]
        parts.append("-> " + ", ".join(named))
    return " ".join(parts) or "(empty turn)"


def _describe_turn_started(data: Mapping[str, Any], limit: int) -> str:
    messages = data.get("messages")
    count = len(messages) if isinstance(messages, list) else 0
    detail = f"{count} new message{'s' if count != 1 else ''}"
    if count and isinstance(messages, list) and _is_mapping(messages[-1]):
        detail += f", last {_describe_message(messages[-1], limit)}"
    return detail


def _describe_message(message: Mapping[str, Any], limit: int) -> str:
    """``user: "..."``; a Responses API input item without a role by its type:
    ``function_call_output call_1: "..."``, ``function_call get_weather(city="Paris")``."""
    role = message.get("role")
    kind = message.get("type")
    if role is None and isinstance(kind, str):
        if kind == "function_call":
            arguments = _json_object(message.get("arguments"))
            return f"function_call {call_text(message.get('name'), arguments)}"
        if kind.endswith("_output") or "output" in message:
            call = message.get("call_id")
            of = f" {excerpt(str(call), 40)}" if call is not None else ""
            output = _json_object(message.get("output"))
            return f"{excerpt(kind, 40)}{of}: {value_text(output, limit)}"
        return f"{excerpt(kind, 40)}: {value_text(message.get('content'), limit)}"
    if type(role) is str and role in _ROLES:
        who = role
    else:
        who = excerpt(str(role if role is not None else "?"), 20)
    return f"{who}: {value_text(message.get('content'), limit)}"


#: The usual roles: sanitizing leaves them as they are.
_ROLES: Final = frozenset({"user", "assistant", "system", "tool", "developer"})


def _json_object(value: Any) -> Any:
    """A JSON object sent as text (the Responses API's call arguments) as a dict; anything
    else as it is."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


def _describe_call_started(data: Mapping[str, Any], limit: int) -> str:
    return call_text(data.get("name"), data.get("arguments"))


def _describe_call_completed(data: Mapping[str, Any], limit: int) -> str:
    name = data.get("name", "?")
    if not (type(name) is str and name.isascii() and name.isidentifier() and len(name) <= 40):
        name = excerpt(str(name), 40)
    error = data.get("error")
    if error is None:
        return f"{name} -> {value_text(data.get('output'), limit)}"
    if _is_mapping(error):
        return f"{name} raised {excerpt(_error_text(error), limit)}"
    if error:
        return f"{name} raised {value_text(error, limit)}"
    return f"{name} -> {value_text(data.get('output'), limit)}"


def _describe_run_started(data: Mapping[str, Any], limit: int) -> str:
    return " ".join(f"{k}={value_text(data[k], 30)}" for k in ("model", "prompt") if k in data)


def _describe_run_completed(data: Mapping[str, Any], limit: int) -> str:
    detail = f"outcome={value_text(data.get('outcome'), 20)}"
    if "output" in data:
        detail += f" output={value_text(data.get('output'), limit)}"
    return detail


def _describe_run_failed(data: Mapping[str, Any], limit: int) -> str:
    error = data.get("error")
    if _is_mapping(error):
        return excerpt(_error_text(error), limit)
    return value_text(error, limit)


def _describe_divergence(data: Mapping[str, Any], limit: int) -> str:
    return excerpt(f"{data.get('kind', '?')}: {data.get('detail', '')}", limit)


def _describe_other(data: Mapping[str, Any], limit: int) -> str:
    if type(data) is dict:
        shown = data.copy()
        shown.pop("step", None)
    else:
        shown = {k: v for k, v in data.items() if k != "step"}
    return value_text(shown, limit) if shown else ""


def _error_text(error: Mapping[str, Any]) -> str:
    return f"{error.get('class', 'Error')}: {error.get('message', '')}"


#: How :func:`describe_event` says what an event of each core type did; any other type
#: shows its data.
_DESCRIBERS: Final[Mapping[str, Callable[[Mapping[str, Any], int], str]]] = {
    LLM_TURN_COMPLETED: _describe_turn_completed,
    LLM_TURN_STARTED: _describe_turn_started,
    TOOL_CALL_STARTED: _describe_call_started,
    TOOL_CALL_COMPLETED: _describe_call_completed,
    RUN_STARTED: _describe_run_started,
    RUN_COMPLETED: _describe_run_completed,
    RUN_FAILED: _describe_run_failed,
    REPLAY_DIVERGENCE: _describe_divergence,
}


def step_counts(comparison: Comparison, labels: Labels) -> str:
    """``Steps 0-3: 2 identical, 1 diverged, ...``: every step of either run, counted once."""
    from .compare import StepStatus  # noqa: PLC0415  (only a comparison made needs it)

    return (
        f"{step_span([s.step for s in comparison.steps]).capitalize()}: "
        f"{comparison.count(StepStatus.IDENTICAL)} identical, "
        f"{comparison.count(StepStatus.DIVERGED)} diverged, "
        f"{comparison.count(StepStatus.ONLY_IN_A)} only in {labels.a}, "
        f"{comparison.count(StepStatus.ONLY_IN_B)} only in {labels.b}"
    )


def run_steps(summary: RunSummary) -> str:
    """``steps 0-3``: the steps a run went through, its start (step 0) included."""
    return step_span(range(summary.first_step, summary.steps + 1))


def step_span(steps: Iterable[int]) -> str:
    """``steps 0-3``, ``step 2``, ``steps 0-2, 5`` (a gap shown), or ``no steps``."""
    numbers = sorted(set(steps))
    if not numbers:
        return "no steps"
    return f"step{'s' if len(numbers) > 1 else ''} {step_numbers(numbers)}"


def step_numbers(steps: Iterable[int]) -> str:
    """``0-3``, ``2``, ``0-2, 5``: step numbers as ranges (empty for none)."""
    if isinstance(steps, range) and steps.step == 1:  # one run, however many steps it spans
        if not steps:
            return ""
        first, last = steps[0], steps[-1]
        return str(first) if first == last else f"{first}-{last}"
    runs: list[list[int]] = []
    for n in sorted(set(steps)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _reason(c: Criterion, labels: Labels) -> str:
    if c.name == "outcome":
        winner, loser = (labels.a, labels.b) if c.winner == "a" else (labels.b, labels.a)
        lost = c.b if c.winner == "a" else c.a
        won = c.a if c.winner == "a" else c.b
        return f"outcome: {loser} {sanitize(str(lost))} where {winner} {sanitize(str(won))}"
    if c.name == "cost":
        return f"cost: {labels.a} {format_cost(c.a)} vs {labels.b} {format_cost(c.b)}"
    return f"{c.name}: {labels.a} {c.a} vs {labels.b} {c.b}"


def _split_by_winner(score: Score) -> tuple[list[Criterion], list[Criterion]]:
    """The deciding criteria of the winner (of ``a`` on a tie), then the other side's."""
    lead = "b" if score.winner == "b" else "a"
    won = [c for c in score.deciding if c.winner == lead]
    lost = [c for c in score.deciding if c.winner != lead]
    return won, lost


def _other(score: Score, labels: Labels) -> str:
    return labels.a if score.winner == "b" else labels.b


def render_changes(
    changes: tuple[FieldChange, ...],
    limit: int = 8,
    renamings: tuple[Renaming, Renaming] | None = None,
    labels: Labels = Labels(),
    events: tuple[Event | None, Event | None] = (None, None),
) -> list[str]:
    """Field-level differences, one per line: ``path: a -> b``. Where the runs' volatile
    values were renamed (``renamings``), a change of which value stands where is said in
    words, and text that differs around a placeholder is shown with the values as they
    were. ``events`` are the two events that differ, where a value may be seen first."""
    lines = []
    for change in changes[:limit]:
        path = excerpt(change.path, 60)
        a, b = change.a, change.b
        if isinstance(a, str) and isinstance(b, str):
            if renamings is not None:
                relation = _relation(a, b, renamings, labels, events)
                if relation is not None:
                    lines.append(f"{path}: another value than in {labels.reference}")
                    lines.extend(f"    {side}" for side in relation)
                    continue
                a, b = renamings[0].restore(a), renamings[1].restore(b)
            old, new = string_change(a, b)
        else:
            old, new = value_text(a), value_text(b)
        lines.append(f"{path}: {old} -> {new}")
    if len(changes) > limit:
        lines.append(f"... and {len(changes) - limit} more changed fields")
    return lines


def _relation(
    a: str,
    b: str,
    renamings: tuple[Renaming, Renaming],
    labels: Labels,
    events: tuple[Event | None, Event | None],
) -> list[str] | None:
    """``its golden: <uuid#1> (the value returned by get_order at step 1)`` and ``this run:
    <uuid#2> (a value first seen here)``, when ``a`` and ``b`` differ only in which
    placeholder stands where."""
    if not only_placeholders_differ(a, b):
        return None
    pair = next(
        ((x, y) for x, y in zip(placeholders_in(a), placeholders_in(b), strict=False) if x != y),
        None,
    )
    if pair is None:  # one side has more placeholders than the other: shown as text
        return None
    sides = []
    names = (labels.reference, labels.b)
    for name, placeholder, renaming, event in zip(names, pair, renamings, events, strict=True):
        origin = renaming.origin_of(placeholder)
        if origin is None or (
            event is not None and (origin.step, origin.type) == (event.step, event.type)
        ):
            where = "a value first seen here"
        else:
            where = f"the value {sanitize(origin.describe())}"
        sides.append(f"{name}: {placeholder} ({where})")
    return sides


def render_divergence(
    comparison: Comparison, labels: Labels, indent: str = "  ", changes_limit: int | None = 8
) -> list[str]:
    """The first divergent step: what each run did there and the field-level difference."""
    from .compare import StepStatus  # noqa: PLC0415  (only a comparison made needs it)

    first = comparison.first
    if first is None:
        return []
    lines = [f"First divergence at step {first.step} ({_status_text(first.status, labels)})"]
    for label, events in ((labels.a, first.a_events), (labels.b, first.b_events)):
        lines.append(f"{indent}{label} did:")
        if not events:
            lines.append(f"{indent * 2}(nothing at this step)")
        for position, event in enumerate(events[:12]):
            marker = ">" if position == first.index else " "
            lines.append(f"{indent}{marker} {describe_event(event)}")
        if len(events) > 12:
            lines.append(f"{indent * 2}... {len(events) - 12} more events")
    where = f"event {first.index + 1} of the step"
    lone = first.b_event if first.a_event is None else first.a_event
    if lone is not None and (first.a_event is None or first.b_event is None):
        has, lacks = (labels.b, labels.a) if first.a_event is None else (labels.a, labels.b)
        lines.append(f"{indent}Difference ({where}): only {has} has it, {lacks} does not:")
        lines.append(f"{indent * 2}{describe_event(lone)}")
    elif first.changes:
        lines.append(f"{indent}Difference ({where}):")
        lines.extend(
            f"{indent * 2}{line}"
            for line in render_changes(
                first.changes,
                changes_limit or len(first.changes),
                comparison.renamings,
                labels,
                (first.a_event, first.b_event),
            )
        )
    later = [
        s for s in comparison.steps if s.step > first.step and s.status is not StepStatus.IDENTICAL
    ]
    if later:
        kinds = {status: sum(1 for s in later if s.status is status) for status in StepStatus}
        parts = ", ".join(f"{n} {_status_text(status, labels)}" for status, n in kinds.items() if n)
        counted = "1 more step differs" if len(later) == 1 else f"{len(later)} more steps differ"
        lines.append(f"{indent}After it: {counted} ({parts})")
    return lines


def _status_text(status: StepStatus, labels: Labels) -> str:
    from .compare import StepStatus  # noqa: PLC0415  (only a comparison made needs it)

    if status is StepStatus.ONLY_IN_A:
        return f"only in {labels.a}"
    if status is StepStatus.ONLY_IN_B:
        return f"only in {labels.b}"
    return status.value


def score_reasons(score: Score, labels: Labels) -> str:
    """``outcome (B failed where A completed), errors (A 0 vs B 1)``: who took which points."""

    def phrase(c: Criterion) -> str:
        name, _, why = _reason(c, labels).partition(": ")
        return f"{name} ({why})"

    won, lost = _split_by_winner(score)
    text = ", ".join(phrase(c) for c in won)
    if lost:
        text += f"; {_other(score, labels)} takes " + ", ".join(phrase(c) for c in lost)
    return text
