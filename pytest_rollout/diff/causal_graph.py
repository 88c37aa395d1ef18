"""The causal graph of a run: which earlier tool results each LLM turn saw, and which values
returned by one tool call a later call was given. Found from the recorded events alone.

Nodes are the run's LLM turns (``turn:<step>``) and tool calls (``call:<call_id>``; a call
without an id is ``call:#<n>``, the n-th call of the run, and a second call reusing an id
is ``call:<call_id>#<n>``), each with its step, tool name and acting agent (``data.agent``).
Edges, each from an earlier tool call:

``context`` (call -> turn)
    The turn's request messages (``llm.turn.started`` ``messages``) hold the call's result:
    a result message or block naming the call's id (OpenAI Chat ``tool_call_id``, Responses
    ``function_call_output`` ``call_id``, Anthropic ``tool_result`` ``tool_use_id``, Bedrock
    ``toolResult`` ``toolUseId``, Gemini ``functionResponse`` ``id``), or, when no id
    matches, a result whose content is the call's output (compared as text or as parsed
    JSON, through the wrappings the APIs put around it: a ``text`` block list, MCP's
    ``content``, Gemini's ``{"output": ...}`` / ``{"result": ...}``, Bedrock's ``json``).
``data_flow`` (call -> call)
    A value of the earlier call's output appears in the later call's arguments. The values
    of an output are its string and number leaves (of a string holding JSON, its leaves
    too), as text, at least :data:`MIN_SHARED_CHARS` characters long after trimming
    whitespace: such a value counts when it is an argument leaf, or inside one where a word
    or a punctuation mark begins (``"ORD-1234"`` in ``"refund ORD-1234 now"`` or
    ``"id=ORD-1234"``, not in ``"xORD-1234"``). The words of a longer text output (runs of
    letters, digits and ``_@#$%&+/:=?.~-``) count too, but only as a whole argument leaf:
    ``refund(order_id="ORD-1234")`` after a call that said ``"Order ORD-1234 shipped."``.
    Values shorter than the minimum (``"1"``, ``"yes"``, ``"Paris"``) never make an edge.
    When several earlier calls returned a value, the latest one is its source; between two
    calls the edge carries the longest value they share.

The work is bounded, so that a run of thousands of calls with large outputs costs about
one pass over it: values are indexed (by text, and by their first :data:`MIN_SHARED_CHARS`
characters and length for the search inside arguments), never compared pairwise. The
limits: :data:`MAX_VALUE_CHARS` (a longer leaf is no value, though its words are),
:data:`MAX_OUTPUT_VALUES` and :data:`MAX_OUTPUT_CHARS` (what one output adds to the index),
:data:`MAX_ARGUMENT_CHARS` (the argument text of one call searched),
:data:`MAX_PREFIX_LENGTHS` (the lengths of values searched for by their first characters),
:data:`MAX_INDEXED` (the values, and the words, remembered: the latest),
:data:`MAX_FLOW_EDGES` (the data-flow edges into one call: the longest values) and
:data:`MAX_JSON_CHARS` (the longest string read as JSON). See docs/analyzers.md.
"""

from __future__ import annotations

import bisect
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..format.events import (
    CAUSAL_GRAPH_SNAPSHOT,
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    TOOL_CALL_COMPLETED,
    TOOL_CALL_STARTED,
    Event,
)
from ..safety.sanitize import excerpt, sanitize
from .causal_values import (
    MAX_JSON_CHARS,
    MAX_VALUE_CHARS,
    MIN_SHARED_CHARS,
    leaves,
    result_keys,
    tool_results,
    words,
)

__all__ = [
    "CAUSAL_GRAPH_SNAPSHOT",
    "MAX_ARGUMENT_CHARS",
    "MAX_FLOW_EDGES",
    "MAX_INDEXED",
    "MAX_JSON_CHARS",
    "MAX_OUTPUT_CHARS",
    "MAX_OUTPUT_VALUES",
    "MAX_PREFIX_LENGTHS",
    "MAX_VALUE_CHARS",
    "MIN_SHARED_CHARS",
    "CausalGraph",
    "Edge",
    "GraphBuilder",
    "Node",
    "build_graph",
    "fed_by",
    "fed_text",
    "feeding_text",
    "graph_of_run",
    "render_graph",
]

