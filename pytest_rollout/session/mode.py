"""How a test's providers and tools run, and what ``rollout.run()`` hands the test."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["Mode", "RunHandle"]


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


@dataclass(slots=True)
class RunHandle:
    """Yielded by ``rollout.run()``: set ``output`` to the agent's final answer."""

    output: Any = None
