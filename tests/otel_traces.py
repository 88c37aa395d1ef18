"""Traces made by a real instrumentation, for the OpenTelemetry tests (``test_otel_*.py``).

A pydantic-ai agent with its built-in instrumentation runs against the scripted fake of the
OpenAI API (``fake_models.py``); the official ``opentelemetry-sdk`` keeps its spans in memory,
and the SDK's own OTLP encoder turns them into an ``ExportTraceServiceRequest``, written as
one JSON line (protobuf's JSON mapping: ids in base64, which the importer reads too).

:func:`pydantic_ai_delegation_trace` is a run with two agents: a router whose tool asks a
forecaster agent (pydantic-ai's delegation: an agent run inside a tool call).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Literal

import httpx2
import openai
from fake_models import OPENAI_BASE_URL, OPENAI_CHAT, FakeModel
from google.protobuf.json_format import MessageToJson  # type: ignore[import-untyped]
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, Tool
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

SYSTEM = "You are a weather assistant. Use the tools."


def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    if city == "Atlantis":
        raise LookupError(f"no weather station for {city!r}")
    return {"city": city, "sky": "sunny", "celsius": 21}


def pydantic_ai_trace(
    script: Sequence[Any],
    question: str = "Weather in Paris?",
    *,
    stream: bool = False,
    include_content: bool = True,
    version: Literal[2, 3, 4, 5, 6] = 5,
    tools: Sequence[Callable[..., Any]] = (get_weather,),
) -> bytes:
    """One OTLP/JSON line: the trace of one pydantic-ai run against the scripted model.

    A run that raises (a tool error pydantic-ai does not retry) is traced all the same."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    fake = FakeModel(OPENAI_CHAT, list(script))
    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url=OPENAI_BASE_URL,
        http_client=httpx2.AsyncClient(transport=fake.transport()),
    )
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
    settings = InstrumentationSettings(
        tracer_provider=provider, include_content=include_content, version=version
    )
    agent = Agent(
        model,
        tools=[Tool(t) for t in tools],
        system_prompt=SYSTEM,
        capabilities=[Instrumentation(settings=settings)],
    )

    async def run() -> None:
        if stream:
            async with agent.run_stream(question) as result:
                await result.get_output()
        else:
            await agent.run(question)

    with contextlib.suppress(LookupError):  # the run failed: its trace says so
        asyncio.run(run())
    return otlp_line(exporter.get_finished_spans())


def pydantic_ai_delegation_trace(
    script: Sequence[Any], question: str = "Weather in Paris?"
) -> bytes:
    """One OTLP/JSON line: a ``router`` agent whose tool ``ask_forecaster`` runs a
    ``forecaster`` agent (with ``get_weather``), both against the scripted model."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    fake = FakeModel(OPENAI_CHAT, list(script))
    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url=OPENAI_BASE_URL,
        http_client=httpx2.AsyncClient(transport=fake.transport()),
    )
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
    capabilities = [Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))]
    forecaster = Agent(
        model,
        name="forecaster",
        tools=[Tool(get_weather)],
        system_prompt="You forecast the weather.",
        capabilities=capabilities,
    )

    async def ask_forecaster(question: str) -> str:
        """Ask the forecaster about the weather."""
        return (await forecaster.run(question)).output

    router = Agent(
        model,
        name="router",
        tools=[Tool(ask_forecaster)],
        system_prompt="You route questions.",
        capabilities=capabilities,
    )
    asyncio.run(router.run(question))
    return otlp_line(exporter.get_finished_spans())


def otlp_line(spans: Sequence[Any]) -> bytes:
    """Finished ``opentelemetry-sdk`` spans as one OTLP/JSON line (an
    ``ExportTraceServiceRequest``, as the SDK's own OTLP encoder makes it)."""
    request = encode_spans(spans)
    line: str = MessageToJson(request, indent=None)
    return line.encode() + b"\n"
