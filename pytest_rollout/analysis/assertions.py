"""What a test asserts about a finished run: its tool calls, errors, cost and repeated calls.

These read a run's events (the same events the golden comparison reads) and, for the
assertion helpers, build the failure text: which step, which tool and arguments, which
numbers. Every string that came from the run is sanitized on its way into the text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..diff.score import summarize
from ..diff.text import call_text, format_cost, value_text
from ..format.events import ERROR_FAMILIES, LLM_TURN_COMPLETED, Event
from ..replay.recorded import Recording
from .calls import Antipattern

__all__ = [
    "ToolCallRecord",
    "antipattern_failure",
    "cost_failure",
    "error_events",
    "step_costs",
    "tool_calls_by_name",
]


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call of a run: where it was made, with what, and what came back."""

    step: int
    name: str
    arguments: Any
    output: Any = None
    error: Mapping[str, Any] | None = None


def tool_calls_by_name(events: Sequence[Event]) -> Mapping[str, tuple[ToolCallRecord, ...]]:
    """The run's tool calls grouped by tool name, each group in call order (paired with
    their results as replay pairs them)."""
    grouped: dict[str, list[ToolCallRecord]] = {}
    calls = Recording.from_events(events).calls
    for step in sorted(calls):
        for call in calls[step]:
            grouped.setdefault(call.name, []).append(
                ToolCallRecord(
                    step=call.step,
                    name=call.name,
                    arguments=call.arguments,
                    output=call.output,
                    error=call.error if isinstance(call.error, Mapping) else None,
                )
            )
    return MappingProxyType({name: tuple(found) for name, found in grouped.items()})


def error_events(events: Sequence[Event], error_types: Iterable[str] = ()) -> tuple[Event, ...]:
    """The run's events of the error families (docs/file-format.md), plus ``error_types``."""
    families = ERROR_FAMILIES | frozenset(error_types)
    return tuple(e for e in events if e.type in families)


def step_costs(events: Sequence[Event]) -> dict[int, float]:
    """The cost of each step whose turns reported one."""
    costs: dict[int, float] = {}
    for event in events:
        if event.type != LLM_TURN_COMPLETED:
            continue
        cost = event.data.get("cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            costs[event.step] = costs.get(event.step, 0.0) + float(cost)
    return costs


def _turn_text(events: Sequence[Event], step: int) -> str:
    for event in events:
        if event.type == LLM_TURN_COMPLETED and event.step == step:
            calls = event.data.get("tool_calls")
            if isinstance(calls, list) and calls:
                shown = [
                    call_text(c.get("name"), c.get("arguments"))
                    for c in calls
                    if isinstance(c, Mapping)
                ]
                return "the turn asked for " + ", ".join(shown)
            content = event.data.get("content")
            if isinstance(content, str):
                return "the turn answered " + value_text(content, 60)
    return "the turn"


def cost_failure(events: Sequence[Event], limit_usd: float) -> str | None:
    """Why the run's cost is not below ``limit_usd``, or ``None`` when it is."""
    total = summarize(events).cost_usd
    if total is None:
        return (
            f"rollout: this run's cost is unknown (no turn reported a cost), so it cannot be "
            f"held below {format_cost(limit_usd)}; give the provider's turns a cost_usd, or "
            f"add the model to rollout_prices"
        )
    if total < limit_usd:
        return None
    lines = [f"rollout: this run cost {format_cost(total)}, not below {format_cost(limit_usd)}"]
    costs = step_costs(events)
    if costs:
        step, cost = max(costs.items(), key=lambda item: (item[1], -item[0]))
        lines.append(
            f"  most expensive: step {step}, {format_cost(cost)}: {_turn_text(events, step)}"
        )
        by_step = ", ".join(f"{s}: {format_cost(c)}" for s, c in sorted(costs.items()))
        lines.append(f"  cost by step: {by_step}")
    return "\n".join(lines)


def antipattern_failure(antipatterns: Sequence[Antipattern], threshold: int = 3) -> str | None:
    """What the run repeated, or ``None`` when it repeated nothing."""
    if not antipatterns:
        return None
    count = len(antipatterns)
    noun = "call" if count == 1 else "calls"
    lines = [
        f"rollout: {count} repeated tool {noun} (the same tool with the same arguments, "
        f"{threshold} or more times):"
    ]
    for found in antipatterns:
        steps = list(dict.fromkeys(found.steps))  # each step once, in order
        where = ("at step " if len(steps) == 1 else "at steps ") + ", ".join(map(str, steps))
        lines.append(
            f"  {call_text(found.name, found.arguments)} called {found.count} times, {where}"
        )
    return "\n".join(lines)
