"""A readable timeline of one rollout, for ``rollout show``.

One line per event, in file order: ``step  seq  type  detail``, where the detail is what
:func:`~pytest_rollout.diff.render.describe_event` says about it after its type; then the
run's totals. Filters pick which events are listed; the totals always describe the whole run.
Every string taken from the rollout is sanitized.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from ..format.events import LLM_TURN_COMPLETED, Event
from ..safety.sanitize import excerpt
from .render import describe_data, step_numbers
from .score import RunSummary, summarize, tokens_per_second
from .text import format_cost

__all__ = [
    "cut_short_line",
    "event_detail",
    "event_matches",
    "format_seconds",
    "format_speed",
    "parse_step_range",
    "render_show",
    "render_timeline",
    "render_totals",
    "token_totals",
    "turn_speed",
]

TYPE_LIMIT: Final = 40
_STEP_RANGE: Final = re.compile(r"(\d+)(?:-(\d+))?")


def parse_step_range(text: str) -> tuple[int, int]:
    """``"3"`` is ``(3, 3)``, ``"1-4"`` is ``(1, 4)``; anything else raises ValueError."""
    match = _STEP_RANGE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"--step takes N or A-B (e.g. 2 or 1-3), got {text!r}")
    first = int(match.group(1))
    last = first if match.group(2) is None else int(match.group(2))
    if last < first:
        raise ValueError(f"--step range {first}-{last} goes backwards; write {last}-{first}")
    return first, last


def _type_matches(event_type: str, wanted: str) -> bool:
    """Exact, or a dotted prefix: ``tool.`` and ``tool.call`` both match ``tool.call.started``."""
    if event_type == wanted:
        return True
    prefix = wanted if wanted.endswith(".") else wanted + "."
    return event_type.startswith(prefix)


def event_matches(
    event: Event,
    *,
    types: Sequence[str] | None = None,
    steps: tuple[int, int] | None = None,
    grep: str | None = None,
) -> bool:
    """Whether ``event`` passes every filter given (no filter passes everything).

    ``types``: any of these types, exact or as a dotted prefix. ``steps``: an inclusive
    range. ``grep``: a case-insensitive substring of the event's JSON line.
    """
    if types and not any(_type_matches(event.type, t) for t in types):
        return False
    if steps is not None and not steps[0] <= event.step <= steps[1]:
        return False
    if grep:
        line = orjson.dumps(event.to_json_obj()).decode()
        if grep.casefold() not in line.casefold():
            return False
    return True


def event_detail(event: Event) -> str:
    """What the timeline says about ``event`` after its type: what it did and, for a
    turn that reports its output tokens and latency, its output speed."""
    kind = event.type
    data = event.data
    detail = describe_data(kind, data).rstrip()
    if kind == LLM_TURN_COMPLETED:
        speed = turn_speed(data)
        if speed is not None:
            detail = f"{detail}  ({speed})" if detail else f"({speed})"
    return detail


def turn_speed(turn: Mapping[str, Any]) -> str | None:
    """``15 tokens out in 0.87 s, 17.2 tokens/s``: a turn's output speed, when the turn
    reports both its output tokens and its latency."""
    usage = turn.get("usage")
    if type(usage) is not dict and not isinstance(usage, Mapping):
        return None
    tokens = usage.get("output_tokens")
    latency = turn.get("latency_ms")
    if type(tokens) is not int or not isinstance(latency, (int, float)):
        return None
    speed = tokens_per_second(tokens, latency)
    if speed is None:
        return None
    return f"{tokens} tokens out in {format_seconds(latency)}, {format_speed(speed)}"


def format_seconds(latency_ms: float) -> str:
    """``0.869 ms``, ``870 ms``, ``12.3 s``, ``940 s``: three significant digits, whole
    seconds from 100 s."""
    if latency_ms < 1000:
        return f"{latency_ms:.3g} ms"
    seconds = latency_ms / 1000
    return f"{seconds:.3g} s" if seconds < 100 else f"{seconds:.0f} s"


def format_speed(tokens_per_second: float) -> str:
    """``17.2 tokens/s`` (one decimal below 100, whole above)."""
    value = f"{tokens_per_second:.1f}" if tokens_per_second < 100 else f"{tokens_per_second:.0f}"
    return f"{value} tokens/s"


def render_timeline(
    events: Sequence[Event],
    *,
    types: Sequence[str] | None = None,
    steps: tuple[int, int] | None = None,
    grep: str | None = None,
) -> list[str]:
    """The events that pass the filters, one aligned line each, under a header line.

    When a filter is given, a last line says how many events of the run are shown.
    """
    shown = [e for e in events if event_matches(e, types=types, steps=steps, grep=grep)]
    rows = [(str(e.step), str(e.seq), excerpt(e.type, TYPE_LIMIT), event_detail(e)) for e in shown]
    step_w = max([len("step"), *(len(r[0]) for r in rows)])
    seq_w = max([len("seq"), *(len(r[1]) for r in rows)])
    type_w = max([len("type"), *(len(r[2]) for r in rows)])
    lines = [f"{'step':>{step_w}}  {'seq':>{seq_w}}  {'type':<{type_w}}  detail"]
    lines.extend(
        f"{step:>{step_w}}  {seq:>{seq_w}}  {kind:<{type_w}}  {detail}".rstrip()
        for step, seq, kind, detail in rows
    )
    if not rows:
        lines.append("(no events match the filters)")
    filtered = bool(types) or steps is not None or bool(grep)
    if filtered:
        lines.append(f"Shown: {len(rows)} of {len(events)} events")
    return lines


def render_totals(summary: RunSummary) -> list[str]:
    """The run's totals: steps, turns, tool calls by name, errors, tokens (with the cached
    part of the input), output speed when turns were timed, cost, outcome."""
    calls = ", ".join(
        f"{excerpt(name, TYPE_LIMIT)} x{count}" for name, count in summary.tool_calls.most_common()
    )
    cost = "unknown" if summary.cost_usd is None else format_cost(summary.cost_usd)
    lines = [
        "Totals (whole run):",
        f"  steps: {step_numbers(range(summary.first_step, summary.steps + 1))}, "
        f"turns: {summary.turns}",
        f"  tool calls: {calls or 'none'}",
        f"  errors: {summary.errors}",
        f"  tokens: {token_totals(summary)}",
    ]
    speed = summary.tokens_per_second
    if speed is not None:
        timed = summary.timed_turns
        of = "" if timed == summary.turns else f" ({timed} of {summary.turns} turns timed)"
        lines.append(f"  output speed: {format_speed(speed)}{of}")
    lines.append(f"  cost: {cost}")
    lines.append(f"  outcome: {excerpt(summary.outcome, TYPE_LIMIT)}")
    return lines


def token_totals(summary: RunSummary) -> str:
    """``120 in (80 cache read, 10 cache write), 45 out``: the cache parts only when any;
    ``(usage from 2 of 3 turns)`` after it when some turns report no token counts, and
    ``not reported`` when none does."""
    unreported, turns = summary.unreported_turns, summary.turns
    if unreported and unreported >= turns:
        return "not reported"
    cached = [
        f"{count} cache {what}"
        for count, what in (
            (summary.cache_read_tokens, "read"),
            (summary.cache_write_tokens, "write"),
        )
        if count
    ]
    parts = f" ({', '.join(cached)})" if cached else ""
    of = f" (usage from {turns - unreported} of {turns} turns)" if unreported else ""
    return f"{summary.input_tokens} in{parts}, {summary.output_tokens} out{of}"


def cut_short_line(kept: int) -> str:
    """What ``rollout show`` and the viewer say about a run whose file was cut short (a
    crash, or a run still going): ``kept`` whole events were read, and nothing after them."""
    return f"cut short after event {kept}: the file ends before the run did"


def render_show(
    events: Sequence[Event],
    *,
    types: Sequence[str] | None = None,
    steps: tuple[int, int] | None = None,
    grep: str | None = None,
) -> list[str]:
    """What ``rollout show`` prints: the timeline, a blank line, the whole run's totals."""
    lines = render_timeline(events, types=types, steps=steps, grep=grep)
    lines.append("")
    lines.extend(render_totals(summarize(events)))
    return lines
