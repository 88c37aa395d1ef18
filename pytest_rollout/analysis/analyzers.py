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

The analyzers are pure logic over the data they are handed: a value of the wrong type or a
missing key makes an analyzer skip that event, never raise. :func:`analyze` runs the same
analysis over a recorded run, and :func:`find_antipatterns` and :func:`tool_names` serve the
assertions made on a finished run.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, TypeGuard

import orjson

from ..diff.canonical import canonical_bytes
from ..format.events import (
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    RUN_FAILED,
    RUN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    Event,
)
from ..sdk.pricing import model_entry

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

#: Every analyzer, in the order their events are emitted when several follow one event.
ANALYZERS: Final[tuple[str, ...]] = (
    "cost_anomaly",
    "antipatterns",
    "error_chain",
    "context_window",
    "tool_decisions",
    "request_envelope",
)

# Context windows (input plus output tokens) of the OpenAI and Anthropic models, from their
# model pages as of late 2025: table taken 2025-12. Keys are model-name prefixes, matched as
# pricing.price_for matches them (the longest prefix wins; "gpt-5" covers "gpt-5-mini" but
# not "gpt-5.1", hence "gpt-5."). Claude Sonnet 4 and 4.5 take 1M tokens only with a beta
# header: their default is 200K.
CONTEXT_WINDOWS: Final[Mapping[str, int]] = MappingProxyType(
    {
        # OpenAI
        "gpt-4o": 128_000,
        "gpt-4o-mini": 128_000,
        "gpt-4.1": 1_047_576,  # and gpt-4.1-mini, gpt-4.1-nano
        "gpt-5": 400_000,  # and gpt-5-mini, gpt-5-nano, gpt-5-pro
        "gpt-5.": 400_000,  # gpt-5.1, gpt-5.2, ...
        "gpt-5-chat": 128_000,  # gpt-5-chat-latest
        "o1": 200_000,
        "o1-mini": 128_000,
        "o1-preview": 128_000,
        "o3": 200_000,  # and o3-mini, o3-pro, o3-deep-research
        "o4-mini": 200_000,
        # Anthropic
        "claude": 200_000,
        "claude-sonnet-4": 200_000,  # and claude-sonnet-4-5
        "claude-opus-4": 200_000,  # and claude-opus-4-1, claude-opus-4-5
        "claude-haiku-4-5": 200_000,
    }
)

#: The environment variable whose value (UTF-8) keys the request hashes of
#: ``llm.request.snapshot`` with HMAC-SHA256.
HMAC_KEY_VARIABLE: Final = "ROLLOUT_HMAC_KEY"

_NAME_SEPARATORS: Final = re.compile(r"[\s,]+")


def parse_analyzers(names: Iterable[str]) -> frozenset[str]:
    """The analyzers named by ``names``: each item one or more names separated by commas or
    whitespace, ``"all"`` for every analyzer. Names are compared case-insensitively.

    Raises ``ValueError`` naming an unknown name and listing the valid ones.
    """
    items: Iterable[Any] = [names] if isinstance(names, str) else names
    found: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"analyzer names must be strings, got {item!r}")
        for name in _NAME_SEPARATORS.split(item.strip().lower()):
            if not name:
                continue
            if name == "all":
                found.update(ANALYZERS)
            elif name in ANALYZERS:
                found.add(name)
            else:
                raise ValueError(
                    f"unknown analyzer {name!r}: choose from all, {', '.join(ANALYZERS)}"
                )
    return frozenset(found)


def _context_windows() -> Mapping[str, int]:
    return CONTEXT_WINDOWS


def _whole(value: object, minimum: int) -> TypeGuard[int]:
    """``value`` is an int (not a bool) of ``minimum`` or more."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _finite(value: object) -> float | None:
    """``value`` as a finite float, or ``None`` when it is not a finite number (or a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True, slots=True)
