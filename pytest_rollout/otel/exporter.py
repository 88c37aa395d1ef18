"""A rollout as a GenAI trace: ``rollout export otel`` and ``--rollout-otel`` (docs/otel.md).

One run is one trace: an ``invoke_agent`` span for the run, a ``chat`` span per step (its
request when it starts, its answer when it ends) and an ``execute_tool`` span per tool call,
named and attributed as the GenAI conventions say, so the run opens in any OTLP viewer.
An event with no span of its own (``usage.delta``, the analyzers' events, a user's own) is a
span event of the agent span. Each span's times are its events' times (moved on by a
nanosecond where two events share one), and the trace and span ids are derived from the
run's id and test id, so exporting the same run twice gives the same bytes.

In a run with several agents each span names its event's agent
(``gen_ai.agent.name``), the spans of each stretch of one agent's events are the children of
an ``invoke_agent <agent>`` span, and a ``handoff`` event is an ``agent_handoff`` span
(:mod:`.agents`). A run where nobody is named is exported exactly as before.

What the conventions cannot say is carried in ``pytest_rollout.*`` attributes (see
:mod:`.mapping`): the exporter reads each span back the way the importer will and keeps
only the difference, so ``rollout import otel`` of an export equals the original run.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import orjson

from ..format.events import (
    HANDOFF,
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    RUN_STARTED,
    TERMINAL_TYPES,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    Event,
)
from . import agents as a
from . import conventions as c
from . import mapping as m
from .importer import EXPORTER_SCOPE
from .otlp import Span, SpanEvent, encode_trace

__all__ = ["INPUT_MESSAGES", "export_run", "export_runs", "trace_id_for"]

_KIND_INTERNAL: Final = 1
_KIND_CLIENT: Final = 3


def _version() -> str:
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        return importlib.metadata.version("pytest-rollout")
    return ""


def trace_id_for(run_id: Any, test_id: Any) -> str:
    """The trace id of a run: the same run always gets the same id."""
    return hashlib.sha256(f"{run_id}\0{test_id}".encode()).hexdigest()[:32]


@dataclass(slots=True)
class _Draft:
    """A span being built."""

    span_id: str
    name: str
    kind: int
    start: int
    attributes: dict[str, Any]
    parent: str | None = None
    end: int | None = None
    events: list[SpanEvent] = field(default_factory=list)
    status: int = 0
    message: str = ""
    started: dict[str, Any] = field(default_factory=dict)

    def freeze(self, trace_id: str) -> Span:
        end = self.start if self.end is None else self.end
        return Span(
            trace_id=trace_id,
            span_id=self.span_id,
            parent_id=self.parent,
            name=self.name,
            start_ns=self.start,
            end_ns=end,
            attributes=dict(self.attributes),
            events=tuple(self.events),
            status_code=self.status,
            status_message=self.message,
            kind=self.kind,
            scope=EXPORTER_SCOPE,
        )


@dataclass(slots=True)
class _Conversation:
    """The messages sent so far, in both forms, each converted once as it is added (a
    chat span carries the whole input, so converting it anew each turn is quadratic)."""

    messages: list[Any] = field(default_factory=list)
    #: Each message as the conventions' JSON; ``None`` once one has no such form.
    parts: list[bytes] | None = field(default_factory=list)

    def extend(self, new: Sequence[Any]) -> None:
        self.messages.extend(new)
        for message in new:
            if self.parts is None:
                return
            converted = c.message_to_otel(message)
            if converted is None:
                self.parts = None
            else:
                self.parts.append(orjson.dumps(converted))

    def text(self) -> str | None:
        """The whole conversation as ``gen_ai.input.messages`` text."""
        return None if self.parts is None else (b"[" + b",".join(self.parts) + b"]").decode()


@dataclass(slots=True)
class _Builder:
    """Walks a run's events and builds its spans, reading each back as the importer does."""

    trace_id: str
    new_only: bool = False  # chat spans carry only the messages new since the previous one
    agent: _Draft | None = None
    spans: list[_Draft] = field(default_factory=list)
    chat: _Draft | None = None
    first_chat: dict[str, Any] | None = None
    tools: dict[bytes, list[_Draft]] = field(default_factory=dict)  # open, by call id and step
    conversation: _Conversation = field(default_factory=_Conversation)  # as exported
    read_full: list[Any] = field(default_factory=list)  # as the importer will see it
    model: Any = None
    last_content: Any = None
    cost: float | None = None
    stretch: _Draft | None = None  # the invoke_agent span of the acting agent's stretch
    stretches: list[_Draft] = field(default_factory=list)

    def new(
        self, name: str, kind: int, start: int, attributes: dict[str, Any], event: Event | None
    ) -> _Draft:
        """A new span, the child of the run's span, or of the agent's stretch that
        ``event`` belongs to; it names ``event``'s agent."""
        digest = hashlib.sha256(f"{self.trace_id}:{len(self.spans)}".encode()).hexdigest()
        home = self.agent if event is None else self._home(event)
        parent = None if home is None else home.span_id
        agent = None if event is None else _agent(event)
        if agent is not None:
            attributes[c.AGENT_NAME] = agent
        draft = _Draft(digest[:16], name, kind, start, attributes, parent)
        self.spans.append(draft)
        return draft

    def _home(self, event: Event) -> _Draft | None:
        """The span an event's spans and span events go under: its agent's stretch, or the
        run's span."""
        stretch = self.stretch
        agent = _agent(event)
        if stretch is not None and agent is not None and stretch.attributes[c.AGENT_NAME] == agent:
            return stretch
        return self.agent

    def follow(self, event: Event, time_ns: int) -> None:
        """Open an ``invoke_agent`` span where another agent starts acting; events that name
        nobody leave the stretch open."""
        agent = _agent(event)
        if agent is None or event.type == RUN_STARTED or event.type in TERMINAL_TYPES:
            return
        if self.stretch is None or self.stretch.attributes[c.AGENT_NAME] != agent:
            attrs = {c.OPERATION: c.AGENT, c.AGENT_NAME: agent}
            self.stretch = self.new(f"{c.AGENT} {agent}", _KIND_INTERNAL, time_ns, attrs, None)
            self.stretches.append(self.stretch)
        self.stretch.end = time_ns

    def add(self, event: Event, time_ns: int) -> None:
        handler = {
            RUN_STARTED: self.run_started,
            LLM_TURN_STARTED: self.turn_started,
            LLM_TURN_COMPLETED: self.turn_completed,
            TOOL_CALL_STARTED: self.tool_started,
            TOOL_CALL_COMPLETED: self.tool_completed,
            HANDOFF: self.handoff,
        }.get(event.type)
        if event.type in TERMINAL_TYPES and self.agent is not None:
            handler = self.terminal
        if self.agent is not None:
            self.follow(event, time_ns)
        if handler is None or not handler(event, time_ns):
            self.extra(event, time_ns)

    def extra(self, event: Event, time_ns: int) -> None:
        data = {**event.data, "step": event.step}
        note = SpanEvent(event.type, time_ns, {m.EVENT_DATA: _json(data)})
        home = self._home(event)
        if home is not None:
            home.events.append(note)

    # -- the run ------------------------------------------------------------------------

    def run_started(self, event: Event, time_ns: int) -> bool:
        if self.agent is not None:
            return False
        data = event.data
        self.model = data.get("model")
        name = f"{c.AGENT} {data.get('test_id') or 'rollout'}"
        self.agent = self.new(name, _KIND_INTERNAL, time_ns, m.agent_attributes(data), None)
        self.agent.started = dict(data)
        return True

    def terminal(self, event: Event, time_ns: int) -> bool:
        agent = self.agent
        assert agent is not None
        attrs, agent.status, agent.message = m.terminal_attributes(event.type, event.data)
        agent.attributes.update(attrs)
        agent.end = time_ns
        read_start = m.run_started_data(agent.attributes, self.first_chat, self.trace_id)
        _carry(agent, m.CARRIER_START, agent.started, read_start)
        _, read_end = m.terminal_data(agent.freeze(self.trace_id), self.last_content, self.cost)
        _carry(agent, m.CARRIER_END, event.data, read_end)
        return True

    # -- model calls --------------------------------------------------------------------

    def turn_started(self, event: Event, time_ns: int) -> bool:
        if self.agent is None:
            return False
        self._close_chat()
        data = event.data
        messages = data.get("messages")
        if self.new_only:
            self.conversation = _Conversation()
        self.conversation.extend(messages if isinstance(messages, list) else [])
        text = self.conversation.text()
        attrs = m.chat_attributes(data, self.model, text)
        attrs[m.STEP] = event.step
        if self.new_only:
            attrs[m.NEW_INPUT] = True
        if self.first_chat is None:
            self.first_chat = dict(attrs)
        chat = self.new(f"{c.CHAT} {self.model or 'model'}", _KIND_CLIENT, time_ns, attrs, event)
        # The importer reads the input back as the conversation it was converted from
        # (each message was checked to read back as itself), so it is not parsed here.
        shown = None if text is None else list(self.conversation.messages)
        full, fresh = m.read_input(chat.attributes, shown, self.read_full)
        read = a.with_agent(m.request_data(chat.attributes, fresh), a.named(chat.attributes))
        if full is not None:
            self.read_full = full
        _carry(chat, m.CARRIER_START, data, read)
        self.chat = chat
        return True

    def turn_completed(self, event: Event, time_ns: int) -> bool:
        chat = self.chat
        if chat is None or chat.attributes.get(m.STEP) != event.step:
            return False
        self.chat = None
        data = event.data
        chat.attributes.update(m.completed_attributes(data))
        chat.end = time_ns
        read, _ = m.turn_completed_data(chat.freeze(self.trace_id), self.model)
        _carry(chat, m.CARRIER_END, data, a.with_agent(read, a.named(chat.attributes)))
        self.last_content = data.get("content")
        cost = data.get("cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self.cost = (self.cost or 0.0) + cost
        return True

    def _close_chat(self) -> None:
        if self.chat is not None:
            self.chat.attributes[m.OPEN] = True
            self.chat = None

    # -- tool calls ---------------------------------------------------------------------

    def tool_started(self, event: Event, time_ns: int) -> bool:
        if self.agent is None:
            return False
        data = event.data
        attrs, _, _ = m.tool_attributes(data, None)
        attrs[m.STEP] = event.step
        tool = self.new(f"{c.TOOL} {data.get('name')}", _KIND_INTERNAL, time_ns, attrs, event)
        tool.started = dict(data)
        read = a.with_agent(m.tool_started_data(tool.freeze(self.trace_id)), a.named(attrs))
        _carry(tool, m.CARRIER_START, data, read)
        self.tools.setdefault(_call_key(data, event.step), []).append(tool)
        return True

    def tool_completed(self, event: Event, time_ns: int) -> bool:
        data = event.data
        waiting = self.tools.get(_call_key(data, event.step))
        if not waiting:
            return False
        tool = waiting.pop(0)
        attrs, tool.status, tool.message = m.tool_attributes(tool.started, data)
        tool.attributes.update(attrs)
        tool.end = time_ns
        read, _ = m.tool_completed_data(tool.freeze(self.trace_id))
        _carry(tool, m.CARRIER_END, data, a.with_agent(read, a.named(tool.attributes)))
        return True

    # -- handoffs -----------------------------------------------------------------------

    def handoff(self, event: Event, time_ns: int) -> bool:
        """A ``handoff`` event as an ``agent_handoff`` span (of no duration)."""
        if self.agent is None:
            return False
        data = event.data
        attrs: dict[str, Any] = {c.OPERATION: c.HANDOFF}
        for key, name in (("from", a.FROM_AGENT), ("to", a.TO_AGENT)):
            if isinstance(data.get(key), str):
                attrs[name] = data[key]
        attrs[m.STEP] = event.step
        target = data.get("to")
        name = f"handoff to {target}" if isinstance(target, str) else "handoff"
        span = self.new(name, _KIND_INTERNAL, time_ns, attrs, event)
        span.end = time_ns
        source, target = a.handoff_of(span.freeze(self.trace_id)) or (None, None)
        _carry(span, m.CARRIER_START, data, a.handoff_data(source, target, a.named(attrs)))
        return True

    def finish(self) -> list[Span]:
        self._close_chat()
        ends: dict[str | None, int] = {}
        for draft in self.spans:
            ends[draft.parent] = max(ends.get(draft.parent, 0), draft.start, draft.end or 0)
        for stretch in self.stretches:  # a stretch lasts as long as the spans it holds
            stretch.end = max(stretch.end or stretch.start, ends.get(stretch.span_id, 0))
        for waiting in self.tools.values():
            for tool in waiting:
                tool.attributes[m.OPEN] = True
        return [draft.freeze(self.trace_id) for draft in self.spans]


def _carry(draft: _Draft, key: str, original: dict[str, Any], read: dict[str, Any]) -> None:
    text = m.carrier(original, read)
    if text is not None:
        draft.attributes[key] = text
    else:
        draft.attributes.pop(key, None)


def _agent(event: Event) -> str | None:
    """The agent an event names, or ``None``."""
    agent = event.data.get("agent")
    return agent if isinstance(agent, str) else None


def _call_key(data: dict[str, Any], step: int) -> bytes:
    """A tool call's call id and step, as a dict key."""
    return orjson.dumps([data.get("call_id"), step])


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _times(events: Sequence[Event]) -> list[int]:
    """Each event's time in nanoseconds, strictly increasing."""
    times: list[int] = []
    previous = 0
    for event in events:
        try:
            moment = datetime.fromisoformat(event.ts.replace("Z", "+00:00"))
            now = int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
        except ValueError:
            now = previous + 1000
        previous = max(now, previous + 1)
        times.append(previous)
    return times


#: What each chat span's ``gen_ai.input.messages`` holds: the request's whole input, as the
#: conventions say (the file then grows with the square of the turns), or only the messages
#: new since the previous chat span (linear; ``rollout import otel`` reads both).
INPUT_MESSAGES: Final = ("full", "new")


def export_run(events: Sequence[Event], *, input_messages: str = "full") -> tuple[str, list[Span]]:
    """One run's trace id and spans."""
    if input_messages not in INPUT_MESSAGES:
        raise ValueError(f"input_messages is one of {INPUT_MESSAGES}, not {input_messages!r}")
    started = events[0].data if events and events[0].type == RUN_STARTED else {}
    trace_id = trace_id_for(started.get("run_id"), started.get("test_id"))
    builder = _Builder(trace_id, new_only=input_messages == "new")
    for event, time_ns in zip(events, _times(events), strict=True):
        builder.add(event, time_ns)
    return trace_id, builder.finish()


def export_runs(
    runs: Iterable[Sequence[Event]],
    *,
    service: str = "pytest-rollout",
    input_messages: str = "full",
) -> bytes:
    """OTLP/JSON lines, one trace (one ``ExportTraceServiceRequest``) per run."""
    lines = []
    version = _version()
    for events in runs:
        _, spans = export_run(events, input_messages=input_messages)
        resource = {"service.name": service, "telemetry.sdk.name": EXPORTER_SCOPE}
        lines.append(encode_trace(spans, resource=resource, scope=EXPORTER_SCOPE, version=version))
    return b"".join(lines)
