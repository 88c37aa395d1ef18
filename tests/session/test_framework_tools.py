"""``rollout.tools([...])`` with framework tool objects: each comes back as an object of its
class with the same name, description and schema; a call is recorded with the arguments
the model announced (never a context or an injected argument), and in replay it is answered
from the recording without running the tool.

The recorder here is a stand-in for the engine (what ``session/tools.py``'s ``ToolRecorder``
asks of it); the end-to-end runs against the fake service are in test_docs_frameworks.py.

Annotations are evaluated at once here (no ``from __future__ import annotations``): the
frameworks read the tools' annotations, and the tools are defined inside the tests.
"""

import asyncio
import inspect
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_rollout.session.frameworks import wrap_tools


@dataclass
class _Replayed:
    output: Any
    error: Any = None


@dataclass
class StubRecorder:
    """Records what the wrapped tools report; with ``answers``, replays them instead."""

    answers: dict[str, Any] | None = None
    started: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    completed: list[tuple[str, Any]] = field(default_factory=list)

    def tool_started(self, name: str, bound: Mapping[str, Any]) -> tuple[str | None, int, Any]:
        self.started.append((name, dict(bound)))
        if self.answers is None:
            return None, 1, None
        return None, 1, _Replayed(self.answers[name])

    def replayed_result(self, name: str, call_id: str | None, step: int, call: Any) -> Any:
        return call.output

    def expect_return(self, name: str, fn: Any) -> None:
        pass

    def tool_returned(self, name: str, call_id: str | None, t0: float, output: Any) -> None:
        self.completed.append((name, output))

    def tool_failed(self, name: str, call_id: str | None, t0: float, error: BaseException) -> None:
        self.completed.append((name, error))


RAN: list[str] = []


# -- OpenAI Agents SDK ---------------------------------------------------------------


def _agents_tool() -> Any:
    agents = pytest.importorskip("agents", reason="needs the Agents SDK: pip install openai-agents")

    @agents.function_tool  # type: ignore[untyped-decorator]
    def get_weather(city: str, unit: str = "C") -> str:
        """The weather in a city."""
        RAN.append(city)
        return f"Sunny in {city}, 21 {unit}"

    return get_weather


def _agents_invoke(tool: Any, arguments: str) -> Any:
    from agents.tool_context import ToolContext

    context = ToolContext(
        context=None, tool_name=tool.name, tool_call_id="c1", tool_arguments=arguments
    )
    return asyncio.run(tool.on_invoke_tool(context, arguments))


def test_an_agents_sdk_function_tool_keeps_its_class_name_and_schema() -> None:
    tool = _agents_tool()
    [wrapped] = wrap_tools(StubRecorder(), [tool])[0]
    assert type(wrapped) is type(tool)
    assert wrapped is not tool
    assert (wrapped.name, wrapped.description) == (tool.name, tool.description)
    assert wrapped.params_json_schema == tool.params_json_schema
    assert wrapped.strict_json_schema == tool.strict_json_schema


def test_an_agents_sdk_call_is_recorded_with_the_announced_arguments_only() -> None:
    tool = _agents_tool()
    recorder = StubRecorder()
    [wrapped] = wrap_tools(recorder, [tool])[0]
    RAN.clear()
    assert _agents_invoke(wrapped, '{"city": "Paris", "unit": "F"}') == "Sunny in Paris, 21 F"
    assert recorder.started == [("get_weather", {"city": "Paris", "unit": "F"})]
    assert recorder.completed == [("get_weather", "Sunny in Paris, 21 F")]
    assert RAN == ["Paris"]


def test_an_agents_sdk_call_replays_without_running_the_tool() -> None:
    tool = _agents_tool()
    [wrapped] = wrap_tools(StubRecorder({"get_weather": "recorded"}), [tool])[0]
    RAN.clear()
    assert _agents_invoke(wrapped, '{"city": "Paris"}') == "recorded"
    assert RAN == []


# -- LangChain -------------------------------------------------------------------------


