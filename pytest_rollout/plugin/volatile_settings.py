"""What a session and each test say about volatile values (docs/replay.md, "Dates, ids and
other values that change every run"): patterns to rename as well, from the ini key
``rollout_volatile``, the marker's ``volatile=[...]`` and the ``pytest_rollout_volatile``
hook; the built-in kinds turned off (``volatile=False``); paths kept exact (``exact=``).

Each pattern is checked where it is written, and a bad one is named by where it came from:
the ini key stops the session (``pytest.UsageError``), a marker or a hook fails the tests it
reaches (``RolloutError``), as their other bad values do. The library's rules are loaded
only when a pattern is given: the built-in kinds need no setting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import pytest

from ..errors import RolloutError

if TYPE_CHECKING:
    from ..diff.volatile import Volatile

__all__ = ["hook_volatile", "ini_volatile", "marker_exact", "marker_volatile"]

#: Where each pattern comes from, as its errors name it.
INI_KEY: Final = "rollout_volatile"
VOLATILE_KEYWORD: Final = "@pytest.mark.rollout(volatile=...)"
EXACT_KEYWORD: Final = "@pytest.mark.rollout(exact=...)"
HOOK: Final = "pytest_rollout_volatile"


def ini_volatile(config: pytest.Config) -> tuple[tuple[str, str], ...]:
    """The ini key's patterns, each checked now: a typo found when the first test compares
    would fail every test instead of stopping the session once."""
    lines = [str(line) for line in config.getini(INI_KEY) if str(line).strip()]
    if not lines:
        return ()
    from ..diff.volatile import parse_declared

    try:
        return tuple(parse_declared(line, INI_KEY) for line in lines)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def marker_volatile(value: Any) -> Volatile | None:
    """``volatile=False``: the built-in kinds off for the test (the patterns the ini key and
    the hooks declare still apply); a ``LABEL=REGEX`` string, or a list of them: patterns
    renamed as well; ``None`` when the marker does not say."""
    if value is None or value is True:
        return None
    from ..diff.volatile import BUILTIN, NOTHING

    if value is False:
        return NOTHING
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list | tuple) or not all(isinstance(t, str) for t in texts):
        raise RolloutError(
            f"{VOLATILE_KEYWORD} must be False or a list of 'LABEL=REGEX' strings, got {value!r}"
        )
    return BUILTIN.with_declared(declared(t, VOLATILE_KEYWORD) for t in texts)


def marker_exact(value: Any) -> tuple[str, ...]:
    """``exact=``'s paths, checked as the ignore paths they are written like."""
    if not value:
        return ()
    paths = [value] if isinstance(value, str) else value
    if not isinstance(paths, list | tuple) or not all(isinstance(p, str) for p in paths):
        raise RolloutError(f"{EXACT_KEYWORD} must be a list of [TYPE:]path strings, got {value!r}")
    from ..diff.canonical import DEFAULT_OPTIONS

    try:
        DEFAULT_OPTIONS.extended(exact_paths=paths)
    except ValueError as exc:
        raise RolloutError(f"{EXACT_KEYWORD}: {exc}") from None
    return tuple(paths)


def hook_volatile(
    hook: Any, config: pytest.Config, item: pytest.Item
) -> tuple[tuple[str, str], ...]:
    """What the ``pytest_rollout_volatile`` hooks that reach ``item`` declare, checked."""
    return tuple(
        declared(entry, HOOK)
        for found in hook.pytest_rollout_volatile(config=config, item=item)
        for entry in found or ()
    )


def declared(entry: object, source: str) -> tuple[str, str]:
    """A declared pattern, ``"LABEL=REGEX"`` or a ``(label, regex)`` pair, as ``(label,
    regex)``; a ``RolloutError`` naming ``source`` and what is wrong with it."""
    from ..diff.volatile import parse_declared

    if isinstance(entry, str):
        text = entry
    elif isinstance(entry, tuple) and len(entry) == 2 and all(isinstance(p, str) for p in entry):
        text = f"{entry[0]}={entry[1]}"
    else:
        raise RolloutError(
            f"{source}: {entry!r} is neither a 'LABEL=REGEX' string nor a (label, regex) pair"
        )
    try:
        found = parse_declared(text, source)
    except ValueError as exc:
        raise RolloutError(str(exc)) from None
    if isinstance(entry, tuple) and found[0] != entry[0].strip():  # a label holding "="
        raise RolloutError(
            f"{source}: label {entry[0]!r} must be a lowercase word "
            f"(letters, digits and _, starting with a letter)"
        )
    return found
