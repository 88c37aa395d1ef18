"""Runs with several agents through OpenTelemetry: ``gen_ai.agent.name`` / ``gen_ai.agent.id``
(and OpenInference's ``agent.name``) become each event's ``agent`` on import, handoff spans
become ``handoff`` events, and the export writes both back so that a re-import is the run."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest
from fake_models import OPENAI_CHAT, OPENAI_RESPONSES, Call, Say
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from otel_traces import pydantic_ai_delegation_trace, pydantic_ai_trace
from test_otel_import import run_cli

from pytest_rollout.diff.compare import compare
from pytest_rollout.diff.integrity import check
from pytest_rollout.format.events import Event
from pytest_rollout.format.loader import load
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.otel import Span, export_runs, import_spans, spans_from_bytes, write_rollout
from pytest_rollout.otel.exporter import INPUT_MESSAGES
from pytest_rollout.safety.redact import Redactor

AGENTS_PIP = "pip install openai-agents openinference-instrumentation-openai-agents"
TRACE = "ab" * 16


def imported(trace: bytes, tmp_path: Path) -> tuple[list[Event], list[str]]:
    """The rollout ``rollout import otel`` writes for ``trace`` (as the loader reads it)."""
    run = import_spans(spans_from_bytes(trace))
    written = write_rollout(run, tmp_path / "imported.jsonl")
    assert check(written.events).matched
    return list(written.events), list(run.warnings)


def who(events: list[Event], *types: str) -> list[tuple[str, int, Any]]:
    """``(type, step, agent)`` of each event of ``types`` (all when none)."""
    return [(e.type, e.step, e.data.get("agent")) for e in events if not types or e.type in types]


def handoffs(events: list[Event]) -> list[dict[str, Any]]:
    return [{**e.data, "step": e.step} for e in events if e.type == "handoff"]


# -- import: the GenAI conventions -----------------------------------------------------------


def test_a_pydantic_ai_delegation_names_each_agent(tmp_path: Path) -> None:
    script = [
        Call("ask_forecaster", {"question": "Paris?"}),
        Call("get_weather", {"city": "Paris"}),
        Say("Sunny."),
        Say("It is sunny in Paris."),
    ]
    events, warnings = imported(pydantic_ai_delegation_trace(script), tmp_path)
    assert warnings == []
    turns = ("llm.turn.completed", "tool.call.started", "tool.call.completed")
    assert [(t, s, agent) for t, s, agent in who(events, *turns)] == [
        ("llm.turn.completed", 1, "router"),
        ("tool.call.started", 1, "router"),  # ask_forecaster: the router's call
        ("llm.turn.completed", 2, "forecaster"),
        ("tool.call.started", 2, "forecaster"),
        ("tool.call.completed", 2, "forecaster"),
        ("llm.turn.completed", 3, "forecaster"),
        # The router's call outlived the forecaster's turns: it completes at the step the
        # run reached, as a recording writes it (steps never go back).
        ("tool.call.completed", 3, "router"),
        ("llm.turn.completed", 4, "router"),
    ]
    assert events[0].data["agent"] == "router"  # the outermost invoke_agent span's
    assert events[-1].data["agent"] == "router"
    # The agent changes with no handoff span in the trace: none is made up.
    assert handoffs(events) == []


def test_a_trace_that_names_one_agent_names_nobody(tmp_path: Path) -> None:
    trace = pydantic_ai_trace([[Call("get_weather", {"city": "Paris"})], Say("Sunny.")])
    assert '"gen_ai.agent.name"' in trace.decode()  # pydantic-ai names its agent "agent"
    events, _ = imported(trace, tmp_path)
    assert all("agent" not in e.data for e in events)


def span(number: int, parent: int | None, name: str, **attributes: Any) -> Span:
    """A span of the trace, ``number`` ms after the start, lasting until the next few."""
    start = 1_000_000 * number
    end = start + 1_000_000 * int(attributes.pop("lasts", 1)) - 1
    span_id = f"{number:016x}"
    parent_id = None if parent is None else f"{parent:016x}"
    return Span(TRACE, span_id, parent_id, name, start, end, attributes)


def chat(number: int, parent: int, text: str, **attributes: Any) -> Span:
    asked = [{"role": "user", "parts": [{"type": "text", "content": "refund?"}]}]
    output = [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]
    return span(
        number,
        parent,
        "chat gpt-4o",
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": orjson.dumps(asked).decode(),
            "gen_ai.output.messages": orjson.dumps(output).decode(),
            **attributes,
        },
    )


def agent(number: int, parent: int | None, lasts: int, **attributes: Any) -> Span:
    return span(number, parent, "invoke_agent", lasts=lasts, **attributes)


def test_an_agent_names_its_subtree_unless_a_span_names_its_own() -> None:
    spans = [
        agent(1, None, 20, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}),
        chat(2, 1, "first"),
        # An agent known by its id only, nested: its subtree is its own.
        agent(3, 1, 10, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": "b-42"}),
        span(4, 3, "step"),  # a span of no operation in between
        chat(5, 4, "second"),
        chat(6, 3, "third", **{"gen_ai.agent.name": "c"}),  # a span naming its own agent
        chat(14, 1, "last"),
    ]
    run = import_spans(spans)
    assert [(t, d.get("content"), d.get("agent")) for _, t, d in run.events if "content" in d] == [
        ("llm.turn.completed", "first", "a"),
        ("llm.turn.completed", "second", "b-42"),
        ("llm.turn.completed", "third", "c"),
        ("llm.turn.completed", "last", "a"),
    ]
    assert not [d for _, t, d in run.events if t == "handoff"]


def test_openinference_agent_names_are_read() -> None:
    def llm(number: int, parent: int, text: str) -> Span:
        return span(
            number,
            parent,
            "response",
            **{
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": text,
            },
        )

    spans = [
        span(1, None, "Agent workflow", lasts=20, **{"openinference.span.kind": "AGENT"}),
        span(2, 1, "triage", lasts=5, **{"openinference.span.kind": "AGENT", "agent.name": "t"}),
        llm(3, 2, "routing"),
        span(8, 1, "billing", lasts=5, **{"openinference.span.kind": "AGENT", "agent.name": "b"}),
        llm(9, 8, "billed"),
    ]
    run = import_spans(spans)
    completed = [
        (d["content"], d.get("agent")) for _, t, d in run.events if t == "llm.turn.completed"
    ]
    assert completed[:2] == [("routing", "t"), ("billed", "b")]
    assert "agent" not in run.events[0][2]  # the workflow's span names nobody


# -- import: handoffs ---------------------------------------------------------------------------

HANDOFF_FORMS = {
    "opentelemetry-instrumentation-openai-agents-v2": {
        "gen_ai.operation.name": "agent_handoff",
        "gen_ai.handoff.from_agent": "triage",
        "gen_ai.handoff.to_agent": "billing",
    },
    "the Agents SDK's span data": {
        "type": "handoff",
        "from_agent": "triage",
        "to_agent": "billing",
    },
    "openinference": {
        "openinference.span.kind": "TOOL",
        "input.value": "triage",
        "output.value": "billing",
    },
}


def two_agents(handoff: Span | None) -> list[Span]:
    base = {"gen_ai.operation.name": "invoke_agent"}
    spans = [
        agent(1, None, 30, **base),
        agent(2, 1, 10, **{**base, "gen_ai.agent.name": "triage"}),
        chat(3, 2, "to billing"),
        agent(12, 1, 10, **{**base, "gen_ai.agent.name": "billing"}),
        chat(13, 12, "billed"),
    ]
    return spans + ([] if handoff is None else [handoff])


@pytest.mark.parametrize("form", HANDOFF_FORMS, ids=str)
def test_a_handoff_span_is_a_handoff_event_at_its_step(form: str) -> None:
    run = import_spans(two_agents(span(6, 2, "handoff to billing", **HANDOFF_FORMS[form])))
    assert run.warnings == ()
    types = [(t, d.get("step"), d.get("agent")) for _, t, d in run.events]
    assert types[1:6] == [
        ("llm.turn.started", 1, "triage"),
        ("llm.turn.completed", 1, "triage"),
        ("handoff", 1, "triage"),
        ("llm.turn.started", 2, "billing"),
        ("llm.turn.completed", 2, "billing"),
    ]
    found = [d for _, t, d in run.events if t == "handoff"]
    assert found == [{"from": "triage", "to": "billing", "agent": "triage", "step": 1}]


def test_a_transfer_tool_span_of_the_proposed_conventions_is_a_call_and_a_handoff() -> None:
    call = [{"type": "tool_call", "id": "call_1", "name": "transfer_to_billing", "arguments": {}}]
    asking = chat(3, 2, "to billing")
    asking.attributes["gen_ai.output.messages"] = orjson.dumps(
        [{"role": "assistant", "parts": call}]
    ).decode()
    spans = two_agents(None)
    spans[2] = asking
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "transfer_to_billing",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.call.result": '{"assistant": "billing"}',
        "gen_ai.agent.handoff.source.name": "triage",
        "gen_ai.agent.handoff.target.name": "billing",
    }
    run = import_spans([*spans, span(6, 2, "execute_tool transfer_to_billing", **tool)])
    types = [(t, d.get("step"), d.get("agent")) for _, t, d in run.events]
    assert types[3:6] == [
        ("tool.call.started", 1, "triage"),
        ("tool.call.completed", 1, "triage"),
        ("handoff", 1, "triage"),  # control passes when the transfer tool returns
    ]


def test_a_handoff_that_does_not_say_where_it_went_is_left_out_with_a_warning() -> None:
    nowhere = {"gen_ai.operation.name": "agent_handoff", "gen_ai.handoff.from_agent": "triage"}
    run = import_spans(two_agents(span(6, 2, "handoff", **nowhere)))
    assert not [d for _, t, d in run.events if t == "handoff"]
    assert run.warnings == (
        f"span 'handoff' ({6:016x}): a handoff that does not say which agent it handed to: "
        "left out",
    )


def test_agents_that_change_without_a_handoff_span_are_not_a_handoff() -> None:
    run = import_spans(two_agents(None))
    assert [d.get("agent") for _, t, d in run.events if t == "llm.turn.completed"] == [
        "triage",
        "billing",
    ]
    assert not [d for _, t, d in run.events if t == "handoff"]


# -- import: a real handoff of the OpenAI Agents SDK, through OpenInference --------------------


@pytest.mark.slow
@pytest.mark.parametrize("api", [OPENAI_RESPONSES, OPENAI_CHAT])
def test_an_agents_sdk_handoff_is_a_handoff_event(tmp_path: Path, api: str) -> None:
    pytest.importorskip("agents", reason=AGENTS_PIP)
    pytest.importorskip("openinference.instrumentation.openai_agents", reason=AGENTS_PIP)
    import otel_agents

    script = [Call("transfer_to_billing", {}), Call("get_weather", {"city": "Paris"}), Say("Sun.")]
    events, warnings = imported(otel_agents.agents_handoff_trace(script, api=api), tmp_path)
    assert warnings == []
    assert handoffs(events) == [{"from": "triage", "to": "billing", "agent": "triage", "step": 1}]
    assert who(events, "llm.turn.completed", "tool.call.started") == [
        ("llm.turn.completed", 1, "triage"),
        # The SDK runs no tool for the transfer: the call is read from the next request.
        ("tool.call.started", 1, "triage"),
        ("llm.turn.completed", 2, "billing"),
        ("tool.call.started", 2, "billing"),
        ("llm.turn.completed", 3, "billing"),
    ]
    single = otel_agents.agents_trace([[Call("get_weather", {"city": "Paris"})], Say("Sun.")])
    events, _ = imported(single, tmp_path)
    assert all("agent" not in e.data for e in events)  # one agent: nobody is named


# -- export and the round trip ------------------------------------------------------------------


def multi_agent_run(target: Path | None = None) -> list[Event]:
    """triage routes to billing, billing calls a tool and hands back, triage answers
    (written to ``target`` when given)."""
    ticks = itertools.count()
    rec = Recorder(target, clock=lambda: 1_782_650_096_000_000_000 + next(ticks) * 1_000)
    user = [{"role": "user", "content": "refund?"}]
    rec.emit("run.started", {"run_id": "r", "test_id": "t", "model": "gpt-4o", "agent": "triage"})
    rec.emit("llm.turn.started", {"messages": user, "tools": [], "params": {}, "agent": "triage"})
    rec.emit("llm.turn.completed", {"content": "to billing", "tool_calls": [], "agent": "triage"})
    rec.emit("usage.delta", {"cumulative_cost_usd": 0.001, "agent": "triage"})
    rec.emit("handoff", {"from": "triage", "to": "billing", "agent": "triage"})
    rec.emit("llm.turn.started", {"messages": [], "tools": [], "params": {}, "agent": "billing"})
    call = {"id": "c1", "name": "refund", "arguments": {"order": 7}}
    rec.emit("llm.turn.completed", {"content": None, "tool_calls": [call], "agent": "billing"})
    rec.emit("note", {"said": "an event that names nobody"})
    rec.emit("tool.call.started", {"call_id": "c1", "name": "refund", "agent": "billing"})
    done = {"call_id": "c1", "name": "refund", "output": {"ok": True}, "agent": "billing"}
    rec.emit("tool.call.completed", done)
    rec.emit("handoff", {"from": "billing", "to": "triage", "agent": "billing"})
    rec.emit("llm.turn.started", {"messages": [], "tools": [], "params": {}, "agent": "triage"})
    # A turn that another agent completed, and a handoff from nobody: kept as they are.
    rec.emit("llm.turn.completed", {"content": "refunded", "tool_calls": [], "agent": "auditor"})
    rec.emit("handoff", {"from": None, "to": "auditor", "agent": None})
    rec.emit("run.completed", {"outcome": "completed", "output": "refunded", "agent": "triage"})
    if target is not None:
        rec.close()
        return list(load(target).events)
    return list(rec.rollout().events)


def test_export_names_the_agents_and_draws_one_span_a_stretch() -> None:
    spans = spans_from_bytes(export_runs([multi_agent_run()]))
    by_id = {s.span_id: s for s in spans}

    def parent(s: Span) -> str:
        return "-" if s.parent_id is None else by_id[s.parent_id].name

    assert [(s.name, parent(s), s.attributes.get("gen_ai.agent.name")) for s in spans] == [
        ("invoke_agent t", "-", "t"),  # the run: named after the test, as before
        ("invoke_agent triage", "invoke_agent t", "triage"),
        ("chat gpt-4o", "invoke_agent triage", "triage"),
        ("handoff to billing", "invoke_agent triage", "triage"),
        ("invoke_agent billing", "invoke_agent t", "billing"),
        ("chat gpt-4o", "invoke_agent billing", "billing"),
        ("execute_tool refund", "invoke_agent billing", "billing"),
        ("handoff to triage", "invoke_agent billing", "billing"),
        ("invoke_agent triage", "invoke_agent t", "triage"),
        ("chat gpt-4o", "invoke_agent triage", "triage"),
        ("invoke_agent auditor", "invoke_agent t", "auditor"),  # its completion is triage's span's
        ("handoff to auditor", "invoke_agent t", None),
    ]
    handoff = spans[3]
    assert {k: v for k, v in handoff.attributes.items() if k.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "agent_handoff",
        "gen_ai.handoff.from_agent": "triage",
        "gen_ai.handoff.to_agent": "billing",
        "gen_ai.agent.name": "triage",
    }
    assert handoff.start_ns == handoff.end_ns
    # Events with no span of their own go with their agent's stretch.
    assert [e.name for e in spans[1].events] == ["usage.delta"]
    assert [e.name for e in spans[0].events] == ["note"]
    stretch, chat_span = spans[4], spans[5]
    assert stretch.start_ns == chat_span.start_ns
    assert stretch.end_ns == spans[7].end_ns


@pytest.mark.parametrize("input_messages", INPUT_MESSAGES)
def test_a_run_with_agents_round_trips_through_the_commands(
    input_messages: str, tmp_path: Path
) -> None:
    original = tmp_path / "run.jsonl"
    multi_agent_run(original)
    trace, back = tmp_path / "trace.jsonl", tmp_path / "back.jsonl"
    argv = ["export", "otel", str(original), "-o", str(trace), "--input-messages", input_messages]
    assert run_cli(*argv)[0] == 0
    assert run_cli("import", "otel", str(trace), "-o", str(back))[0] == 0
    before, after = load(original).events, load(back).events
    assert compare(before, after).identical
    assert who(list(after)) == who(list(before))
    assert handoffs(list(after)) == handoffs(list(before))


AGENT_NAMES = st.sampled_from([None, "triage", "billing"])
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def runs_with_agents(draw: st.DrawFn) -> list[Event]:
    """Turns, tool calls, handoffs and other events, each naming an agent or nobody."""
    ticks = itertools.count()
    rec = Recorder(clock=lambda: 1_782_650_096_000_000_000 + next(ticks) * 1_000)

    def emit(event_type: str, data: dict[str, Any]) -> None:
        named = draw(AGENT_NAMES)
        rec.emit(event_type, data if named is None else {**data, "agent": named})

    emit("run.started", {"run_id": "r", "test_id": "t", "model": "gpt-4o"})
    for turn in range(draw(st.integers(1, 4))):
        emit("llm.turn.started", {"messages": [{"role": "user", "content": "go"}], "tools": []})
        calls = [
            {"id": f"c{turn}-{i}", "name": "f", "arguments": {}}
            for i in range(draw(st.integers(0, 2)))
        ]
        emit("llm.turn.completed", {"content": "ok", "tool_calls": calls})
        for call in calls:
            emit("tool.call.started", {"call_id": call["id"], "name": "f"})
            emit("tool.call.completed", {"call_id": call["id"], "name": "f", "output": 1})
        if draw(st.booleans()):
            source, target = draw(AGENT_NAMES), draw(AGENT_NAMES)
            rec.emit("handoff", {"from": source, "to": target, "agent": source})
        if draw(st.booleans()):
            emit("note", {"turn": turn})
    emit("run.completed", {"outcome": "completed", "output": "ok"})
    return list(rec.rollout().events)


@pytest.mark.parametrize("input_messages", INPUT_MESSAGES)
@SETTINGS
@given(events=runs_with_agents())
def test_any_run_with_agents_round_trips(
    input_messages: str, events: list[Event], tmp_path_factory: pytest.TempPathFactory
) -> None:
    trace = export_runs([events], input_messages=input_messages)
    run = import_spans(spans_from_bytes(trace))
    assert not run.warnings
    back = write_rollout(run, tmp_path_factory.mktemp("agents") / "back.jsonl", Redactor("full"))
    assert compare(events, back.events).identical
    assert [(e.type, e.step, e.data) for e in back.events] == [
        (e.type, e.step, e.data) for e in events
    ]


# -- a run without agents is unchanged -------------------------------------------------------


def test_a_run_without_agents_exports_no_agent_spans() -> None:
    rec = Recorder()
    rec.emit("run.started", {"run_id": "r", "test_id": "t", "model": "gpt-4o"})
    rec.emit("llm.turn.started", {"messages": [], "tools": [], "params": {}})
    rec.emit("llm.turn.completed", {"content": "hi", "tool_calls": []})
    rec.emit("run.completed", {"outcome": "completed", "output": "hi"})
    spans = spans_from_bytes(export_runs([list(rec.rollout().events)]))
    assert [s.name for s in spans] == ["invoke_agent t", "chat gpt-4o"]
    assert "gen_ai.agent.name" not in spans[1].attributes
    assert spans[1].parent_id == spans[0].span_id
