"""How an exception raised in a run is written into its events."""

from __future__ import annotations

from ..replay.tool_errors import RECORDED_ERROR

__all__ = ["causes", "error_data"]


def error_data(exc: BaseException) -> dict[str, str]:
    """The ``{class, message}`` of an error event (a replayed error: as it was recorded)."""
    recorded = getattr(exc, RECORDED_ERROR, None)
    if isinstance(recorded, dict):
        return dict(recorded)
    return {"class": type(exc).__name__, "message": str(exc)}


def causes(error: BaseException, limit: int = 10) -> list[dict[str, str]]:
    """The exceptions behind ``error`` (``raise ... from``, or raised while handling)."""
    found: list[dict[str, str]] = []
    current = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    seen = {id(error)}
    while current is not None and id(current) not in seen and len(found) < limit:
        seen.add(id(current))
        found.append(error_data(current))
        suppressed = current.__suppress_context__
        current = current.__cause__ or (None if suppressed else current.__context__)
    return found
