"""One test's rollout: record an agent run, replay it from a golden, compare the two.

This is the object behind the ``rollout`` fixture, kept free of pytest so that it can be
used and tested on its own. The plugin builds it with the mode, the golden and the options
that pytest's flags, ini keys and markers give.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from functools import wraps
from typing import Any, Protocol

from ..analysis.analyzers import (
    Analysis,
    AnalyzerOptions,
    Antipattern,
    find_antipatterns,
    parse_analyzers,
)
from ..analysis.assertions import (
    ToolCallRecord,
    antipattern_failure,
    cost_failure,
    error_events,
    tool_calls_by_name,
)
from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions
from ..diff.divergence import Divergence, ReplayDivergenceError
from ..diff.drift import Verdict, drift_report
from ..diff.score import summarize
from ..errors import RolloutError
from ..format.events import AUDIT_ACTION, RUN_COMPLETED, RUN_FAILED, RUN_STARTED, Event
from ..format.loader import Rollout
from ..format.recorder import Recorder
from ..replay.fork import ForkResult
from ..replay.fork import fork as fork_run
from ..replay.recorded import (
    RECORDED_ERROR,
    RecordedProvider,
    Replay,
    new_messages,
    rebuild_error,
    request_hash,
    to_json_data,
)
from ..replay.turns import Turn, coerce_turn
from ..sdk import clients as sdk
from ..sdk.pricing import PRICES, Price
from ..sdk.wire import WireRequest
from .golden import GoldenRef

__all__ = [
    "GoldenEditedError",
    "GoldenMissingError",
    "Mode",
    "RolloutSession",
    "RunHandle",
]


class Mode(StrEnum):
    """How a test's providers and tools run.

    ``record``: live, and the run becomes the golden. ``dry``: provider and tools answered
    from the golden (the CI default). ``full``: live provider, tools answered from the
    golden. ``live``: live and compared with nothing (deterministic fakes).
    """

    RECORD = "record"
    DRY = "dry"
    FULL = "full"
    LIVE = "live"

    @property
    def replays_tools(self) -> bool:
        return self in (Mode.DRY, Mode.FULL)


class GoldenMissingError(RolloutError):
    """A test in compare mode has no golden file to replay and compare against."""

    __module__ = "pytest_rollout"

    def __init__(self, path: str, hint: str) -> None:
        self.path = path
        super().__init__(f"no golden file for this test: {path} does not exist. {hint}")


class GoldenEditedError(RolloutError):
    """A test's golden no longer matches its receipt: it changed after it was recorded
    (edited, truncated), or it has no receipt. Nothing of it is replayed."""

    __module__ = "pytest_rollout"


@dataclass(slots=True)
class RunHandle:
    """Yielded by ``rollout.run()``: set ``output`` to the agent's final answer."""

    output: Any = None


@dataclass(slots=True)
class _Announced:
    """A tool call announced by the current turn, waiting for the agent to make it."""

    call_id: str
    name: str
    arguments: Any
    claimed: bool = False


def _error_data(exc: BaseException) -> dict[str, str]:
    recorded = getattr(exc, RECORDED_ERROR, None)
    if isinstance(recorded, dict):  # replayed: the error as it was recorded
        return dict(recorded)
    return {"class": type(exc).__name__, "message": str(exc)}


