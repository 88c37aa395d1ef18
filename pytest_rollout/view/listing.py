"""The rollouts ``rollout view`` shows: the files its paths name, and the page's entries.

One file is shown as a run; a directory as every ``*.jsonl`` under it, and every partial
file a crashed run left there (``.<name>.partial``, shown as "cut short"); two files as a run
each and their difference (the first as the reference, like ``rollout diff``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import RolloutError
from .entries import diff_entry, run_entry

__all__ = ["PARTIAL_GLOB", "collect_entries", "rollout_files"]

#: The partial files a recorder leaves when its run is cut short (``.<name>.partial``).
PARTIAL_GLOB = ".*.jsonl.partial"


def rollout_files(paths: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each rollout ``paths`` name, as ``(path, name)``: a file as it is (``name`` is
    ``None``), a directory as the ``*.jsonl`` files under it and the partial files of runs
    cut short, sorted and named relative to it. A directory with none is a
    :class:`RolloutError`."""
    found: list[tuple[str, str | None]] = []
    for given in paths:
        if not os.path.isdir(given):
            found.append((given, None))
            continue
        root = Path(given)
        inside = {*root.rglob("*.jsonl"), *root.rglob(PARTIAL_GLOB)}
        files = sorted(p for p in inside if p.is_file())
        if not files:
            raise RolloutError(f"no rollout (*.jsonl) under {given}")
        found.extend((str(p), p.relative_to(root).as_posix()) for p in files)
    return found


def collect_entries(paths: Sequence[str]) -> tuple[str, list[dict[str, Any]]]:
    """The page's title and entries for ``paths``."""
    if len(paths) == 2 and not any(os.path.isdir(p) for p in paths):
        a, b = paths
        name = f"{Path(a).name} vs {Path(b).name}"
        return name, [diff_entry(a, b, name=name, status="compared")]
    entries = [run_entry(path, name=name) for path, name in rollout_files(paths)]
    title = Path(paths[0]).name if len(paths) == 1 else f"{len(entries)} rollouts"
    return title, entries
