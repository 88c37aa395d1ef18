"""Request bodies parsed at the cost of what is new in them.

An agent sends its whole conversation with every model request, so parsing every body whole
costs a run the square of its turns. A :class:`BodyCache` keeps the last few bodies an API
was sent, each with its parsed form and, once known, the offset of the ``]`` that closes its
message array. A new body that is one of them with messages added at the end of that array
(the same bytes before that ``]``, the same bytes from it on, the new messages between) is
parsed by parsing only the new messages; any other body is parsed whole.

The result is always what parsing the whole body gives. The bytes around the new messages
are compared, not assumed; the new messages are parsed at the depth they have in the body
and must be a list of whole JSON values (so they cannot close the array or open a new key);
and the offset of the array's ``]`` is only ever learnt from a body parsed whole, when the
next body parsed whole turns out to be that body with messages inserted at that offset and
its message array grew by exactly as many messages as were inserted (inserted anywhere
else, in a string, in an array inside a message or in a key that a later duplicate key
overrides, they would leave that array as long as it was).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson

__all__ = ["BodyCache"]

#: Bodies kept per API: a few conversations may take turns (agents run side by side).
_KEPT: Final = 4
_COMMA: Final = ord(",")
_CLOSE: Final = ord("]")
#: The smallest common end of two bodies looked for first (then twice as much, ...).
_PROBE: Final = 64


@dataclass(frozen=True, slots=True)
class _Body:
    """A body, its parsed form and, when known, where its message array's ``]`` is."""

    body: bytes
    data: dict[str, Any]
    count: int  # how many messages data holds
    end: int = -1  # the offset of the ``]`` closing the message array, -1 when unknown
    head: bytes = b""  # body[:end]
    tail: bytes = b""  # body[end:]


def _messages(wrapped: bytes) -> list[Any] | None:
    """The messages of ``,m1,m2,...`` parsed where a body holds them (inside an object's
    array), or ``None`` when it is not a comma and a list of whole JSON values."""
    try:
        parsed = orjson.loads(b'{"m":[' + wrapped[1:] + b"]}")
    except orjson.JSONDecodeError:
        return None
    found = parsed["m"]
    return found if isinstance(found, list) and found else None


def _common_end(old: bytes, new: bytes) -> int:
    """How many bytes ``old`` and ``new`` end with alike, for the first few times
    :data:`_PROBE` (enough to find where the messages end: what follows them is short)."""
    size, limit = _PROBE, min(len(old), len(new))
    low = 0
    while size <= limit and new.endswith(old[len(old) - size :]):
        low, size = size, size * 2
    high = min(size, limit + 1)
    while high - low > 1:  # old ends like new on low bytes, not on high
        middle = (low + high) // 2
        if new.endswith(old[len(old) - middle :]):
            low = middle
        else:
            high = middle
    return low


def _split(key: str, old: _Body, body: bytes, data: dict[str, Any]) -> _Body | None:
    """``body`` (parsed whole as ``data``) as ``old`` with messages added at the end of its
    message array, with where its own array ends; ``None`` when it is not."""
    grown = data.get(key)
    if not isinstance(grown, list) or old.count < 1 or len(grown) <= old.count:
        return None
    before, after = old.body, len(body) - len(old.body)
    if after <= 0:
        return None
    at = before.find(b"]", len(before) - _common_end(before, body))
    while at >= 0 and body[at] != _COMMA:
        at = before.find(b"]", at + 1)
    if at < 0 or not body.startswith(before[:at]):
        return None
    inserted = _messages(body[at : at + after])
    if inserted is None or len(grown) != old.count + len(inserted):
        return None
    end = at + after
    return _Body(body, data, len(grown), end, body[:end], body[end:])


class BodyCache:
    """The last few bodies sent to one API, for parsing a body that extends one of them at
    the cost of its new messages. ``key`` names the body's growing message array
    (``messages``, or ``input`` for OpenAI Responses).

    Parsed bodies are shared with the bodies that extend them: treat them as read-only.
    """

    __slots__ = ("_kept", "_key")

    def __init__(self, key: str) -> None:
        self._key = key
        self._kept: tuple[_Body, ...] = ()

    def load(self, body: bytes, whole: Callable[[bytes], dict[str, Any]]) -> dict[str, Any]:
        """``body`` parsed: by ``whole`` (which raises on a bad body), unless it extends a
        body kept."""
        kept = self._kept
        for index, old in enumerate(kept):
            found = self._extended(old, body)
            if found is not None:
                self._keep(found, kept[:index] + kept[index + 1 :])
                return found.data
        data = whole(body)
        items = data.get(self._key)
        new = _Body(body, data, len(items) if isinstance(items, list) else 0)
        for index, old in enumerate(kept):
            split = _split(self._key, old, body, data)
            if split is not None:
                self._keep(split, kept[:index] + kept[index + 1 :])
                return data
        self._keep(new, kept)
        return data

    def _keep(self, first: _Body, others: tuple[_Body, ...]) -> None:
        self._kept = (first, *others[: _KEPT - 1])

    def _extended(self, old: _Body, body: bytes) -> _Body | None:
        """``body`` parsed, when it is ``old`` (the same body sent again) or ``old`` with
        messages added at the end of its array."""
        size = len(old.body)
        if len(body) == size:
            return old if body == old.body else None
        end = old.end
        if end < 0 or len(body) < size or body[end] != _COMMA:
            return None
        if not (body.startswith(old.head) and body.endswith(old.tail)):
            return None
        new_end = len(body) - len(old.tail)
        inserted = _messages(body[end:new_end])
        if inserted is None:
            return None
        data = dict(old.data)
        data[self._key] = [*old.data[self._key], *inserted]
        return _Body(body, data, old.count + len(inserted), new_end, body[:new_end], old.tail)