def _bind_arguments(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """A tool call's arguments as one object, positional ones named by the signature."""
    if signature is None:
        return {"args": list(args), **kwargs} if args else dict(kwargs)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return {"args": list(args), **kwargs} if args else dict(kwargs)
    arguments: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(value)
        else:
            arguments[name] = list(value) if kind is inspect.Parameter.VAR_POSITIONAL else value
    return arguments


def _as_is(value: Any) -> Any:
    return value


def _causes(error: BaseException, limit: int = 10) -> list[dict[str, str]]:
    """The exceptions behind ``error`` (``raise ... from``, or raised while handling)."""
    causes: list[dict[str, str]] = []
    current = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    seen = {id(error)}
    while current is not None and id(current) not in seen and len(causes) < limit:
        seen.add(id(current))
        causes.append(_error_data(current))
        suppressed = current.__suppress_context__
        current = current.__cause__ or (None if suppressed else current.__context__)
    return causes


def _analyzed(
    method: Callable[[str, Mapping[str, Any], int], list[tuple[str, dict[str, Any]]]],
    event_type: str,
    data: Mapping[str, Any],
    step: int,
) -> list[tuple[str, dict[str, Any]]]:
    """What an analyzer says about an event; an analyzer that fails says nothing (it must
    never break the user's test)."""
    try:
        return method(event_type, data, step)
    except Exception:
        return []


class AuditSink(Protocol):
    """Where a session's audit entries go (the day's audit trail), and which tools count
    as actions."""

    def is_action(self, tool_name: str) -> bool: ...

    def write(self, run_id: str, event_type: str, payload: Mapping[str, Any]) -> None: ...


def _plain(value: Any) -> Any:
    """``value`` as recorded, or a placeholder naming its type when it cannot be recorded."""
    try:
        return to_json_data(value)
    except Exception:
        return f"<unrecordable {type(value).__name__}>"


class RolloutSession:
    """Records one test's agent run and, when replaying, answers it from the golden."""

    def __init__(
        self,
        *,
        test_id: str,
        mode: Mode,
        recorder: Recorder,
        golden_path: str,
        golden: Rollout | None = None,
        golden_error: RolloutError | None = None,
        options: CanonicalOptions = DEFAULT_OPTIONS,
        allow_unconsumed: bool = False,
        missing_hint: str = "",
        run_display: str | None = None,
        error_types: Iterable[str] = (),
        run_id: str | None = None,
        prices: Mapping[str, Price] = PRICES,
        analyzers: AnalyzerOptions | None = None,
        audit: AuditSink | None = None,
    ) -> None:
        self.test_id = test_id
        self.mode = mode
        self.recorder = recorder
        self.golden_path = golden_path
        self.golden = golden
        self.options = options
        self.allow_unconsumed = allow_unconsumed
        self._golden_error = golden_error
        self._missing_hint = missing_hint
        self._run_display = run_display
        self.error_types = tuple(error_types)
        self.prices = prices
        self.analyzer_options = analyzers or AnalyzerOptions()
        self._analysis: Analysis | None = None
        self._audit = audit
        self._lock = threading.RLock()
        self._deferred: list[Callable[[], None]] = []
        self._start_written = False
        self._replay: Replay | None = None
        self._run_id = run_id or uuid.uuid4().hex
        redactor = recorder.redactor
        self._redact: Callable[[Any], Any] = _as_is if redactor is None else redactor.redact
        self._started = False
        self._start_args: tuple[Any, dict[str, Any]] | None = None
        self._finished = False
        self._t0 = 0.0
        self._tools: list[str] = []
        self._model: str | None = None
        self._provider: str | None = None
        self._cost = 0.0
        self._costed = False
        self._announced: list[_Announced] = []
        self._verdict: Verdict | None = None
        self.reported = False

    # -- the golden and its replay ------------------------------------------------

    @property
    def replay(self) -> Replay | None:
        """The replay of the golden (``None`` when this mode replays nothing)."""
        if not self.mode.replays_tools:
            return None
        if self._replay is None:
            self._replay = Replay.from_rollout(
                self.require_golden(), source=self.golden_path, redact=self._redact
            )
        return self._replay

    @property
    def replay_started(self) -> bool:
        """Whether anything was answered (or refused) from the golden yet."""
        return self._replay is not None

    def require_golden(self) -> Rollout:
        """The golden rollout, or the error that says why there is none."""
        if self.golden is not None:
            return self.golden
        if self._golden_error is not None:
            raise self._golden_error
        raise GoldenMissingError(self.golden_path, self._missing_hint)

    # -- what the test wraps ------------------------------------------------------

    def provider(self, live: Any = None) -> ProviderProxy:
        """Wrap a provider: live when recording, the golden's turns in dry replay."""
        if self.mode is Mode.DRY:
            replay = self.replay
            assert replay is not None
            inner: Any = RecordedProvider(replay)
            if live is None:
                self._adopt_golden_identity()
        else:
            if live is None:
                raise RolloutError(
                    f"rollout.provider() needs the live provider in {self.mode.value} mode"
                )
            inner = live
        if live is not None and self._provider is None:
            self._provider = type(live).__name__
            model = getattr(live, "model", None)
            self._model = model if isinstance(model, str) else None
        return ProviderProxy(self, inner)

    def recorded_provider(self) -> ProviderProxy:
        """A provider serving this test's golden turns (what ``recorded_provider`` gives)."""
        replay = self.replay
        if replay is None:
            raise RolloutError(
                f"recorded_provider replays a golden, and this test runs in "
                f"{self.mode.value} mode; wrap the live provider with rollout.provider(...)"
            )
        self._adopt_golden_identity()
        return ProviderProxy(self, RecordedProvider(replay))

    def _adopt_golden_identity(self) -> None:
        """With no live provider to ask, the run names the model the golden was recorded
        with: the provider is the recording itself."""
        if self._provider is not None or self.golden is None:
            return
        started = self.golden.events[0].data
        model, provider = started.get("model"), started.get("provider")
        self._model = model if isinstance(model, str) else None
        self._provider = provider if isinstance(provider, str) else None

    def tools(self, mapping: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
        """Wrap tools: each call is recorded, and answered from the golden when replaying."""
        wrapped = {name: self._wrap_tool(name, fn) for name, fn in mapping.items()}
        self._tools.extend(n for n in mapping if n not in self._tools)
        return wrapped

    # -- SDK clients ----------------------------------------------------------------

    def openai(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """An ``openai.OpenAI`` client built with ``client_kwargs``, its requests recorded
        (and answered from the golden in dry replay). ``transport`` is the live transport
        (default: the network)."""
        return sdk.client(self, "openai", "OpenAI", transport, client_kwargs)

    def async_openai(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """``openai.AsyncOpenAI``, as :meth:`openai`."""
        return sdk.client(self, "openai", "AsyncOpenAI", transport, client_kwargs)

    def anthropic(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """An ``anthropic.Anthropic`` client, as :meth:`openai`."""
        return sdk.client(self, "anthropic", "Anthropic", transport, client_kwargs)

    def async_anthropic(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """``anthropic.AsyncAnthropic``, as :meth:`openai`."""
        return sdk.client(self, "anthropic", "AsyncAnthropic", transport, client_kwargs)

    def http_client(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """An HTTP client (``httpx2.Client``, else ``httpx.Client``) whose model requests
        are recorded and replayed: for SDK clients and framework providers built by hand."""
        return sdk.http_client(self, transport, client_kwargs, asynchronous=False)

    def async_http_client(self, *, transport: Any = None, **client_kwargs: Any) -> Any:
        """The ``AsyncClient`` counterpart of :meth:`http_client`."""
        return sdk.http_client(self, transport, client_kwargs, asynchronous=True)

    @property
    def serves_turns(self) -> bool:
        """Whether model turns are answered from the golden (dry replay)."""
        return self.mode is Mode.DRY

    def adopt_sdk_identity(self, provider: str, model: str | None) -> None:
        """Name the run's model and provider from an SDK request, unless named already."""
        if self._provider is None:
            self._provider = provider
            self._model = model

    def sdk_turn_ready(self) -> None:
        """Before a live model request in full replay: the calls the previous turn asked
        for must have been made (the request itself is the next step's turn)."""
        replay = self.replay
        if replay is None or self.mode is not Mode.FULL:
            return
        with self._divergence_recorded():
            replay.begin_turn(self.recorder.step + 1)

    def serve_sdk_turn(
        self, request: WireRequest, fresh: list[Any], key: list[Any]
    ) -> Mapping[str, Any]:
        """Dry replay of an SDK request: its ``llm.turn.started``, and the recorded turn it
        matches (or a replay divergence)."""
        self.open_sdk_turn(request, fresh, key)
        replay = self.replay
        assert replay is not None
        with self._divergence_recorded():
            return replay.next_turn(key, request.tools, request.params, fresh)

    def open_sdk_turn(self, request: WireRequest, fresh: list[Any], key: list[Any]) -> None:
        """An SDK request's ``llm.turn.started``."""
        self._open_turn(fresh, key, request.tools, request.params)

    def complete_sdk_turn(
        self, turn: Turn, latency_ms: float, raw: Mapping[str, Any], ttft_ms: float | None
    ) -> None:
        """An SDK response, read to its end: the turn's ``llm.turn.completed``."""
        self._record_turn(turn, latency_ms, raw=dict(raw), ttft_ms=ttft_ms)

    def defer(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` before the next event is recorded (a live turn whose body is
        still being read writes its start then, so that events keep their order)."""
        with self._lock:
            self._deferred.append(callback)

    def cancel_deferred(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._deferred:
                self._deferred.remove(callback)

    @contextmanager
    def run(self, prompt: Any = None, **meta: Any) -> Iterator[RunHandle]:
        """Bracket the agent run: ``run.started`` on entry, ``run.completed`` or
        ``run.failed`` on exit (the exception still propagates)."""
        self._start(prompt, meta)
        handle = RunHandle()
        try:
            yield handle
        except BaseException as exc:
            self._finish(RUN_FAILED, {"error": _error_data(exc)}, exc)
            raise
        self._finish_completed(handle.output)

    def emit(self, event_type: str, /, **data: Any) -> None:
        """Record a custom event at the current step."""
        self._ensure_started()
        self._emit(event_type, data)

    def fork(self, step: int, **options: Any) -> ForkResult:
        """The golden's conversation up to and including ``step`` (see :func:`fork`)."""
        return fork_run(self.require_golden().events, step, **options)

    # -- analyzers, assertions and the audit trail ---------------------------------

    def analyze(self, *names: str, **options: Any) -> None:
        """Turn on analyzers for this test (``"all"`` for every one), with their options
        (``cost_multiplier=3.0``, ``context_limit=32000``, ...), before the run starts."""
        if self._started:
            raise RolloutError("rollout.analyze() must be called before the run starts")
        current = self.analyzer_options
        enabled = current.enabled | parse_analyzers(names)
        try:
            self.analyzer_options = dataclasses.replace(current, enabled=enabled, **options)
        except TypeError:
            known = ", ".join(f.name for f in dataclasses.fields(AnalyzerOptions)[1:])
            raise RolloutError(
                f"rollout.analyze() takes analyzer names and the options {known}; "
                f"got {sorted(options)}"
            ) from None

    def _emit(
        self, event_type: str, data: Mapping[str, Any], context: Mapping[str, Any] | None = None
    ) -> None:
        """Record an event, with what the analyzers say before and after it.

        ``context`` is what the analyzers see instead of ``data`` (the error's cause chain
        of a failed run, which the event itself does not carry).
        """
        if self._deferred and event_type != RUN_STARTED:
            with self._lock:
                deferred, self._deferred = self._deferred, []
            for callback in deferred:
                callback()
        analysis = self._analysis
        if analysis is None:
            if not self.analyzer_options.enabled:
                self.recorder.emit(event_type, data)
                return
            analysis = self._analysis = Analysis(self.analyzer_options)
        seen = data if context is None else context
        for found in _analyzed(analysis.before, event_type, seen, self.recorder.step):
            self.recorder.emit(*found)
        self.recorder.emit(event_type, data)
        for found in _analyzed(analysis.after, event_type, seen, self.recorder.step):
            self.recorder.emit(*found)

    def _audit_event(self, event_type: str, data: Mapping[str, Any], **extra: Any) -> None:
        """Append an entry to the audit trail, when there is one (redacted like the run)."""
        if self._audit is not None:
            payload = {**self._redact(dict(data)), "mode": self.mode.value, **extra}
            self._audit.write(self._run_id, event_type, payload)

    @property
    def cost_usd(self) -> float | None:
        """What the run cost, when its turns reported a cost."""
        return summarize(self.events()).cost_usd

    @property
    def steps(self) -> int:
        """How many steps the run took (one per LLM turn)."""
        return summarize(self.events()).steps

    @property
    def tool_calls(self) -> Mapping[str, tuple[ToolCallRecord, ...]]:
        """The run's tool calls by tool name: ``rollout.tool_calls["get_weather"]``."""
        return tool_calls_by_name(self.events())

    @property
    def errors(self) -> tuple[Event, ...]:
        """The run's error events (``run.failed``, ``error.context``, ... and the types of
        ``pytest_rollout_error_types``)."""
        return error_events(self.events(), self.error_types)

    @property
    def antipatterns(self) -> list[Antipattern]:
        """Tools the run called with the same arguments 3 or more times."""
        return find_antipatterns(self.events(), self.analyzer_options.antipattern_threshold)

    def assert_no_antipatterns(self) -> None:
        """Fail when the run called a tool with the same arguments 3 or more times."""
        __tracebackhide__ = True  # pytest shows the test's line, not this one
        threshold = self.analyzer_options.antipattern_threshold
        message = antipattern_failure(self.antipatterns, threshold)
        if message is not None:
            raise AssertionError(message)

    def assert_cost_below(self, usd: float) -> None:
        """Fail when the run cost ``usd`` or more (or its cost is unknown)."""
        __tracebackhide__ = True
        message = cost_failure(self.events(), usd)
        if message is not None:
            raise AssertionError(message)

    # -- recording ----------------------------------------------------------------

    def _start(self, prompt: Any, meta: Mapping[str, Any]) -> None:
        """Open the run. ``run.started`` is written with the first event that follows, so
        that providers and tools wrapped inside the ``run()`` block are named in it."""
        if self._started:
            raise RolloutError("rollout.run() was entered twice: one test records one run")
        self._started = True
        self._t0 = time.perf_counter()
        self._start_args = (prompt, dict(meta))

    def _emit_start(self) -> None:
        if self._start_written:
            return
        with self._lock:  # another thread's first event waits until run.started is out
            self._write_start()

    def _write_start(self) -> None:
        if self._start_args is None:
            return
        prompt, meta = self._start_args
        self._start_args = None
        data: dict[str, Any] = {
            "run_id": self._run_id,
            "test_id": self.test_id,
            "model": self._model,
            "provider": self._provider,
            "tools": list(self._tools),
            "meta": _plain(dict(meta)),
        }
        if prompt is not None:
            data["prompt"] = _plain(prompt)
        self._emit(RUN_STARTED, data)
        self._start_written = True
        self._audit_event(RUN_STARTED, data)

    def _ensure_started(self) -> None:
        if not self._started:
            self._start(None, {})
        self._emit_start()

    def _finish(
        self, event_type: str, data: dict[str, Any], error: BaseException | None = None
    ) -> None:
        if self._finished or not self._started:
            return
        self._emit_start()
        self._finished = True
        context = None
        if error is not None:  # the analyzers see the cause chain, which the event lacks
            context = {**data, "error": {**data["error"], "causes": _causes(error)}}
        self._emit(event_type, data, context)
        self._audit_event(event_type, data)

    def _finish_completed(self, output: Any) -> None:
        totals = {"total_cost_usd": round(self._cost, 9) if self._costed else None}
        self._finish(
            RUN_COMPLETED,
            {
                "outcome": "completed",
                "output": _plain(output),
                "cost_totals": totals,
                "total_duration_ms": round((time.perf_counter() - self._t0) * 1000, 3),
            },
        )

    def _open_turn(self, fresh: list[Any], key: list[Any], tools: Any, params: Any) -> None:
        """``llm.turn.started``: the request's new messages and the hash of the whole request
        (``key``), taken on redacted data so that it is the same on every machine whatever
        secret the environment holds. The event itself is redacted (or, in mode "none",
        dropped) by the recorder, like any other. In full replay, the calls the previous
        turn asked for must have been made."""
        self._ensure_started()
        redact = self._redact
        self._emit(
            "llm.turn.started",
            {
                "messages": fresh,
                "tools": tools,
                "params": params,
                "messages_hash": request_hash(redact(key), redact(tools), redact(params)),
            },
        )
        replay = self.replay
        if replay is not None and self.mode is Mode.FULL:
            with self._divergence_recorded():
                replay.live_turn(self.recorder.step)

    def _record_turn(
        self,
        turn: Turn,
        latency_ms: float,
        raw: Any = None,
        ttft_ms: float | None = None,
    ) -> None:
        data = turn.to_event_data()
        data["latency_ms"] = latency_ms
        if ttft_ms is not None:
            data["ttft_ms"] = ttft_ms
        if raw is not None:
            data["raw"] = raw
        self._emit("llm.turn.completed", data)
        self._announced = [_Announced(c.id, c.name, _plain(c.arguments)) for c in turn.tool_calls]
        if turn.cost_usd is not None:
            self._cost += turn.cost_usd
            self._costed = True
            self._emit("usage.delta", {"cumulative_cost_usd": round(self._cost, 9)})

    def _claim_call_id(self, name: str, arguments: Any) -> str | None:
        """The id of the announced call this call answers: the first unclaimed one with the
        same name and arguments, else (arguments changed on the way) the same name."""
        for exact in (True, False):
            for call in self._announced:
                if call.claimed or call.name != name:
                    continue
                if exact and call.arguments != arguments:
                    continue
                call.claimed = True
                return call.call_id
        return None

    @contextmanager
    def _divergence_recorded(self) -> Iterator[None]:
        """A replay divergence raised inside is recorded as an event, then propagates."""
        try:
            yield
        except ReplayDivergenceError as exc:
            self._divergence_event(exc)
            raise

    def _divergence_event(self, error: ReplayDivergenceError) -> None:
        d = error.divergence
        self._emit(
            "replay.divergence",
            {"step": self.recorder.step, "kind": d.kind.value, "detail": d.detail},
        )

    # -- tools --------------------------------------------------------------------

    def _wrap_tool(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        try:
            signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            signature = None

        if inspect.iscoroutinefunction(fn):

            @wraps(fn)
            async def async_tool(*args: Any, **kwargs: Any) -> Any:
                call_id, step, replayed = self._tool_started(name, signature, args, kwargs)
                if replayed is not None:
                    return self._replayed_result(name, call_id, step, replayed)
                t0 = time.perf_counter()
                try:
                    result = await fn(*args, **kwargs)
                except Exception as exc:
                    self._tool_completed(name, call_id, t0, error=exc)
                    raise
                self._tool_completed(name, call_id, t0, output=result)
                return result

            return async_tool

        @wraps(fn)
        def tool(*args: Any, **kwargs: Any) -> Any:
            call_id, step, replayed = self._tool_started(name, signature, args, kwargs)
            if replayed is not None:
                return self._replayed_result(name, call_id, step, replayed)
            t0 = time.perf_counter()
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                self._tool_completed(name, call_id, t0, error=exc)
                raise
            self._tool_completed(name, call_id, t0, output=result)
            return result

        return tool

    def _tool_started(
        self,
        name: str,
        signature: inspect.Signature | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> tuple[str | None, int, Any]:
        """Record the call's start; when replaying, find its recorded answer (or raise)."""
        self._ensure_started()
        arguments = _plain(_bind_arguments(signature, args, kwargs))
        call_id = self._claim_call_id(name, arguments)
        step = self.recorder.step
        self._emit("tool.call.started", {"call_id": call_id, "name": name, "arguments": arguments})
        replay = self.replay
        if self._audit is not None and self._audit.is_action(name):
            # In the audit trail only: a run's events (and so its golden) do not depend on
            # whether the trail is on.
            action = {"call_id": call_id, "step": step, "name": name, "arguments": arguments}
            self._audit_event(AUDIT_ACTION, action, live=replay is None)
        if replay is None:
            return call_id, step, None
        try:
            return call_id, step, replay.answer_call(step, name, arguments)
        except ReplayDivergenceError as exc:
            self._emit(
                "tool.call.completed",
                {"call_id": call_id, "name": name, "error": _error_data(exc), "duration_ms": 0},
            )
            self._divergence_event(exc)
            raise

    def _replayed_result(self, name: str, call_id: str | None, step: int, call: Any) -> Any:
        data: dict[str, Any] = {"call_id": call_id, "name": name, "duration_ms": 0}
        if call.error:
            data["error"] = call.error
            self._emit("tool.call.completed", data)
            raise rebuild_error(call.error)
        data["output"] = call.output
        self._emit("tool.call.completed", data)
        return call.output

    def _tool_completed(
        self,
        name: str,
        call_id: str | None,
        t0: float,
        *,
        output: Any = None,
        error: BaseException | None = None,
    ) -> None:
        data: dict[str, Any] = {
            "call_id": call_id,
            "name": name,
            "duration_ms": round((time.perf_counter() - t0) * 1000, 3),
        }
        if error is not None:
            data["error"] = _error_data(error)
        else:
            data["output"] = _plain(output)
        self._emit("tool.call.completed", data)

    # -- the end ------------------------------------------------------------------

    def close(self) -> None:
        """End the run if the test left it open, and flush the recording."""
        if self._started and not self._finished:
            self._finish_completed(None)
        self.recorder.close()

    @property
    def used(self) -> bool:
        """Whether the test recorded anything at all."""
        return self._started

    def events(self) -> tuple[Event, ...]:
        """This run's events so far, as the loader reads them back."""
        if not self._started:
            return ()
        if not self._finished:
            raise RolloutError("the run is still open: compare after the rollout.run() block")
        return self.recorder.rollout().events

    def divergences(self) -> list[Divergence]:
        """Replay's divergences, then what the run left unconsumed (unless allowed)."""
        if self._replay is None:
            return []
        found = list(self._replay.divergences)
        if not self.allow_unconsumed and self._finished:
            found.extend(self._replay.leftovers())
        return found

    def verdict(self) -> Verdict:
        """Compare this run with its golden (closing the run first if it is still open)."""
        if self._verdict is not None:
            return self._verdict
        golden = self.require_golden()
        if self._started and not self._finished:
            self._finish_completed(None)
        report = drift_report(
            golden.events,
            self.events(),
            self.options,
            divergences=self.divergences(),
            error_types=self.error_types,
        )
        self._verdict = Verdict(
            golden_path=self.golden_path,
            run_path=self._run_display or self.recorder.path,
            report=report,
        )
        return self._verdict

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GoldenRef):
            return NotImplemented
        if self.mode in (Mode.RECORD, Mode.LIVE):
            return True  # the run being recorded is the golden
        return self.verdict().matched

    __hash__ = None  # type: ignore[assignment]


class ProviderProxy:
    """What ``rollout.provider()`` returns: the provider interface, recorded."""

    def __init__(self, session: RolloutSession, inner: Any) -> None:
        self._session = session
        self._inner = inner
        self._previous: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _before(self, messages: Sequence[Any], tools: Any, params: dict[str, Any]) -> None:
        plain = _plain(list(messages))
        fresh = new_messages(self._previous, plain)
        self._previous = plain
        self._session._open_turn(fresh, plain, _plain(tools), _plain(params))

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, ReplayDivergenceError):
            self._session._divergence_event(exc)
        else:
            self._session._emit("llm.turn.failed", {"error": _error_data(exc)})

    def complete(self, messages: Sequence[Any], tools: Any = None, **params: Any) -> Turn:
        self._before(messages, tools, params)
        t0 = time.perf_counter()
        try:
            turn = coerce_turn(self._inner.complete(messages, tools, **params))
        except Exception as exc:
            self._failed(exc)
            raise
        self._session._record_turn(turn, round((time.perf_counter() - t0) * 1000, 3))
        return turn

    async def acomplete(self, messages: Sequence[Any], tools: Any = None, **params: Any) -> Turn:
        self._before(messages, tools, params)
        t0 = time.perf_counter()
        method = getattr(self._inner, "acomplete", None)
        try:
            if method is None:
                result = self._inner.complete(messages, tools, **params)
            else:
                result = await method(messages, tools, **params)
            turn = coerce_turn(result)
        except Exception as exc:
            self._failed(exc)
            raise
        self._session._record_turn(turn, round((time.perf_counter() - t0) * 1000, 3))
        return turn
