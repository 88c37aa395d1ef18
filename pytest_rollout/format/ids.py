"""Provider tool-call ids: volatile names for the same calls.

A live provider names each tool call it asks for with a fresh id (``call_8fK2...``,
``toolu_01...``); the agent then repeats that id in tool results and in the next request.
Two runs that made the same calls in the same order carry different ids, and that is not
drift. Before two runs are compared, the ids of run ``b`` are renamed to those of run ``a``,
matched by the order in which the turns announced them. Runs replayed from a recording
already share their ids, and are left untouched at no cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .events import LLM_TURN_COMPLETED, Event

__all__ = ["align_call_ids", "announced_ids"]


def announced_ids(events: Sequence[Event]) -> list[str]:
    """The tool-call ids the run's turns announced, in order."""
    found: list[str] = []
    for data in [e.data for e in events if e.type == LLM_TURN_COMPLETED]:
        calls = data.get("tool_calls")
        if calls and isinstance(calls, list):
            found.extend(
                c["id"]
                for c in calls
                if (type(c) is dict or isinstance(c, Mapping)) and isinstance(c.get("id"), str)
            )
    return found


def _rename(value: Any, names: Mapping[str, str]) -> Any:
    kind = type(value)
    if kind is str:
        return names.get(value, value)
    if kind is dict:
        return {k: _rename(v, names) for k, v in value.items()}
    if kind is list:
        return [_rename(v, names) for v in value]
    return value


def align_call_ids(a: Sequence[Event], b: Sequence[Event]) -> Sequence[Event]:
    """``b`` with each announced call id renamed to the id ``a`` announced at the same place.

    Only string values equal to a renamed id change, wherever they sit (call ids, tool
    results' ``tool_call_id``, ids inside rendered messages). Ids beyond the calls ``a``
    announced keep their names. When the ids already agree, ``b`` is returned as it is.
    """
    ids_a = announced_ids(a)
    ids_b = announced_ids(b)
    names = {theirs: ours for ours, theirs in zip(ids_a, ids_b, strict=False) if ours != theirs}
    # An id renamed onto a name b uses elsewhere would merge two calls: keep those apart.
    if not names or set(names.values()) & (set(ids_b) - set(names)):
        return b
    return [e._replace(data=_rename(e.data, names)) for e in b]
