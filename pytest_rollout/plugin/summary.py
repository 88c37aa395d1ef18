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
    if not tally.anything and not unused and not pruned and not page:
        return
    tr.section("rollout")
    if page is not None:
        tr.write_line(f"rollout report: {show(page)}")
    if record:
        tr.write_line(record_line(tally))
    for line in compare_lines(tally):  # a record of new goldens replays the others
        tr.write_line(line)
    for line in replay_lines(tally):
        tr.write_line(line)
    for line in _listed(tally.problems, ""):
        tr.write_line(line)
    for path in pruned:
        tr.write_line(f"removed unused golden {show(path)}")
    if unused:
        tr.write_line(f"{len(unused)} unused golden(s): no collected test owns them")
        for line in _listed([show(path) for path in unused], "  "):
            tr.write_line(line)
        tr.write_line("  (pytest --rollout-record over the whole suite removes them)")


def replay_lines(tally: Tally) -> list[str]:
    """Under ``-v``: each replayed test's account of its replay, in test order."""
    lines: list[str] = []
    for replay in sorted(tally.replays, key=lambda r: str(r["test"])):
        told = [str(line) for line in replay["lines"]]
        lines.append(f"{replay['test']}: {told[0]}" if told else str(replay["test"]))
        lines.extend(told[1:])
    return lines


def _listed(lines: list[str], indent: str) -> list[str]:
    """The first :data:`SHOWN` of ``lines``, then how many more there are."""
    shown = [f"{indent}{line}" for line in lines[:SHOWN]]
    if len(lines) > SHOWN:
        shown.append(f"{indent}... and {len(lines) - SHOWN} more")
    return shown


def record_line(tally: Tally) -> str:
    """``2 golden(s) written (1 created, 1 updated), 3 unchanged``, and what was not."""
    from ..store.golden_store import Kept  # start-up: only a record run needs it

    kept = tally.kept
    created, updated = kept[Kept.CREATED.value], kept[Kept.UPDATED.value]
    line = (
        f"{created + updated} golden(s) written ({created} created, {updated} updated), "
        f"{kept[Kept.UNCHANGED.value]} unchanged"
    )
    if kept[Kept.NAMED.value]:
        line += f", {kept[Kept.NAMED.value]} named by path and left as is"
    if tally.not_recorded:
        line += f", {tally.not_recorded} not recorded (test failed)"
    return line


def compare_lines(tally: Tally) -> list[str]:
    """What replaying did: goldens compared, how much of them matched, and every other thing
    that befell a golden (none of these lines when nothing happened).

    ``3 golden(s) compared: 9/9 turns served, 4/5 tool calls matched, 1 diverged``.
    """
    parts = []
    if tally.compared or tally.not_compared or tally.missing or tally.forked:
        parts.append(
            f"{tally.compared} golden(s) compared: {tally.turns_served}/{tally.turns_recorded} "
            f"turns served, {tally.calls_matched}/{tally.calls_recorded} tool calls matched, "
            f"{tally.diverged} diverged"
        )
    if tally.not_compared:
        parts.append(
            f"{tally.not_compared} replayed without a comparison "
            "(no assert rollout == golden, and nothing diverged)"
        )
    if tally.forked:
        parts.append(f"{tally.forked} forked from a golden (run on live, not compared)")
    if tally.missing:
        parts.append(f"{tally.missing} test(s) had no golden")
    if tally.resealed:
        parts.append(f"{tally.resealed} edited golden(s) accepted and sealed anew")
    if tally.unverified:
        parts.append(f"{tally.unverified} golden(s) replayed unverified (no matching receipt)")
    return [", ".join(parts)] if parts else []
