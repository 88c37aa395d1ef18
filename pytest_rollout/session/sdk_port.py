"""A test's run as its SDK clients see it: the :class:`~pytest_rollout.sdk.flights.TurnPort`
of one engine.

The SDK layer sits below the session and talks to this port only: whether turns are served
from the golden, how a request names the run, and where a model turn is opened, served,
completed or given up. The port owns the run's turn log (:class:`~pytest_rollout.sdk.flights.
TurnLog`), which all the test's clients share, so the log lives exactly as long as the
engine it writes into.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..diff.divergence import ReplayDivergenceError
from ..format.events import LLM_TURN_FAILED
from ..replay.history import RequestHistory, TurnRequest
from ..replay.mode import Mode
from ..replay.recorded import Recording
from ..replay.turn import Turn
from ..sdk.flights import TurnLog
from ..sdk.pricing import Price
from .engine import Engine

__all__ = ["SdkPort"]


class SdkPort:
    """The SDK clients' way into ``engine`` (it satisfies
    :class:`~pytest_rollout.sdk.flights.TurnPort`)."""

    __slots__ = ("_engine", "_log")

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._log: TurnLog | None = None

    @property
    def turn_log(self) -> TurnLog:
        if self._log is None:
            self._log = TurnLog(self)
        return self._log

    @property
    def serves_turns(self) -> bool:
        """Whether model turns are answered from the golden (dry replay; in a fork, while
        the golden's turns up to its step last)."""
        return self._engine.serves_turn(self._engine.mode is Mode.DRY)

    @property
    def replays_every_turn(self) -> bool:
        """Whether every model turn is answered from the golden (dry replay, not a fork)."""
        return self._engine.mode is Mode.DRY and self._engine.fork is None

    @property
    def prices(self) -> Mapping[str, Price]:
        return self._engine.setup.prices

    def adopt_sdk_identity(self, provider: str, model: str | None) -> None:
        """Name the run's model and provider from an SDK request, unless named already."""
        self._engine.identify(provider, model)

    def sdk_turn_ready(self) -> None:
        """Before a live model request in full replay or in a fork: the calls the previous
        turn asked for must have been made (the request itself is the next step's turn)."""
        engine = self._engine
        replay = engine.replay
        if replay is None or (engine.mode is not Mode.FULL and engine.fork is None):
            return
        with engine.divergence_recorded():
            replay.begin_turn(engine.recorder.step + 1)

    def request_history(self) -> RequestHistory:
        """A new record of one conversation's requests, redacted the way this run is."""
        return RequestHistory(self._engine.redact, self._engine.request_volatile)

    @property
    def sdk_recording(self) -> Recording | None:
        """The golden's turns as dry replay (or a fork) serves them (``None`` in other
        modes)."""
        engine = self._engine
        replay = engine.replay if engine.mode is Mode.DRY or engine.fork is not None else None
        return None if replay is None else replay.recording

    def serve_sdk_turn(self, request: TurnRequest, lookahead: int = 0) -> Mapping[str, Any]:
        """Dry replay of an SDK request: the recorded turn it matches among the open ones
        (else its ``llm.turn.started`` and the replay divergence, raised)."""
        engine = self._engine
        replay = engine.replay
        assert replay is not None
        try:
            return replay.next_turn(request, lookahead)
        except ReplayDivergenceError as exc:
            engine.open_turn(request)
            engine.divergence_event(exc)
            raise

    def open_sdk_turn(self, request: TurnRequest) -> None:
        """An SDK request's ``llm.turn.started``."""
        self._engine.open_turn(request)

    def complete_sdk_turn(
        self,
        turn: Turn,
        latency_ms: float,
        raw: Mapping[str, Any],
        ttft_ms: float | None,
        remote: bool = False,
    ) -> None:
        """An SDK response, read to its end: the turn's ``llm.turn.completed`` (``remote``:
        asked for through a recording endpoint, by an agent in another process)."""
        self._engine.record_turn(turn, latency_ms, raw=dict(raw), ttft_ms=ttft_ms, remote=remote)

    def fail_sdk_turn(self, data: Mapping[str, Any]) -> None:
        """An error response the SDK gave up on: the turn's ``llm.turn.failed``."""
        self._engine.record(LLM_TURN_FAILED, dict(data))

    def defer(self, callback: Callable[[], None]) -> None:
        self._engine.defer(callback)

    def cancel_deferred(self, callback: Callable[[], None]) -> None:
        self._engine.cancel_deferred(callback)

    def emit(self, event_type: str, /, **data: Any) -> None:
        self._engine.emit(event_type, **data)
