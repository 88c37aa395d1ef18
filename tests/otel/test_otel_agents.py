"""``rollout import otel`` of traces made by the OpenAI Agents SDK (through OpenInference's
bridge) and by ``opentelemetry-instrumentation-openai-v2``, and of traces whose values do not
have the loader's types."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from fake_models import OPENAI_CHAT, OPENAI_RESPONSES, Call, Say
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rollout.cli.otel_commands import add_import_parser, import_otel
from pytest_rollout.diff.integrity import check
from pytest_rollout.format.loader import Rollout, load
from pytest_rollout.otel import Span, import_spans, write_rollout

pytestmark = pytest.mark.slow  # real agent frameworks and their instrumentations

AGENTS_PIP = "pip install openai-agents openinference-instrumentation-openai-agents"
OPENAI_V2_PIP = "pip install opentelemetry-instrumentation-openai-v2 httpx"
PARALLEL = [Call("get_weather", {"city": "Paris"}), Call("get_weather", {"city": "Oslo"})]
WITH_ERROR = [Call("get_weather", {"city": "Paris"}), Call("get_weather", {"city": "Atlantis"})]


def needs_agents() -> Any:
    pytest.importorskip("agents", reason=AGENTS_PIP)
    pytest.importorskip("openinference.instrumentation.openai_agents", reason=AGENTS_PIP)
    import otel_agents

    return otel_agents


def needs_openai_v2() -> Any:
    pytest.importorskip("opentelemetry.instrumentation.openai_v2", reason=OPENAI_V2_PIP)
    import otel_agents

    return otel_agents


def imported(tmp_path: Path, trace: bytes) -> tuple[Rollout, list[str]]:
    """Import ``trace`` with the command; the rollout as the loader reads it, and the
    warnings the command printed."""
    source = tmp_path / "trace.jsonl"
    source.write_bytes(trace)
    target = tmp_path / "incident.jsonl"
    parser = argparse.ArgumentParser(prog="rollout")
    add_import_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["import", "otel", str(source), "-o", str(target)])
    errors = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stderr", errors)
        assert import_otel(args, io.StringIO()) == 0
    run = load(target)
    assert check(run.events).matched
    return run, errors.getvalue().splitlines()


def of_type(run: Rollout, event_type: str) -> list[dict[str, Any]]:
    return [e.data for e in run.events if e.type == event_type]


def turn_calls(run: Rollout, index: int = 0) -> list[tuple[str, dict[str, Any]]]:
    turn = of_type(run, "llm.turn.completed")[index]
    return [(c["name"], c["arguments"]) for c in turn["tool_calls"]]


# -- the OpenAI Agents SDK, through openinference-instrumentation-openai-agents --------------


@pytest.mark.parametrize("api", [OPENAI_RESPONSES, OPENAI_CHAT])
def test_an_agents_sdk_trace_with_parallel_calls_and_a_tool_error(tmp_path: Path, api: str) -> None:
    agents = needs_agents()
    run, warnings = imported(tmp_path, agents.agents_trace([WITH_ERROR, Say("Sunny.")], api=api))
    assert warnings == []
    assert turn_calls(run) == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Atlantis"}),
    ]
    started = of_type(run, "tool.call.started")
    announced = [c["id"] for c in of_type(run, "llm.turn.completed")[0]["tool_calls"]]
    # The tool spans do not say their call's id: matched by name and arguments.
    assert [s["call_id"] for s in started] == announced
    completed = {c["call_id"]: c for c in of_type(run, "tool.call.completed")}
    assert completed[announced[0]]["output"] == {"city": "Paris", "sky": "sunny", "celsius": 21}
    error = completed[announced[1]]["error"]
    assert error["class"] == "Exception"
    assert error["message"].startswith("Error running tool (non-fatal)")
    first = of_type(run, "llm.turn.started")[0]["messages"]
    assert first == [
        {"role": "system", "content": "You are a weather assistant. Use the tools."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    second = of_type(run, "llm.turn.started")[1]["messages"]
    assert [m["role"] for m in second][-2:] == ["tool", "tool"]
    assert of_type(run, "llm.turn.completed")[0]["usage"]["input_tokens"] > 0
    assert of_type(run, "run.started")[0]["model"] == "gpt-4o-mini"
    assert of_type(run, "run.completed")[0]["output"] == "Sunny."


def test_a_streamed_agents_sdk_run_imports_like_a_plain_one(tmp_path: Path) -> None:
    agents = needs_agents()
    run, warnings = imported(tmp_path, agents.agents_trace([PARALLEL, Say("Sunny.")], stream=True))
    assert warnings == []
    assert turn_calls(run) == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Oslo"}),
    ]
    assert len(of_type(run, "tool.call.completed")) == 2
    assert of_type(run, "run.completed")[0]["output"] == "Sunny."


def test_agents_sdk_without_sensitive_data_warns_and_invents_nothing(tmp_path: Path) -> None:
    agents = needs_agents()
    trace = agents.agents_trace([PARALLEL, Say("Sunny.")], include_content=False)
    run, warnings = imported(tmp_path, trace)
    assert any(w.startswith("rollout import: warning: span 'response'") for w in warnings)
    assert any("span 'get_weather'" in w and "arguments were not captured" in w for w in warnings)
    assert any("span 'get_weather'" in w and "result was not captured" in w for w in warnings)
    raw = (tmp_path / "incident.jsonl").read_text(encoding="utf-8")
    assert "Paris" not in raw
    assert "Sunny" not in raw
    assert all(d["arguments"] is None for d in of_type(run, "tool.call.started"))
    assert of_type(run, "run.completed")[0]["output"] is None


# -- opentelemetry-instrumentation-openai-v2 -------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_an_openai_v2_trace_takes_its_tool_results_from_the_next_request(
    tmp_path: Path, stream: bool
) -> None:
    v2 = needs_openai_v2()
    trace = v2.openai_v2_trace(latest=True, stream=stream, content="span_only")
    run, warnings = imported(tmp_path, trace)
    assert warnings == []
    assert turn_calls(run) == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Oslo"}),
    ]
    # The instrumentation makes no tool span: each call is read from the next request.
    completed = of_type(run, "tool.call.completed")
    assert [c["output"]["city"] for c in completed] == ["Paris", "Oslo"]
    assert [c["step"] for c in completed] == [1, 1]
    assert of_type(run, "run.completed")[0]["output"] == "Sunny in both."
    assert of_type(run, "llm.turn.completed")[1]["cost_usd"] > 0


@pytest.mark.parametrize(
    ("latest", "content"),
    [(True, ""), (False, "true")],  # off; on, but written as log records, not on spans
)
def test_an_openai_v2_trace_without_content_on_its_spans_warns(
    tmp_path: Path, latest: bool, content: str
) -> None:
    v2 = needs_openai_v2()
    run, warnings = imported(tmp_path, v2.openai_v2_trace(latest=latest, content=content))
    chat = [w for w in warnings if "span 'chat gpt-4o-mini'" in w]
    assert len([w for w in chat if "input messages were not captured" in w]) == 2
    assert len([w for w in chat if "output was not captured" in w]) == 2
    assert of_type(run, "tool.call.started") == []
    assert [t["messages"] for t in of_type(run, "llm.turn.started")] == [[], []]
    assert [t["usage"]["output_tokens"] for t in of_type(run, "llm.turn.completed")] == [30, 4]


# -- values the loader would refuse ------------------------------------------------------------


def chat_span(**attributes: Any) -> Span:
    base = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    return Span("ab" * 16, "cd" * 8, None, "chat gpt-4o", 1_000, 2_000, {**base, **attributes})


def output(*parts: Any) -> str:
    return orjson.dumps([{"role": "assistant", "parts": list(parts)}]).decode()


def test_values_of_the_wrong_type_are_converted_or_left_out_with_a_warning(
    tmp_path: Path,
) -> None:
    span = chat_span(
        **{
            "gen_ai.output.messages": output(
                {"type": "tool_call", "id": 12, "name": 7, "arguments": "[1, 2]"},
                {"type": "tool_call", "id": "b", "arguments": {}},
                {"type": "text", "content": "see"},
                {"type": "image", "uri": "x.png"},
            ),
            "gen_ai.usage.input_tokens": "12",
            "gen_ai.usage.output_tokens": -3,
            "gen_ai.response.model": 4,
        }
    )
    run = import_spans([span])
    written = write_rollout(run, tmp_path / "r.jsonl")
    turn = of_type(written, "llm.turn.completed")[0]
    assert turn["tool_calls"] == [{"id": "12", "name": "7", "arguments": None}]
    assert turn["usage"] == {"input_tokens": 12, "output_tokens": None}
    assert turn["model_version"] == "4"
    assert isinstance(turn["content"], str)
    assert orjson.loads(turn["content"])[1] == {"type": "image", "uri": "x.png"}
    label = "span 'chat gpt-4o' (" + "cd" * 8 + ")"
    assert all(w.startswith(label) for w in run.warnings)
    problem = "llm.turn.completed data.tool_calls[0].id must be a string or null, got an integer"
    assert any(problem in w for w in run.warnings)
    assert any("call [0]: its arguments are not a JSON object: left out" in w for w in run.warnings)
    assert any("call [1] has no name: left out" in w for w in run.warnings)
    assert any("output_tokens -3: left out" in w for w in run.warnings)


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None, database=None)
@given(
    name=_VALUES,
    call_id=_VALUES,
    arguments=_VALUES,
    tokens=st.lists(_VALUES, min_size=2, max_size=2),
    model=_VALUES,
    tool=st.tuples(_VALUES, _VALUES, _VALUES),
)
def test_whatever_a_trace_holds_the_loader_accepts_the_import(
    tmp_path_factory: pytest.TempPathFactory,
    name: Any,
    call_id: Any,
    arguments: Any,
    tokens: list[Any],
    model: Any,
    tool: tuple[Any, Any, Any],
) -> None:
    call = {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}
    chat = chat_span(
        **{
            "gen_ai.output.messages": output(call),
            "gen_ai.usage.input_tokens": orjson.dumps(tokens[0]).decode(),
            "gen_ai.usage.output_tokens": orjson.dumps(tokens[1]).decode(),
            "gen_ai.response.model": orjson.dumps(model).decode(),
        }
    )
    tool_attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": orjson.dumps(tool[0]).decode(),
        "gen_ai.tool.call.id": orjson.dumps(tool[1]).decode(),
        "gen_ai.tool.call.arguments": orjson.dumps(tool[2]).decode(),
    }
    tool_span = Span("ab" * 16, "ef" * 8, None, "execute_tool", 2_100, 2_200, tool_attributes)
    target = tmp_path_factory.mktemp("fit") / "r.jsonl"
    write_rollout(import_spans([chat, tool_span]), target)
    load(target)  # the strict loader, with the schema's types