class AnalyzerOptions:
    """Which analyzers run, and how.

    ``enabled``: the analyzers that run (see :data:`ANALYZERS` and :func:`parse_analyzers`).
    ``cost_multiplier``: a step costing more than this times the mean of the earlier steps
    is an anomaly. ``antipattern_threshold``: how many identical tool calls make a repeat.
    ``error_chain_calls``: how many of the last tool calls ``error.context`` lists.
    ``context_threshold``: the fraction of the context window that draws a warning.
    ``context_limit``: the context window of every model, in place of ``context_windows``
    (window sizes by model-name prefix). ``hmac_key``: key the request hashes of
    ``llm.request.snapshot`` with HMAC-SHA256.
    """

    enabled: frozenset[str] = frozenset()
    cost_multiplier: float = 2.0
    antipattern_threshold: int = 3
    error_chain_calls: int = 5
    context_threshold: float = 0.8
    context_limit: int | None = None
    context_windows: Mapping[str, int] = field(default_factory=_context_windows, hash=False)
    hmac_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        enabled: object = self.enabled
        if isinstance(enabled, str) or not isinstance(enabled, Iterable):
            raise ValueError(f"enabled must be a set of analyzer names, got {enabled!r}")
        names = frozenset(enabled)
        unknown = sorted(repr(n) for n in names if n not in ANALYZERS)
        if unknown:
            raise ValueError(
                f"unknown analyzer {', '.join(unknown)}: choose from {', '.join(ANALYZERS)}"
            )
        object.__setattr__(self, "enabled", names)
        multiplier = _finite(self.cost_multiplier)
        if multiplier is None or multiplier <= 0:
            raise ValueError(
                f"cost_multiplier must be a finite number above 0, got {self.cost_multiplier!r}"
            )
        if not _whole(self.antipattern_threshold, 2):
            raise ValueError(
                f"antipattern_threshold must be a whole number of 2 or more, "
                f"got {self.antipattern_threshold!r}"
            )
        if not _whole(self.error_chain_calls, 0):
            raise ValueError(
                f"error_chain_calls must be a whole number of 0 or more, "
                f"got {self.error_chain_calls!r}"
            )
        fraction = _finite(self.context_threshold)
        if fraction is None or not 0 < fraction <= 1:
            raise ValueError(
                f"context_threshold must be a fraction above 0 and at most 1, "
                f"got {self.context_threshold!r}"
            )
        if self.context_limit is not None and not _whole(self.context_limit, 1):
            raise ValueError(
                f"context_limit must be a whole number of tokens above 0, "
                f"got {self.context_limit!r}"
            )
        windows: object = self.context_windows
        if not isinstance(windows, Mapping):
            raise ValueError(
                f"context_windows must be a mapping of model-name prefixes to token counts, "
                f"got {windows!r}"
            )
        if not isinstance(windows, MappingProxyType):
            object.__setattr__(self, "context_windows", MappingProxyType(dict(windows)))
        key: object = self.hmac_key
        if key is not None and (not isinstance(key, bytes) or not key):
            raise ValueError(f"hmac_key must be non-empty bytes, not {type(key).__name__}")


@dataclass(frozen=True, slots=True)
class Antipattern:
    """A tool called with the same canonical arguments ``count`` times, at ``steps``."""

    name: str
    arguments: Any
    count: int
    steps: tuple[int, ...]


def tool_names(tools: Any) -> list[str]:
    """The names of a request's tools, in order, whatever their shape: a name, a
    ``{"name": ...}`` object (Anthropic's ``input_schema`` tools, OpenAI Responses tools),
    or an OpenAI ``{"type": "function", "function": {"name": ...}}`` tool. Anything else,
    and anything in a ``tools`` that is not a list, is skipped."""
    if not isinstance(tools, list | tuple):
        return []
    names: list[str] = []
    for tool in tools:
        if isinstance(tool, str):
            names.append(tool)
        elif isinstance(tool, Mapping):
            name = tool.get("name")
            if not isinstance(name, str):
                function = tool.get("function")
                name = function.get("name") if isinstance(function, Mapping) else None
            if isinstance(name, str):
                names.append(name)
    return names


