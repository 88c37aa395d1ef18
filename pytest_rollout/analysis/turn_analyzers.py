"""The analyzers that read LLM turns: a step's cost against the earlier ones
(``cost_anomaly``), the share of the context window used (``context_window``), the tools
offered and chosen (``tool_decisions``), and the request and response envelope
(``request_envelope``); plus :class:`RunContext`, what the run and its current turn offered
the model. See docs/analyzers.md.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Mapping
from typing import Any

from ..format.events import (
    CONTEXT_WINDOW_SNAPSHOT,
    CONTEXT_WINDOW_WARNING,
    COST_ANOMALY,
    LLM_REQUEST_SNAPSHOT,
    LLM_RESPONSE_META,
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    RUN_STARTED,
    TOOL_DECISION,
)
from ..format.jsonable import json_copy as plain
from ..sdk.pricing import model_entry
from .handlers import Analyzer, Emitted, Handler
from .values import finite, tool_names, whole

__all__ = ["ContextWindow", "CostAnomaly", "RequestEnvelope", "RunContext", "ToolDecisions"]


class RunContext(Analyzer):
    """Always on, ahead of the analyzers: the run's model and tools (``run.started``), and
    the step and tools of the last ``llm.turn.started``."""

    __slots__ = ("model", "run_tools", "turn_tools")

    def __init__(self) -> None:
        self.model: str | None = None
        self.run_tools: Any = None
        self.turn_tools: tuple[int, Any] | None = None

    def after_handlers(self) -> Mapping[str, Handler]:
        return {RUN_STARTED: self._run_started, LLM_TURN_STARTED: self._turn_started}

    def _run_started(self, data: Mapping[str, Any], step: int) -> Emitted:
        model = data.get("model")
        self.model = model if isinstance(model, str) else None
        self.run_tools = data.get("tools")
        return []

    def _turn_started(self, data: Mapping[str, Any], step: int) -> Emitted:
        self.turn_tools = (step, data.get("tools"))
        return []

    def offered(self, step: int) -> list[str]:
        """The names of the tools offered at ``step``: the turn's, else the run's."""
        turn = self.turn_tools
        if turn is not None and turn[0] == step and turn[1] is not None:
            return tool_names(turn[1])
        return tool_names(self.run_tools)


class CostAnomaly(Analyzer):
    """``cost_anomaly``: ``cost.anomaly`` after a turn whose step cost more than
    ``multiplier`` times the mean cost of the earlier costed steps (once per step)."""

    __slots__ = (
        "_earlier_steps",
        "_earlier_total",
        "_flagged_step",
        "_step",
        "_step_cost",
        "multiplier",
    )

    def __init__(self, multiplier: float) -> None:
        self.multiplier = multiplier
        self._step: int | None = None  # the step whose cost adds up, and its cost so far
        self._step_cost = 0.0
        self._earlier_total = 0.0  # the earlier costed steps
        self._earlier_steps = 0
        self._flagged_step: int | None = None

    def after_handlers(self) -> Mapping[str, Handler]:
        return {LLM_TURN_COMPLETED: self._turn_completed}

    def _turn_completed(self, data: Mapping[str, Any], step: int) -> Emitted:
        cost = finite(data.get("cost_usd"))
        if cost is None or cost < 0 or not self._add(cost, step):
            return []
        count = self._earlier_steps
        if count == 0 or self._flagged_step == step:
            return []
        mean = self._earlier_total / count
        bound = self.multiplier * mean
        total = self._step_cost
        # "More than" beyond float noise: 0.3 after steps of 0.1 and 0.2 is exactly 2x.
        if not math.isfinite(total) or not math.isfinite(bound) or total <= bound:
            return []
        if math.isclose(total, bound, rel_tol=1e-9, abs_tol=1e-12):
            return []
        self._flagged_step = step
        anomaly = {
            "step_cost_usd": round(total, 9),
            "rolling_average_usd": round(mean, 9),
            "multiplier": self.multiplier,
            "steps_before": count,
        }
        return [(COST_ANOMALY, anomaly)]

    def _add(self, cost: float, step: int) -> bool:
        """Add a turn's cost to its step; ``False`` for a turn whose step went back."""
        if self._step is None or step > self._step:
            if self._step is not None:
                self._earlier_total += self._step_cost
                self._earlier_steps += 1
            self._step, self._step_cost = step, cost
        elif step == self._step:
            self._step_cost += cost
        else:  # steps never go back: a turn that says otherwise is skipped
            return False
        return True


