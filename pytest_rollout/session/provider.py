"""What ``rollout.provider()`` returns: the provider interface, each turn recorded."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..format.jsonable import to_json_data_or_placeholder as plain
from ..replay.recorded import new_messages
from ..replay.turns import Turn, coerce_turn

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["ProviderProxy"]


class ProviderProxy:
    """A provider (anything with ``complete`` / ``acomplete``) whose turns the engine records;
    every other attribute is the wrapped provider's."""

    def __init__(self, engine: Engine, inner: Any) -> None:
        self._engine = engine
        self._inner = inner
        self._previous: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _before(self, messages: Sequence[Any], tools: Any, params: dict[str, Any]) -> None:
        whole = plain(list(messages))
        fresh = new_messages(self._previous, whole)
        self._previous = whole
        self._engine.open_turn(fresh, whole, plain(tools), plain(params))

    def complete(self, messages: Sequence[Any], tools: Any = None, **params: Any) -> Turn:
        self._before(messages, tools, params)
        t0 = time.perf_counter()
        try:
            turn = coerce_turn(self._inner.complete(messages, tools, **params))
        except Exception as exc:
            self._engine.turn_failed(exc)
            raise
        self._engine.record_turn(turn, round((time.perf_counter() - t0) * 1000, 3))
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
            self._engine.turn_failed(exc)
            raise
        self._engine.record_turn(turn, round((time.perf_counter() - t0) * 1000, 3))
        return turn
