"""The drift report (docs/replay.md): a structured account of how run ``b`` drifted from ``a``.

It is what the pytest failure and ``rollout diff`` print, as data: the steps added, removed
and changed, the tool calls that diverged, the cost delta, how the outcome moved, the score,
the divergences with their attribution, and ``matched``. The first divergence is annotated
with its likely causes, each drawn only from evidence in the two runs.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

from ..format.events import (
    GUARDRAIL_CHECKED,
    HANDOFF,
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    TOOL_HOOK_MUTATION,
    Event,
)
from .agents import agent_turns, names_agents, several_agents
from .canonical import (
    DEFAULT_OPTIONS,
    CanonicalOptions,
    announced_calls,
    canonical_bytes,
    in_announced_order,
    tool_order,
)
from .compare import Comparison, FirstDivergence, StepStatus, compare
from .divergence import Divergence, DivergenceKind, classify, named_agents
from .score import RunSummary, Score, score, summarize
from .volatile import BUILTIN, Renaming, Volatile

__all__ = [
    "DriftReport",
    "ToolCallDrift",
    "Verdict",
    "drift_report",
    "likely_causes",
    "model_family",
]

OutcomeDiff = Literal["identical", "regressed", "improved", "changed"]


@dataclass(frozen=True, slots=True)
class ToolCallDrift:
    """A tool call that differs between the runs at one step and position (1-based).

    A side with no call at that position has ``None`` name and arguments.
    """

    step: int
    position: int
    a_name: str | None
    a_arguments: Any
    b_name: str | None
    b_arguments: Any


_LEADS_REPLAY: Final = frozenset({RUN_STARTED, GUARDRAIL_CHECKED, TOOL_HOOK_MUTATION, HANDOFF})


@dataclass(frozen=True, slots=True)
class DriftReport:
    """How run ``b`` drifted from run ``a`` (in pytest, the golden and this run)."""

    comparison: Comparison
    a_summary: RunSummary
    b_summary: RunSummary
    score: Score
    divergences: tuple[Divergence, ...]
    tool_calls: tuple[ToolCallDrift, ...]
    outcome_diff: OutcomeDiff
    likely_causes: tuple[str, ...]
    #: Each named agent's LLM turns in ``a`` and in ``b`` (empty when no agent is named).
    agent_turns: tuple[tuple[str, int, int], ...] = ()
    several_agents: bool = False  # two agents or more are named: divergences name theirs
    fed_by: str | None = None  # what fed the first diverged call (.causal_graph.fed_text)

    @property
    def matched(self) -> bool:
        return self.comparison.identical and not self.divergences

    def _steps(self, status: StepStatus) -> list[int]:
        return [s.step for s in self.comparison.steps if s.status is status]

    @property
    def added_steps(self) -> list[int]:
        return self._steps(StepStatus.ONLY_IN_B)

    @property
    def removed_steps(self) -> list[int]:
        return self._steps(StepStatus.ONLY_IN_A)

    @property
    def changed_steps(self) -> list[int]:
        return self._steps(StepStatus.DIVERGED)

    @property
    def cost_delta_usd(self) -> float | None:
        a, b = self.a_summary.cost_usd, self.b_summary.cost_usd
        return None if a is None or b is None else round(b - a, 9)

    @property
    def leading(self) -> tuple[Divergence, ...]:
        """The divergences, led by a setup mismatch when the run started apart.

        Replay names what it met while the run went on, from step 1; a run started with
        another model, prompt or tools already differs at step 0, in ``run.started``, before
        its first request is refused at step 1. Then the report leads with the step-0
        ``setup_mismatch`` the comparison finds, so the headline, the body, ``rollout diff``
        and the fork hint name the same step; replay's divergences follow it. So too for a
        guardrail or hook that decided otherwise, or control passed to another agent, at
        or before the step where replay found its first divergence: that is the cause.
        """
        found = self.divergences
        first = self.comparison.first
        if first is None or not found or first.step > found[0].step:
            return found
        event = first.a_event or first.b_event
        if event is None or event.type not in _LEADS_REPLAY:
            return found
        if event.type == RUN_STARTED and found[0].step == 0:
            return found
        classified = classify(self.comparison, self.several_agents)
        if classified is None or classified.kind is DivergenceKind.TOOL_CALL_MISMATCH:
            return found  # a hook given other arguments: replay says where they came from
        return (classified, *found)

    @property
    def headline(self) -> Divergence | None:
        """The first of :attr:`leading`: what the report's first line names."""
        leading = self.leading
        return leading[0] if leading else None

    def to_json_obj(self) -> dict[str, Any]:
        first = self.comparison.first
        return {
            "matched": self.matched,
            "added_steps": self.added_steps,
            "removed_steps": self.removed_steps,
            "changed_steps": self.changed_steps,
            "first_divergent_step": None if first is None else first.step,
            "divergent_tool_calls": [
                {
                    "step": d.step,
                    "position": d.position,
                    "a": None
                    if d.a_name is None
                    else {"name": d.a_name, "arguments": d.a_arguments},
                    "b": None
                    if d.b_name is None
                    else {"name": d.b_name, "arguments": d.b_arguments},
                }
                for d in self.tool_calls
            ],
            "cost_delta_usd": self.cost_delta_usd,
            "outcome_diff": self.outcome_diff,
            "score": {
                "winner": self.score.winner,
                "a_points": self.score.a_points,
                "b_points": self.score.b_points,
                "criteria": [
                    {"name": c.name, "points": c.points, "winner": c.winner, "a": c.a, "b": c.b}
                    for c in self.score.criteria
                ],
            },
            "divergences": [
                {
                    "kind": d.kind.value,
                    "attribution": d.attribution,
                    "step": d.step,
                    "detail": d.detail,
                }
                for d in self.divergences
            ],
            "likely_causes": list(self.likely_causes),
        }


