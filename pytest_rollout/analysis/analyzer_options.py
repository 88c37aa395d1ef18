"""Which analyzers run and with what settings: the analyzer names, their parsing from the
command line or a marker, the context windows of known models, and :class:`AnalyzerOptions`
(checked when built). See docs/analyzers.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from .values import finite, whole

__all__ = [
    "ANALYZERS",
    "CONTEXT_WINDOWS",
    "HMAC_KEY_VARIABLE",
    "AnalyzerOptions",
    "parse_analyzers",
]

#: Every analyzer, in the order their events are emitted when several follow one event.
ANALYZERS: Final[tuple[str, ...]] = (
    "cost_anomaly",
    "antipatterns",
    "error_chain",
    "context_window",
    "tool_decisions",
    "request_envelope",
    "causal_graph",
)

# Context windows (input plus output tokens) of the OpenAI and Anthropic models, from their
# model pages as of late 2025: table taken 2025-12. Keys are model-name prefixes, matched as
# pricing.price_for matches them (the longest prefix wins; "gpt-5" covers "gpt-5-mini" but
# not "gpt-5.1", hence "gpt-5."). Claude Sonnet 4 and 4.5 take 1M tokens only with a beta
# header: their default is 200K.
CONTEXT_WINDOWS: Final[Mapping[str, int]] = MappingProxyType(
    {
        # OpenAI
        "gpt-4o": 128_000,
        "gpt-4o-mini": 128_000,
        "gpt-4.1": 1_047_576,  # and gpt-4.1-mini, gpt-4.1-nano
        "gpt-5": 400_000,  # and gpt-5-mini, gpt-5-nano, gpt-5-pro
        "gpt-5.": 400_000,  # gpt-5.1, gpt-5.2, ...
        "gpt-5-chat": 128_000,  # gpt-5-chat-latest
        "o1": 200_000,
        "o1-mini": 128_000,
        "o1-preview": 128_000,
        "o3": 200_000,  # and o3-mini, o3-pro, o3-deep-research
        "o4-mini": 200_000,
        # Anthropic
        "claude": 200_000,
        "claude-sonnet-4": 200_000,  # and claude-sonnet-4-5
        "claude-opus-4": 200_000,  # and claude-opus-4-1, claude-opus-4-5
        "claude-haiku-4-5": 200_000,
    }
)

#: The environment variable whose value (UTF-8) keys the request hashes of
#: ``llm.request.snapshot`` with HMAC-SHA256.
HMAC_KEY_VARIABLE: Final = "ROLLOUT_HMAC_KEY"

_NAME_SEPARATORS: Final = re.compile(r"[\s,]+")


def parse_analyzers(names: Iterable[str]) -> frozenset[str]:
    """The analyzers named by ``names``: each item one or more names separated by commas or
    whitespace, ``"all"`` for every analyzer. Names are compared case-insensitively.

    Raises ``ValueError`` naming an unknown name and listing the valid ones.
    """
    items: Iterable[Any] = [names] if isinstance(names, str) else names
    found: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"analyzer names must be strings, got {item!r}")
        for name in _NAME_SEPARATORS.split(item.strip().lower()):
            found.update(_named(name))
    return frozenset(found)


def _named(name: str) -> tuple[str, ...]:
    """The analyzers one name stands for (none for an empty name)."""
    if not name:
        return ()
    if name == "all":
        return ANALYZERS
    if name in ANALYZERS:
        return (name,)
    raise ValueError(f"unknown analyzer {name!r}: choose from all, {', '.join(ANALYZERS)}")


def _context_windows() -> Mapping[str, int]:
    return CONTEXT_WINDOWS


def _above_zero(value: object) -> bool:
    number = finite(value)
    return number is not None and number > 0


def _fraction(value: object) -> bool:
    number = finite(value)
    return number is not None and 0 < number <= 1


#: The settings checked by value, in the order they are checked: the field, its test and
#: what the error says it must be.
_SETTING_RULES: Final[tuple[tuple[str, Callable[[object], bool], str], ...]] = (
    ("cost_multiplier", _above_zero, "a finite number above 0"),
    ("antipattern_threshold", lambda v: whole(v, 2), "a whole number of 2 or more"),
    ("error_chain_calls", lambda v: whole(v, 0), "a whole number of 0 or more"),
    ("context_threshold", _fraction, "a fraction above 0 and at most 1"),
    ("context_limit", lambda v: v is None or whole(v, 1), "a whole number of tokens above 0"),
    (
        "context_windows",
        lambda v: isinstance(v, Mapping),
        "a mapping of model-name prefixes to token counts",
    ),
)


@dataclass(frozen=True, slots=True)
class AnalyzerOptions:
    """Which analyzers run, and how.

    ``enabled``: the analyzers that run (see :data:`ANALYZERS` and :func:`parse_analyzers`).
    ``cost_multiplier``: a step costing more than this times the mean of the earlier steps
    is an anomaly. ``antipattern_threshold``: how many identical tool calls make a repeat.
    ``error_chain_calls``: how many of the last tool calls ``error.context`` lists.
    ``context_threshold``: the fraction of the context window that draws a warning.
    ``context_limit``: the context window of every model, in place of ``context_windows``
    (window sizes by model-name prefix). ``hmac_key``: key the request hashes of
    ``llm.request.snapshot`` with HMAC-SHA256.
    """

    enabled: frozenset[str] = frozenset()
    cost_multiplier: float = 2.0
    antipattern_threshold: int = 3
    error_chain_calls: int = 5
    context_threshold: float = 0.8
    context_limit: int | None = None
    context_windows: Mapping[str, int] = field(default_factory=_context_windows, hash=False)
    hmac_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "enabled", _enabled_names(self.enabled))
        for name, valid, requirement in _SETTING_RULES:
            value = getattr(self, name)
            if not valid(value):
                raise ValueError(f"{name} must be {requirement}, got {value!r}")
        if not isinstance(self.context_windows, MappingProxyType):
            windows = MappingProxyType(dict(self.context_windows))
            object.__setattr__(self, "context_windows", windows)
        key: object = self.hmac_key
        if key is not None and (not isinstance(key, bytes) or not key):
            raise ValueError(f"hmac_key must be non-empty bytes, not {type(key).__name__}")


def _enabled_names(enabled: object) -> frozenset[str]:
    """``enabled`` as a frozenset of known analyzer names; ``ValueError`` otherwise."""
    if isinstance(enabled, str) or not isinstance(enabled, Iterable):
        raise ValueError(f"enabled must be a set of analyzer names, got {enabled!r}")
    names = frozenset(enabled)
    unknown = sorted(repr(n) for n in names if n not in ANALYZERS)
    if unknown:
        raise ValueError(
            f"unknown analyzer {', '.join(unknown)}: choose from {', '.join(ANALYZERS)}"
        )
    return names
