"""The port an SDK client's model calls go through: what the SDK side asks of a session.

The exchange (:mod:`pytest_rollout.sdk.exchange`), the HTTP transports and the client
factories never see the session itself, only this :class:`TurnPort`: whether turns are
served from the golden, how a request names the run, and the points at which a model turn
is opened, served, completed or given up. The session engine satisfies it structurally
(it does not subclass it), so that the SDK layer sits below the session and imports
nothing from it. How the SDK side uses it is described in docs/sdk-agents.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..replay.history import RequestHistory, TurnRequest
from ..replay.recorded import Recording
from ..replay.turn import Turn
from .pricing import Price

__all__ = ["TurnPort"]


class TurnPort(Protocol):
    """A session as the SDK layer sees it: the one place model turns are recorded into,
    or (in dry replay) answered from."""

    @property
    def serves_turns(self) -> bool:
        """Whether model requests are answered from the golden (dry replay) instead of
        going to the network."""
        ...

    @property
    def prices(self) -> Mapping[str, Price]:
        """Prices per model, for a turn whose response states no cost."""
        ...

    def adopt_sdk_identity(self, provider: str, model: str | None) -> None:
        """Name the run's provider and model from a request, unless they are named already."""
        ...

    def sdk_turn_ready(self) -> None:
        """A live model request is about to be sent (in full replay, the calls the previous
        turn asked for must have been made by now)."""
        ...

    def request_history(self) -> RequestHistory:
        """A new record of one conversation's requests, which hashes each request at the cost
        of its new messages (redacted the way the session redacts)."""
        ...

    @property
    def sdk_recording(self) -> Recording | None:
        """Dry replay: the golden's turns and calls as replay serves them (``None`` when
        nothing is replayed)."""
        ...

    def serve_sdk_turn(self, request: TurnRequest, lookahead: int) -> Mapping[str, Any]:
        """Dry replay: the event data of the recorded turn ``request`` matches, among the
        first unconsumed turn and the ``lookahead`` unconsumed ones after it; else record
        the request's ``llm.turn.started`` and the divergence, and raise it. ``request``
        holds the messages new since the request it extends and the hash of the whole
        conversation with stable ids."""
        ...

    def open_sdk_turn(self, request: TurnRequest) -> None:
        """Record the start of a live request's turn."""
        ...

    def complete_sdk_turn(
        self, turn: Turn, latency_ms: float, raw: Mapping[str, Any], ttft_ms: float | None
    ) -> None:
        """Record the end of a turn whose response was read in full; ``raw`` is the
        response as recorded (see :func:`pytest_rollout.sdk.wire.raw_response`)."""
        ...

    def fail_sdk_turn(self, data: Mapping[str, Any]) -> None:
        """Record the end of a turn whose answer was an error response the SDK gave up on:
        its ``llm.turn.failed`` (see :mod:`pytest_rollout.sdk.failures`)."""
        ...

    def defer(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` before the next event is recorded."""
        ...

    def cancel_deferred(self, callback: Callable[[], None]) -> None:
        """Forget ``callback`` if it has not run yet."""
        ...

    def emit(self, event_type: str, /, **data: Any) -> None:
        """Record an event of ``event_type`` (a constant of
        :mod:`pytest_rollout.format.events`) at the current step."""
        ...