class ContextWindow(Analyzer):
    """``context_window``: ``context.window.snapshot`` after each turn that reports its
    token usage, and ``context.window.warning`` when it used ``context_threshold`` of the
    model's context window or more."""

    __slots__ = ("_context", "_limit", "_threshold", "_windows")

    def __init__(
        self,
        context: RunContext,
        threshold: float,
        limit: int | None,
        windows: Mapping[str, int],
    ) -> None:
        self._context = context
        self._threshold = threshold
        self._limit = limit
        self._windows = windows

    def after_handlers(self) -> Mapping[str, Handler]:
        return {LLM_TURN_COMPLETED: self._turn_completed}

    def _window(self, data: Mapping[str, Any]) -> int | None:
        if self._limit is not None:
            return self._limit
        for model in (data.get("model_version"), self._context.model):
            if isinstance(model, str):
                found = model_entry(model, self._windows)
                if found is not None:
                    return found if whole(found, 1) else None
        return None

    def _turn_completed(self, data: Mapping[str, Any], step: int) -> Emitted:
        usage = data.get("usage")
        if not isinstance(usage, Mapping):
            return []
        tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
        if not whole(tokens_in, 0) or not whole(tokens_out, 0):
            return []
        used = tokens_in + tokens_out
        limit = self._window(data)
        fraction: float | None = None
        if limit is not None:
            try:
                fraction = round(used / limit, 4)
            except OverflowError:  # more tokens than a float holds
                return []
        snapshot = {"tokens_used": used, "limit": limit, "fraction": fraction}
        found: Emitted = [(CONTEXT_WINDOW_SNAPSHOT, snapshot)]
        threshold = self._threshold
        if fraction is not None and fraction >= threshold:
            found.append((CONTEXT_WINDOW_WARNING, {**snapshot, "threshold": threshold}))
        return found


class ToolDecisions(Analyzer):
    """``tool_decisions``: ``tool.decision`` after each turn, with the tools the model was
    offered and those it chose."""

    __slots__ = ("_context",)

    def __init__(self, context: RunContext) -> None:
        self._context = context

    def after_handlers(self) -> Mapping[str, Handler]:
        return {LLM_TURN_COMPLETED: self._turn_completed}

    def _turn_completed(self, data: Mapping[str, Any], step: int) -> Emitted:
        calls = data.get("tool_calls")
        if calls is None:
            calls = []
        elif not isinstance(calls, list):
            return []
        available = self._context.offered(step)
        selected: list[str] = []
        for call in calls:
            name = call.get("name") if isinstance(call, Mapping) else None
            if isinstance(name, str):
                selected.append(name)
        return [(TOOL_DECISION, {"available": available, "selected": selected})]


class RequestEnvelope(Analyzer):
    """``request_envelope``: ``llm.request.snapshot`` after each ``llm.turn.started`` (the
    request's tool names, message count and ``messages_hash``, or with ``hmac_key`` the hex
    HMAC-SHA256 of that hash's UTF-8 text), and ``llm.response.meta`` after each
    ``llm.turn.completed`` (latency, model version)."""

    __slots__ = ("_key",)

    def __init__(self, hmac_key: bytes | None) -> None:
        self._key = hmac_key

    def after_handlers(self) -> Mapping[str, Handler]:
        return {LLM_TURN_STARTED: self._turn_started, LLM_TURN_COMPLETED: self._turn_completed}

    def _turn_started(self, data: Mapping[str, Any], step: int) -> Emitted:
        digest = data.get("messages_hash")
        if not isinstance(digest, str):
            return []
        if self._key is None:
            algorithm = "sha256"
        else:
            keyed = hmac.new(self._key, digest.encode(errors="surrogatepass"), hashlib.sha256)
            digest, algorithm = keyed.hexdigest(), "hmac-sha256"
        messages = data.get("messages")
        snapshot = {
            "prompt_hash": digest,
            "algorithm": algorithm,
            "tool_names": tool_names(data.get("tools")),
            "message_count": len(messages) if isinstance(messages, list) else None,
        }
        return [(LLM_REQUEST_SNAPSHOT, snapshot)]

    def _turn_completed(self, data: Mapping[str, Any], step: int) -> Emitted:
        meta = {
            "latency_ms": plain(data.get("latency_ms")),
            "model_version": plain(data.get("model_version")),
        }
        return [(LLM_RESPONSE_META, meta)]
