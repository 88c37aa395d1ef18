"""The event model: one recorded event of an agent run, and the core vocabulary."""

from __future__ import annotations

from typing import Any, Final, NamedTuple

__all__ = [
    "AUDIT_ACTION",
    "CAUSAL_GRAPH_SNAPSHOT",
    "CONTEXT_WINDOW_SNAPSHOT",
    "CONTEXT_WINDOW_WARNING",
    "CORE_TYPES",
    "COST_ANOMALY",
    "DROP_DETECTED",
    "ERROR_CONTEXT",
    "ERROR_FAMILIES",
    "GUARDRAIL_CHECKED",
    "HANDOFF",
    "HOOK_FAILED",
    "LLM_REQUEST_SNAPSHOT",
    "LLM_RESPONSE_META",
    "LLM_TURN_COMPLETED",
    "LLM_TURN_FAILED",
    "LLM_TURN_STARTED",
    "MCP_TOOLS_LISTED",
    "MEMORY_OBSERVE_FAILED",
    "REPLAY_DIVERGENCE",
    "RUN_COMPLETED",
    "RUN_FAILED",
    "RUN_STARTED",
    "SKILL_FORK_FAILED",
    "STEP_TYPE_PREFIXES",
    "TERMINAL_TYPES",
    "TOOL_ANTIPATTERN",
    "TOOL_CALL_COMPLETED",
    "TOOL_CALL_STARTED",
    "TOOL_DECISION",
    "TOOL_HOOK_FAILED",
    "TOOL_HOOK_MUTATION",
    "USAGE_DELTA",
    "Event",
    "JsonEvents",
    "is_step_carrying",
]

# -- the run and its turns ----------------------------------------------------------------
RUN_STARTED: Final = "run.started"
RUN_COMPLETED: Final = "run.completed"
RUN_FAILED: Final = "run.failed"
LLM_TURN_STARTED: Final = "llm.turn.started"
LLM_TURN_COMPLETED: Final = "llm.turn.completed"
LLM_TURN_FAILED: Final = "llm.turn.failed"
TOOL_CALL_STARTED: Final = "tool.call.started"
TOOL_CALL_COMPLETED: Final = "tool.call.completed"
USAGE_DELTA: Final = "usage.delta"
#: A replayed run asked for something the recording cannot answer (docs/replay.md).
REPLAY_DIVERGENCE: Final = "replay.divergence"
#: Events the recorder lost stand behind this line (docs/file-format.md).
DROP_DETECTED: Final = "recorder.drop_detected"
#: An action of a tool, in the audit trail only (never in a rollout).
AUDIT_ACTION: Final = "audit.action"
#: The tools an MCP server offered the agent (``tools/list``; docs/file-format.md).
MCP_TOOLS_LISTED: Final = "mcp.tools.listed"

# -- runs with several agents (docs/agents.md) ------------------------------------------
#: Control passed from one agent to another: ``{from, to}``.
HANDOFF: Final = "handoff"
#: A guardrail looked at the agent's input, output or a tool call: ``{name, kind, action}``.
GUARDRAIL_CHECKED: Final = "guardrail.checked"
#: A hook let a tool call through, blocked, rewrote or added one: ``{name, action, before,
#: after}``.
TOOL_HOOK_MUTATION: Final = "tool.hook.mutation"

# -- failures reported by the agent's hooks ----------------------------------------------
HOOK_FAILED: Final = "hook.failed"
TOOL_HOOK_FAILED: Final = "tool_hook.failed"
MEMORY_OBSERVE_FAILED: Final = "memory.observe.failed"
SKILL_FORK_FAILED: Final = "skill.fork.failed"

# -- what the analyzers add (docs/analyzers.md) ------------------------------------------
ERROR_CONTEXT: Final = "error.context"
TOOL_ANTIPATTERN: Final = "tool.antipattern"
TOOL_DECISION: Final = "tool.decision"
COST_ANOMALY: Final = "cost.anomaly"
CONTEXT_WINDOW_SNAPSHOT: Final = "context.window.snapshot"
CONTEXT_WINDOW_WARNING: Final = "context.window.warning"
LLM_REQUEST_SNAPSHOT: Final = "llm.request.snapshot"
LLM_RESPONSE_META: Final = "llm.response.meta"
CAUSAL_GRAPH_SNAPSHOT: Final = "causal.graph.snapshot"

TERMINAL_TYPES: Final = frozenset({RUN_COMPLETED, RUN_FAILED})

#: Event types counted by the "errors" criterion of the regression score. A replay divergence
#: is one: a run whose agent swallowed it is not a run that went well.
ERROR_FAMILIES: Final = frozenset(
    {
        RUN_FAILED,
        REPLAY_DIVERGENCE,
        HOOK_FAILED,
        TOOL_HOOK_FAILED,
        MEMORY_OBSERVE_FAILED,
        SKILL_FORK_FAILED,
        ERROR_CONTEXT,
    }
)

#: Each core type's name, by itself: the loader gives every event of a core type this very
#: string (not an equal copy per line), so that later passes compare types by pointer.
CORE_TYPES: Final[dict[str, str]] = {
    kind: kind
    for kind in (
        RUN_STARTED,
        RUN_COMPLETED,
        RUN_FAILED,
        LLM_TURN_STARTED,
        LLM_TURN_COMPLETED,
        LLM_TURN_FAILED,
        TOOL_CALL_STARTED,
        TOOL_CALL_COMPLETED,
        USAGE_DELTA,
        REPLAY_DIVERGENCE,
        DROP_DETECTED,
        MCP_TOOLS_LISTED,
        HANDOFF,
        GUARDRAIL_CHECKED,
        TOOL_HOOK_MUTATION,
        HOOK_FAILED,
        TOOL_HOOK_FAILED,
        MEMORY_OBSERVE_FAILED,
        SKILL_FORK_FAILED,
        ERROR_CONTEXT,
        TOOL_ANTIPATTERN,
        TOOL_DECISION,
        COST_ANOMALY,
        CONTEXT_WINDOW_SNAPSHOT,
        CONTEXT_WINDOW_WARNING,
        LLM_REQUEST_SNAPSHOT,
        LLM_RESPONSE_META,
        CAUSAL_GRAPH_SNAPSHOT,
    )
}

#: Types whose events belong to an LLM turn and so must sit at step 1 or later.
STEP_TYPE_PREFIXES: Final = ("llm.turn.", "tool.call.")


def is_step_carrying(event_type: str) -> bool:
    """True for the types that must carry an explicit step of 1 or more."""
    return event_type.startswith(STEP_TYPE_PREFIXES)


class Event(NamedTuple):
    """One line of a rollout file (immutable).

    ``step`` is the event's effective step: ``data["step"]`` when present, otherwise the
    step of the event before it (``run.started`` is always step 0). ``line`` is the 1-based
    line the event was read from, or ``None`` for events that never touched a file.

    A named tuple rather than a frozen dataclass: a loader builds 100,000 of them, and a
    tuple is built in half the time.
    """

    seq: int
    ts: str
    type: str
    data: dict[str, Any]
    step: int
    line: int | None = None

    def to_json_obj(self) -> dict[str, Any]:
        """The on-disk form of the event (without ``line``)."""
        return {"ts": self.ts, "seq": self.seq, "type": self.type, "data": self.data}


class JsonEvents(tuple[Event, ...]):
    """A run's events as the loader reads them from JSON text (a
    :class:`~pytest_rollout.format.loader.Rollout`'s ``events``): every event's data is
    plain JSON, so nothing in them can fail to encode. The comparison relies on it to leave
    the events it finds equal unread; change their data in place and it may not notice."""

    __slots__ = ()
