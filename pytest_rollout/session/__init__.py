"""One test's run: the user-facing ``rollout`` object, the engine behind it, its golden."""

from __future__ import annotations

from .engine import Engine as Engine
from .golden import GoldenEditedError as GoldenEditedError
from .golden import GoldenMissingError as GoldenMissingError
from .golden import GoldenRef as GoldenRef
from .mode import Mode as Mode
from .mode import RunHandle as RunHandle
from .rollout import RolloutSession as RolloutSession

__all__ = [
    "Engine",
    "GoldenEditedError",
    "GoldenMissingError",
    "GoldenRef",
    "Mode",
    "RolloutSession",
    "RunHandle",
]
