"""Two rollouts about to be compared, loaded so that the second shares the first's data.

A line of the second file that is the first file's line at the same place but for its
timestamp, as when a run replays its golden, is not parsed again: its event is made from the
first run's and shares its data (the same objects, so neither run's events may be changed),
and the comparison finds the two equal without reading them (docs/performance.md). The
events are exactly those two separate loads give.
"""

from __future__ import annotations

import os

from .loader import DEFAULT_LIMITS, Limits, Rollout, loads, loads_reference, read_rollout_bytes

__all__ = ["load_pair"]


def load_pair(
    path_a: str | os.PathLike[str],
    path_b: str | os.PathLike[str],
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[Rollout, Rollout]:
    """:func:`~.loader.load` of two rollouts about to be compared, in that order (``a``'s
    refusal is raised before ``b`` is read), ``b`` read like ``a``."""
    name_a, name_b = os.fspath(path_a), os.fspath(path_b)
    data_a = read_rollout_bytes(name_a, limits=limits)
    run_a, lines_a = loads_reference(data_a, path=name_a, limits=limits)
    data_b = read_rollout_bytes(name_b, limits=limits)
    return run_a, loads(data_b, path=name_b, limits=limits, like=lines_a)
