"""A GenAI trace as a rollout: ``rollout import otel`` (docs/otel.md).

One trace of the file is chosen (``trace_id``, or the only one, or the latest one; the
others are listed). Its spans are ordered by start time and parent, and walked as a
timeline: the agent span opens the run (``run.started``) and closes it (the terminal
event), each model call is one step (``llm.turn.started`` when it starts, with the request's
new messages, its tools and model; ``llm.turn.completed`` when it ends, with the content,
tool calls, usage and the price table's cost), and each tool span is a
``tool.call.started`` / ``tool.call.completed`` pair at the step of the turn that asked for
it; an error status is the call's recorded error. In a run with several agents each event
names the agent of its span, and a handoff span is a ``handoff`` event (:mod:`.agents`).
What the trace does not hold (content not captured) is left out and said in a warning
naming the span, never made up.

The run is written by the project's :class:`~pytest_rollout.format.recorder.Recorder`, so it
is redacted like everything recorded, with the spans' times as its events' times; the file
is then read back by the strict loader.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

import orjson

from ..errors import RolloutFileError
from ..format.events import (
    HANDOFF,
    LLM_TURN_COMPLETED,
    LLM_TURN_FAILED,
    LLM_TURN_STARTED,
    RUN_FAILED,
    RUN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    USAGE_DELTA,
)
from ..format.loader import Rollout
from ..format.recorder import Recorder
from ..safety.redact import Redactor
from . import agents as a
from . import conventions as c
from . import mapping as m
from .fit import fit, fit_arguments
from .openinference import as_genai
from .otlp import DEFAULT_TRACE_LIMITS, STATUS_ERROR, Span, TraceLimits, read_spans

__all__ = [
    "EXPORTER_SCOPE",
    "ImportedRun",
    "choose_trace",
    "import_otel",
    "import_spans",
    "write_rollout",
]

#: The instrumentation scope of the spans ``rollout export otel`` writes: their carriers
#: are read, and no ``usage.delta`` is added (the export holds its own).
EXPORTER_SCOPE: Final = "pytest-rollout"

#: Sort ranks at one instant: the run opens first, spans end before others start, the run
#: closes last.
_OPEN_RUN, _END, _START, _CLOSE_RUN = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class ImportedRun:
    """The events read from one trace, with their times, and what the trace lacked."""

    trace_id: str
    others: tuple[str, ...]
    events: tuple[tuple[int, str, dict[str, Any]], ...]
    warnings: tuple[str, ...]


def choose_trace(spans: Iterable[Span], trace_id: str | None, path: str) -> tuple[str, list[str]]:
    """The trace to import and the others in the file (latest first)."""
    ends: dict[str, int] = {}
    models: set[str] = set()
    for span in spans:
        ends[span.trace_id] = max(ends.get(span.trace_id, 0), span.end_ns)
        if c.operation(span) == c.CHAT:
            models.add(span.trace_id)
    if not ends:
        raise RolloutFileError(path, "the file holds no spans")
    ordered = sorted(ends, key=lambda t: ends[t], reverse=True)
    if trace_id is not None:
        wanted = trace_id.strip().lower()
        if wanted not in ends:
            listed = ", ".join(ordered[:10]) + (" ..." if len(ordered) > 10 else "")
            raise RolloutFileError(path, f"no trace {trace_id!r} in the file; it holds {listed}")
        return wanted, [t for t in ordered if t != wanted]
    candidates = [t for t in ordered if t in models]
    if not candidates:
        raise RolloutFileError(
            path, "no trace in the file has a model call (a span with gen_ai.operation.name chat)"
        )
    return candidates[0], [t for t in ordered if t != candidates[0]]


class _Waiting:
    """The calls turns announced that no tool span has run yet, in announcement order.

    A tool span claims its call by id or, when it does not say its call's id (as
    OpenInference's), by name and arguments (keys in any order): the first waiting call
    that matches. Both are looked up in an index, so claiming costs the same however many
    calls wait."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, Any]] = {}
        self._by_id: dict[bytes, deque[int]] = {}
        self._by_call: dict[bytes, deque[int]] = {}
        self._added = 0

    def add(self, call: dict[str, Any]) -> None:
        number = self._added = self._added + 1
        self._calls[number] = call
        for index, key in ((self._by_id, _key(call.get("id"))), (self._by_call, _call_key(call))):
            if key is not None:
                index.setdefault(key, deque()).append(number)

    def claim(self, call_id: Any, name: Any, arguments: Any) -> dict[str, Any] | None:
        """The first waiting call with id ``call_id`` (or, with none, of that name and
        arguments), taken off the list; ``None`` when no call matches."""
        if call_id is not None:
            key, index = _key(call_id), self._by_id
        else:
            key, index = _call_key({"name": name, "arguments": arguments}), self._by_call
        queue = None if key is None else index.get(key)
        while queue:
            call = self._calls.pop(queue.popleft(), None)
            if call is not None:
                return call
        return None