def _plain(value: Any) -> Any:
    """A copy of ``value`` as JSON would hold it (what a recorded run gives back), or
    ``value`` itself when JSON cannot hold it."""
    try:
        return orjson.loads(orjson.dumps(value))
    except TypeError:  # orjson.JSONEncodeError: not JSON (a set, an int beyond 64 bits...)
        return value


def _canonical(value: Any) -> bytes | None:
    try:
        return canonical_bytes(value)
    except TypeError:
        return None


class _Repeats:
    """Counts tool calls by (name, canonical arguments); knows when a pair reaches the
    threshold."""

    __slots__ = ("_pairs", "reached", "threshold")

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        # (name, canonical arguments) -> [arguments of the first call, steps of the calls]
        self._pairs: dict[tuple[str, bytes], tuple[Any, list[int]]] = {}
        self.reached: list[tuple[str, bytes]] = []  # in the order they reached the threshold

    def add(self, data: Mapping[str, Any], step: int) -> tuple[str, Any, list[int]] | None:
        """Count a ``tool.call.started``; the pair and its steps when it just reached the
        threshold."""
        name = data.get("name")
        if not isinstance(name, str):
            return None
        arguments = data.get("arguments")
        key = _canonical(arguments)
        if key is None:
            return None
        pair = (name, key)
        found = self._pairs.get(pair)
        if found is None:
            found = self._pairs[pair] = (_plain(arguments), [])
        steps = found[1]
        steps.append(step)
        if len(steps) != self.threshold:
            return None
        self.reached.append(pair)
        return name, found[0], list(steps)

    def antipatterns(self) -> list[Antipattern]:
        found = []
        for pair in self.reached:
            arguments, steps = self._pairs[pair]
            found.append(Antipattern(pair[0], arguments, len(steps), tuple(steps)))
        return found


def find_antipatterns(events: Sequence[Event], threshold: int = 3) -> list[Antipattern]:
    """The tools a finished run called with the same canonical arguments ``threshold`` or
    more times (``tool.call.started`` events), in the order each reached ``threshold``.
    ``count`` and ``steps`` cover every such call of the run."""
    if not _whole(threshold, 2):
        raise ValueError(f"threshold must be a whole number of 2 or more, got {threshold!r}")
    repeats = _Repeats(threshold)
    for event in events:
        if event.type == TOOL_CALL_STARTED and isinstance(event.data, Mapping):
            repeats.add(event.data, event.step)
    return repeats.antipatterns()


class _Call:
    """A tool call as ``error.context`` lists it."""

    __slots__ = ("arguments", "error", "id", "name", "step")

    def __init__(self, data: Mapping[str, Any], step: int) -> None:
        self.step = step
        self.name = _plain(data.get("name"))
        self.arguments = _plain(data.get("arguments"))
        self.id = _call_id(data.get("call_id"))
        self.error: Any = None

    def as_data(self) -> dict[str, Any]:
        data = {"step": self.step, "name": self.name, "arguments": self.arguments}
        if self.error is not None:
            data["error"] = self.error
        return data


def _call_id(value: Any) -> bytes | None:
    return None if value is None else _canonical(value)


_Found = list[tuple[str, dict[str, Any]]]


def _antipattern(repeats: _Repeats, data: Mapping[str, Any], step: int) -> _Found:
    reached = repeats.add(data, step)
    if reached is None:
        return []
    name, arguments, steps = reached
    found = {"name": name, "arguments": _plain(arguments), "count": repeats.threshold}
    return [("tool.antipattern", {**found, "steps": steps})]