def drift_report(
    a: Sequence[Event],
    b: Sequence[Event],
    options: CanonicalOptions = DEFAULT_OPTIONS,
    *,
    divergences: Iterable[Divergence] = (),
    comparison: Comparison | None = None,
    error_types: Iterable[str] = (),
) -> DriftReport:
    """Compare ``b`` with ``a`` and say how it drifted.

    ``divergences`` are those replay raised while ``b`` ran (the headline when given);
    without them the comparison's first divergence is classified.
    """
    if comparison is None:
        comparison = compare(a, b, options)
    named = names_agents(a) or names_agents(b)
    several = named and several_agents(a, b)
    found = named_agents(divergences, b) if several else tuple(divergences)
    if not found and (classified := classify(comparison, several)) is not None:
        found = (classified,)
    extra_errors = tuple(error_types)
    a_summary = summarize(a, extra_errors)
    b_summary = summarize(b, extra_errors)
    first = comparison.first
    return DriftReport(
        comparison=comparison,
        a_summary=a_summary,
        b_summary=b_summary,
        score=score(a_summary, b_summary),
        divergences=found,
        tool_calls=tuple(_tool_call_drift(a, b, _calls_agree_at(comparison, options))),
        outcome_diff=_outcome_diff(a, b, a_summary, b_summary, options.volatile),
        likely_causes=()
        if first is None
        else tuple(likely_causes(a, b, first.step, options.volatile)),
        agent_turns=agent_turns(a, b) if named else (),
        several_agents=several,
        fed_by=None if first is None else _fed_by(a, b, first),
    )


def _calls_by_step(events: Sequence[Event]) -> dict[int, list[Event]]:
    """Each ``tool.call.started``, by step, in the order recorded."""
    calls: dict[int, list[Event]] = {}
    for event in [e for e in events if e.type == TOOL_CALL_STARTED]:
        found = calls.get(event.step)
        if found is None:
            calls[event.step] = [event]
        else:
            found.append(event)
    return calls


def _announced_at(events: Sequence[Event], step: int) -> list[str]:
    """The call ids the turns of ``step`` announced. A run's events go by step, so the step
    is found by bisection; a run whose steps go back is searched through."""
    start = bisect.bisect_left(events, step, key=_step_of)
    found: list[str] = []
    for event in itertools.islice(events, start, None):
        if event.step != step:
            break
        if event.type == LLM_TURN_COMPLETED:
            found.extend(announced_calls(event.data))
    if found:
        return found
    for event in [e for e in events if e.type == LLM_TURN_COMPLETED and e.step == step]:
        found.extend(announced_calls(event.data))
    return found


def _step_of(event: Event) -> int:
    return event.step