def _key(value: Any) -> bytes | None:
    """A JSON value as a dict key (keys in any order); ``None`` when it is not JSON."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None


def _call_key(call: Mapping[str, Any]) -> bytes | None:
    return _key([call.get("name"), call.get("arguments")])


@dataclass(slots=True)
class _Timeline:
    """The walk over one trace's spans, in time order, making the run's events."""

    trace_id: str
    own: bool
    agent: Span | None
    first_chat: Span | None
    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    step: int = 0
    full: list[Any] = field(default_factory=list)
    announced: dict[Any, int] = field(default_factory=dict)
    steps: dict[str, int] = field(default_factory=dict)  # span id -> its step
    call_ids: dict[str, Any] = field(default_factory=dict)  # tool span id -> its call's id
    skipped: set[str] = field(default_factory=set)
    unannounced: dict[str, Any] | None = None  # a turn whose tool calls the tool spans say
    waiting: _Waiting = field(default_factory=_Waiting)  # announced, not yet run
    cost: float | None = None
    last_content: Any = None
    last_failed: Span | None = None
    agents: dict[str, str] = field(default_factory=dict)  # span id -> the agent it names
    callers: dict[Any, str] = field(default_factory=dict)  # call id -> the agent that asked

    def emit(self, time_ns: int, event_type: str, data: dict[str, Any], span: Span | None) -> None:
        """Add an event, made to fit the loader's schema (each change is a warning)."""
        data, notes = fit(event_type, data)
        for note in notes:
            self.warnings.append(f"{'the run' if span is None else span.label}: {note}")
        self.events.append((time_ns, event_type, data))

    def warn(self, span: Span, what: str) -> None:
        if not self.own:  # an export's carriers hold what its attributes do not
            self.warnings.append(f"{span.label}: {what}")

    def named(self, span: Span | None, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` naming the agent of ``span`` (when the run has several)."""
        return data if span is None else a.with_agent(data, self.agents.get(span.span_id))

    def carried(self, span: Span, key: str, data: dict[str, Any]) -> dict[str, Any]:
        if self.own and key in span.attributes:
            return m.apply_carrier(data, span.attributes[key])
        return data

    def _own_step(self, span: Span, default: int) -> int:
        given = span.attributes.get(m.STEP)
        return given if self.own and type(given) is int and given >= 1 else default

    # -- the run ------------------------------------------------------------------------

    def open_run(self, time_ns: int) -> None:
        agent = {} if self.agent is None else self.agent.attributes
        chat = None if self.first_chat is None else self.first_chat.attributes
        data = m.run_started_data(agent, chat, self.trace_id)
        if self.agent is not None:
            data = self.carried(self.agent, m.CARRIER_START, self.named(self.agent, data))
        self.emit(time_ns, RUN_STARTED, data, self.agent)

    def close_run(self, time_ns: int) -> None:
        event_type, data = m.terminal_data(self.agent, self.last_content, self.cost)
        if self.agent is None and self.last_failed is not None:
            event_type, data = RUN_FAILED, {"error": m.error_of(self.last_failed)}
        if self.agent is not None:
            data = self.carried(self.agent, m.CARRIER_END, self.named(self.agent, data))
        self.emit(time_ns, event_type, {**data, "step": self.step}, self.agent)

    # -- model calls --------------------------------------------------------------------

    def chat_start(self, span: Span) -> None:
        self.step = self._own_step(span, self.step + 1)
        self.steps[span.span_id] = self.step
        self.unannounced = None
        data, full = m.turn_started_data(span, self.full)
        if full is None:
            self.warn(span, "its input messages were not captured")
            data["messages"] = []
        else:
            self.full = full
            self.results_in(span, data["messages"])
            if not self.own and c.missing_content(span.attributes.get(c.INPUT_MESSAGES)):
                self.warn(span, "the content of its input messages was not captured")
        data = self.carried(span, m.CARRIER_START, self.named(span, data))
        self.emit(span.start_ns, LLM_TURN_STARTED, {**data, "step": self.step}, span)

    def chat_end(self, span: Span) -> None:
        step = self.steps[span.span_id]
        if span.status_code == STATUS_ERROR and not self.own:
            self.last_failed = span
            failed = {**self.named(span, {"error": m.error_of(span)}), "step": step}
            self.emit(span.end_ns, LLM_TURN_FAILED, failed, span)
            return
        model = None if self.agent is None else self.agent.attributes.get(c.REQUEST_MODEL)
        data, captured = m.turn_completed_data(span, model)
        data = self.carried(span, m.CARRIER_END, self.named(span, data))
        data["step"] = step
        if not captured:
            self.warn(
                span, "its output was not captured; the tool calls are those its tool spans made"
            )
            self.unannounced = data
        self.last_content = data.get("content")
        self.emit(span.end_ns, LLM_TURN_COMPLETED, data, span)
        data = self.events[-1][2]  # as written
        for call in data.get("tool_calls") or ():
            self.announced.setdefault(call.get("id"), step)
            if isinstance(data.get("agent"), str):
                self.callers.setdefault(call.get("id"), data["agent"])
            self.waiting.add(call)
        cost = data.get("cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self.cost = (self.cost or 0.0) + cost
            if not self.own:
                delta = self.named(span, {"cumulative_cost_usd": round(self.cost, 9)})
                self.emit(span.end_ns, USAGE_DELTA, delta, span)

    # -- tool calls ---------------------------------------------------------------------

    def tool_start(self, span: Span) -> None:
        data = self.carried(span, m.CARRIER_START, self.named(span, m.tool_started_data(span)))
        self.fit_arguments(span, data)
        claimed = self.waiting.claim(data.get("call_id"), data.get("name"), data.get("arguments"))
        if claimed is not None and data.get("call_id") is None:
            data["call_id"] = claimed.get("id")  # the id of the call it ran, by name and arguments
        if data.get("call_id") is None and not self.own:
            data["call_id"] = f"otel-span-{span.span_id}"
            self.warn(span, f"its call's id was not recorded: named {data['call_id']!r}")
        if self.unannounced is not None:
            call = {k: data.get(k) for k in ("call_id", "name", "arguments")}
            call["id"] = call.pop("call_id")
            self.unannounced["tool_calls"].append(call)
            self.announced.setdefault(call["id"], self.step)
        step = self._own_step(span, self.announced.get(data.get("call_id"), self.step))
        if step < 1:
            self.warn(span, "the tool ran before any model call: left out")
            self.skipped.add(span.span_id)
            return
        if c.legacy_tool_attribute(span.attributes, c.TOOL_ARGUMENTS) is None:
            self.warn(span, "its arguments were not captured")
        self.steps[span.span_id] = step
        self.call_ids[span.span_id] = data.get("call_id")
        self.emit(span.start_ns, TOOL_CALL_STARTED, {**data, "step": step}, span)

    def tool_end(self, span: Span) -> None:
        if span.span_id in self.skipped:
            return
        data, captured = m.tool_completed_data(span)
        if not captured:
            self.warn(span, "its result was not captured")
        data = self.carried(span, m.CARRIER_END, self.named(span, data))
        if data.get("call_id") is None:
            data["call_id"] = self.call_ids.get(span.span_id)
        self.emit(
            span.end_ns, TOOL_CALL_COMPLETED, {**data, "step": self.steps[span.span_id]}, span
        )

    def fit_arguments(self, span: Span, data: dict[str, Any]) -> None:
        """A tool span's arguments as the loader takes a call's: a JSON object or null."""
        arguments = data.get("arguments")
        if arguments is not None:
            data["arguments"] = fit_arguments(arguments)
            if data["arguments"] is None:
                self.warn(span, "its arguments are not a JSON object: left out")

    def results_in(self, span: Span, messages: list[Any]) -> None:
        """The calls whose results a request carries but no tool span said (an
        instrumentation of the model client only, as opentelemetry-instrumentation-openai-v2):
        each becomes a started and completed call at its turn's step, with the arguments the
        turn announced and the result the request sent back."""
        if self.own:
            return
        for message in messages:
            if not isinstance(message, Mapping) or message.get("role") != "tool":
                continue
            call_id = message.get("tool_call_id")
            claimed = None if call_id is None else self.waiting.claim(call_id, None, None)
            if claimed is None:
                continue
            step = self.announced.get(call_id, self.step)
            caller = self.callers.get(call_id)  # the agent whose turn asked for the call
            started = {"call_id": call_id, "name": claimed.get("name")}
            started["arguments"] = claimed.get("arguments")
            started = {**a.with_agent(started, caller), "step": step}
            self.emit(span.start_ns, TOOL_CALL_STARTED, started, span)
            completed = {"call_id": call_id, "name": claimed.get("name"), "duration_ms": None}
            completed["output"] = c.parse_json_text(message.get("content"))
            completed = {**a.with_agent(completed, caller), "step": step}
            self.emit(span.start_ns, TOOL_CALL_COMPLETED, completed, span)

    # -- handoffs -----------------------------------------------------------------------

    def handoff(self, time_ns: int, span: Span) -> None:
        """A handoff span as a ``handoff`` event, at the step where it happened (a transfer
        tool's span: its call's step)."""
        found = a.handoff_of(span)
        if found is None or span.span_id in self.skipped:
            return
        source, target = found
        if target is None and not self.own:
            self.warn(span, "a handoff that does not say which agent it handed to: left out")
            return
        step = self._own_step(span, self.steps.get(span.span_id, self.step))
        data = a.handoff_data(source, target, self.agents.get(span.span_id))
        data = self.carried(span, m.CARRIER_START, data)
        self.emit(time_ns, HANDOFF, {**data, "step": step}, span)

    def extra(self, time_ns: int, name: str, text: Any) -> None:
        data = c.parse_json_text(text)
        if isinstance(data, dict):
            self.emit(time_ns, name, data, None)


_Item = tuple[tuple[int, int, int, int], Callable[[], None]]


def _span_order(spans: list[Span]) -> list[Span]:
    """Spans by start time, a parent before its children.

    Each span's depth is worked out once, walking up only to the first span whose depth
    is known, so a chain of any length costs linear time (a cycle, which the reader
    refuses, would stop the walk too)."""
    by_id = {s.span_id: s for s in spans}
    depths: dict[str, int] = {}
    for span in spans:
        chain: dict[str, None] = {}  # the walk so far, in order
        key: str | None = span.span_id
        while key is not None and key in by_id and key not in depths and key not in chain:
            chain[key] = None
            key = by_id[key].parent_id
        depth = depths.get(key, -1) if key is not None else -1
        for known in reversed(chain):
            depth += 1
            depths[known] = depth
    return sorted(spans, key=lambda s: (s.start_ns, depths[s.span_id]))


def _agent_of(spans: list[Span]) -> Span | None:
    """The outermost agent span (the first, when there are several)."""
    agents = [s for s in spans if c.operation(s) == c.AGENT]
    return agents[0] if agents else None


def _items(line: _Timeline, spans: list[Span]) -> list[_Item]:
    items: list[_Item] = []
    for order, span in enumerate(spans):
        op = c.operation(span)
        closes = span.end_ns > span.start_ns
        end_key = (span.end_ns, _END if closes else _START, order, 1)
        if op == c.CHAT:
            items.append(((span.start_ns, _START, order, 0), partial(line.chat_start, span)))
            if not span.attributes.get(m.OPEN):
                items.append((end_key, partial(line.chat_end, span)))
        elif op == c.TOOL:
            items.append(((span.start_ns, _START, order, 0), partial(line.tool_start, span)))
            if not span.attributes.get(m.OPEN):
                items.append((end_key, partial(line.tool_end, span)))
            if a.handoff_of(span) is not None:  # a transfer tool: control passes as it ends
                done = (end_key[0], end_key[1], order, 2)
                items.append((done, partial(line.handoff, span.end_ns, span)))
        elif op == c.HANDOFF:
            key = (span.start_ns, _START, order, 0)
            items.append((key, partial(line.handoff, span.start_ns, span)))
        for event in span.events:
            if m.EVENT_DATA in event.attributes:
                text = event.attributes[m.EVENT_DATA]
                key = (event.time_ns, _START, order, 2)
                items.append((key, partial(line.extra, event.time_ns, event.name, text)))
    return items


def import_spans(
    spans: list[Span], trace_id: str | None = None, *, path: str = "<trace>"
) -> ImportedRun:
    """The events of one trace of ``spans`` (see the module's docstring)."""
    spans = [as_genai(s) for s in spans]
    chosen, others = choose_trace(spans, trace_id, path)
    ordered = _span_order([s for s in spans if s.trace_id == chosen])
    agent = _agent_of(ordered)
    chats = [s for s in ordered if c.operation(s) == c.CHAT]
    own = all(s.scope == EXPORTER_SCOPE for s in ordered)
    line = _Timeline(
        trace_id=chosen,
        own=own,
        agent=agent,
        first_chat=chats[0] if chats else None,
        agents=a.span_agents(ordered, run_span=agent, own=own),
    )
    start = ordered[0].start_ns if agent is None else agent.start_ns
    end = max(s.end_ns for s in ordered) if agent is None else agent.end_ns
    items = _items(line, ordered)
    items.append(((start, _OPEN_RUN, -1, 0), partial(line.open_run, start)))
    items.append(((end, _CLOSE_RUN, len(ordered), 0), partial(line.close_run, end)))
    items.sort(key=lambda item: item[0])
    for _, handle in items:
        handle()
    reached = 0
    for _, event_type, data in line.events:  # a turn completed later by its tool spans
        line.warnings.extend(f"the run: {note}" for note in fit(event_type, data)[1])
        step = data.get("step")
        if type(step) is int:
            # A call that outlived later turns (an agent run as a tool) completes at the
            # step the run has reached, as a recording writes it: steps never go back.
            reached = max(reached, step)
            data["step"] = reached
    return ImportedRun(chosen, tuple(others), tuple(line.events), tuple(line.warnings))


def write_rollout(
    run: ImportedRun, target: str | os.PathLike[str], redactor: Redactor | None = None
) -> Rollout:
    """Write ``run`` to ``target`` with the recorder (redacted by ``redactor``, the
    default rules when ``None``) and return it as the strict loader reads it back."""
    now = [0]
    recorder = Recorder(
        target, redactor=Redactor() if redactor is None else redactor, clock=lambda: now[0]
    )
    for time_ns, event_type, data in run.events:
        now[0] = time_ns
        recorder.emit(event_type, data)
    recorder.close()
    stats = recorder.stats
    name = os.fspath(target)
    if stats.leaked is not None:
        raise RolloutFileError(name, f"not written: it still held a secret ({stats.leaked})")
    if stats.dropped or stats.encode_errors or stats.write_errors:
        Path(name).unlink(missing_ok=True)
        raise RolloutFileError(
            name,
            f"not written: {stats.dropped} event(s) lost, {stats.write_errors} write error(s) "
            f"(the trace has more events than a rollout holds, or the disk refused)",
        )
    return recorder.rollout(name)


def import_otel(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    trace_id: str | None = None,
    redactor: Redactor | None = None,
    limits: TraceLimits = DEFAULT_TRACE_LIMITS,
) -> tuple[ImportedRun, Rollout]:
    """Read the trace file ``source`` and write one of its traces as the rollout ``target``."""
    spans = read_spans(source, limits)
    run = import_spans(spans, trace_id, path=os.fspath(source))
    return run, write_rollout(run, target, redactor)