class Analysis:
    """The enabled analyzers over one run. Feed every event of the run, in order, to
    :meth:`before` (then emit what it returns), emit the event, then feed it to
    :meth:`after` (and emit what that returns). Neither ever raises on odd data."""

    def __init__(self, options: AnalyzerOptions) -> None:
        self.options = options
        on = options.enabled
        self._cost = "cost_anomaly" in on
        self._repeats = _Repeats(options.antipattern_threshold) if "antipatterns" in on else None
        self._chain = "error_chain" in on
        self._context = "context_window" in on
        self._decisions = "tool_decisions" in on
        self._envelope = "request_envelope" in on
        self._run_model: str | None = None
        self._run_tools: Any = None
        # cost_anomaly: the step whose cost adds up, its cost, the earlier costed steps
        self._cost_step: int | None = None
        self._step_cost = 0.0
        self._earlier_total = 0.0
        self._earlier_steps = 0
        self._flagged_step: int | None = None
        # error_chain: the last calls, and the calls still waiting for their completion
        self._calls: deque[_Call] = deque(maxlen=options.error_chain_calls)
        self._open: dict[int, _Call] = {}  # in call order
        self._open_ids: dict[bytes, list[int]] = {}
        self._serial = 0
        # tool_decisions: the step and tools of the last llm.turn.started
        self._turn_tools: tuple[int, Any] | None = None

    # -- the two entry points ------------------------------------------------------

    def before(
        self, event_type: str, data: Mapping[str, Any], step: int
    ) -> list[tuple[str, dict[str, Any]]]:
        """The events to emit just before this one."""
        seen: object = data
        if event_type != RUN_FAILED or not self._chain or not isinstance(seen, Mapping):
            return []
        return self._error_context(seen)

    def after(
        self, event_type: str, data: Mapping[str, Any], step: int
    ) -> list[tuple[str, dict[str, Any]]]:
        """The events to emit right after this one."""
        seen: object = data
        if not isinstance(seen, Mapping) or not _whole(step, 0):
            return []
        found: _Found = []
        if event_type == LLM_TURN_COMPLETED:
            if self._cost:
                found.extend(self._cost_anomaly(seen, step))
            if self._context:
                found.extend(self._context_window(seen))
            if self._decisions:
                found.extend(self._tool_decision(seen, step))
            if self._envelope:
                found.extend(self._response_meta(seen))
        elif event_type == TOOL_CALL_STARTED:
            if self._repeats is not None:
                found.extend(_antipattern(self._repeats, seen, step))
            if self._chain:
                self._call_started(seen, step)
        elif event_type == TOOL_CALL_COMPLETED:
            if self._chain:
                self._call_completed(seen)
        elif event_type == LLM_TURN_STARTED:
            self._turn_tools = (step, seen.get("tools"))
            if self._envelope:
                found.extend(self._request_snapshot(seen))
        elif event_type == RUN_STARTED:
            model = seen.get("model")
            self._run_model = model if isinstance(model, str) else None
            self._run_tools = seen.get("tools")
        return found

    # -- cost_anomaly ----------------------------------------------------------------

    def _cost_anomaly(self, data: Mapping[str, Any], step: int) -> _Found:
        cost = _finite(data.get("cost_usd"))
        if cost is None or cost < 0:
            return []
        if self._cost_step is None or step > self._cost_step:
            if self._cost_step is not None:
                self._earlier_total += self._step_cost
                self._earlier_steps += 1
            self._cost_step, self._step_cost = step, cost
        elif step == self._cost_step:
            self._step_cost += cost
        else:  # steps never go back: a turn that says otherwise is skipped
            return []
        count = self._earlier_steps
        if count == 0 or self._flagged_step == step:
            return []
        mean = self._earlier_total / count
        multiplier = self.options.cost_multiplier
        bound = multiplier * mean
        total = self._step_cost
        # "More than" beyond float noise: 0.3 after steps of 0.1 and 0.2 is exactly 2x.
        if not math.isfinite(total) or not math.isfinite(bound) or total <= bound:
            return []
        if math.isclose(total, bound, rel_tol=1e-9, abs_tol=1e-12):
            return []
        self._flagged_step = step
        return [
            (
                "cost.anomaly",
                {
                    "step_cost_usd": round(total, 9),
                    "rolling_average_usd": round(mean, 9),
                    "multiplier": multiplier,
                    "steps_before": count,
                },
            )
        ]

    # -- error_chain -----------------------------------------------------------------

    def _call_started(self, data: Mapping[str, Any], step: int) -> None:
        if self.options.error_chain_calls == 0:
            return
        call = _Call(data, step)
        self._calls.append(call)
        serial = self._serial = self._serial + 1
        self._open[serial] = call
        if call.id is not None:
            self._open_ids.setdefault(call.id, []).append(serial)

    def _call_completed(self, data: Mapping[str, Any]) -> None:
        serial = self._started_call(_call_id(data.get("call_id")))
        if serial is None:
            return
        call = self._open.pop(serial)
        if call.id is not None:
            waiting = self._open_ids[call.id]
            waiting.remove(serial)
            if not waiting:
                del self._open_ids[call.id]
        error = data.get("error")
        if error is not None:
            call.error = _plain(error)

    def _started_call(self, call_id: bytes | None) -> int | None:
        """The open call a completion with ``call_id`` completes: the oldest open call with
        that id, else (by order) the oldest open call without an id, else the oldest."""
        waiting = None if call_id is None else self._open_ids.get(call_id)
        if waiting:
            return waiting[0]
        unnamed = next((s for s, c in self._open.items() if c.id is None), None)
        return unnamed if unnamed is not None else next(iter(self._open), None)

    def _error_context(self, data: Mapping[str, Any]) -> _Found:
        error = data.get("error")
        if not isinstance(error, Mapping):
            return []
        causes = error.get("causes")
        return [
            (
                "error.context",
                {
                    "error": _plain({k: v for k, v in error.items() if k != "causes"}),
                    "causes": _plain(causes) if isinstance(causes, list) else [],
                    "last_tool_calls": [c.as_data() for c in self._calls],
                },
            )
        ]

    # -- context_window --------------------------------------------------------------

    def _window(self, data: Mapping[str, Any]) -> int | None:
        limit = self.options.context_limit
        if limit is not None:
            return limit
        windows = self.options.context_windows
        for model in (data.get("model_version"), self._run_model):
            if isinstance(model, str):
                found = model_entry(model, windows)
                if found is not None:
                    return found if _whole(found, 1) else None
        return None

    def _context_window(self, data: Mapping[str, Any]) -> _Found:
        usage = data.get("usage")
        if not isinstance(usage, Mapping):
            return []
        tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
        if not _whole(tokens_in, 0) or not _whole(tokens_out, 0):
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
        found: _Found = [("context.window.snapshot", snapshot)]
        threshold = self.options.context_threshold
        if fraction is not None and fraction >= threshold:
            found.append(("context.window.warning", {**snapshot, "threshold": threshold}))
        return found

    # -- tool_decisions ----------------------------------------------------------------

    def _tool_decision(self, data: Mapping[str, Any], step: int) -> _Found:
        calls = data.get("tool_calls")
        if calls is None:
            calls = []
        elif not isinstance(calls, list):
            return []
        offered = self._turn_tools
        if offered is not None and offered[0] == step and offered[1] is not None:
            available = tool_names(offered[1])
        else:
            available = tool_names(self._run_tools)
        selected: list[str] = []
        for call in calls:
            name = call.get("name") if isinstance(call, Mapping) else None
            if isinstance(name, str):
                selected.append(name)
        return [("tool.decision", {"available": available, "selected": selected})]

    # -- request_envelope --------------------------------------------------------------

    def _request_snapshot(self, data: Mapping[str, Any]) -> _Found:
        digest = data.get("messages_hash")
        if not isinstance(digest, str):
            return []
        key = self.options.hmac_key
        if key is None:
            algorithm = "sha256"
        else:
            digest = hmac.new(key, digest.encode(errors="surrogatepass"), hashlib.sha256)
            digest, algorithm = digest.hexdigest(), "hmac-sha256"
        messages = data.get("messages")
        return [
            (
                "llm.request.snapshot",
                {
                    "prompt_hash": digest,
                    "algorithm": algorithm,
                    "tool_names": tool_names(data.get("tools")),
                    "message_count": len(messages) if isinstance(messages, list) else None,
                },
            )
        ]

    def _response_meta(self, data: Mapping[str, Any]) -> _Found:
        return [
            (
                "llm.response.meta",
                {
                    "latency_ms": _plain(data.get("latency_ms")),
                    "model_version": _plain(data.get("model_version")),
                },
            )
        ]


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
