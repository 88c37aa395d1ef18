"""A diverged test in one record: what the places CI users read say of it (docs/ci.md).

The failure report is for a terminal; a GitHub annotation, a row of the job summary, a
Markdown report and a JUnit property each want the same few facts, as fields: where the
test is, where its run left its golden, what kind of divergence that was and whose it is,
the first field that changed, the score and the cost it moved. :func:`finding_of` takes
them from a verdict once; every field is text that went through the sanitizer, so no
recorded value reaches a CI runner raw.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Final

from ..safety.sanitize import excerpt, sanitize
from .drift import Verdict
from .fork_point import fork_point
from .render import Labels, describe_event, render_changes
from .report import TEST_LABELS, render_summary, score_sentence

__all__ = ["Finding", "finding_of"]

#: The longest field change a finding quotes.
_CHANGE_CHARS: Final = 200


@dataclass(frozen=True, slots=True)
class Finding:
    """One test whose run left its golden (or whose replay failed on its own)."""

    test_id: str
    #: The test's file, relative to the rootdir, and the line of its failing ``assert``
    #: (else of the test itself), 1-based.
    path: str
    line: int
    #: The report in one line: ``tool_call_mismatch at step 2 (attributed to the agent):
    #: this run left its golden``.
    headline: str
    golden: str
    kind: str | None = None
    step: int | None = None
    #: ``agent`` or ``harness``.
    attributed_to: str | None = None
    #: The divergence in a sentence.
    detail: str | None = None
    #: The first field that differs at that step: ``data.arguments.city: "Paris" -> "Rome"``.
    first_change: str | None = None
    #: ``golden wins 4-0`` (the reasons are in the failure report).
    score: str | None = None
    #: This run's cost less the golden's, in dollars (``None``: a side reports none).
    cost_delta: float | None = None
    #: The command that forks the conversation from the last good step or event.
    fork: str | None = None
    #: Where that is: ``last good step (2)``, ``last good event (step 3's model turn)``.
    fork_from: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def properties(self) -> list[tuple[str, str]]:
        """The finding as JUnit XML properties (``rollout.golden``, ``rollout.step``, ...)."""
        named = {
            "golden": self.golden,
            "step": self.step,
            "kind": self.kind,
            "attributed_to": self.attributed_to,
            "score": self.score,
        }
        return [(f"rollout.{k}", str(v)) for k, v in named.items() if v is not None]


def finding_of(
    verdict: Verdict, test_id: str, path: str, line: int, labels: Labels = TEST_LABELS
) -> Finding:
    """What ``verdict`` (a run that left its golden) says, for the test at ``path:line``;
    ``labels`` name the two runs (``golden`` and ``this run``, or ``A`` and ``B``)."""
    headline = verdict.headline
    point = fork_point(verdict.comparison) if headline is not None else None
    golden_cost, run_cost = verdict.golden_summary.cost_usd, verdict.run_summary.cost_usd
    return Finding(
        test_id=sanitize(test_id),
        path=sanitize(path),
        line=line,
        headline=render_summary(verdict, labels),
        golden=sanitize(verdict.golden_path),
        kind=None if headline is None else headline.kind.value,
        step=None if headline is None else headline.step,
        attributed_to=None if headline is None else headline.kind.attribution,
        detail=None if headline is None else excerpt(headline.detail, _CHANGE_CHARS),
        first_change=_first_change(verdict, labels),
        score=score_sentence(verdict, labels).partition(":")[0],
        cost_delta=None if golden_cost is None or run_cost is None else run_cost - golden_cost,
        fork=None if point is None else point.command(verdict.golden_path),
        fork_from=None if point is None else point.label,
    )


def _first_change(verdict: Verdict, labels: Labels) -> str | None:
    """The first field-level difference at the first divergent step, in one line."""
    first = verdict.comparison.first
    if first is None:
        return None
    if first.a_event is None or first.b_event is None:
        lone = first.b_event if first.a_event is None else first.a_event
        if lone is None:
            return None
        side = labels.b if first.a_event is None else labels.a
        return excerpt(f"only {side} has: {describe_event(lone)}", _CHANGE_CHARS)
    if not first.changes:
        return None
    lines = render_changes(
        first.changes,
        1,
        verdict.comparison.renamings,
        labels,
        (first.a_event, first.b_event),
    )
    return excerpt(" ".join(line.strip() for line in lines), _CHANGE_CHARS) if lines else None
