"""A readable timeline of one rollout, for ``rollout show``.

One line per event, in file order: ``step  seq  type  detail``, where the detail is what
:func:`~pytest_rollout.diff.report.describe_event` says about it; then the run's totals. Filters
pick which events are listed; the totals always describe the whole run. Every string taken
from the rollout is sanitized.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

import orjson

from ..format.events import Event
from ..safety.sanitize import excerpt, sanitize
from .report import describe_event
from .score import RunSummary, summarize
from .text import format_cost

__all__ = [
    "cut_short_line",
    "event_matches",
    "parse_step_range",
    "render_show",
    "render_timeline",
    "render_totals",
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


def _detail(event: Event) -> str:
    described = describe_event(event)
    prefix = sanitize(event.type) + "  "
    return described[len(prefix) :] if described.startswith(prefix) else ""


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
    rows = [(str(e.step), str(e.seq), excerpt(e.type, TYPE_LIMIT), _detail(e)) for e in shown]
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
    """The run's totals: steps, turns, tool calls by name, errors, tokens, cost, outcome."""
    calls = ", ".join(
        f"{excerpt(name, TYPE_LIMIT)} x{count}" for name, count in summary.tool_calls.most_common()
    )
    cost = "unknown" if summary.cost_usd is None else format_cost(summary.cost_usd)
    return [
        "Totals (whole run):",
        f"  steps: {summary.steps}, turns: {summary.turns}",
        f"  tool calls: {calls or 'none'}",
        f"  errors: {summary.errors}",
        f"  tokens: {summary.input_tokens} in, {summary.output_tokens} out",
        f"  cost: {cost}",
        f"  outcome: {excerpt(summary.outcome, TYPE_LIMIT)}",
    ]


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
