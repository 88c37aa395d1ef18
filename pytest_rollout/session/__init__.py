"""One test's run: the user-facing ``rollout`` object and the engine behind it.

The names below are imported on first use, so that the light modules of this package
can be imported without the engine and all it needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ..replay.mode import Mode as Mode
    from .engine import Engine as Engine
    from .rollout import RolloutSession as RolloutSession
    from .rollout import RunHandle as RunHandle

__all__ = [
    "Engine",
    "Mode",
    "RolloutSession",
    "RunHandle",
]

_LAZY: Final = {
    "Engine": ".engine",
    "Mode": "..replay.mode",
    "RolloutSession": ".rollout",
    "RunHandle": ".rollout",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Not cached: see pytest_rollout.__getattr__.
    return getattr(import_module(module, __name__), name)