def _langchain() -> Any:
    return pytest.importorskip("langchain_core.tools", reason="pip install langchain-core")


def _tool_call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args, "id": "call_1"}


def test_a_langchain_tool_keeps_its_class_and_schema_and_records_model_arguments() -> None:
    from typing import Annotated

    tools = _langchain()
    from langchain_core.runnables import RunnableConfig

    @tools.tool  # type: ignore[untyped-decorator]
    def get_weather(
        city: str, config: RunnableConfig, user: Annotated[str, tools.InjectedToolArg] = "x"
    ) -> str:
        """The weather in a city."""
        RAN.append(city)
        return f"Sunny in {city}"

    recorder = StubRecorder()
    [wrapped] = wrap_tools(recorder, [get_weather])[0]
    assert type(wrapped) is type(get_weather)
    assert (wrapped.name, wrapped.description) == (get_weather.name, get_weather.description)
    assert wrapped.tool_call_schema.model_json_schema() == (
        get_weather.tool_call_schema.model_json_schema()
    )
    RAN.clear()
    message = wrapped.invoke(_tool_call("get_weather", city="Paris", user="ann"))
    assert message.content == "Sunny in Paris"
    assert recorder.started == [("get_weather", {"city": "Paris"})]
    assert RAN == ["Paris"]


def test_a_langchain_async_tool_and_a_tool_class_replay_without_running() -> None:
    tools = _langchain()

    @tools.tool  # type: ignore[untyped-decorator]
    async def lookup(query: str) -> str:
        """Look a thing up."""
        RAN.append(query)
        return "live"

    class Double(tools.BaseTool):  # type: ignore[misc, name-defined]
        name: str = "double"
        description: str = "Twice a number."

        def _run(self, number: int) -> int:
            RAN.append("double")
            return number * 2

    recorder = StubRecorder({"lookup": "recorded", "double": 42})
    wrapped_lookup, wrapped_double = wrap_tools(recorder, [lookup, Double()])[0]
    assert type(wrapped_double) is Double
    RAN.clear()
    assert asyncio.run(wrapped_lookup.ainvoke({"query": "q"})) == "recorded"
    assert wrapped_double.invoke({"number": 3}) == 42
    assert asyncio.run(wrapped_double.ainvoke({"number": 3})) == 42
    assert RAN == []
    assert recorder.started == [
        ("lookup", {"query": "q"}),
        ("double", {"number": 3}),
        ("double", {"number": 3}),
    ]


# -- pydantic-ai -----------------------------------------------------------------------


def _pydantic_ai() -> Any:
    return pytest.importorskip("pydantic_ai", reason="pip install pydantic-ai-slim")


def test_a_pydantic_ai_tool_and_toolset_record_without_the_run_context() -> None:
    pydantic_ai = _pydantic_ai()

    def get_weather(ctx: pydantic_ai.RunContext[None], city: str, days: int = 1) -> str:  # type: ignore[name-defined]
        """The weather in a city."""
        RAN.append(city)
        return f"Sunny in {city} for {days}"

    toolset = pydantic_ai.FunctionToolset()

    @toolset.tool  # type: ignore[untyped-decorator]
    def get_time(ctx: pydantic_ai.RunContext[None], zone: str) -> str:  # type: ignore[name-defined]
        """The time in a zone."""
        RAN.append(zone)
        return "noon"

    tool = pydantic_ai.Tool(get_weather)
    recorder = StubRecorder()
    wrapped, wrapped_set = wrap_tools(recorder, [tool, toolset])[0]
    assert type(wrapped) is type(tool)
    assert type(wrapped_set) is type(toolset)
    assert wrapped.tool_def == tool.tool_def
    assert wrapped_set.tools["get_time"].tool_def == toolset.tools["get_time"].tool_def
    context = object()  # what pydantic-ai passes first; never recorded
    RAN.clear()
    schema = wrapped.function_schema
    assert asyncio.run(schema.call({"city": "Paris", "days": 2}, context)) == "Sunny in Paris for 2"
    time_schema = wrapped_set.tools["get_time"].function_schema
    assert asyncio.run(time_schema.call({"zone": "CET"}, context)) == "noon"
    assert recorder.started == [
        ("get_weather", {"city": "Paris", "days": 2}),
        ("get_time", {"zone": "CET"}),
    ]
    assert RAN == ["Paris", "CET"]


