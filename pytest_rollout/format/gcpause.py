"""Pausing the cyclic garbage collector around bulk work on acyclic data.

Events are trees of dicts and lists with no cycles. While many of them are built or walked,
the collector's passes only re-scan them, and at 100k events that costs more than parsing
(docs/performance.md). Bulk passes run inside :func:`collector_paused`.

Pausing alone only moves the cost: every container built in the block is still young when
the collector is switched back on, so its next pass walks them all, and the pass after that
walks them again in the middle generation. A block that built many (a loaded file) hands
them straight to the oldest generation instead, which is only walked by the rare full pass.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

__all__ = ["collector_paused"]

#: Young-generation passes' worth of new containers past which a block's are made old.
_BULK_PASSES: Final = 10


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off, restoring its state afterwards; the
    containers of a bulk block go to the oldest generation (:func:`_age_young`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _age_young()
            gc.enable()


def _age_young() -> None:
    """Move every young container to the oldest generation when there are many of them.

    ``gc.freeze()`` moves all tracked objects to the permanent generation without walking
    them, and ``gc.unfreeze()`` moves them to the oldest one: together, the young
    generations are emptied in constant time. Nothing is left frozen, and an application
    that froze objects itself (``gc.get_freeze_count()``) is left as it is. Any young
    garbage cycle of the caller's is then freed by the next full pass, not a young one.
    """
    if gc.get_count()[0] > _BULK_PASSES * gc.get_threshold()[0] and not gc.get_freeze_count():
        gc.freeze()
        gc.unfreeze()