#: The most leaves and words one output adds to the index.
MAX_OUTPUT_VALUES: Final = 1_000
#: The most characters of one output's text read for values and words.
MAX_OUTPUT_CHARS: Final = 65_536
#: The most characters of one call's argument text searched for earlier values.
MAX_ARGUMENT_CHARS: Final = 16_384
#: The lengths of values kept per starting characters for the substring search (the first
#: ones: a value of another length is still found as a whole argument).
MAX_PREFIX_LENGTHS: Final = 32
#: The most values, and words, indexed: those returned the longest ago are forgotten first.
MAX_INDEXED: Final = 100_000
#: The most ``data_flow`` edges into one call (those with the longest values).
MAX_FLOW_EDGES: Final = 8
#: The calls without an id kept waiting for their completion, and the calls kept per output
#: for a result matched by its content (the latest).
_MAX_OPEN_UNNAMED: Final = 1_000
_MAX_SAME_RESULTS: Final = 64

_EDGE_KINDS: Final = ("context", "data_flow")
#: Where a value is looked for inside a longer argument: where a word or a punctuation mark
#: begins ("ORD-1234" in "refund ORD-1234" or "id=ORD-1234", not in "xORD-1234").
_STARTS: Final = re.compile(r"\b\w|[^\w\s]")


@dataclass(frozen=True, slots=True)
class Node:
    """A turn (``kind`` ``"turn"``, ``name`` ``None``) or a tool call (``"tool_call"``)."""

    id: str
    kind: str
    step: int
    name: str | None = None
    agent: str | None = None

    def to_data(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "step": self.step,
            "name": self.name,
            "agent": self.agent,
        }


@dataclass(frozen=True, slots=True)
class Edge:
    """``source`` fed ``target``: ``kind`` ``"context"`` (``value`` ``None``) or
    ``"data_flow"`` (``value``: the text shared)."""

    source: str
    target: str
    kind: str
    value: str | None = None

    def to_data(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "kind": self.kind, "value": self.value}


@dataclass(frozen=True, slots=True)
class CausalGraph:
    """A run's nodes (in the order the run met them, which is step order) and edges."""

    nodes: tuple[Node, ...] = ()
    edges: tuple[Edge, ...] = ()
    _by_id: dict[str, Node] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {n.id: n for n in self.nodes})

    def node(self, node_id: str) -> Node | None:
        return self._by_id.get(node_id)

    def edges_into(self, node_id: str) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.target == node_id)

    def to_data(self) -> dict[str, Any]:
        """The ``causal.graph.snapshot`` data."""
        return {
            "nodes": [n.to_data() for n in self.nodes],
            "edges": [e.to_data() for e in self.edges],
        }

    @classmethod
    def from_data(cls, data: object) -> CausalGraph:
        """The graph a ``causal.graph.snapshot`` holds. The data is untrusted: a node or edge
        that does not read is left out (an edge also when it names an unknown node)."""
        nodes: dict[str, Node] = {}
        edges: list[Edge] = []
        if not isinstance(data, Mapping):
            return cls()
        for raw in _list(data.get("nodes")):
            node = _node_of(raw)
            if node is not None and node.id not in nodes:
                nodes[node.id] = node
        for raw in _list(data.get("edges")):
            if not isinstance(raw, Mapping):
                continue
            source, target, kind, value = (raw.get(k) for k in ("from", "to", "kind", "value"))
            if source in nodes and target in nodes and kind in _EDGE_KINDS and _text_or_none(value):
                edges.append(Edge(source, target, kind, value))
        return cls(tuple(nodes.values()), tuple(edges))


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _text_or_none(value: object) -> bool:
    return value is None or isinstance(value, str)


