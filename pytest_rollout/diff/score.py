"""Run totals and the 6-point regression score (docs/replay.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..format.events import (
    ERROR_FAMILIES,
    LLM_TURN_COMPLETED,
    REPLAY_DIVERGENCE,
    RUN_COMPLETED,
    RUN_FAILED,
    TOOL_CALL_STARTED,
    USAGE_DELTA,
    Event,
)

__all__ = [
    "CACHE_READ_TOKENS",
    "CACHE_WRITE_TOKENS",
    "Criterion",
    "RunSummary",
    "Score",
    "score",
    "summarize",
    "tokens_per_second",
]

#: The keys of a turn's ``usage`` that count the input tokens read from the provider's
#: prompt cache and written to it; both are parts of ``input_tokens``.
CACHE_READ_TOKENS: Final = "cache_read_tokens"
CACHE_WRITE_TOKENS: Final = "cache_write_tokens"

Side = Literal["a", "b", "tie"]


@dataclass(frozen=True, slots=True)
class RunSummary:
    """Totals of one run, read from its events.

    ``steps`` is the run's last step and ``first_step`` its first (0, the run's start).
    ``cache_read_tokens`` and ``cache_write_tokens`` are the parts of ``input_tokens`` read
    from and written to a provider's prompt cache. ``timed_output_tokens`` and
    ``timed_latency_ms`` add up the turns that report both output tokens and a latency
    (``timed_turns`` of them), for :attr:`tokens_per_second`. ``unreported_turns`` counts
    the turns that report no token counts (a provider asked for no usage, as a streamed Chat
    Completions request without ``include_usage``): their tokens are not in the totals.
    """

    steps: int
    turns: int
    tool_calls: Counter[str]
    errors: int
    cost_usd: float | None
    input_tokens: int
    output_tokens: int
    outcome: str
    first_step: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    timed_turns: int = 0
    timed_output_tokens: int = 0
    timed_latency_ms: float = 0.0
    unreported_turns: int = 0
    #: The replay divergences the run holds (each also counted in ``errors``).
    diverged: int = 0

    @property
    def completed(self) -> bool:
        return self.outcome == "completed"

    @property
    def clean(self) -> bool:
        """Whether the run completed without leaving its golden on the way: one whose agent
        swallowed a replay divergence and answered anyway is not."""
        return self.completed and not self.diverged

    @property
    def scored_outcome(self) -> str:
        """The outcome the score compares: ``diverged`` for a run that completed after a
        replay divergence, else the run's own."""
        return "diverged" if self.completed and self.diverged else self.outcome

    @property
    def tokens_per_second(self) -> float | None:
        """Output tokens per second of the turns that report both, or ``None``."""
        return tokens_per_second(self.timed_output_tokens, self.timed_latency_ms)


def tokens_per_second(output_tokens: Any, latency_ms: Any) -> float | None:
    """``output_tokens`` over ``latency_ms``, per second; ``None`` unless both are known
    (a count and a positive latency)."""
    tokens, latency = _number(output_tokens), _number(latency_ms)
    if tokens is None or latency is None or latency <= 0 or tokens < 0:
        return None
    return tokens * 1000.0 / latency


def _number(value: Any) -> float | None:
    kind = type(value)
    if kind is float or kind is int:  # the common case, without isinstance
        return float(value)
    if isinstance(value, int | float) and kind is not bool:
        return float(value)
    return None


_EXACT: Final = 2**53


def _tokens(value: Any) -> int:
    """A token count as :func:`summarize` adds it up (anything but a number counts 0)."""
    if type(value) is int and -_EXACT <= value <= _EXACT:  # exact as a float: no round trip
        return value
    return int(_number(value) or 0)


def _cost(events: Sequence[Event]) -> float | None:
    """Cumulative cost: the last ``usage.delta``, else the run's totals, else its turns."""
    for event in reversed(events):
        if event.type == USAGE_DELTA:
            found = _number(event.data.get("cumulative_cost_usd"))
            if found is not None:
                return found
    for event in reversed(events):
        if event.type == RUN_COMPLETED:
            totals = event.data.get("cost_totals")
            if isinstance(totals, dict):
                found = _number(totals.get("total_cost_usd"))
                if found is not None:
                    return found
    turn_costs = [
        c
        for e in events
        if e.type == LLM_TURN_COMPLETED and (c := _number(e.data.get("cost_usd"))) is not None
    ]
    return sum(turn_costs) if turn_costs else None


#: The event types that summarize() looks at.
_COUNTED: Final = frozenset(
    {LLM_TURN_COMPLETED, TOOL_CALL_STARTED, RUN_COMPLETED, RUN_FAILED} | ERROR_FAMILIES
)


