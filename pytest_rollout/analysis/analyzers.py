"""Opt-in analyzers: what a run's event stream says about cost, repeats, errors and context.

An :class:`Analysis` sees each event of a run as the run emits it (its type, data and step)
and answers with the events it wants emitted just before it (:meth:`Analysis.before`) or
right after it (:meth:`Analysis.after`), as ``(type, data)`` pairs. Only the analyzers of
:attr:`AnalyzerOptions.enabled` say anything:

``cost_anomaly``
    ``cost.anomaly`` after a turn whose step cost more than ``cost_multiplier`` times the
    mean cost of the earlier costed steps (once per step).
``antipatterns``
    ``tool.antipattern`` after the call that makes a tool with the same canonical arguments
    reach ``antipattern_threshold`` calls (once per tool and arguments).
``error_chain``
    ``error.context`` before ``run.failed``: the error, its cause chain and the last
    ``error_chain_calls`` tool calls with their errors.
``context_window``
    ``context.window.snapshot`` after each turn that reports its token usage, and
    ``context.window.warning`` when the turn used ``context_threshold`` of the model's
    context window or more.
``tool_decisions``
    ``tool.decision`` after each turn: the tools the model was offered and those it chose.
``request_envelope``
    ``llm.request.snapshot`` after each ``llm.turn.started``: the request's tool names,
    message count and ``messages_hash``, or with ``hmac_key`` the hex HMAC-SHA256 of that
    hash (its UTF-8 text), which nobody without the key can check against a guessed prompt;
    and ``llm.response.meta`` after each ``llm.turn.completed`` (latency, model version).
``causal_graph``
    ``causal.graph.snapshot`` just before ``run.completed`` or ``run.failed``: the run's
    turns and tool calls, and the ``context`` and ``data_flow`` edges between them
    (:mod:`~pytest_rollout.diff.causal_graph`).

The analyzers are pure logic over the data they are handed: a value of the wrong type or a
missing key makes an analyzer skip that event, never raise. :func:`analyze` runs the same
analysis over a recorded run, and :func:`find_antipatterns` and :func:`tool_names` serve the
assertions made on a finished run.

This module owns the running of the analyzers; the options live in
:mod:`~pytest_rollout.analysis.analyzer_options`, the analyzers of tool calls in
:mod:`~pytest_rollout.analysis.calls`, those of LLM turns in
:mod:`~pytest_rollout.analysis.turn_analyzers` and the causal graph in
:mod:`~pytest_rollout.analysis.causal_analyzer`. See docs/analyzers.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from ..format.events import Event
from .analyzer_options import (
    ANALYZERS,
    CONTEXT_WINDOWS,
    HMAC_KEY_VARIABLE,
    AnalyzerOptions,
    parse_analyzers,
)
from .calls import Antipattern, ErrorChain, RepeatedCalls, find_antipatterns
from .causal_analyzer import CausalGraphAnalyzer
from .handlers import Analyzer, Emitted, Handler
from .turn_analyzers import ContextWindow, CostAnomaly, RequestEnvelope, RunContext, ToolDecisions
from .values import tool_names, whole

__all__ = [
    "ANALYZERS",
    "CONTEXT_WINDOWS",
    "HMAC_KEY_VARIABLE",
    "Analysis",
    "AnalyzerOptions",
    "Antipattern",
    "analyze",
    "find_antipatterns",
    "parse_analyzers",
    "tool_names",
]

_Maker = Callable[[AnalyzerOptions, RunContext], Analyzer]

#: How each analyzer is made from the options and the run's context.
_MAKERS: Final[Mapping[str, _Maker]] = {
    "cost_anomaly": lambda o, _: CostAnomaly(o.cost_multiplier),
    "antipatterns": lambda o, _: RepeatedCalls(o.antipattern_threshold),
    "error_chain": lambda o, _: ErrorChain(o.error_chain_calls),
    "context_window": lambda o, c: ContextWindow(
        c, o.context_threshold, o.context_limit, o.context_windows
    ),
    "tool_decisions": lambda _, c: ToolDecisions(c),
    "request_envelope": lambda o, _: RequestEnvelope(o.hmac_key),
    "causal_graph": lambda _, __: CausalGraphAnalyzer(),
}


def _handler_table(
    handlers: Iterable[Mapping[str, Handler]],
) -> dict[str, tuple[Handler, ...]]:
    """The handlers of each event type, in the order given."""
    table: dict[str, list[Handler]] = {}
    for by_type in handlers:
        for event_type, handler in by_type.items():
            table.setdefault(event_type, []).append(handler)
    return {event_type: tuple(found) for event_type, found in table.items()}


def _run(handlers: tuple[Handler, ...], data: Mapping[str, Any], step: int) -> Emitted:
    found: Emitted = []
    for handler in handlers:
        found.extend(handler(data, step))
    return found


class Analysis:
    """The enabled analyzers over one run. Feed every event of the run, in order, to
    :meth:`before` (then emit what it returns), emit the event, then feed it to
    :meth:`after` (and emit what that returns). Neither ever raises on odd data."""

    __slots__ = ("_after", "_before", "options")

    def __init__(self, options: AnalyzerOptions) -> None:
        self.options = options
        context = RunContext()
        # In ANALYZERS order, which is the order of their events after one event.
        enabled = [_MAKERS[n](options, context) for n in ANALYZERS if n in options.enabled]
        self._before = _handler_table(a.before_handlers() for a in enabled)
        # The context hears of an event before the analyzers that read it.
        self._after = _handler_table(a.after_handlers() for a in (context, *enabled))

    def before(
        self, event_type: str, data: Mapping[str, Any], step: int
    ) -> list[tuple[str, dict[str, Any]]]:
        """The events to emit just before this one."""
        handlers = self._before.get(event_type)
        seen: object = data
        if handlers is None or not isinstance(seen, Mapping):
            return []
        return _run(handlers, seen, step)

    def after(
        self, event_type: str, data: Mapping[str, Any], step: int
    ) -> list[tuple[str, dict[str, Any]]]:
        """The events to emit right after this one."""
        handlers = self._after.get(event_type)
        seen: object = data
        if handlers is None or not isinstance(seen, Mapping) or not whole(step, 0):
            return []
        return _run(handlers, seen, step)


def analyze(
    events: Sequence[Event], options: AnalyzerOptions
) -> list[tuple[int, str, dict[str, Any]]]:
    """What the analyzers of ``options`` say about a recorded run: for each of their events,
    the index in ``events`` it goes before (``len(events)`` after the last), its type and
    its data, exactly where and as a live run would have emitted it."""
    analysis = Analysis(options)
    found: list[tuple[int, str, dict[str, Any]]] = []
    for index, event in enumerate(events):
        found.extend((index, t, d) for t, d in analysis.before(event.type, event.data, event.step))
        found.extend(
            (index + 1, t, d) for t, d in analysis.after(event.type, event.data, event.step)
        )
    return found
