"""The ``rollout`` object a test holds: wrap providers, tools and SDK clients, bracket the
run, assert on it, compare it with its golden.

Everything it records goes through its :class:`~pytest_rollout.session.engine.Engine`,
which the plugin talks to directly, and SDK clients through the engine's
:class:`~pytest_rollout.session.sdk_port.SdkPort`.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any, TypeVar, overload

from ..analysis.analyzers import AnalyzerOptions, Antipattern, find_antipatterns, parse_analyzers
from ..analysis.assertions import (
    ToolCallRecord,
    antipattern_failure,
    cost_failure,
    error_events,
    tool_calls_by_name,
)
from ..diff.drift import Verdict
from ..diff.integrity import unrecorded_calls, unrecorded_text
from ..diff.score import summarize
from ..errors import RolloutError
from ..format.events import Event
from ..format.recorder import Recorder
from ..replay.fork import ForkResult
from ..replay.fork import fork as fork_run
from ..replay.fork_plan import ForkPlan
from ..replay.mode import Mode
from ..replay.recorded import RecordedProvider
from ..replay.seal import RolloutNetworkError
from ..safety.sanitize import sanitize
from ..sdk import clients as sdk
from ..sdk.bedrock_client import bedrock_client
from ..sdk.endpoint import Endpoint
from ..sdk.gemini_client import gemini_client, gemini_client_args
from ..store.golden import GoldenRef, UnrecordedToolsError
from ..store.golden_store import LoadedGolden
from .acting import agents_of
from .engine import AuditSink, Engine
from .forking import prepare_fork, sdk_refusal
from .frameworks import ACCEPTED, name_framework_agents, wrap_tools
from .hooks import Hooks
from .mcp import McpRecording
from .mcp_clients import wrap_mcp
from .provider import ProviderProxy
from .sdk_port import SdkPort
from .setup import RunSetup
from .tools import wrap_tool

__all__ = ["RolloutSession", "RunHandle"]

_T = TypeVar("_T")


@dataclass(slots=True)
class RunHandle:
    """Yielded by ``rollout.run()``: set ``output`` to the agent's final answer."""

    output: Any = None


@dataclass(frozen=True, slots=True)
class FailedComparison:
    """``rollout == golden`` came out false: the verdict it read, and the code it was
    written in (the function whose ``assert`` then fails on it)."""

    verdict: Verdict
    code: CodeType | None


