"""What one analyzer is to the :class:`~pytest_rollout.analysis.analyzers.Analysis` that runs
it: handlers hung on event types, each answering with the events to emit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Analyzer", "Emitted", "Handler"]

#: The events an analyzer wants emitted, as ``(type, data)`` pairs, in order.
Emitted = list[tuple[str, dict[str, Any]]]

#: Reads one event's data and step (a mapping and a step of 0 or more) and answers with the
#: events to emit. Never raises on odd values inside the mapping.
Handler = Callable[[Mapping[str, Any], int], Emitted]


class Analyzer:
    """One analyzer's state over a run, and the event types it listens to.

    :meth:`before_handlers` are called just before an event of their type is emitted, and
    what they answer is emitted before it; :meth:`after_handlers` right after it.
    """

    __slots__ = ()

    def before_handlers(self) -> Mapping[str, Handler]:
        return {}

    def after_handlers(self) -> Mapping[str, Handler]:
        return {}
