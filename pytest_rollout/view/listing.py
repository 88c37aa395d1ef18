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

from ..format.files import rollouts_in
from .entries import diff_entry, run_entry

__all__ = ["collect_entries", "rollout_files"]


def rollout_files(paths: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each rollout ``paths`` name, as ``(path, name)``: a file as it is, a directory as
    the ``*.jsonl`` files under it and the partial files of runs cut short."""
    return rollouts_in(paths, partial=True)


def collect_entries(paths: Sequence[str]) -> tuple[str, list[dict[str, Any]]]:
    """The page's title and entries for ``paths``."""
    if len(paths) == 2 and not any(os.path.isdir(p) for p in paths):
        a, b = paths
        name = f"{Path(a).name} vs {Path(b).name}"
        return name, [diff_entry(a, b, name=name, status="compared")]
    entries = [run_entry(path, name=name) for path, name in rollout_files(paths)]
    title = Path(paths[0]).name if len(paths) == 1 else f"{len(entries)} rollouts"
    return title, entries
