"""Traces of the OpenAI Agents SDK and of ``opentelemetry-instrumentation-openai-v2``, for
``test_otel_agents.py``: real instrumentations against the scripted fake of the OpenAI API
(``fake_models.py``), their spans kept by the official ``opentelemetry-sdk`` in memory and
written as OTLP/JSON by ``otel_traces.otlp_line``.

* :func:`agents_trace`: an Agents SDK agent with one tool, its tracing bridged to
  OpenTelemetry by ``openinference-instrumentation-openai-agents`` (the SDK has no
  OpenTelemetry support of its own), on the Responses or the Chat Completions model.
* :func:`agents_handoff_trace`: a ``triage`` agent that hands off to a ``billing`` agent
  (which has the tool), the same way.
* :func:`openai_v2_trace`: the Chat Completions agent of ``sdk_agents.py`` under the official
  instrumentation of the OpenAI client, inside a span of the application (the
  instrumentation makes one span a model call and none for the tools). It runs in a child
  process: the instrumentation reads its settings from the environment once a process and
  wraps the ``openai`` package globally.

Run as a script (``python otel_agents.py MODE STREAM``), this module prints the openai-v2
trace; ``MODE`` is ``latest`` (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``)
or ``default``, and the capture of content is the environment's.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx2
import openai
from fake_models import OPENAI_BASE_URL, OPENAI_CHAT, OPENAI_RESPONSES, Call, FakeModel, Say
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_traces import SYSTEM, otlp_line

QUESTION = "Weather in Paris?"
PARALLEL = [Call("get_weather", {"city": "Paris"}), Call("get_weather", {"city": "Oslo"})]


def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    if city == "Atlantis":
        raise LookupError(f"no weather station for {city!r}")
    return {"city": city, "sky": "sunny", "celsius": 21}


def _memory() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def agents_trace(
    script: Sequence[Any],
    *,
    api: str = OPENAI_RESPONSES,
    stream: bool = False,
    include_content: bool = True,
) -> bytes:
    """One OTLP/JSON line: an Agents SDK run against the scripted model, traced through
    OpenInference. ``include_content=False`` is the SDK's ``trace_include_sensitive_data``
    off (its switch for keeping prompts, answers and tool data out of traces)."""
    import agents
    from openinference.instrumentation.openai_agents._processor import (
        OpenInferenceTracingProcessor,
    )

    provider, exporter = _memory()
    processor = OpenInferenceTracingProcessor(provider.get_tracer("openinference"))
    agents.set_trace_processors([processor])  # also keeps the SDK's own exporter off
    fake = FakeModel(api, list(script))
    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url=OPENAI_BASE_URL,
        http_client=httpx2.AsyncClient(transport=fake.transport()),
        max_retries=0,
    )
    model_class = (
        agents.OpenAIResponsesModel
        if api == OPENAI_RESPONSES
        else agents.OpenAIChatCompletionsModel
    )
    agent = agents.Agent(
        name="weather",
        instructions=SYSTEM,
        model=model_class(model="gpt-4o-mini", openai_client=client),
        tools=[agents.function_tool(get_weather)],
    )
    config = agents.RunConfig(trace_include_sensitive_data=include_content)

    async def run() -> None:
        if stream:
            result = agents.Runner.run_streamed(agent, QUESTION, run_config=config)
            async for _ in result.stream_events():
                pass
        else:
            await agents.Runner.run(agent, QUESTION, run_config=config)

    try:
        asyncio.run(run())
    finally:
        agents.set_trace_processors([])
    return otlp_line(exporter.get_finished_spans())


def agents_handoff_trace(script: Sequence[Any], *, api: str = OPENAI_RESPONSES) -> bytes:
    """One OTLP/JSON line: a ``triage`` agent with a handoff to a ``billing`` agent that has
    ``get_weather``, against the scripted model (the first turn calls
    ``transfer_to_billing``), traced through OpenInference."""
    import agents
    from openinference.instrumentation.openai_agents._processor import (
        OpenInferenceTracingProcessor,
    )

    provider, exporter = _memory()
    agents.set_trace_processors([OpenInferenceTracingProcessor(provider.get_tracer("oi"))])
    fake = FakeModel(api, list(script))
    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url=OPENAI_BASE_URL,
        http_client=httpx2.AsyncClient(transport=fake.transport()),
        max_retries=0,
    )
    model_class = (
        agents.OpenAIResponsesModel
        if api == OPENAI_RESPONSES
        else agents.OpenAIChatCompletionsModel
    )
    model = model_class(model="gpt-4o-mini", openai_client=client)
    billing = agents.Agent(
        name="billing", instructions=SYSTEM, model=model, tools=[agents.function_tool(get_weather)]
    )
    triage = agents.Agent(
        name="triage", instructions="Route the question.", model=model, handoffs=[billing]
    )
    try:
        asyncio.run(agents.Runner.run(triage, QUESTION))
    finally:
        agents.set_trace_processors([])
    return otlp_line(exporter.get_finished_spans())


def openai_v2_trace(*, latest: bool = True, stream: bool = False, content: str = "") -> bytes:
    """One OTLP/JSON line: the Chat Completions agent under
    ``opentelemetry-instrumentation-openai-v2``, made in a child process. ``content`` is
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (empty: not set)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if content:
        env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = content
    here = Path(__file__).parent
    env["PYTHONPATH"] = os.pathsep.join([str(here), env.get("PYTHONPATH", "")])
    argv = [sys.executable, str(here / "otel_agents.py"), "latest" if latest else "default"]
    argv.append("stream" if stream else "plain")
    done = subprocess.run(argv, env=env, capture_output=True, check=False, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace"))
    return done.stdout


def _openai_v2_main(mode: str, stream: bool) -> None:
    if mode == "latest":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from sdk_agents import AGENTS

    provider, exporter = _memory()
    OpenAIInstrumentor().instrument(tracer_provider=provider)  # type: ignore[no-untyped-call]
    fake = FakeModel(OPENAI_CHAT, [PARALLEL, Say("Sunny in both.")])
    with provider.get_tracer("app").start_as_current_span("handle request"):
        AGENTS[OPENAI_CHAT][1](fake.client(), QUESTION, {"get_weather": get_weather}, stream=stream)
    sys.stdout.buffer.write(otlp_line(exporter.get_finished_spans()))


if __name__ == "__main__":
    _openai_v2_main(sys.argv[1], sys.argv[2] == "stream")