def _node_of(raw: object) -> Node | None:
    if not isinstance(raw, Mapping):
        return None
    node_id, kind, step = raw.get("id"), raw.get("kind"), raw.get("step")
    name, agent = raw.get("name"), raw.get("agent")
    if not isinstance(node_id, str) or kind not in ("turn", "tool_call"):
        return None
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        return None
    if not _text_or_none(name) or not _text_or_none(agent):
        return None
    return Node(node_id, kind, step, name, agent)


# -- building -----------------------------------------------------------------------------


class _Draft:
    __slots__ = ("agent", "call_id", "id", "kind", "name", "serial", "step")

    def __init__(self, node_id: str, kind: str, step: int, name: Any, agent: Any) -> None:
        self.id, self.kind, self.step = node_id, kind, step
        self.name = name if isinstance(name, str) else None
        self.agent = agent if isinstance(agent, str) else None
        self.call_id: str | None = None
        self.serial = 0  # the node's place in the run

    def node(self) -> Node:
        return Node(self.id, self.kind, self.step, self.name, self.agent)


class GraphBuilder:
    """Builds a run's graph one event at a time (:meth:`add`), as a live run emits them or
    a recorded one holds them; :meth:`graph` at any point. Never raises on odd data."""

    __slots__ = (
        "_calls",
        "_done_ids",
        "_edge_keys",
        "_edges",
        "_linked",
        "_nodes",
        "_open_ids",
        "_open_unnamed",
        "_prefixes",
        "_results",
        "_values",
        "_words",
    )

    def __init__(self) -> None:
        self._nodes: dict[str, _Draft] = {}
        self._edges: list[Edge] = []
        self._edge_keys: set[tuple[str, str, str]] = set()
        self._calls = 0
        # the calls started and not completed, by id, and those without one (in order)
        self._open_ids: dict[str, list[_Draft]] = {}
        self._open_unnamed: list[_Draft] = []
        self._done_ids: dict[str, _Draft] = {}  # call id -> the latest call completed
        self._results: dict[bytes, list[_Draft]] = {}  # output digest -> calls, in order
        self._linked: set[str] = set()  # the calls a turn saw (by context)
        # value -> the latest call returning it, and word of a longer text -> likewise
        self._values: OrderedDict[str, _Draft] = OrderedDict()
        self._words: OrderedDict[str, _Draft] = OrderedDict()
        self._prefixes: dict[str, list[int]] = {}  # first characters -> values' lengths

    def add(self, event_type: str, data: Mapping[str, Any], step: int) -> None:
        """Take one event of the run (its type, data and step), in run order."""
        seen: object = data
        if not isinstance(seen, Mapping):
            return
        if event_type == LLM_TURN_STARTED:
            self._context(self._turn(data, step).id, data.get("messages"))
        elif event_type == LLM_TURN_COMPLETED:
            self._turn(data, step)
        elif event_type == TOOL_CALL_STARTED:
            self._call_started(data, step)
        elif event_type == TOOL_CALL_COMPLETED:
            self._call_completed(data)

    def graph(self) -> CausalGraph:
        return CausalGraph(tuple(d.node() for d in self._nodes.values()), tuple(self._edges))

    def _new(self, node_id: str, kind: str, step: int, data: Mapping[str, Any]) -> _Draft:
        draft = _Draft(node_id, kind, step, data.get("name"), data.get("agent"))
        draft.serial = len(self._nodes)
        self._nodes[node_id] = draft
        return draft

    def _turn(self, data: Mapping[str, Any], step: int) -> _Draft:
        node_id = f"turn:{step}"
        draft = self._nodes.get(node_id)
        if draft is None:
            draft = self._new(node_id, "turn", step, data)
            draft.name = None
        elif draft.agent is None and isinstance(data.get("agent"), str):
            draft.agent = data["agent"]
        return draft

    def _edge(self, source: str, target: str, kind: str, value: str | None = None) -> None:
        key = (source, target, kind)
        if key not in self._edge_keys:
            self._edge_keys.add(key)
            self._edges.append(Edge(source, target, kind, value))

    def _context(self, turn: str, messages: Any) -> None:
        for call_id, name, content in tool_results(messages):
            source = self._done_ids.get(call_id) if isinstance(call_id, str) else None
            if source is None:
                source = self._by_content(name, content)
            if source is not None:
                self._linked.add(source.id)
                self._edge(source.id, turn, "context")

    def _by_content(self, name: Any, content: Any) -> _Draft | None:
        """The completed call whose output ``content`` is: of those, one named ``name``
        first, one no turn saw yet first, the earliest first."""
        found: list[_Draft] = []
        for key in result_keys(content):
            found.extend(self._results.get(key, ()))
        if not found:
            return None

        def rank(draft: _Draft) -> tuple[bool, bool, int]:
            other = isinstance(name, str) and draft.name != name
            return other, draft.id in self._linked, draft.serial

        return min(found, key=rank)

    def _call_started(self, data: Mapping[str, Any], step: int) -> None:
        self._calls += 1
        call_id = data.get("call_id")
        if not isinstance(call_id, str):
            node_id = f"call:#{self._calls}"
        elif f"call:{call_id}" in self._nodes:
            node_id = f"call:{call_id}#{self._calls}"
        else:
            node_id = f"call:{call_id}"
        if node_id in self._nodes:  # an id that looks like one made here: made unique
            node_id = f"call:#{self._calls}#{len(self._nodes)}"
        self._flows(node_id, data.get("arguments"))
        draft = self._new(node_id, "tool_call", step, data)
        if isinstance(call_id, str):
            draft.call_id = call_id
            self._open_ids.setdefault(call_id, []).append(draft)
        else:
            self._open_unnamed.append(draft)
            del self._open_unnamed[:-_MAX_OPEN_UNNAMED]

    def _completed_call(self, data: Mapping[str, Any]) -> _Draft | None:
        """The open call a completion completes: the oldest with its id, else the oldest
        without an id and with its name."""
        call_id = data.get("call_id")
        waiting = self._open_ids.get(call_id) if isinstance(call_id, str) else None
        if waiting:
            draft = waiting.pop(0)
            if not waiting:
                del self._open_ids[draft.call_id]  # type: ignore[arg-type]
            return draft
        name = data.get("name")
        for index, draft in enumerate(self._open_unnamed):
            if draft.name == name:
                return self._open_unnamed.pop(index)
        return None

    def _call_completed(self, data: Mapping[str, Any]) -> None:
        draft = self._completed_call(data)
        if draft is None:
            return
        if draft.call_id is not None:
            self._done_ids[draft.call_id] = draft
        if data.get("error") is not None or "output" not in data:
            return
        output = data.get("output")
        for key in result_keys(output):
            same = self._results.setdefault(key, [])
            same.append(draft)
            del same[:-_MAX_SAME_RESULTS]
        self._index(draft, output)

    def _index(self, draft: _Draft, output: Any) -> None:
        """Add the values and words of a call's output to the index (on every call's path:
        kept lean)."""
        budget = [MAX_OUTPUT_VALUES, MAX_OUTPUT_CHARS]
        values, prefixes = self._values, self._prefixes
        for text in leaves(output, budget):
            size = len(text)
            if size < MIN_SHARED_CHARS:
                continue
            if size <= MAX_VALUE_CHARS:
                if values.pop(text, None) is None:  # a new value: searchable by its start
                    lengths = prefixes.setdefault(text[:MIN_SHARED_CHARS], [])
                    if size not in lengths and len(lengths) < MAX_PREFIX_LENGTHS:
                        lengths.append(size)
                values[text] = draft  # the latest call returning it
                if len(values) > MAX_INDEXED:
                    values.popitem(last=False)
            if " " in text or "\n" in text or "\t" in text:  # more than one word
                budget[0] = self._index_words(draft, text, budget[0])

    def _index_words(self, draft: _Draft, text: str, room: int) -> int:
        """Add the words of ``text`` to the index, ``room`` at most; the room left."""
        index = self._words
        for word in words(text[:MAX_OUTPUT_CHARS]):
            if room <= 0:
                break
            room -= 1
            index.pop(word, None)
            index[word] = draft
            if len(index) > MAX_INDEXED:
                index.popitem(last=False)
        return room

    def _flows(self, node_id: str, arguments: Any) -> None:
        """The ``data_flow`` edges into a call given ``arguments``."""
        best: dict[str, tuple[str, _Draft]] = {}  # source -> the longest value it shares

        def found(value: str, source: _Draft) -> None:
            if len(value) > len(best.get(source.id, ("",))[0]):
                best[source.id] = (value, source)

        budget = [MAX_OUTPUT_VALUES, MAX_ARGUMENT_CHARS]
        for text in leaves(arguments, budget):
            if len(text) < MIN_SHARED_CHARS:
                continue
            for index in (self._values, self._words):  # the argument is the value
                source = index.get(text)
                if source is not None:
                    found(text, source)
            # _leaves took the text off the budget: what was left before it is searched
            self._substrings(text[: max(0, budget[1] + len(text))], found)
        ranked = sorted(best.values(), key=lambda item: -len(item[0]))[:MAX_FLOW_EDGES]
        for value, source in sorted(ranked, key=lambda item: item[1].serial):
            self._edge(source.id, node_id, "data_flow", value)

    def _substrings(self, text: str, found: Callable[[str, _Draft], None]) -> None:
        """Each indexed value that ``text`` holds where a word or a punctuation mark begins,
        found by its first characters and its length."""
        prefixes, values = self._prefixes, self._values
        size = MIN_SHARED_CHARS
        for match in _STARTS.finditer(text):
            start = match.start()
            lengths = prefixes.get(text[start : start + size])
            if lengths is None:
                continue
            for length in lengths:
                value = text[start : start + length]
                source = values.get(value)
                if source is not None:
                    found(value, source)


