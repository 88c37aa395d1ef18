"""The ``rollout`` section of pytest's terminal summary."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from .tally import Tally

__all__ = ["write_summary"]

#: How many problems or unused goldens the summary lists before it says "and N more".
SHOWN: Final = 20


def write_summary(
    tr: Any,
    tally: Tally,
    *,
    record: bool,
    unused: list[Path],
    pruned: list[Path],
    page: Path | None,
    show: Callable[[Path], str],
) -> None:
    """What was written, compared, resealed, pruned or left unused (nothing when nothing
    happened)."""
    counts, problems = tally.counts, tally.problems
    if not counts and not unused and not pruned and not problems and not page:
        return
    tr.section("rollout")
    if page is not None:
        tr.write_line(f"rollout report: {show(page)}")
    if record:
        tr.write_line(_record_line(tally))
    compared = _compare_line(tally)  # a record of new goldens replays the others
    if compared is not None:
        tr.write_line(compared)
    for problem in problems[:SHOWN]:
        tr.write_line(problem)
    for path in pruned:
        tr.write_line(f"removed unused golden {show(path)}")
    if unused:
        tr.write_line(f"{len(unused)} unused golden(s): no collected test owns them")
        for path in unused[:SHOWN]:
            tr.write_line(f"  {show(path)}")
        if len(unused) > SHOWN:
            tr.write_line(f"  ... and {len(unused) - SHOWN} more")
        tr.write_line("  (pytest --rollout-record over the whole suite removes them)")


def _record_line(tally: Tally) -> str:
    from ..store.golden import WriteResult  # start-up: only a record run needs it

    counts = tally.counts
    created, updated = counts[WriteResult.CREATED.value], counts[WriteResult.UPDATED.value]
    line = (
        f"{created + updated} golden(s) written ({created} created, {updated} updated), "
        f"{counts[WriteResult.UNCHANGED.value]} unchanged"
    )
    failed = counts["not recorded (test failed)"]
    if failed:
        line += f", {failed} not recorded (test failed)"
    return line


def _compare_line(tally: Tally) -> str | None:
    """What compare mode did (``None`` when it compared and resealed nothing)."""
    counts = tally.counts
    if not counts["compared"] and not counts["resealed"]:
        return None
    line = f"{counts['compared']} golden(s) compared"
    if counts["resealed"]:
        line += f", {counts['resealed']} edited golden(s) accepted and sealed anew"
    return line