class RolloutSession:
    """One test's agent run, as the test sees it (the ``rollout`` fixture).

    ``setup`` says how the run is recorded, replayed and compared; ``golden`` is the test's
    golden in dry and full replay (:meth:`~pytest_rollout.store.golden_store.GoldenStore.open`);
    ``audit`` is where its actions are written when the session keeps an audit trail. The
    plugin builds it, and tests of the library may build one directly.
    """

    def __init__(
        self,
        setup: RunSetup,
        recorder: Recorder,
        golden: LoadedGolden | None = None,
        audit: AuditSink | None = None,
    ) -> None:
        self.engine = Engine(setup, recorder, golden, audit)
        self._port: SdkPort | None = None
        self._endpoints: list[Endpoint] = []  # rollout.endpoint(): stopped at the end
        #: The last ``rollout == golden`` that came out false (``None``: none did).
        self.failed_comparison: FailedComparison | None = None
        #: The connections a sealed replay refused (:mod:`pytest_rollout.replay.seal`),
        #: kept even when the agent swallowed the error.
        self.network_breaches: list[RolloutNetworkError] = []

    @property
    def _sdk(self) -> SdkPort:
        """The port the test's SDK clients share (one turn log for all of them)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        fork = self.engine.fork
        if fork is not None and fork.turn is not None:
            raise sdk_refusal(fork)
        if self._port is None:
            name_framework_agents(self.engine.recorder)  # who acts, where a framework says
            self._port = SdkPort(self.engine)
        return self._port

    # -- what the test wraps ------------------------------------------------------

    def provider(self, live: Any = None) -> ProviderProxy:
        """Wrap a provider: live when recording, the golden's turns in dry replay."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        engine = self.engine
        if engine.mode is Mode.DRY:
            replay = engine.replay
            assert replay is not None
            inner: Any = RecordedProvider(replay)
            if live is None:
                engine.adopt_golden_identity()
        else:
            if live is None:
                raise RolloutError(
                    f"rollout.provider() needs the live provider in {engine.mode.value} mode"
                )
            inner = live
        if live is not None:
            engine.name_provider(live)
        return ProviderProxy(engine, inner, replayed=engine.mode is Mode.DRY, live=live)

    def recorded_provider(self) -> ProviderProxy:
        """A provider serving this test's golden turns (what ``recorded_provider`` gives)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        engine = self.engine
        replay = engine.replay
        if replay is None:
            raise RolloutError(
                f"recorded_provider replays a golden, and this test runs in "
                f"{engine.mode.value} mode; wrap the live provider with rollout.provider(...)"
            )
        engine.adopt_golden_identity()
        return ProviderProxy(engine, RecordedProvider(replay), replayed=True)

    @overload
    def tools(self, tools: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]: ...

    @overload
    def tools(self, tools: list[_T]) -> list[_T]: ...

    @overload
    def tools(self, tools: tuple[_T, ...]) -> tuple[_T, ...]: ...

    def tools(self, tools: Any) -> Any:
        """Wrap tools: each call is recorded, and answered from the golden when replaying.

        Takes a mapping of names to functions (gives a dict), or a list or tuple (gives
        the same kind) of plain functions, named by ``__name__``, and framework tools:
        Agents SDK ``FunctionTool``, LangChain tools, pydantic-ai ``Tool`` and
        ``FunctionToolset``, each given back as an object of its class with the same name,
        description and schema (docs/frameworks.md).
        """
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        engine = self.engine
        name_framework_agents(engine.recorder)  # who acts, where a framework says
        if isinstance(tools, Mapping):
            wrapped: Any = {name: wrap_tool(engine.calls, name, fn) for name, fn in tools.items()}
            names = list(tools)
        elif isinstance(tools, list | tuple):
            found, names = wrap_tools(engine.calls, tools)
            wrapped = found if isinstance(tools, list) else tuple(found)
        else:
            raise TypeError(
                f"rollout.tools() takes a list or a mapping, got a "
                f"{type(tools).__module__}.{type(tools).__qualname__}; it takes {ACCEPTED}"
            )
        engine.tool_names.extend(n for n in dict.fromkeys(names) if n not in engine.tool_names)
        return wrapped

    def _refuse_unrecorded(self) -> None:
        """In dry replay of a golden with unrecorded tool calls (``rollout_unrecorded_tools
        = fail``): fail at once, before the agent's tools can run live."""
        __tracebackhide__ = True
        golden = self.engine.golden
        if golden is not None and isinstance(golden.error, UnrecordedToolsError):
            raise golden.error

    # -- SDK clients ----------------------------------------------------------------

    def openai(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """An ``openai.OpenAI`` client built with ``client_kwargs``, its requests recorded
        (and answered from the golden in dry replay). ``transport`` is the live transport
        (default: the network)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        return sdk.client(self._sdk, "openai", "OpenAI", transport, client_kwargs)

    def async_openai(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """``openai.AsyncOpenAI``, as :meth:`openai`."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        return sdk.client(self._sdk, "openai", "AsyncOpenAI", transport, client_kwargs)

    def anthropic(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """An ``anthropic.Anthropic`` client, as :meth:`openai`."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        return sdk.client(self._sdk, "anthropic", "Anthropic", transport, client_kwargs)

    def async_anthropic(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """``anthropic.AsyncAnthropic``, as :meth:`openai`."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        return sdk.client(self._sdk, "anthropic", "AsyncAnthropic", transport, client_kwargs)

    def gemini(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """A ``google.genai.Client`` (the Gemini API, or Vertex AI with ``vertexai=True``),
        as :meth:`openai`: its sync calls and those of its ``.aio`` client are recorded."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        return gemini_client(self._sdk, transport, client_kwargs)

    def async_gemini(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """The ``.aio`` client of :meth:`gemini`'s ``google.genai.Client``."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        return gemini_client(self._sdk, transport, client_kwargs, aio=True)

    def gemini_client_args(self, *, transport: Any = None, **client_args: Any) -> dict[str, Any]:
        """``client_args`` for a ``google.genai.Client`` built by a framework (LangChain's
        ``ChatGoogleGenerativeAI(client_args=...)``): with a transport that records both its
        sync and its async HTTP client, as :meth:`gemini`'s do."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        return gemini_client_args(self._sdk, transport, client_args)

    def bedrock(self, **client_kwargs: Any) -> Any:
        """A ``bedrock-runtime`` client (boto3's, else botocore's) built with
        ``client_kwargs``, its Converse and ConverseStream calls recorded at botocore's event
        hooks (and answered from the golden in dry replay, with no AWS credentials needed)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        return bedrock_client(self._sdk, client_kwargs)

    def http_client(
        self, *, transport: Any = None, library: str | None = None, **client_kwargs: Any
    ) -> Any:
        """An HTTP client whose model requests are recorded and replayed: for SDK clients
        and framework providers built by hand. ``library`` is ``"httpx2"`` or ``"httpx"``
        (default: the library of ``transport``, else ``httpx2``, else ``httpx``): a
        framework that wants an ``httpx.Client`` ignores an ``httpx2.Client``."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        return sdk.http_client(
            self._sdk, transport, client_kwargs, asynchronous=False, library=library
        )

    def async_http_client(
        self, *, transport: Any = None, library: str | None = None, **client_kwargs: Any
    ) -> Any:
        """The ``AsyncClient`` counterpart of :meth:`http_client`."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        return sdk.http_client(
            self._sdk, transport, client_kwargs, asynchronous=True, library=library
        )

    # -- MCP servers ----------------------------------------------------------------

    @functools.cached_property
    def _mcp(self) -> McpRecording:
        """The run's MCP servers (each server's listings and calls, by name)."""
        return McpRecording(self.engine)

    def mcp(self, server: _T, *, name: str | None = None) -> _T:
        """An MCP client, server or toolset whose ``tools/list`` and ``tools/call`` are
        recorded, and answered from the golden in replay without starting the server: an
        ``mcp`` ``Client`` or ``ClientSession``, an Agents SDK MCP server, a pydantic-ai
        ``MCPToolset``, given back as what its framework takes in its place. ``name`` names
        the server in the recording (default: the server's own name, else ``"mcp"``)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        wrapped: _T = wrap_mcp(self._mcp, server, name)
        return wrapped

    # -- agents in another process ----------------------------------------------------

    def endpoint(self, upstream: str | None = None, *, port: int = 0) -> Endpoint:
        """A loopback HTTP endpoint (127.0.0.1, a port of its own, a token in its URL) whose
        model requests are recorded and replayed like this test's SDK clients': hand its
        ``base_url`` (or ``env()``) to an agent in another process. Recording, it forwards to
        each API's service, or to ``upstream`` (a root URL), with the key from this process's
        environment; replaying, it answers from the golden. ``port``: the port to listen on
        (0: a free one). It stops when the test ends (docs/sdk-agents.md, "Agents in another
        process")."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        endpoint = Endpoint(self._sdk, upstream=upstream, listen_port=port)
        self._endpoints.append(endpoint)
        return endpoint.start()

    def stop_endpoints(self) -> None:
        """Stop the endpoints :meth:`endpoint` started (the fixture does this at teardown,
        before the run is closed)."""
        endpoints, self._endpoints = self._endpoints, []
        for endpoint in endpoints:
            endpoint.stop()

    # -- the run --------------------------------------------------------------------

    def run(self, prompt: Any = None, **meta: Any) -> AbstractContextManager[RunHandle]:
        """Bracket the agent run: ``run.started`` on entry, ``run.completed`` or
        ``run.failed`` on exit (the exception still propagates). A run refused (a second
        one, a golden that cannot be replayed) is refused here, on the test's own line."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        self._refuse_unrecorded()
        self.engine.start(prompt, meta)
        return self._running()

    @contextmanager
    def _running(self) -> Iterator[RunHandle]:
        handle = RunHandle()
        try:
            yield handle
        except BaseException as exc:
            self.engine.finish_failed(exc)
            raise
        self.engine.finish_completed(handle.output)

    def emit(self, event_type: str, /, **data: Any) -> None:
        """Record a custom event at the current step."""
        self.engine.emit(event_type, **data)

    def agent(self, name: str) -> AbstractContextManager[None]:
        """Name the agent acting inside the block: every event recorded there says so, and
        a ``handoff`` is recorded where control passes to another (docs/agents.md)."""
        return agents_of(self.engine.recorder).acting(name)

    @functools.cached_property
    def _hooks(self) -> Hooks:
        return Hooks(self.engine)

    def hook(self, hook: _T, *, name: str | None = None) -> _T:
        """A guardrail or tool hook whose decisions are recorded (``tool.hook.mutation``;
        an Agents SDK guardrail: ``guardrail.checked``) and served from the golden in a dry
        replay: a callable comes back wrapped, a guardrail as a copy (docs/agents.md)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        wrapped: _T = self._hooks.wrap(hook, name)
        return wrapped

    def fork(
        self, step: int, *, override: Mapping[str, Any] | None = None, **options: Any
    ) -> ForkResult:
        """The golden's conversation up to and including ``step`` (see :func:`fork`).

        With ``override``, called before the run records anything, the run also becomes a
        fork of its golden: answered from it up to ``step``, with the results ``override``
        gives at ``step`` (by tool call id or tool name; ``"turn"``: the model turn), and
        live after it (docs/replay.md, "Fork inside a test")."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        if override is None:
            return fork_run(self.engine.require_golden().events, step, **options)
        plan, make_fork = prepare_fork(self.engine, step, override)
        if self._port is not None:
            self._refuse_built_clients(plan)
        result = fork_run(self.engine.require_golden().events, step, **options)
        make_fork()
        return result

    def _refuse_built_clients(self, plan: ForkPlan) -> None:
        """A fork made after SDK clients were built: in dry replay they were built without
        a live transport to go on with, and a replacement turn is no SDK client's."""
        __tracebackhide__ = True
        if plan.turn is not None:
            raise sdk_refusal(plan)
        if self.engine.mode is Mode.DRY:
            raise RolloutError(
                "rollout.fork(..., override=...) comes after an SDK client was built: a "
                "client built for a dry replay has no live transport to go on with after the "
                "fork's step. Call rollout.fork() before rollout.openai(), rollout.anthropic() "
                "or rollout.http_client()"
            )

    def events(self) -> tuple[Event, ...]:
        """This run's events, as the loader reads them back (after the ``run()`` block)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        return self.engine.events()

    def verdict(self) -> Verdict:
        """This run against its golden: the drift report behind ``rollout == golden``."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        return self.engine.verdict()

    def close(self) -> None:
        """End the run if it is still open and flush its recording (the fixture does this
        at teardown)."""
        self.stop_endpoints()
        self.engine.close()

    @property
    def recorder(self) -> Recorder:
        """The recorder of this run (its events so far: ``recorder.rollout()``)."""
        return self.engine.recorder

    @property
    def mode(self) -> Mode:
        return self.engine.mode

    # -- analyzers and assertions ---------------------------------------------------

    def analyze(self, *names: str, **options: Any) -> None:
        """Turn on analyzers for this test (``"all"`` for every one), with their options
        (``cost_multiplier=3.0``, ``context_limit=32000``, ...), before the run starts."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        engine = self.engine
        if engine.started:
            raise RolloutError("rollout.analyze() must be called before the run starts")
        current = engine.analyzer_options
        enabled = current.enabled | parse_analyzers(names)
        try:
            engine.analyzer_options = dataclasses.replace(current, enabled=enabled, **options)
        except TypeError:
            known = ", ".join(f.name for f in dataclasses.fields(AnalyzerOptions)[1:])
            raise RolloutError(
                f"rollout.analyze() takes analyzer names and the options {known}; "
                f"got {sorted(options)}"
            ) from None

    @property
    def cost_usd(self) -> float | None:
        """What the run cost, when its turns reported a cost."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        return summarize(self.engine.events()).cost_usd

    @property
    def steps(self) -> int:
        """How many steps the run took (one per LLM turn)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        return summarize(self.engine.events()).steps

    @property
    def tool_calls(self) -> Mapping[str, tuple[ToolCallRecord, ...]]:
        """The run's tool calls by tool name: ``rollout.tool_calls["get_weather"]``."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        return tool_calls_by_name(self.engine.events())

    @property
    def errors(self) -> tuple[Event, ...]:
        """The run's error events (``run.failed``, ``error.context``, ... and the types of
        ``pytest_rollout_error_types``)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        return error_events(self.engine.events(), self.engine.setup.error_types)

    @property
    def antipatterns(self) -> list[Antipattern]:
        """Tools the run called with the same arguments 3 or more times."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        threshold = self.engine.analyzer_options.antipattern_threshold
        return find_antipatterns(self.engine.events(), threshold)

    def unrecorded_tools(self) -> str | None:
        """What the run's tools did outside ``rollout.tools``: the calls its turns announced
        that it never recorded, said in one sentence (``None``: there were none)."""
        try:
            calls = unrecorded_calls(self.engine.events())
        except RolloutError:
            return None
        return unrecorded_text(calls) if calls else None

    def assert_no_antipatterns(self) -> None:
        """Fail when the run called a tool with the same arguments 3 or more times."""
        __tracebackhide__ = True  # pytest shows the test's line, not this one
        threshold = self.engine.analyzer_options.antipattern_threshold
        message = antipattern_failure(self.antipatterns, threshold)
        if message is not None:
            raise AssertionError(message)

    def assert_cost_below(self, usd: float) -> None:
        """Fail when the run cost ``usd`` or more (or its cost is unknown)."""
        __tracebackhide__ = True
        message = cost_failure(self.engine.events(), usd)
        if message is not None:
            raise AssertionError(message)

    def __eq__(self, other: object) -> bool:
        """``rollout == golden``: whether this run matches the golden the test replays. A
        :class:`GoldenRef` of another file is a usage error: the run was replayed from this
        test's golden, so only that one can say whether it still holds."""
        __tracebackhide__ = True
        if not isinstance(other, GoldenRef):
            return NotImplemented
        self._check_ref(other)
        if self.engine.matches_golden():
            return True
        caller = sys._getframe(1)  # the function whose assert fails on this
        self.failed_comparison = FailedComparison(self.engine.verdict(), caller.f_code)
        return False

    def _check_ref(self, ref: GoldenRef) -> None:
        __tracebackhide__ = True
        own = self.engine.setup.golden_path
        if own is None or Path(ref.path) == own:
            return
        raise RolloutError(
            f"rollout == {sanitize(repr(ref))} names another file than this test's golden "
            f"({sanitize(str(own))}): a run is compared with the golden it was recorded as "
            f"and replayed from. Compare with the golden fixture, or make that file this "
            f"test's golden with @pytest.mark.rollout(golden=...)"
        )

    __hash__ = None  # type: ignore[assignment]
