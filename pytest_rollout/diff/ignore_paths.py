"""Ignore paths: ``[TYPE:]key.key[0].*`` patterns that name places in an event's data, for
what a comparison leaves out (``rollout_ignore``), keeps exact (``exact=``) or renames by
place (``LABEL@PATH``): see docs/replay.md."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

__all__ = ["IgnorePath"]

_SEGMENT: Final = re.compile(r"[^.\[\]]+|\[\d+\]|\[\*\]")
_PATH: Final = re.compile(r"(?:[^.\[\]]+|\[\d+\]|\[\*\])(?:\.[^.\[\]]+|\[\d+\]|\[\*\])*")


#: A set of positions in an ignore path's segments: how far each way of matching has got.
_States = frozenset[int]


@dataclass(frozen=True, slots=True)
class IgnorePath:
    """A parsed ignore path: an optional event type, then keys, indexes and wildcards.

    A path is matched one segment at a time, keeping the set of pattern positions reached
    (each ``**`` may stay where it is or be skipped), so the work per segment is bounded by
    the pattern's length, however many ``**`` it holds.
    """

    event_type: str | None
    segments: tuple[str | int, ...]
    #: For each position, the positions it stands for once the ``**`` from it are skipped.
    _reach: tuple[_States, ...] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        reach: list[_States] = [frozenset({len(self.segments)})]
        for i in range(len(self.segments) - 1, -1, -1):
            skipped = reach[-1] if self.segments[i] == "**" else frozenset()
            reach.append(frozenset({i}) | skipped)
        object.__setattr__(self, "_reach", tuple(reversed(reach)))

    @classmethod
    def parse(cls, text: str) -> IgnorePath:
        """Parse ``[TYPE:]key.key[0].*`` (``*`` and ``[*]`` match any key or index,
        ``**`` any run of them)."""
        event_type, _, path = text.rpartition(":")
        # Reports name fields from the event (data.tool_calls[0]...); paths are relative
        # to data, so a pasted "data." prefix is accepted.
        path = path.removeprefix("data.")
        if not path:
            raise ValueError(f"empty ignore path: {text!r}")
        if not _PATH.fullmatch(path):
            raise ValueError(
                f"malformed ignore path {text!r}: write [TYPE:]key.key[0].* "
                f"(keys joined by dots, [N] or [*] for list items, * or ** as wildcards)"
            )
        segments: list[str | int] = []
        for token in _SEGMENT.findall(path):
            if token == "[*]":
                segments.append("*")
            elif token.startswith("["):
                segments.append(int(token[1:-1]))
            elif token != "**" or not segments or segments[-1] != "**":
                segments.append(token)  # "**.**" is the same run as "**"
        return cls(event_type or None, tuple(segments))

    @property
    def start(self) -> _States:
        """The positions before any segment is read."""
        return self._reach[0]

    def advance(self, states: _States, segment: str | int) -> _States:
        """The positions reached from ``states`` by reading ``segment`` (empty: nothing
        below it can match)."""
        pattern = self.segments
        end = len(pattern)
        reached: set[int] = set()
        for i in states:
            if i == end:
                continue
            head = pattern[i]
            if head == "**":
                reached.update(self._reach[i])
            elif head in ("*", segment):
                reached.update(self._reach[i + 1])
        return frozenset(reached)

    def accepts(self, states: _States) -> bool:
        """Whether the segments read so far make a whole match."""
        return len(self.segments) in states

    def matches(self, event_type: str, path: tuple[str | int, ...]) -> bool:
        if self.event_type is not None and self.event_type != event_type:
            return False
        states = self.start
        for segment in path:
            states = self.advance(states, segment)
            if not states:
                return False
        return self.accepts(states)
