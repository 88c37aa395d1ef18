"""One agent's part of a run, for the page's ``?agent=NAME``.

In a run with several agents every event may name the agent that acted (``data.agent``, a
string; absent or ``null``: nobody named), and a ``handoff`` event (``{from, to}``) marks
where control passed from one agent to another. :func:`entry_for_agent` keeps of a page
entry (see :mod:`.entries`) the events that concern one agent:

- the events it did (``data.agent`` is its name);
- the handoffs to or from it;
- the run's first event (``run.started``) and its terminal event, so the run still reads
  as a run.

The page's own filter by agent keeps the same events (``viewer.js``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..format.events import HANDOFF, RUN_STARTED, TERMINAL_TYPES

__all__ = ["agent_of", "concerns", "entry_for_agent"]


def agent_of(data: Any) -> str | None:
    """The agent an event's ``data`` names, or ``None`` when it names nobody."""
    if isinstance(data, Mapping):
        name = data.get("agent")
        if isinstance(name, str) and name:
            return name
    return None


def concerns(row: Sequence[Any], agent: str) -> bool:
    """Whether the page row ``[seq, step, type, description, data]`` is one of ``agent``'s
    (see the module docstring)."""
    kind, data = row[2], row[4]
    if kind == RUN_STARTED or kind in TERMINAL_TYPES or agent_of(data) == agent:
        return True
    return (
        kind == HANDOFF
        and isinstance(data, Mapping)
        and agent in (data.get("from"), data.get("to"))
    )


def _kept(rows: Sequence[Sequence[Any]], agent: str) -> list[int]:
    return [i for i, row in enumerate(rows) if concerns(row, agent)]


def _run_for_agent(entry: Mapping[str, Any], agent: str) -> tuple[dict[str, Any], dict[int, int]]:
    """The run entry with ``agent``'s events only, and where each kept event moved to."""
    rows = entry.get("events") or []
    kept = _kept(rows, agent)
    narrowed = dict(entry)
    narrowed["events"] = [rows[i] for i in kept]
    narrowed["agent"] = agent
    return narrowed, {old: new for new, old in enumerate(kept)}


def _moved(index: Any, moved: Mapping[int, int]) -> int | None:
    return moved.get(index) if isinstance(index, int) else None


def _comparison_for_agent(
    comparison: Mapping[str, Any], golden: Mapping[int, int], run: Mapping[int, int]
) -> dict[str, Any]:
    """The step alignment with the events of one agent: indices renumbered, a step with no
    event left on either side dropped, the first divergence's events ``None`` when gone."""
    steps = []
    for step in comparison["steps"]:
        left = [golden[i] for i in step["golden"] if i in golden]
        right = [run[i] for i in step["run"] if i in run]
        if left or right:
            steps.append({**step, "golden": left, "run": right})
    narrowed = {**comparison, "steps": steps}
    first = comparison.get("first")
    if first is not None:
        narrowed["first"] = {
            **first,
            "golden_event": _moved(first.get("golden_event"), golden),
            "run_event": _moved(first.get("run_event"), run),
        }
    return narrowed


def entry_for_agent(entry: Mapping[str, Any], agent: str) -> dict[str, Any]:
    """``entry`` (a run or a diff) with only ``agent``'s events (see the module docstring),
    marked ``"agent": agent``. A diff keeps its summary, score and report as they are (they
    are about the whole run); its step alignment is renumbered to the events kept."""
    if entry.get("kind") != "diff":
        return _run_for_agent(entry, agent)[0]
    golden, golden_moved = _run_for_agent(entry["golden"], agent)
    run, run_moved = _run_for_agent(entry["run"], agent)
    narrowed = {**entry, "golden": golden, "run": run, "agent": agent}
    if entry.get("comparison") is not None:
        narrowed["comparison"] = _comparison_for_agent(entry["comparison"], golden_moved, run_moved)
    return narrowed