def summarize(events: Sequence[Event], error_types: Iterable[str] = ()) -> RunSummary:
    """Totals of a run: steps, turns, tool calls by name, errors, tokens, cost, outcome.

    ``error_types`` are counted as errors besides the built-in families.
    """
    tools: Counter[str] = Counter()
    turns = errors = diverged = 0
    tokens = _Tokens()
    outcome = "incomplete"
    extra = frozenset(error_types)
    errors_of = ERROR_FAMILIES | extra if extra else ERROR_FAMILIES
    counted = _COUNTED | extra if extra else _COUNTED
    # Most events count for nothing: they are left out by one set lookup each.
    for event in [e for e in events if e.type in counted]:
        kind = event.type
        if kind == LLM_TURN_COMPLETED:
            turns += 1
            tokens.add(event.data)
        elif kind == TOOL_CALL_STARTED:
            tools[str(event.data.get("name", "?"))] += 1
        elif kind == RUN_COMPLETED:
            outcome = str(event.data.get("outcome") or "completed")
        elif kind == RUN_FAILED:
            outcome = "failed"
        elif kind == REPLAY_DIVERGENCE:
            diverged += 1
        if kind in errors_of:
            errors += 1
    return RunSummary(
        steps=events[-1].step if events else 0,
        turns=turns,
        tool_calls=tools,
        errors=errors,
        cost_usd=_cost(events),
        input_tokens=tokens.input,
        output_tokens=tokens.output,
        outcome=outcome,
        first_step=events[0].step if events else 0,
        cache_read_tokens=tokens.cache_read,
        cache_write_tokens=tokens.cache_write,
        timed_turns=tokens.timed_turns,
        timed_output_tokens=tokens.timed_output,
        timed_latency_ms=tokens.timed_latency_ms,
        unreported_turns=turns - tokens.reported,
        diverged=diverged,
    )


class _Tokens:
    """The token counts of a run's turns, added up as :func:`summarize` meets them."""

    __slots__ = (
        "cache_read",
        "cache_write",
        "input",
        "output",
        "reported",
        "timed_latency_ms",
        "timed_output",
        "timed_turns",
    )

    def __init__(self) -> None:
        self.input = self.output = self.cache_read = self.cache_write = self.reported = 0
        self.timed_turns = self.timed_output = 0
        self.timed_latency_ms = 0.0

    def add(self, turn: Mapping[str, Any]) -> None:
        usage = turn.get("usage")
        if type(usage) is not dict and not isinstance(usage, dict):
            return
        get = usage.get
        raw_out = get("output_tokens")
        raw_in = get("input_tokens")
        if raw_in is None and raw_out is None:
            return  # no counts: the turn is one of the unreported
        self.reported += 1
        tokens_out = _tokens(raw_out)
        self.input += _tokens(raw_in)
        self.output += tokens_out
        # Most turns report no cache use and no latency: one lookup each says so.
        read = get(CACHE_READ_TOKENS)
        if read is not None:
            self.cache_read += _tokens(read)
        write = get(CACHE_WRITE_TOKENS)
        if write is not None:
            self.cache_write += _tokens(write)
        latency = turn.get("latency_ms")
        if latency is None or raw_out is None:
            return
        latency_ms = _number(latency)
        if latency_ms is not None and latency_ms > 0 and _number(raw_out) is not None:
            self.timed_turns += 1
            self.timed_output += tokens_out
            self.timed_latency_ms += latency_ms


@dataclass(frozen=True, slots=True)
class Criterion:
    """One line of the score: who took the points, and the two values compared."""

    name: str
    points: int
    winner: Side
    a: Any
    b: Any


@dataclass(frozen=True, slots=True)
class Score:
    """The 6-point comparison of run ``a`` and run ``b``."""

    a_points: int
    b_points: int
    criteria: tuple[Criterion, ...]

    @property
    def winner(self) -> Side:
        if self.a_points == self.b_points:
            return "tie"
        return "a" if self.a_points > self.b_points else "b"

    @property
    def deciding(self) -> tuple[Criterion, ...]:
        """The criteria that gave points to someone."""
        return tuple(c for c in self.criteria if c.winner != "tie")


#: Points per criterion; they add up to 6.
POINTS: Final = {"outcome": 3, "errors": 1, "cost": 1, "steps": 1}


def _lower_wins(a: float | None, b: float | None) -> Side:
    if a is None or b is None:
        return "tie"
    # Costs are sums of floats: compare them at the precision canonicalization keeps.
    a, b = round(a, 9), round(b, 9)
    if a == b:
        return "tie"
    return "a" if a < b else "b"


def score(a: RunSummary, b: RunSummary) -> Score:
    """Score two runs: each criterion's points go to the better run, equal gives nobody.

    A run that completed after a replay divergence its agent swallowed has not completed as
    the outcome counts it (:attr:`RunSummary.scored_outcome`), and the divergence is also
    one of its errors: such a run never wins against one that did not diverge."""
    outcome: Side = "tie"
    if a.clean != b.clean:
        outcome = "a" if a.clean else "b"
    criteria = (
        Criterion("outcome", POINTS["outcome"], outcome, a.scored_outcome, b.scored_outcome),
        Criterion("errors", POINTS["errors"], _lower_wins(a.errors, b.errors), a.errors, b.errors),
        Criterion(
            "cost", POINTS["cost"], _lower_wins(a.cost_usd, b.cost_usd), a.cost_usd, b.cost_usd
        ),
        Criterion("steps", POINTS["steps"], _lower_wins(a.steps, b.steps), a.steps, b.steps),
    )
    a_points = sum(c.points for c in criteria if c.winner == "a")
    b_points = sum(c.points for c in criteria if c.winner == "b")
    return Score(a_points, b_points, criteria)
