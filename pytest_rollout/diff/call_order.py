"""Tool results in a request, put in the order their calls were announced.

An agent that runs a turn's tool calls side by side often adds each result to the
conversation as it completes, so the next request lists the results in an order that
changes with every run's latencies. Which result answers which call is what counts, and the
call ids say that; the order of a run of consecutive results is noise.
:func:`results_in_call_order` puts each such run in the order the calls were announced,
for the request key and for the comparison of a recorded request.

The shapes understood are those of the three model APIs, which agents built on them
reuse:

- OpenAI Chat Completions: an assistant message's ``tool_calls`` (``id``) announce the
  calls, and each result is a ``{"role": "tool", "tool_call_id": ...}`` message;
- OpenAI Responses: ``function_call`` items (``call_id``) announce, and
  ``function_call_output`` items (``call_id``) answer;
- Anthropic Messages: ``tool_use`` blocks (``id``) of an assistant message announce, and
  the ``tool_result`` blocks (``tool_use_id``) of a user message answer, in its content.

A run whose results are not all answers to calls announced earlier in the same list (a
Responses request continuing ``previous_response_id`` carries the outputs without their
calls) keeps its order: nothing says which order is right.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["results_in_call_order"]


def _result_id(message: Any) -> str | None:
    """The call id a message answers, when it is a tool result message or item."""
    if not isinstance(message, Mapping):
        return None
    if message.get("role") == "tool":
        found = message.get("tool_call_id")
    elif message.get("type") == "function_call_output":
        found = message.get("call_id")
    else:
        return None
    return found if isinstance(found, str) else None


def _block_id(block: Any) -> str | None:
    """The call id an Anthropic content block answers, when it is a ``tool_result``."""
    if isinstance(block, Mapping) and block.get("type") == "tool_result":
        found = block.get("tool_use_id")
        return found if isinstance(found, str) else None
    return None


def _announce(message: Any, places: dict[str, int]) -> None:
    """Add the ids of the calls ``message`` announces to ``places``, in order."""
    if not isinstance(message, Mapping):
        return
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                places.setdefault(call["id"], len(places))
    if message.get("type") == "function_call" and isinstance(message.get("call_id"), str):
        places.setdefault(message["call_id"], len(places))
    content = message.get("content")
    if message.get("role") == "assistant" and isinstance(content, list):
        for block in content:
            if (
                isinstance(block, Mapping)
                and block.get("type") == "tool_use"
                and isinstance(block.get("id"), str)
            ):
                places.setdefault(block["id"], len(places))


def _ordered(items: list[Any], ids: list[str | None], places: dict[str, int]) -> list[Any]:
    """``items`` with each run of consecutive results (``ids[i]`` set) in announced order;
    the same list object when nothing moves."""
    out: list[Any] | None = None
    start = 0
    while start < len(items):
        if ids[start] is None:
            start += 1
            continue
        end = start
        while end < len(items) and ids[end] is not None:
            end += 1
        run = ids[start:end]
        if end - start > 1 and all(i in places for i in run):
            order = sorted(range(start, end), key=lambda k: places[ids[k]])  # type: ignore[index]
            if order != list(range(start, end)):
                if out is None:
                    out = list(items)
                out[start:end] = [items[k] for k in order]
        start = end
    return items if out is None else out


def results_in_call_order(messages: Any) -> list[Any] | None:
    """``messages`` with each run of consecutive tool results in the order their calls
    were announced earlier in the list, or ``None`` when they are in that order already
    (the messages themselves are never changed: a reordered one is a copy)."""
    if type(messages) is not list or len(messages) < 2:
        return None
    places: dict[str, int] = {}
    changed = False
    items: list[Any] = list(messages)
    for index, message in enumerate(items):
        _announce(message, places)
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list) and len(content) > 1:
            blocks = _ordered(content, [_block_id(b) for b in content], places)
            if blocks is not content:
                items[index] = {**message, "content": blocks}
                changed = True
    ordered = _ordered(items, [_result_id(m) for m in items], places)
    if ordered is items and not changed:
        return None
    return ordered
