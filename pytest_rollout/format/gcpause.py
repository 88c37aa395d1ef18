"""Pausing the cyclic garbage collector around bulk work on acyclic data.

Events are trees of dicts and lists with no cycles. While many of them are built or walked,
the collector's passes only re-scan them, and at 100k events that costs more than parsing
(docs/performance.md). Bulk passes run inside :func:`collector_paused`.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off, restoring its state afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
