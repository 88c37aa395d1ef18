"""The ``causal_graph`` analyzer: the run's causal graph (which earlier tool results each turn
saw, which returned values later calls were given), written as one
``causal.graph.snapshot`` just before the terminal event. The graph itself is
:mod:`pytest_rollout.diff.causal_graph`'s. See docs/analyzers.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from ..diff.causal_graph import CAUSAL_GRAPH_SNAPSHOT, GraphBuilder
from ..format.events import (
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    RUN_COMPLETED,
    RUN_FAILED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
)
from .handlers import Analyzer, Emitted, Handler

__all__ = ["CAUSAL_GRAPH_SNAPSHOT", "CausalGraphAnalyzer"]

#: The events the graph is built from.
_READ = (LLM_TURN_STARTED, LLM_TURN_COMPLETED, TOOL_CALL_STARTED, TOOL_CALL_COMPLETED)


class CausalGraphAnalyzer(Analyzer):
    """``causal_graph``: ``causal.graph.snapshot`` (``{nodes, edges}``) before ``run.completed``
    or ``run.failed``, with the graph of every turn and tool call before it."""

    __slots__ = ("_builder",)

    def __init__(self) -> None:
        self._builder = GraphBuilder()

    def before_handlers(self) -> Mapping[str, Handler]:
        return {RUN_COMPLETED: self._snapshot, RUN_FAILED: self._snapshot}

    def after_handlers(self) -> Mapping[str, Handler]:
        return {event_type: partial(self._add, event_type) for event_type in _READ}

    def _add(self, event_type: str, data: Mapping[str, Any], step: int) -> Emitted:
        self._builder.add(event_type, data, step)
        return []

    def _snapshot(self, data: Mapping[str, Any], step: int) -> Emitted:
        return [(CAUSAL_GRAPH_SNAPSHOT, self._builder.graph().to_data())]
