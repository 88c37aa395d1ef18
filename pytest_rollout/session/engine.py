"""The engine behind one test's ``rollout``: records the run, replays it from a golden,
compares the two.

The engine holds the run's state: its setup (:class:`~.setup.RunSetup`), its recorder, its
golden (:class:`~pytest_rollout.store.golden_store.LoadedGolden`) and the replay of it, the
turn whose calls are awaited, the analyzers and the audit trail. The user-facing object
(:class:`~pytest_rollout.session.rollout.RolloutSession`) and the plugin talk to it; SDK
clients reach it through its port (:class:`~.sdk_port.SdkPort`). It never imports pytest.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

import orjson

from ..analysis.analyzer_options import AnalyzerOptions
from ..analysis.analyzers import Analysis
from ..diff.divergence import Divergence, ReplayDivergenceError
from ..diff.drift import Verdict, drift_report
from ..diff.volatile import Volatile
from ..errors import RolloutError, RolloutWarning
from ..format.events import (
    AUDIT_ACTION,
    LLM_TURN_COMPLETED,
    LLM_TURN_FAILED,
    LLM_TURN_STARTED,
    REPLAY_DIVERGENCE,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_STARTED,
    USAGE_DELTA,
    Event,
)
from ..format.jsonable import to_json_data_or_placeholder as plain
from ..format.loader import Rollout
from ..format.recorder import Recorder
from ..replay.fork_plan import ForkPlan
from ..replay.history import TurnRequest, _as_is
from ..replay.mode import Mode
from ..replay.recorded import Replay
from ..replay.turn import Turn
from ..safety.sanitize import sanitize
from ..store.golden_store import LoadedGolden
from .exceptions import causes, error_data
from .setup import RunSetup
from .tool_calls import ToolCalls

__all__ = ["AuditSink", "Engine"]


class AuditSink(Protocol):
    """Where a run's audit entries go (the day's audit trail), and which tools count
    as actions."""

    def is_action(self, tool_name: str) -> bool: ...

    def write(self, run_id: str, event_type: str, payload: Mapping[str, Any]) -> None: ...


class Engine:
    """Records one test's agent run and, when replaying, answers it from the golden.

    ``golden`` is the test's golden in dry and full replay (``None`` in the other modes);
    ``audit`` is where the run's actions are written, when the session keeps an audit
    trail.
    """

    def __init__(
        self,
        setup: RunSetup,
        recorder: Recorder,
        golden: LoadedGolden | None = None,
        audit: AuditSink | None = None,
    ) -> None:
        self.setup = setup
        self.mode = setup.mode
        self.recorder = recorder
        self._golden = golden if setup.mode.replays_tools else None
        self._analyzer_options = setup.analyzers
        self._analysis: Analysis | None = None
        #: Why an analyzer said nothing about an event: warned about once the run is over.
        self._analyzer_failures: dict[str, str] = {}
        self._audit = audit
        self._lock = threading.RLock()
        self._deferred: list[Callable[[], None]] = []
        #: Whether the run recorded anything yet (its ``run.started`` is out).
        self.run_written = False
        self._replay: Replay | None = None
        redactor = recorder.redactor
        self.redact: Callable[[Any], Any] = _as_is if redactor is None else redactor.redact
        self.started = False
        self._start_args: tuple[Any, dict[str, Any]] | None = None
        self._finished = False
        self._t0 = 0.0
        self.tool_names: list[str] = []
        self._model: str | None = None
        self._provider: str | None = None
        self._cost = 0.0
        self._costed = False
        #: How an event encoded already is recorded (set by :meth:`_route_encoded`).
        self.record_encoded: Callable[[str, bytes], None]
        self._route_encoded()
        replays, audits = self.mode.replays_tools, audit is not None
        self.calls = ToolCalls(self, replays=replays, rebuild_hook=setup.rebuild, audits=audits)
        self._run: Rollout | None = None
        self._verdict: Verdict | None = None
        #: The tool called before any model turn, when one was (:meth:`tool_before_turn`).
        self.model_bypassed: str | None = None
        #: Whether a recorded run completed without a model turn (:meth:`finish_completed`).
        self.no_model_turn = False
        #: The fork of its golden this run is (``rollout.fork(step, override=...)``), if any.
        self.fork: ForkPlan | None = None

    # -- the golden and its replay ------------------------------------------------

    @property
    def golden(self) -> LoadedGolden | None:
        """The test's golden (``None`` in record and live mode)."""
        return self._golden

    @property
    def replay(self) -> Replay | None:
        """The replay of the golden (``None`` when this mode replays nothing)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        if self._golden is None:
            return None
        if self._replay is None:
            self._replay = Replay.from_rollout(
                self.require_golden(),
                source=self._golden.shown,
                redact=self.redact,
                volatile=self.setup.options.volatile,
            )
        return self._replay

    @property
    def request_volatile(self) -> Volatile | None:
        """The rules a model request's key renames volatile values by: the test's, unless
        the golden replayed holds keys taken with the values as they were (recorded before
        they were renamed): its requests are then keyed that way."""
        volatile = self.setup.options.volatile
        if not volatile.active:
            return None
        replay = self.replay
        if replay is not None and replay.recording.keyed_as_is:
            return None
        return volatile

    def serves_turn(self, replayed: bool) -> bool:
        """Whether the next model turn is served from the golden: ``replayed`` (asked of a
        provider that serves the golden), but in a fork, while its turns last."""
        replay = self._replay if self.fork is not None else None
        return replayed if replay is None else replay.serving

    @property
    def replay_started(self) -> bool:
        """Whether anything was answered (or refused) from the golden yet."""
        return self._replay is not None

    def require_golden(self) -> Rollout:
        """The golden rollout, or the error that says why there is none."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        if self._golden is None:
            if self.mode is Mode.LIVE:
                raise RolloutError(
                    "a replay=False test reads no golden, so there is none to fork or compare "
                    "here, even when the file exists: fork it with `rollout fork FILE --step N` "
                    "(docs/cli.md), or drop replay=False"
                )
            raise RolloutError(f"no golden is replayed in {self.mode.value} mode")
        return self._golden.require()

    def identify(self, provider: str | None, model: str | None) -> None:
        """Name the run's provider and model, unless they are named already."""
        if self._provider is None:
            self._provider = provider
            self._model = model

    def name_provider(self, live: Any) -> None:
        """Name the run's provider and model after the live provider, unless named already."""
        model = getattr(live, "model", None)
        self.identify(type(live).__name__, model if isinstance(model, str) else None)

    def adopt_golden_identity(self) -> None:
        """With no live provider to ask, the run names the model the golden was recorded
        with: the provider is the recording itself."""
        golden = None if self._golden is None else self._golden.rollout
        if golden is None:
            return
        started = golden.events[0].data
        model, provider = started.get("model"), started.get("provider")
        self.identify(
            provider if isinstance(provider, str) else None,
            model if isinstance(model, str) else None,
        )

    @property
    def analyzer_options(self) -> AnalyzerOptions:
        return self._analyzer_options

    @analyzer_options.setter
    def analyzer_options(self, options: AnalyzerOptions) -> None:
        self._analyzer_options = options
        self._route_encoded()

    # -- recording ----------------------------------------------------------------

    def emit(self, event_type: str, /, **data: Any) -> None:
        """Record a custom event at the current step (opening the run if needed)."""
        self.ensure_started()
        self.record(event_type, data)

    def record(
        self, event_type: str, data: Mapping[str, Any], context: Mapping[str, Any] | None = None
    ) -> None:
        """Record an event, with what the analyzers say before and after it.

        ``context`` is what the analyzers see instead of ``data`` (the error's cause chain
        of a failed run, which the event itself does not carry).
        """
        self._record(event_type, data, context, None)

    def defer(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` before the next event is recorded (a live turn whose body is
        still being read writes its start then, so that events keep their order)."""
        with self._lock:
            self._deferred.append(callback)
            self._route_encoded()

    def cancel_deferred(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._deferred:
                self._deferred.remove(callback)
            self._route_encoded()

    def _route_encoded(self) -> None:
        """Point :attr:`record_encoded` (how a tool call's events, encoded already, are
        recorded) at the recorder itself while nothing stands between such an event and the
        file, else at :meth:`_record_encoded`: a tool call then costs one call less."""
        analyzed = self._analysis is not None or self._analyzer_options.enabled
        direct = not (self._deferred or analyzed)
        self.record_encoded = self.recorder.emit_payload if direct else self._record_encoded

    def _record_encoded(self, event_type: str, payload: bytes) -> None:
        """:meth:`record` an event whose payload is encoded already (:func:`encode_event`):
        the bytes are recorded as they are, and read back only if an analyzer runs."""
        self._record(event_type, None, None, payload)

    def _record(
        self,
        event_type: str,
        data: Mapping[str, Any] | None,
        context: Mapping[str, Any] | None,
        payload: bytes | None,
    ) -> None:
        """What :meth:`record` does, for an event given as ``data`` or as its ``payload``."""
        if self._deferred and event_type != RUN_STARTED:
            self._run_deferred()
        analysis = self._analysis
        if analysis is None:
            if not self.analyzer_options.enabled:
                self._emit(event_type, data, payload)
                return
            analysis = self._analysis = Analysis(self.analyzer_options)
        seen = context if context is not None else data
        if seen is None:
            seen = orjson.loads(payload) if payload is not None else {}
        for found in self._analyzed(analysis.before, event_type, seen):
            self.recorder.emit(*found)
        self._emit(event_type, data, payload)
        for found in self._analyzed(analysis.after, event_type, seen):
            self.recorder.emit(*found)

    def _analyzed(
        self,
        method: Callable[[str, Mapping[str, Any], int], list[tuple[str, dict[str, Any]]]],
        event_type: str,
        data: Mapping[str, Any],
    ) -> list[tuple[str, dict[str, Any]]]:
        """What an analyzer says about an event. One that fails says nothing (it must never
        break the user's test), and is named in a warning once the run is over."""
        try:
            return method(event_type, data, self.recorder.step)
        except Exception as exc:
            error = f"{type(exc).__name__}: {sanitize(str(exc))}"
            self._analyzer_failures.setdefault(sanitize(event_type), error)
            return []

    def _emit(self, event_type: str, data: Mapping[str, Any] | None, payload: bytes | None) -> None:
        if payload is not None:
            self.recorder.emit_payload(event_type, payload)
        else:
            self.recorder.emit(event_type, data)

    def _run_deferred(self) -> None:
        with self._lock:
            deferred, self._deferred = self._deferred, []
            self._route_encoded()
        for callback in deferred:
            callback()

    def _audit_event(self, event_type: str, data: Mapping[str, Any], **extra: Any) -> None:
        """Append an entry to the audit trail, when there is one (redacted like the run)."""
        if self._audit is not None:
            payload = {**self.redact(dict(data)), "mode": self.mode.value, **extra}
            self._audit.write(self.setup.run_id, event_type, payload)

    def start(self, prompt: Any, meta: Mapping[str, Any]) -> None:
        """Open the run. ``run.started`` is written with the first event that follows, so
        that providers and tools wrapped inside the ``run()`` block are named in it."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        if self.started:
            raise RolloutError("rollout.run() was entered twice: one test records one run")
        self.started = True
        self._t0 = time.perf_counter()
        self._start_args = (prompt, dict(meta))

    def _emit_start(self) -> None:
        if self.run_written:
            return
        with self._lock:  # another thread's first event waits until run.started is out
            self._write_start()

    def _write_start(self) -> None:
        if self._start_args is None:
            return
        prompt, meta = self._start_args
        self._start_args = None
        data: dict[str, Any] = {
            "run_id": self.setup.run_id,
            "test_id": self.setup.test_id,
            "model": self._model,
            "provider": self._provider,
            "tools": list(self.tool_names),
            "meta": plain(dict(meta)),
        }
        if self.fork is not None:
            data["forked_from"] = dict(self.fork.origin)
        if prompt is not None:
            data["prompt"] = plain(prompt)
        self.record(RUN_STARTED, data)
        self.run_written = True
        self._audit_event(RUN_STARTED, data)

    def tool_before_turn(self, name: str) -> None:
        """The run's first tool call came before any model turn: the agent's model calls
        do not go through the plugin (a client it did not build, a framework that ignores
        the one it was given). Such a run has no turns to replay and cannot be written as
        a golden; the test fails and says so (:attr:`model_bypassed`)."""
        if self.model_bypassed is None:
            self.model_bypassed = name

    def ensure_started(self) -> None:
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        if not self.started:
            self.start(None, {})
        self._emit_start()

    def finish_failed(self, error: BaseException) -> None:
        """``run.failed``; the analyzers also see the error's cause chain."""
        data = {"error": error_data(error)}
        context = {**data, "error": {**data["error"], "causes": causes(error)}}
        self._finish(RUN_FAILED, data, context)

    @property
    def unfit_for_golden(self) -> bool:
        """Whether the run's model calls went around the plugin, so that it cannot be
        written as a golden (the test fails and says why)."""
        return self.model_bypassed is not None or self.no_model_turn

    def finish_completed(self, output: Any) -> None:
        # A run that completed without one model turn, in a test that records: the agent's
        # model calls went around the plugin (replaying it would reach the live service),
        # unless the test says it answers without a model.
        self.no_model_turn = (
            self.mode is Mode.RECORD
            and self.setup.expects_model
            and self.started
            and not self._finished
            and self.recorder.step == 0
            and self.model_bypassed is None
        )
        totals = {"total_cost_usd": round(self._cost, 9) if self._costed else None}
        data = {
            "outcome": "completed",
            "output": plain(output),
            "cost_totals": totals,
            "total_duration_ms": round((time.perf_counter() - self._t0) * 1000, 3),
        }
        self._finish(RUN_COMPLETED, data)

    def _finish(
        self, event_type: str, data: dict[str, Any], context: Mapping[str, Any] | None = None
    ) -> None:
        if self._finished or not self.started:
            return
        self._emit_start()
        self._finished = True
        self.record(event_type, data, context)
        self._audit_event(event_type, data)

    # -- turns --------------------------------------------------------------------

    def open_turn(self, request: TurnRequest, *, live: bool = False) -> None:
        """``llm.turn.started``: the request's new messages and the hash of the whole request,
        taken on redacted data (see :class:`RequestHistory`) so that it is the same on every
        machine whatever secret the environment holds. The event itself is redacted (or, in
        mode "none", dropped) by the recorder, like any other. In full replay, and for a
        ``live`` turn of a fork, the calls the previous turn asked for must have been made."""
        self.ensure_started()
        self.record(
            LLM_TURN_STARTED,
            {
                "messages": request.messages,
                "tools": request.tools,
                "params": request.params,
                "messages_hash": request.messages_hash,
                **({} if request.key_volatile is None else {"key_volatile": request.key_volatile}),
            },
        )
        replay = self.replay
        if replay is not None and self.fork is not None:
            if live:
                with self.divergence_recorded():
                    replay.begin_turn(self.recorder.step)
        elif replay is not None and self.mode is Mode.FULL:
            with self.divergence_recorded():
                replay.live_turn(self.recorder.step)

    def replayed_turn(self, request: TurnRequest) -> Turn:
        """The golden's next turn, if ``request`` matches it (else a replay divergence,
        raised and left for the caller to record)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        replay = self.replay
        if replay is None:
            raise RolloutError(f"no golden is replayed in {self.mode.value} mode")
        return Turn.from_event_data(replay.next_turn(request))

    def record_turn(
        self,
        turn: Turn,
        latency_ms: float,
        raw: Any = None,
        ttft_ms: float | None = None,
        remote: bool = False,
    ) -> None:
        """The turn's ``llm.turn.completed`` (and ``usage.delta`` when it has a cost);
        ``remote``: an agent in another process asked for it, and runs its tools there."""
        data = turn.to_event_data() | {"latency_ms": latency_ms}
        extra = {"ttft_ms": ttft_ms, "raw": raw, "remote": True if remote else None}
        data.update((key, value) for key, value in extra.items() if value is not None)
        self.record(LLM_TURN_COMPLETED, data)
        self.calls.announced.announce(turn.tool_calls)
        if turn.cost_usd is not None:
            self._cost += turn.cost_usd
            self._costed = True
            self.record(USAGE_DELTA, {"cumulative_cost_usd": round(self._cost, 9)})

    def turn_failed(self, exc: BaseException) -> None:
        """A provider call that raised: a replay divergence, or ``llm.turn.failed``."""
        if isinstance(exc, ReplayDivergenceError):
            self.divergence_event(exc)
        else:
            self.record(LLM_TURN_FAILED, {"error": error_data(exc)})

    @contextmanager
    def divergence_recorded(self) -> Iterator[None]:
        """A replay divergence raised inside is recorded as an event, then propagates."""
        try:
            yield
        except ReplayDivergenceError as exc:
            self.divergence_event(exc)
            raise

    def divergence_event(self, error: ReplayDivergenceError) -> None:
        d = error.divergence
        self.record(
            REPLAY_DIVERGENCE,
            {"step": self.recorder.step, "kind": d.kind.value, "detail": d.detail},
        )

    # -- tool calls (see .tool_calls) -------------------------------------------------

    def audited(self, name: str) -> bool:
        return self._audit is not None and self._audit.is_action(name)

    def audit_action(self, action: Mapping[str, Any], *, live: bool) -> None:
        self._audit_event(AUDIT_ACTION, action, live=live)

    # -- the end ------------------------------------------------------------------

    def close(self) -> None:
        """End the run if the test left it open, and flush the recording; then name the
        analyzers that failed on the way (a warning turned into an error is raised here,
        never in the middle of the agent's run)."""
        if self.started and not self._finished:
            self.finish_completed(None)
        self.recorder.close()
        failures, self._analyzer_failures = self._analyzer_failures, {}
        for event_type, error in failures.items():
            warnings.warn(
                RolloutWarning(
                    f"an analyzer failed on a {event_type} event and said nothing of it: {error}"
                ),
                stacklevel=2,
            )

    @property
    def used(self) -> bool:
        """Whether the test recorded anything at all."""
        return self.started

    def events(self) -> tuple[Event, ...]:
        """This run's events, as the loader reads them back (read once the run is over)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        if not self.started:
            return ()
        if not self._finished:
            raise RolloutError("the run is still open: compare after the rollout.run() block")
        if self._run is None:
            self._run = self.recorder.rollout()
        return self._run.events

    def divergences(self) -> list[Divergence]:
        """Replay's divergences, then what the run left unconsumed (unless allowed)."""
        if self._replay is None:
            return []
        found = list(self._replay.divergences)
        if not self.setup.allow_unconsumed and self._finished:
            found.extend(self._replay.leftovers())
        return found

    def verdict(self) -> Verdict:
        """Compare this run with its golden (closing the run first if it is still open).

        The run is read like its golden: its lines that are the golden's but for their time
        share the golden's data, and compare at once (docs/performance.md)."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        if self._verdict is not None:
            return self._verdict
        if self.fork is not None and not self.divergences():
            raise RolloutError(self.fork.not_compared)
        golden = self._golden
        run = self.require_golden()
        assert golden is not None
        if self.started and not self._finished:
            self.finish_completed(None)
        reference = golden.reference
        assert reference is not None
        events: tuple[Event, ...] = ()
        if self.started:
            path = self.recorder.path or "<recorded>"
            events = reference.read(self.recorder.getvalue(), path=path).events
        report = drift_report(
            run.events,
            events,
            self.setup.options,
            divergences=self.divergences(),
            error_types=self.setup.error_types,
        )
        reference.release()  # no other run is read like the golden
        self._verdict = Verdict(
            golden_path=golden.shown,
            unverified=golden.unverified,
            run_path=self.setup.run_display or self.recorder.path,
            report=report,
        )
        return self._verdict

    @property
    def compared(self) -> Verdict | None:
        """The verdict, once :meth:`verdict` has been asked for it (``None`` before)."""
        return self._verdict

    def matches_golden(self) -> bool:
        """``rollout == golden``: a run being recorded is its own golden. A run in live mode
        (``replay=False``) reads no golden, so the comparison is refused rather than passed:
        it could never fail."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        if self.mode is Mode.LIVE:
            raise RolloutError(
                "rollout == golden cannot compare anything in a replay=False test: it runs "
                "live and reads no golden, so the assertion could never fail. Compare the run "
                "with a syrupy snapshot (docs/replay.md, syrupy snapshots), or drop "
                "replay=False to replay and compare with the golden"
            )
        if self.fork is not None:
            raise RolloutError(self.fork.not_compared)
        if not self.mode.replays_tools:
            return True
        return self.verdict().matched
