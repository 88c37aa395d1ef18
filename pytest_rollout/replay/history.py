"""The requests of a conversation, hashed for replay at the cost of what is new in each.

A model request is matched against its recorded turn by :func:`request_hash`, the sha256 of
its canonical form (the whole message list, tools and params, redacted the way the recording
was, its volatile values renamed by first appearance in the request). :class:`RequestHistory`
computes that hash for one conversation turn after turn, so that a turn costs what its new
messages cost, not what the whole history costs.

The renaming (:mod:`~pytest_rollout.diff.volatile`) is what lets a request whose system
prompt says today's date match the turn recorded yesterday, while a request that now holds
two dates where it held one does not. A golden recorded before the renaming holds keys taken
without it; a request key says with which rules it was taken (``key_volatile``), and replay
takes the live request's key the same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from ..diff.call_order import results_in_call_order
from ..diff.canonical import canonical_bytes
from ..diff.volatile import Renaming, Volatile

__all__ = ["RequestHistory", "TurnRequest", "new_messages", "request_hash"]


def _as_is(value: Any) -> Any:
    return value


def request_hash(
    messages: Any, tools: Any, params: Mapping[str, Any], volatile: Volatile | None = None
) -> str:
    """sha256 of a request's canonical form: the whole message list, tools and params, with
    the ``volatile`` values renamed (none: taken as they are)."""
    encoded = canonical_bytes({"messages": messages, "tools": tools, "params": dict(params)})
    if volatile is not None:
        encoded = Renaming(volatile).rename(encoded)
    return hashlib.sha256(encoded).hexdigest()


def new_messages(previous: Sequence[Any], current: Sequence[Any]) -> list[Any]:
    """The messages of ``current`` that are new since ``previous`` (all, if it was rewritten)."""
    if len(current) >= len(previous) and list(current[: len(previous)]) == list(previous):
        return list(current[len(previous) :])
    return list(current)


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """A model request as its turn records it and replay matches it: the messages new since
    the previous request, tools and params as sent (the recorder redacts them),
    ``messages_hash``, the :func:`request_hash` of the whole request, redacted, and
    ``key_volatile``, the fingerprint of the rules its volatile values were renamed by
    (``None``: taken as they are)."""

    messages: Sequence[Any]
    tools: Any
    params: Mapping[str, Any]
    messages_hash: str
    key_volatile: str | None = None


#: How the canonical form of a request begins, before its first message.
_OPEN: Final = b'{"messages":['


def _is_pair(messages: Sequence[Any]) -> bool:
    """Whether a message list looks like a ``[name, value]`` pair, which redaction reads as
    a header (a secret name hides the value): such a list is redacted as a whole."""
    return len(messages) == 2 and all(isinstance(m, str) for m in messages)


class RequestHistory:
    """The requests of one conversation so far, for hashing each request at the cost of its
    new messages.

    An agent sends its whole history with every request, so hashing every request whole
    costs a run the square of its turns. The canonical form of a request is
    ``{"messages":[m1,...,mN],"params":P,"tools":T}`` (keys sorted), and redaction works
    string by string, so the canonical bytes of each redacted message never change once
    encoded: this keeps the sha256 state of ``{"messages":[m1,...,mN`` and, for a request
    that extends the previous one, redacts and encodes only the messages after it. The
    digest is byte for byte :func:`request_hash` of the redacted request.
    """

    __slots__ = ("_last", "_messages", "_names", "_plain_rest", "_redact", "_state", "_volatile")

    def __init__(
        self, redact: Callable[[Any], Any] | None = None, volatile: Volatile | None = None
    ) -> None:
        self._redact: Callable[[Any], Any] = _as_is if redact is None else redact
        self._volatile = volatile
        self._messages: list[Any] = []
        self._state = hashlib.sha256(_OPEN)
        # The renaming of the previous request's messages (its values, numbered in order).
        self._names = Renaming(volatile) if volatile is not None else None
        # The canonical bytes of the last params and tools found to hold no volatile value.
        self._plain_rest: bytes | None = None
        # The tools and the params of the last request: their unredacted canonical bytes,
        # then those of their redacted form.
        self._last: dict[str, tuple[bytes, bytes]] = {}

    @property
    def messages(self) -> list[Any]:
        """The key messages of the conversation so far (the previous request's)."""
        return self._messages

    def request(
        self,
        start: int,
        new: Sequence[Any],
        fresh: Sequence[Any],
        tools: Any,
        params: Mapping[str, Any],
    ) -> TurnRequest:
        """The turn of a request whose key messages are those of the previous request up to
        ``start`` (0: a conversation begun anew), then ``new``. ``fresh`` are the messages
        the turn records as new, ``tools`` and ``params`` the request's own."""
        if start not in (0, len(self._messages)):
            raise ValueError(f"a request extends {len(self._messages)} messages, not {start}")
        params = dict(params)
        new = results_in_call_order(new) or new
        tail = self._encoded(new)
        state = hashlib.sha256(_OPEN) if start == 0 else self._state.copy()
        names = self._renaming(start)
        if names is not None:
            tail = names.rename(tail)
        if tail:
            state.update(tail[1:] if start == 0 else tail)
        messages = [*self._messages[:start], *new]
        if _is_pair(messages):
            digest = self._whole(messages, tools, params)
        else:
            end = state.copy()
            rest = b'],"params":' + self._part("params", params)
            rest += b',"tools":' + self._part("tools", tools) + b"}"
            if names is not None and rest != self._plain_rest:
                renamed = names.rename(rest, keep=False)
                if renamed is rest:  # no volatile value: the next request's is likely this one
                    self._plain_rest = rest
                rest = renamed
            end.update(rest)
            digest = end.hexdigest()
        self._messages, self._state, self._names = messages, state, names
        return TurnRequest(list(fresh), tools, params, digest, self.key_volatile)

    @property
    def key_volatile(self) -> str | None:
        """The fingerprint of the rules this history's keys rename by (``None``: none)."""
        return None if self._volatile is None else self._volatile.fingerprint

    def _renaming(self, start: int) -> Renaming | None:
        """The renaming a request's new messages continue: the previous request's (a request
        only ever extends the last one), or a new one for a conversation begun anew."""
        if self._volatile is None or start != 0:
            return self._names  # None when nothing is renamed
        return Renaming(self._volatile)

    def whole(self, messages: Any, tools: Any, params: Mapping[str, Any]) -> TurnRequest:
        """The turn of a request hashed whole (its messages are not a list: what is recorded
        of messages that cannot be); the conversation starts anew after it."""
        fresh = new_messages(self._messages, messages)
        params = dict(params)
        digest = self._whole(messages, tools, params)
        self._messages, self._state = [], hashlib.sha256(_OPEN)
        return TurnRequest(fresh, tools, params, digest, self.key_volatile)

    def _encoded(self, messages: Sequence[Any]) -> bytes:
        """``,m1,m2,...``: each message redacted on its own and canonically encoded."""
        redact = self._redact
        return b"".join(b"," + canonical_bytes(redact(m)) for m in messages)

    def _part(self, name: str, value: Any) -> bytes:
        """The canonical bytes of the redacted tools or params (redacted again only when
        they changed since the previous request)."""
        plain = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        last = self._last.get(name)
        if last is not None and last[0] == plain:
            return last[1]
        encoded = canonical_bytes(self._redact(value))
        self._last[name] = (plain, encoded)
        return encoded

    def _whole(self, messages: list[Any], tools: Any, params: Mapping[str, Any]) -> str:
        redact = self._redact
        return request_hash(redact(messages), redact(tools), redact(params), self._volatile)
