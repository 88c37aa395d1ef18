"""The report of one run against its reference run: what a CI log shows when a test's run
leaves its golden, and what ``rollout diff`` prints. One renderer, two sets of labels:
``golden`` and ``this run`` in pytest, ``A`` and ``B`` on the command line.

In order: the headline (where run B left run A, the kind and whom it is attributed to);
the reference's path (and, on the command line, the other's); what replay found; the
first divergent step, what each run did there and the field-level difference; the step
counts; the 6-point score; the cost delta; how to fork the conversation from the last good
step or event (:mod:`.fork_point`); and, for a test, where its run was saved with the
``rollout diff`` command that compares it with the golden.
"""

from __future__ import annotations

import shlex
import textwrap
from typing import Final

from ..safety.sanitize import excerpt, sanitize
from .divergence import Divergence
from .drift import Verdict
from .fork_point import fork_command, fork_point
from .render import (
    Labels,
    render_divergence,
    score_reasons,
    step_counts,
)
from .text import format_cost, format_cost_change

__all__ = [
    "CLI_LABELS",
    "TEST_LABELS",
    "fork_command",
    "render_headline",
    "render_summary",
    "render_verdict",
    "score_sentence",
]

#: A test's run against its golden.
TEST_LABELS: Final = Labels(a="golden", b="this run", owned=True)
#: Two files named on the command line.
CLI_LABELS: Final = Labels(a="A", b="B")
LABELS: Final = TEST_LABELS
WIDTH: Final = 100
_PROSE: Final = (
    "Divergence:",
    "Likely cause:",
    "Fed by:",
    "Turns by agent:",
    "Score:",
    "  then ",
    "Cost:",
    "this run left",
)


def _quote(path: str) -> str:
    return shlex.quote(sanitize(path))


def render_headline(verdict: Verdict, labels: Labels = LABELS) -> str:
    """The report's first line: where this run left its reference run, what kind of
    divergence that was, and whose it is."""
    return _headline(verdict.headline, labels)


def render_summary(verdict: Verdict, labels: Labels = LABELS) -> str:
    """The report in one line, the kind first (``tool_call_mismatch at step 2 (attributed to
    the agent): this run left its golden``): what a short test summary, cut to the
    terminal's width, still shows."""
    headline = verdict.headline
    if headline is None:
        return _headline(None, labels)
    return (
        f"{headline.kind.value} at {headline.where} ({headline.kind.attributed}): "
        f"{labels.b} left {labels.reference}"
    )


def _headline(headline: Divergence | None, labels: Labels) -> str:
    if headline is None:
        return f"{labels.b} matches {labels.reference}"
    return (
        f"{labels.b} left {labels.reference} at {headline.where}: {headline.kind.value} "
        f"({headline.kind.attributed})"
    )


def render_verdict(
    verdict: Verdict, *, verbose: int = 0, labels: Labels = TEST_LABELS, files: bool = False
) -> list[str]:
    """The report lines; the first one is the headline pytest shows after ``assert``.

    ``labels`` name the reference run and the other (a syrupy snapshot is ``snapshot``).
    ``files``: the two runs are files the user named (``rollout diff``): both paths come
    first, the summary is given even when the runs match, and no ``rollout diff`` command
    is suggested at the end.
    """
    divergences = verdict.report.leading
    comparison = verdict.comparison
    if not divergences and not files:
        return [_headline(None, labels)]
    headline = divergences[0] if divergences else None
    unverified = " (unverified: no receipt vouches for it)" if verdict.unverified else ""
    paths = [f"{labels.a.capitalize()}: {sanitize(verdict.golden_path)}{unverified}"]
    if files and verdict.run_path is not None:
        paths.append(f"{labels.b.capitalize()}: {sanitize(verdict.run_path)}")
    lines = [_headline(headline, labels)]
    if headline is not None:
        lines.append(f"Divergence: {excerpt(headline.detail, 200)}")
    if verdict.report.fed_by is not None:
        lines.append(f"Fed by: {verdict.report.fed_by}")
    lines.extend(f"Likely cause: {excerpt(c, 200)}" for c in verdict.report.likely_causes)
    # What replay itself raised is always told, even when an earlier step leads.
    shown = 4 if verbose > 0 else 2 if divergences is not verdict.divergences else 1
    for extra in divergences[1:shown]:
        lines.append(f"  then {extra.kind.value} at {extra.where}: {excerpt(extra.detail, 160)}")
    if comparison.first is not None:
        lines.extend(
            render_divergence(comparison, labels, changes_limit=None if verbose > 0 else 8)
        )
    lines.append(step_counts(comparison, labels))
    if verdict.report.agent_turns:
        lines.append(agent_turns_line(verdict.report.agent_turns, labels))
    lines.append(f"Score: {score_sentence(verdict, labels)}")
    lines.append(_cost_line(verdict, labels))
    # Paths to copy are never cut, whatever their length; prose is wrapped.
    lines = [lines[0], *paths, *(w for line in lines[1:] for w in _fit(line))]
    # Commands stay whole on lines of their own, so they can be copied and pasted.
    point = fork_point(comparison)
    if point is not None and headline is not None:
        lines.append(point.line)
        lines.append(f"  {point.command(verdict.golden_path)}")
    if verdict.run_path and not files:
        lines.append(f"{labels.b.capitalize()} was saved; compare it with its {labels.a}:")
        lines.append(f"  rollout diff {_quote(verdict.golden_path)} {_quote(verdict.run_path)}")
    return lines


def agent_turns_line(turns: tuple[tuple[str, int, int], ...], labels: Labels) -> str:
    """``Turns by agent: triage golden 1, this run 1; billing golden 2, this run 3``."""
    parts = (f"{sanitize(name)} {labels.a} {a}, {labels.b} {b}" for name, a, b in turns)
    return "Turns by agent: " + "; ".join(parts)


def _cost_line(verdict: Verdict, labels: Labels) -> str:
    """``Cost: golden $0.0012, this run $0.0015 (+$0.0003)``."""
    golden_cost = verdict.golden_summary.cost_usd
    run_cost = verdict.run_summary.cost_usd
    cost = f"Cost: {labels.a} {format_cost(golden_cost)}, {labels.b} {format_cost(run_cost)}"
    if golden_cost is not None and run_cost is not None:
        cost += f" ({format_cost_change(run_cost - golden_cost)})"
    return cost


def _fit(line: str) -> list[str]:
    """Keep the report readable at 100 columns: prose continues, indented, on the next
    lines; an event line (already an excerpt) is cut."""
    if len(line) <= WIDTH:
        return [line]
    indent = " " * (len(line) - len(line.lstrip()) + 4)
    if not line.startswith(_PROSE):
        return [line[: WIDTH - 1] + "…"]
    return textwrap.wrap(
        line,
        WIDTH,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [line]


def score_sentence(verdict: Verdict, labels: Labels = LABELS) -> str:
    """``golden wins 4-0: outcome (this run failed where golden completed), errors (...)``."""
    result = verdict.score
    high, low = sorted((result.a_points, result.b_points), reverse=True)
    names = {"a": f"{labels.a} wins", "b": f"{labels.b} wins", "tie": "tie"}
    reasons = score_reasons(result, labels)
    text = f"{names[result.winner]} {high}-{low}"
    return f"{text}: {reasons}" if reasons else text
