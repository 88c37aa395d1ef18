"""The failure report a CI log shows when a test's run leaves its golden.

In order: the golden's path; the first divergent step with its kind and attribution; what
the golden did there and what this run did; the field-level difference; the step counts;
the 6-point score (golden as A, this run as B); the cost delta; how to fork the
conversation from the last good step; and where this run was saved, with the
``rollout diff`` command that compares it with the golden.
"""

from __future__ import annotations

import shlex
import textwrap
from typing import Final

from ..safety.sanitize import excerpt, sanitize
from .divergence import Divergence
from .drift import Verdict
from .render import (
    Labels,
    render_divergence,
    score_reasons,
    step_counts,
)
from .text import format_cost

__all__ = ["render_headline", "render_verdict"]

LABELS: Final = Labels(a="golden", b="this run")
WIDTH: Final = 100
_PROSE: Final = ("Divergence:", "Likely cause:", "Score:", "  then ", "Cost:", "this run left")


def _quote(path: str) -> str:
    return shlex.quote(sanitize(path))


def render_headline(verdict: Verdict, labels: Labels = LABELS) -> str:
    """The report's first line: where this run left its reference run, what kind of
    divergence that was, and whose it is."""
    return _headline(verdict.headline, labels)


def _headline(headline: Divergence | None, labels: Labels) -> str:
    if headline is None:
        return f"{labels.b} matches its {labels.a}"
    return (
        f"{labels.b} left its {labels.a} at step {headline.step}: {headline.kind.value} "
        f"(attributed to the {headline.attribution})"
    )


def render_verdict(verdict: Verdict, *, verbose: int = 0, labels: Labels = LABELS) -> list[str]:
    """The report lines; the first one is the headline pytest shows after ``assert``.

    ``labels`` name the reference run and this run (a syrupy snapshot is ``snapshot``).
    """
    divergences = verdict.report.leading
    comparison = verdict.comparison
    if not divergences:
        return [_headline(None, labels)]
    headline = divergences[0]
    lines = [
        _headline(headline, labels),
        f"{labels.a.capitalize()}: {sanitize(verdict.golden_path)}",
        f"Divergence: {excerpt(headline.detail, 200)}",
    ]
    lines.extend(f"Likely cause: {excerpt(c, 200)}" for c in verdict.report.likely_causes)
    # What replay itself raised is always told, even when an earlier step leads.
    shown = 4 if verbose > 0 else 2 if divergences is not verdict.divergences else 1
    for extra in divergences[1:shown]:
        lines.append(
            f"  then {extra.kind.value} at step {extra.step}: {excerpt(extra.detail, 160)}"
        )
    if comparison.first is not None:
        lines.extend(
            render_divergence(comparison, labels, changes_limit=None if verbose > 0 else 8)
        )
    lines.append(step_counts(comparison, labels))
    lines.append(f"Score: {score_sentence(verdict, labels)}")
    golden_cost = verdict.golden_summary.cost_usd
    run_cost = verdict.run_summary.cost_usd
    cost = f"Cost: {labels.a} {format_cost(golden_cost)}, {labels.b} {format_cost(run_cost)}"
    if golden_cost is not None and run_cost is not None:
        delta = run_cost - golden_cost
        sign = "+" if delta >= 0 else "-"
        cost += f" ({sign}{format_cost(abs(delta))})"
    lines.append(cost)
    golden_line = lines[1]  # a path to copy: never cut, whatever its length
    lines = [w for line in lines for w in ([line] if line is golden_line else _fit(line))]
    # Commands stay whole on lines of their own, so they can be copied and pasted.
    good = comparison.last_identical_step
    if good is not None:
        lines.append(f"Fork the conversation from the last good step ({good}):")
        lines.append(f"  rollout fork {_quote(verdict.golden_path)} --step {good}")
    if verdict.run_path:
        lines.append(f"{labels.b.capitalize()} was saved; compare it with its {labels.a}:")
        lines.append(f"  rollout diff {_quote(verdict.golden_path)} {_quote(verdict.run_path)}")
    return lines


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