def _in_announced_order(events: Sequence[Event], step: int, calls: list[Event]) -> list[Event]:
    """The calls of ``step`` in the order its turn announced them."""
    order = tool_order(_announced_at(events, step), calls) if len(calls) > 1 else None
    return calls if order is None else [calls[i] for i in order]


def _same_call(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    """Same name, and arguments with the same canonical bytes. Equal plain orjson bytes
    (same keys in the same order, same values and kinds) imply equal canonical bytes, and
    cost less: the canonical form is only made when they differ."""
    if x.get("name") != y.get("name"):
        return False
    left, right = x.get("arguments"), y.get("arguments")
    return orjson.dumps(left) == orjson.dumps(right) or canonical_bytes(left) == canonical_bytes(
        right
    )


def _same_calls(left: Sequence[Event], right: Sequence[Event]) -> bool:
    return len(left) == len(right) and all(
        x is y or _same_call(x.data, y.data) for x, y in zip(left, right, strict=True)
    )


def _calls_agree_at(comparison: Comparison, options: CanonicalOptions) -> frozenset[int]:
    """The steps whose tool calls the report does not list: those the comparison found
    identical, so that the section agrees with it (floats equal to the digits compared,
    call ids renamed as the comparison renames them). When an ignore option takes the
    calls' names or arguments out of the comparison, every step's calls are compared."""
    touched = (
        TOOL_CALL_STARTED in options.ignore_types
        or not options.drop_keys.isdisjoint(("name", "arguments"))
        or options.paths_for(TOOL_CALL_STARTED)
    )
    if touched:
        return frozenset()
    return frozenset(s.step for s in comparison.steps if s.status is StepStatus.IDENTICAL)


def _tool_call_drift(
    a: Sequence[Event], b: Sequence[Event], agreed: frozenset[int] = frozenset()
) -> Iterable[ToolCallDrift]:
    """The calls that differ, step by step, paired in the order each step's turn announced
    them (as the comparison pairs them); steps whose calls agree as recorded are not
    reordered, and the steps ``agreed`` are known to agree."""
    calls_a = _calls_by_step(a)
    calls_b = _calls_by_step(b)
    for step in sorted((calls_a.keys() | calls_b.keys()) - agreed):
        left = calls_a.get(step, [])
        right = calls_b.get(step, [])
        if _same_calls(left, right):
            continue
        left = _in_announced_order(a, step, left)
        right = _in_announced_order(b, step, right)
        for position in range(max(len(left), len(right))):
            x = left[position].data if position < len(left) else None
            y = right[position].data if position < len(right) else None
            if x is not None and y is not None and (x is y or _same_call(x, y)):
                continue
            yield ToolCallDrift(
                step=step,
                position=position + 1,
                a_name=None if x is None else str(x.get("name")),
                a_arguments=None if x is None else x.get("arguments"),
                b_name=None if y is None else str(y.get("name")),
                b_arguments=None if y is None else y.get("arguments"),
            )


def _terminal(events: Sequence[Event]) -> Event | None:
    last = events[-1] if events else None
    return last if last is not None and last.type in (RUN_COMPLETED, RUN_FAILED) else None


def _outcome_diff(
    a: Sequence[Event],
    b: Sequence[Event],
    a_sum: RunSummary,
    b_sum: RunSummary,
    volatile: Volatile = BUILTIN,
) -> OutcomeDiff:
    if a_sum.clean and not b_sum.clean:
        return "regressed"
    if b_sum.clean and not a_sum.clean:
        return "improved"
    ta, tb = _terminal(a), _terminal(b)
    if ta is None or tb is None:
        return "identical" if ta is tb else "changed"
    keys = ("outcome", "output", "error")
    # An answer that only says another date or id is the same answer, as the comparison says.
    ends = (Renaming(volatile), Renaming(volatile))
    same = all(
        ends[0].rename(canonical_bytes(ta.data.get(k)))
        == ends[1].rename(canonical_bytes(tb.data.get(k)))
        for k in keys
    )
    return "identical" if same and ta.type == tb.type else "changed"


# -- likely causes ---------------------------------------------------------------------


def _first(events: Sequence[Event], event_type: str) -> Event | None:
    return next((e for e in events if e.type == event_type), None)


#: What follows a model family's name in a dated or aliased model name: a date
#: (``-2024-07-18``, ``-20241022``, ``@20241022``, OpenAI's older ``-0613``) or ``-latest``.
_MODEL_SUFFIX: Final = re.compile(
    r"(?:[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])|latest))+$"
)


def model_family(name: str) -> str:
    """The model family a model name stands for: the name without its date or ``latest``
    (``gpt-4o-mini-2024-07-18`` and ``gpt-4o-mini`` are both ``gpt-4o-mini``)."""
    return _MODEL_SUFFIX.sub("", name) or name


_TURN_TYPES: Final = frozenset({LLM_TURN_STARTED, LLM_TURN_COMPLETED})


def _models(events: Sequence[Event], upto: int) -> tuple[list[str], list[str]]:
    """The models the run asked for (its ``run.started`` model, then each request's
    ``params.model``) and the versions that answered, up to step ``upto``, each once."""
    asked: list[str] = []
    answered: list[str] = []
    started = _first(events, RUN_STARTED)
    if started is not None and isinstance(started.data.get("model"), str):
        asked.append(started.data["model"])
    # Turns are a third of a run's events: they are picked out in one pass first.
    for event in [e for e in events if e.type in _TURN_TYPES]:
        if event.step > upto:
            break
        kind = event.type
        if kind == LLM_TURN_COMPLETED:
            name, found = event.data.get("model_version"), answered
        else:  # LLM_TURN_STARTED
            params = event.data.get("params")
            name, found = params.get("model") if isinstance(params, Mapping) else None, asked
        if isinstance(name, str) and name not in found:
            found.append(name)
    return asked, answered


def _model_change(a: Sequence[Event], b: Sequence[Event], step: int) -> str | None:
    """The cause line for a change of model: only when the model the runs asked for is of
    another family (a dated version of the same model, as services answer, is no change).
    When neither run names the model it asked for, the versions that answered stand in."""
    asked_a, answered_a = _models(a, step)
    asked_b, answered_b = _models(b, step)
    if not asked_a and not asked_b:
        asked_a, asked_b = answered_a, answered_b
    if not asked_a or not asked_b:
        return None
    if [*map(model_family, asked_a)] == [*map(model_family, asked_b)]:
        return None
    return f"the model changed: {', '.join(asked_a)} -> {', '.join(asked_b)}"


def _tool_set_change(a: Sequence[Event], b: Sequence[Event]) -> str:
    """``the set of tools changed: get_time dropped, search added``: which tools the run
    offers that its reference did not, and the other way round."""
    names_a, names_b = (_tool_names(run) for run in (a, b))
    parts = [f"{', '.join(sorted(names_a - names_b))} dropped"] if names_a - names_b else []
    if names_b - names_a:
        parts.append(f"{', '.join(sorted(names_b - names_a))} added")
    return "the set of tools changed" + (f": {'; '.join(parts)}" if parts else "")


def _tool_names(events: Sequence[Event]) -> set[str]:
    started = _first(events, RUN_STARTED)
    names = None if started is None else started.data.get("tools")
    return set(map(str, names)) if isinstance(names, list) else set()


def _tool_schemas(events: Sequence[Event]) -> tuple[bytes | None, bytes | None]:
    started = _first(events, RUN_STARTED)
    names = None if started is None else started.data.get("tools")
    request = _first(events, LLM_TURN_STARTED)
    schemas = None if request is None else request.data.get("tools")
    # The loader's schema makes ``names`` a list of strings; events built in memory are
    # read as safely (anything else counts as no list of names).
    return (
        canonical_bytes(sorted(map(str, names))) if isinstance(names, list) else None,
        None if schemas is None else canonical_bytes(schemas),
    )


#: The roles whose messages instruct the model (OpenAI's newer models call it ``developer``).
_SYSTEM_ROLES: Final = frozenset({"system", "developer"})
#: The request parameters that carry the instructions (Anthropic's ``system``, the
#: Responses API's ``instructions``).
_SYSTEM_PARAMS: Final = ("system", "instructions")


def _system_prompt_hash(events: Sequence[Event], volatile: Volatile) -> str | None:
    request = _first(events, LLM_TURN_STARTED)
    if request is None:
        return None
    messages = request.data.get("messages")
    system = [
        m.get("content")
        for m in (messages if isinstance(messages, list) else ())
        if isinstance(m, Mapping) and m.get("role") in _SYSTEM_ROLES
    ]
    params = request.data.get("params")
    if isinstance(params, Mapping):
        system.extend(params[key] for key in _SYSTEM_PARAMS if params.get(key) is not None)
    if not system:
        return None
    return hashlib.sha256(Renaming(volatile).rename(canonical_bytes(system))).hexdigest()


#: How deep a shape is described; deeper structure is one ``"..."``.
_SHAPE_DEPTH: Final = 16


def _shape(value: Any, depth: int = 0) -> Any:
    """The structure of a value without its contents: keys and JSON types; a list as the
    distinct shapes of its items, sorted. Nested shapes stay structures (never their JSON as
    text, which escapes again at every level: a 3 KB nest of lists took gigabytes)."""
    if depth >= _SHAPE_DEPTH and isinstance(value, Mapping | list):
        return "..."
    if isinstance(value, Mapping):
        return {str(k): _shape(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        distinct: dict[bytes, Any] = {}
        for item in value:
            shape = _shape(item, depth + 1)
            distinct.setdefault(canonical_bytes(shape), shape)
        return [distinct[key] for key in sorted(distinct)]
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string"


def _fed_by(a: Sequence[Event], b: Sequence[Event], first: FirstDivergence) -> str | None:
    """What fed the call where the runs part: in ``b``, else (a call it lacks) in ``a``."""
    from .causal_graph import fed_text  # noqa: PLC0415  (only a run that diverged needs it)

    path = first.changes[0].path if first.changes else ""
    if first.b_event is not None:
        return fed_text(b, first.b_event, path)
    return fed_text(a, first.a_event, path)


def _results_before(events: Sequence[Event], step: int) -> list[Event]:
    """Tool results at the step before ``step`` and at ``step`` itself, in announcement
    order."""
    near = in_announced_order([e for e in events if step - 1 <= e.step <= step])
    return [e for e in near if e.type == TOOL_CALL_COMPLETED]


def likely_causes(
    a: Sequence[Event], b: Sequence[Event], step: int, volatile: Volatile = BUILTIN
) -> list[str]:
    """What the two runs show as likely causes of a divergence at ``step`` (a system prompt
    that only says another date has not changed: its ``volatile`` values are renamed)."""
    causes: list[str] = []
    model = _model_change(a, b, step)
    if model is not None:
        causes.append(model)
    names_a, schemas_a = _tool_schemas(a)
    names_b, schemas_b = _tool_schemas(b)
    if names_a is not None and names_b is not None and names_a != names_b:
        causes.append(_tool_set_change(a, b))
    elif schemas_a is not None and schemas_b is not None and schemas_a != schemas_b:
        causes.append("the tool schemas sent to the model changed")
    prompt_a, prompt_b = _system_prompt_hash(a, volatile), _system_prompt_hash(b, volatile)
    if prompt_a is not None and prompt_b is not None and prompt_a != prompt_b:
        causes.append(f"the system prompt changed (sha256 {prompt_a[:12]} -> {prompt_b[:12]})")
    results_b = {
        (e.step, str(e.data.get("name")), n): e for n, e in enumerate(_results_before(b, step))
    }
    for n, event in enumerate(_results_before(a, step)):
        other = results_b.get((event.step, str(event.data.get("name")), n))
        if other is None or "output" not in event.data or "output" not in other.data:
            continue
        if _shape(event.data["output"]) != _shape(other.data["output"]):
            causes.append(
                f"tool {event.data.get('name')} returned a differently shaped result at step "
                f"{event.step}"
            )
            break
    return causes


@dataclass(frozen=True, slots=True)
class Verdict:
    """This run against its golden: where both live, and the drift report (golden as a)."""

    golden_path: str
    run_path: str | None
    report: DriftReport
    #: The golden was replayed though no receipt vouched for it (``--rollout-unverified``).
    unverified: bool = False

    @property
    def matched(self) -> bool:
        return self.report.matched

    @property
    def comparison(self) -> Comparison:
        return self.report.comparison

    @property
    def golden_summary(self) -> RunSummary:
        return self.report.a_summary

    @property
    def run_summary(self) -> RunSummary:
        return self.report.b_summary

    @property
    def score(self) -> Score:
        return self.report.score

    @property
    def divergences(self) -> tuple[Divergence, ...]:
        return self.report.divergences

    @property
    def headline(self) -> Divergence | None:
        """The divergence the report's first line names (:attr:`DriftReport.headline`)."""
        return self.report.headline