def build_graph(events: Iterable[Event]) -> CausalGraph:
    """The causal graph of a run, from its events (those of any other type are skipped)."""
    builder = GraphBuilder()
    for event in events:
        builder.add(event.type, event.data, event.step)
    return builder.graph()


def graph_of_run(events: Iterable[Event]) -> tuple[CausalGraph, bool]:
    """The run's graph: that of its last ``causal.graph.snapshot`` when it has one (``True``),
    else built from its events (``False``)."""
    events = list(events)
    for event in reversed(events):
        if event.type == CAUSAL_GRAPH_SNAPSHOT:
            return CausalGraph.from_data(event.data), True
    return build_graph(events), False


def fed_by(graph: CausalGraph, call_id: str) -> tuple[Edge, ...]:
    """The edges into the tool call ``call_id`` (node ``call:<call_id>``), in graph order:
    the ``data_flow`` edges, the earlier calls whose values it was given."""
    return graph.edges_into(f"call:{call_id}")


def feeding_text(graph: CausalGraph, call_id: str) -> str | None:
    """One line on what fed the tool call ``call_id``, sanitized:
    ``call c1 (lookup_order) at step 2 via data_flow 'ORD-1234'`` (the latest source of the
    longest value), else, when no value reached its arguments, what the turn that asked for
    it had seen: ``call c1 (lookup_order) at step 2 via context``. ``None``: nothing did."""
    call = graph.node(f"call:{call_id}")
    if call is None:
        return None
    flows = [e for e in fed_by(graph, call_id) if e.kind == "data_flow"]
    if not flows:
        flows = list(graph.edges_into(f"turn:{call.step}"))
    if not flows:
        return None
    order = {n.id: i for i, n in enumerate(graph.nodes)}
    edge = max(flows, key=lambda e: (len(e.value or ""), order.get(e.source, -1)))
    source = graph.node(edge.source)
    line = _source_text(edge.source, source) + f" via {edge.kind}"
    if edge.value is not None:
        line += f" {_quoted(edge.value)}"
    more = len(flows) - 1
    return line + (f" (and {more} more)" if more else "")


