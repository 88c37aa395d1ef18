"""Provider tool-call ids: volatile names for the same calls.

A live provider names each tool call it asks for with a fresh id (``call_8fK2...``,
``toolu_01...``); the agent then repeats that id in tool results and in the next request.
Two runs that made the same calls in the same order carry different ids, and that is not
drift. Before two runs are compared, the ids of run ``b`` are renamed to those of run ``a``,
matched by the order in which the turns announced them. Runs replayed from a recording
already share their ids, and are left untouched at no cost.

The Responses API names its output items too (``fc_...``, ``msg_...``, ``rs_...``), and an
agent that sends its history back as input items repeats those names in its next request;
a conversation continued on the server names the previous response
(``previous_response_id``). Those ids are matched the same way: by the order in which the
requests first carried them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

from .events import LLM_TURN_COMPLETED, LLM_TURN_STARTED, Event

__all__ = ["align_call_ids", "announced_ids", "echoed_ids"]


def announced_ids(events: Sequence[Event]) -> list[str]:
    """The tool-call ids the run's turns announced, in order."""
    return _ids(events)[0]


def echoed_ids(events: Sequence[Event]) -> list[str]:
    """The provider's item ids the requests sent back, in the order they first appear: the
    ``id`` of each input item (a message with a ``type``, as the Responses API has them)
    and ``previous_response_id``."""
    return _ids(events)[1]


def _ids(events: Sequence[Event]) -> tuple[list[str], list[str]]:
    """:func:`announced_ids` and :func:`echoed_ids` of a run, read in one pass over it."""
    calls: list[str] = []
    items: dict[str, None] = {}
    for event in events:
        kind = event.type
        if kind == LLM_TURN_COMPLETED:
            _announced_in(event.data, calls)
        elif kind == LLM_TURN_STARTED:
            _echoed_in(event.data, items)
    return calls, list(items)


def _announced_in(data: Mapping[str, Any], found: list[str]) -> None:
    calls = data.get("tool_calls")
    if not calls or not isinstance(calls, list):
        return
    for call in calls:
        if type(call) is dict or isinstance(call, Mapping):
            call_id = call.get("id")
            if type(call_id) is str or isinstance(call_id, str):
                found.append(call_id)


def _echoed_in(data: Mapping[str, Any], found: dict[str, None]) -> None:
    params = data.get("params")
    if type(params) is dict and isinstance(params.get("previous_response_id"), str):
        found.setdefault(params["previous_response_id"])
    messages = data.get("messages")
    if type(messages) is not list:
        return
    try:
        # Chat messages have no "type": a history of them is passed over in C.
        if not any(map(dict.__contains__, messages, repeat("type"))):
            return
    except TypeError:  # an item that is not a dict: looked at one by one
        pass
    for item in messages:
        if type(item) is dict and "type" in item and isinstance(item.get("id"), str):
            found.setdefault(item["id"])


def _pairs(ours: list[str], theirs: list[str]) -> dict[str, str]:
    return {t: o for o, t in zip(ours, theirs, strict=False) if o != t}


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
    """``b`` with each announced call id renamed to the id ``a`` announced at the same place
    (and each echoed item id to ``a``'s at the same place, :func:`echoed_ids`).

    Only string values equal to a renamed id change, wherever they sit (call ids, tool
    results' ``tool_call_id``, ids inside rendered messages). Ids beyond the calls ``a``
    announced keep their names. When the ids already agree, ``b`` is returned as it is.
    """
    calls_a, items_a = _ids(a)
    calls_b, items_b = _ids(b)
    names = _pairs(calls_a, calls_b)
    names.update(_pairs(items_a, items_b))
    # An id renamed onto a name b uses elsewhere would merge two calls: keep those apart.
    if not names or set(names.values()) & ({*calls_b, *items_b} - set(names)):
        return b
    return [e._replace(data=_rename(e.data, names)) for e in b]
