"""What a test that used the ``rollout`` fixture reports, decided once from its session and
the exception it ended with (if any).

One direction, no text searched: the golden the store refused, the comparison
``rollout == golden`` recorded when it came out false, or the replay's own verdict, is
rendered here once into a :class:`TestOutcome`; the plugin puts it in pytest's report as
it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from types import CodeType, TracebackType
from typing import Final

from ..diff.divergence import caused_by_divergence
from ..diff.drift import Verdict
from ..diff.report import render_summary, render_verdict
from ..errors import RolloutError
from ..safety.sanitize import sanitize
from ..store.golden import GoldenEditedError, GoldenMissingError, UnrecordedToolsError
from .rollout import RolloutSession
from .wiring import unwired_lines

__all__ = ["How", "TestOutcome", "outcome_of"]

#: Errors whose own text is the whole report: the test never replayed its golden.
REFUSALS: Final = (GoldenMissingError, GoldenEditedError, UnrecordedToolsError)


class How(StrEnum):
    """How the outcome's text reaches the test's report."""

    #: In place of the traceback: a refused golden, or a failed ``rollout == golden``.
    REPLACES = "replaces"
    #: In place of the traceback, and the test fails even if it passed: the run left its
    #: golden while replaying (the agent swallowed the divergence, or stopped early).
    FAILS = "fails"
    #: Beside the traceback, as a section: the test failed on something else.
    BESIDE = "beside"


@dataclass(frozen=True, slots=True)
class TestOutcome:
    """The report of a test's run: its lines, how they reach pytest's report, and whether
    they end with where the failing ``assert`` is (``asserted``)."""

    __test__ = False  # not a test class, whatever its name

    lines: tuple[str, ...]
    how: How
    asserted: bool = False
    #: The outcome in one line for the short test summary (``None``: its first line).
    summary: str | None = None
    #: The verdict the lines render, when the run was compared with its golden.
    verdict: Verdict | None = None

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def outcome_of(
    session: RolloutSession, error: BaseException | None, *, verbose: int = 0
) -> TestOutcome | None:
    """What the test's report says of its run (``None``: nothing, pytest's own report
    stands). ``error`` is what the test raised (``None``: it passed)."""
    if isinstance(error, REFUSALS):
        return TestOutcome((str(error),), How.REPLACES)
    unwired = _unwired(session, error)
    if unwired is not None:
        return unwired
    failed = session.failed_comparison
    if failed is not None and isinstance(error, AssertionError) and _raised_in(error, failed.code):
        lines = render_verdict(failed.verdict, verbose=verbose)
        summary = render_summary(failed.verdict)
        return TestOutcome(
            tuple(lines), How.REPLACES, asserted=True, summary=summary, verdict=failed.verdict
        )
    engine = session.engine
    if not engine.replay_started or (error is None and not engine.divergences()):
        return None
    try:
        verdict = engine.verdict()
    except RolloutError:
        return None  # the test itself says why (a refused golden, a run left open)
    except Exception as exc:  # a bug of ours fails this test, never the whole session
        text = f"pytest-rollout could not compare this run with its golden: {_error(exc)}"
        return TestOutcome((text,), How.BESIDE if error is not None else How.FAILS)
    if verdict.matched:
        return None
    rendered = tuple(render_verdict(verdict, verbose=verbose))
    if error is None or caused_by_divergence(error):
        return TestOutcome(rendered, How.FAILS, summary=render_summary(verdict), verdict=verdict)
    return TestOutcome(rendered, How.BESIDE, verdict=verdict)


def _unwired(session: RolloutSession, error: BaseException | None) -> TestOutcome | None:
    """A run that reached past the plugin fails, whatever the test did: its model calls
    went around it (a tool called before any model turn, or none at all in a recorded run),
    or a sealed replay refused a connection (raised, or swallowed by the agent)."""
    engine = session.engine
    if engine.unfit_for_golden:
        # A run with no model turn that failed on its own error: that error leads.
        how = How.BESIDE if engine.model_bypassed is None and error is not None else How.FAILS
        return TestOutcome(unwired_lines(engine.model_bypassed), how)
    breaches = session.network_breaches
    if not breaches:
        return None
    lines = [str(breaches[0])]
    if len(breaches) > 1:
        lines.append(f"({len(breaches) - 1} more connection(s) were refused after it)")
    return TestOutcome(tuple(lines), How.FAILS)


def _raised_in(error: BaseException, code: CodeType | None) -> bool:
    """Whether ``error`` was raised in the function whose code is ``code``: the ``assert``
    that failed is the comparison that was recorded."""
    tb: TracebackType | None = error.__traceback__
    if tb is None or code is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code is code


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {sanitize(str(exc))}"
