"""What ``rollout.provider()`` returns: the provider interface, each turn recorded."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import RolloutError
from ..format.jsonable import to_json_data_or_placeholder as plain
from ..replay.history import RequestHistory, TurnRequest, new_messages
from ..replay.turn import Turn, coerce_turn

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["ProviderProxy"]


class ProviderProxy:
    """A provider (anything with ``complete`` / ``acomplete``) whose turns the engine records;
    every other attribute is the wrapped provider's.

    ``replayed``: the turns are served from the golden by the engine (the wrapped provider
    is the recorded one, kept for its other attributes). ``live`` is the live provider
    (``inner`` itself when the turns are not replayed): a run made a fork of its golden
    asks it once the golden's turns up to the fork's step are served.

    An agent sends its whole history with every request. When a request starts with the
    messages of the previous one (compared as data, ``==``), only the new messages are
    converted, redacted and hashed (see
    :class:`~pytest_rollout.replay.recorded.RequestHistory`), so a turn costs about the same
    at step 60 as at step 1. Anything else (a history rewritten, values that only become
    JSON when recorded) is converted and hashed whole.
    """

    def __init__(
        self, engine: Engine, inner: Any, *, replayed: bool = False, live: Any = None
    ) -> None:
        self._engine = engine
        self._inner = inner
        self._replayed = replayed
        self._live = inner if not replayed else live
        self._history = RequestHistory(engine.redact, engine.request_volatile)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _source(self) -> Any:
        """Who answers the next turn: the live provider, or ``None`` (the golden)."""
        if self._engine.serves_turn(self._replayed):
            return None
        if self._live is None:
            fork = self._engine.fork
            step = "" if fork is None else f" after step {fork.step}"
            raise RolloutError(
                f"this run is a fork of its golden and goes on live{step}, but this provider "
                f"has no live model to ask: wrap the live provider, rollout.provider(live), "
                f"instead of recorded_provider() or rollout.provider() without one"
            )
        return self._live

    def _before(
        self, messages: Sequence[Any], tools: Any, params: dict[str, Any], live: bool
    ) -> TurnRequest:
        request = self._request(messages, plain(tools), plain(params))
        self._engine.open_turn(request, live=live)
        return request

    def _request(self, messages: Sequence[Any], tools: Any, params: dict[str, Any]) -> TurnRequest:
        history = self._history
        items = list(messages)
        previous = history.messages  # as recorded: plain JSON data
        start = len(previous)
        if len(items) >= start and items[:start] == previous:
            # The previous messages, unchanged: only the new ones are converted.
            new = plain(items[start:])
            if isinstance(new, list):
                return history.request(start, new, new, tools, params)
        whole = plain(items)
        if not isinstance(whole, list):  # a placeholder: the messages cannot be recorded
            return history.whole(whole, tools, params)
        return history.request(0, whole, new_messages(previous, whole), tools, params)

    def complete(self, messages: Sequence[Any], tools: Any = None, **params: Any) -> Turn:
        live = self._source()
        request = self._before(messages, tools, params, live is not None)
        t0 = time.perf_counter()
        try:
            if live is None:
                turn = self._engine.replayed_turn(request)
            else:
                turn = coerce_turn(live.complete(messages, tools, **params))
        except Exception as exc:
            self._engine.turn_failed(exc)
            raise
        self._engine.record_turn(turn, round((time.perf_counter() - t0) * 1000, 3))
        return turn

    async def acomplete(self, messages: Sequence[Any], tools: Any = None, **params: Any) -> Turn:
        live = self._source()
        request = self._before(messages, tools, params, live is not None)
        t0 = time.perf_counter()
        try:
            if live is None:
                turn = self._engine.replayed_turn(request)
            else:
                turn = coerce_turn(await _ask(live, messages, tools, params))
        except Exception as exc:
            self._engine.turn_failed(exc)
            raise
        self._engine.record_turn(turn, round((time.perf_counter() - t0) * 1000, 3))
        return turn


async def _ask(live: Any, messages: Sequence[Any], tools: Any, params: dict[str, Any]) -> Any:
    """A live provider's turn, from ``acomplete`` when it has one, else ``complete``."""
    method = getattr(live, "acomplete", None)
    if method is None:
        return live.complete(messages, tools, **params)
    return await method(messages, tools, **params)