def test_a_plain_function_with_a_run_context_first_replays_without_it() -> None:
    pydantic_ai = _pydantic_ai()

    def get_weather(ctx: pydantic_ai.RunContext[None], city: str) -> str:  # type: ignore[name-defined]
        RAN.append(city)
        return "live"

    recorder = StubRecorder({"get_weather": "recorded"})
    [wrapped] = wrap_tools(recorder, [get_weather])[0]
    RAN.clear()
    assert wrapped(object(), "Paris") == "recorded"
    assert wrapped(object(), city="Oslo") == "recorded"
    assert recorder.started == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Oslo"}),
    ]
    assert RAN == []
    assert pydantic_ai.Tool(wrapped).function_schema.takes_ctx


# -- what is accepted ------------------------------------------------------------------


def test_a_list_gives_a_list_and_a_tuple_a_tuple_of_plain_functions() -> None:
    def get_weather(city: str) -> str:
        return city

    recorder = StubRecorder()
    wrapped, names = wrap_tools(recorder, (get_weather,))
    assert names == ["get_weather"]
    assert wrapped[0]("Paris") == "Paris"
    assert recorder.started == [("get_weather", {"city": "Paris"})]


def test_an_unknown_object_is_a_type_error_naming_it_and_what_is_accepted() -> None:
    class Widget:
        pass

    with pytest.raises(TypeError) as caught:
        wrap_tools(StubRecorder(), [Widget()])
    message = str(caught.value)
    assert "Widget" in message
    assert "FunctionTool (@function_tool)" in message
    assert "pydantic-ai Tool and FunctionToolset" in message


def test_a_tool_another_framework_decorated_is_refused_with_the_way_to_wrap_it() -> None:
    """Strands' ``@tool`` makes a method descriptor: callable, and ``inspect.isroutine``
    says it is a routine. Wrapped as a function it came back as one, Strands dropped it as
    an unknown tool, and the test recorded a model with no tools."""

    class DecoratedFunctionTool:
        __module__ = "strands.tools.decorator"

        def __init__(self, fn: Any) -> None:
            self.fn = fn
            self.__name__ = fn.__name__

        def __get__(self, instance: Any, owner: Any = None) -> Any:
            return self

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return self.fn(*args, **kwargs)

    def get_weather(city: str) -> str:
        return city

    decorated: Any = DecoratedFunctionTool(get_weather)
    assert inspect.isroutine(decorated)
    with pytest.raises(TypeError) as caught:
        wrap_tools(StubRecorder(), [decorated])
    assert str(caught.value).startswith(
        "rollout.tools() does not know how to wrap objects of type "
        "strands.tools.decorator.test_a_tool_another_framework_decorated_is_refused_with_the_"
        "way_to_wrap_it.<locals>.DecoratedFunctionTool; it takes plain functions,"
    )
    assert str(caught.value).endswith(
        "wrap the plain function, then decorate what comes back, "
        "[tool(f) for f in rollout.tools([get_weather])] (docs/frameworks.md)"
    )
    # Built-ins and methods are still wrapped as themselves.
    names = wrap_tools(StubRecorder(), [print, StubRecorder().expect_return])[1]
    assert names == ["print", "expect_return"]


def test_wrapping_plain_functions_imports_no_framework() -> None:
    code = (
        "import sys\n"
        "from pytest_rollout.session.frameworks import wrap_tools\n"
        "from pytest_rollout.session.rollout import RolloutSession\n"
        "class R:\n"
        "    def tool_started(self, *a): return None, 0, None\n"
        "    def expect_return(self, *a): pass\n"
        "wrap_tools(R(), [len.__call__, print])\n"
        "print(sorted(m for m in ('agents', 'langchain_core', 'pydantic_ai', 'langgraph')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
