"""How a test's providers and tools run: recorded live, replayed from the golden (dry or
full), or live and compared with nothing."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Mode"]


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