def fed_text(events: Iterable[Event], event: Event | None, path: str = "") -> str | None:
    """:func:`feeding_text` of the tool call a report's diverged ``event`` stands for, in
    the run of ``events``: the call itself, or the call of a turn's ``tool_calls`` that
    ``path`` (the first difference, ``data.tool_calls[1].arguments``) points at. ``None``
    for another event, or a call no earlier value flowed into."""
    if event is None:
        return None
    call_id: Any = None
    if event.type in (TOOL_CALL_STARTED, TOOL_CALL_COMPLETED):
        call_id = event.data.get("call_id")
    elif event.type == LLM_TURN_COMPLETED and (found := _ANNOUNCED.match(path)) is not None:
        calls = event.data.get("tool_calls")
        index = int(found.group(1))
        if isinstance(calls, list) and index < len(calls) and isinstance(calls[index], Mapping):
            call_id = calls[index].get("id")
    if not isinstance(call_id, str):
        return None
    run = events if isinstance(events, Sequence) else list(events)
    at = bisect.bisect_left(run, event.seq, key=_seq)
    # The events just before the call are where what fed it comes from: the graph of a
    # window of them keeps a failure's report quick on a run of any length.
    graph = build_graph(run[max(0, at - FED_BY_WINDOW) : at + FED_BY_WINDOW // 8])
    # Every earlier result is in a turn's context: only a value that flowed into the call's
    # arguments says which one fed it.
    if not any(edge.kind == "data_flow" for edge in fed_by(graph, call_id)):
        return None
    return feeding_text(graph, call_id)


def _seq(event: Event) -> int:
    return event.seq


#: How many events before the diverged call the report's "Fed by" looks back over.
FED_BY_WINDOW: Final = 200

_ANNOUNCED: Final = re.compile(r"data\.tool_calls\[(\d+)\]")


def _source_text(node_id: str, node: Node | None) -> str:
    kind, _, rest = node_id.partition(":")
    text = f"{kind} {sanitize(rest)}"
    if node is None:
        return text
    if node.name is not None:
        text += f" ({sanitize(node.name)})"
    return f"{text} at step {node.step}"


def _quoted(value: str) -> str:
    """``value`` in single quotes (backslashes and quotes escaped), sanitized and cut."""
    return "'" + excerpt(value.replace("\\", "\\\\").replace("'", "\\'"), 60) + "'"


def _label(node_id: str, node: Node | None) -> str:
    text = sanitize(node_id)
    if node is None or node.kind != "tool_call":
        return text
    inside = (
        f"step {node.step}" if node.name is None else f"{sanitize(node.name)}, step {node.step}"
    )
    return f"{text} ({inside})"


def render_graph(graph: CausalGraph) -> list[str]:
    """The graph as text (``rollout show --graph``): its size, the nodes in step order, then
    one line per edge (``call:c1 (lookup_order, step 1) -> turn:2  context``). Sanitized."""
    nodes = sorted(graph.nodes, key=lambda n: n.step)
    count = len(graph.edges)
    lines = [
        f"{len(nodes)} node{'' if len(nodes) == 1 else 's'}, "
        f"{count} edge{'' if count == 1 else 's'}",
        "nodes:",
    ]
    for node in nodes:
        line = f"  step {node.step}  {sanitize(node.id)}"
        if node.name is not None:
            line += f"  {sanitize(node.name)}"
        if node.agent is not None:
            line += f"  [{sanitize(node.agent)}]"
        lines.append(line)
    lines.append("edges:" if graph.edges else "edges: none")
    for edge in graph.edges:
        source = _label(edge.source, graph.node(edge.source))
        target = _label(edge.target, graph.node(edge.target))
        line = f"  {source} -> {target}  {edge.kind}"
        if edge.value is not None:
            line += f" {_quoted(edge.value)}"
        lines.append(line)
    return lines
