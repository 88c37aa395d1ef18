"""Hooks that conftest files and plugins implement to extend pytest-rollout."""

from __future__ import annotations

from collections.abc import Iterable

import pytest


def pytest_rollout_ignore(config: pytest.Config, item: pytest.Item) -> Iterable[str] | None:
    """Return extra fields to leave out of this test's comparison with its golden.

    Each entry is an ignore path, ``[TYPE:]path`` (``*`` and ``[*]`` match one key or
    index, ``**`` any run of them), e.g. ``"tool.call.completed:output.fetched_at"`` or
    ``"**.request_id"``. Results of every implementation are combined.
    """


def pytest_rollout_volatile(
    config: pytest.Config, item: pytest.Item
) -> Iterable[str | tuple[str, str]] | None:
    """Return more values that change on every run of this test, to rename by first
    appearance before its run is compared with its golden (and its requests matched).

    Each entry is ``"LABEL=REGEX"`` or a ``(label, regex)`` pair, e.g.
    ``"order=ORD-[0-9]{6}"``: a match becomes ``<order#1>``, ``<order#2>``... in the order
    distinct values first appear, as the built-in dates, uuids and provider ids do. The label
    is a lowercase word. Results of every implementation are combined with the ini key
    ``rollout_volatile`` and the marker's ``volatile=[...]``.
    """


def pytest_rollout_error_types(config: pytest.Config) -> Iterable[str] | None:
    """Return extra event types that the regression score counts as errors.

    The built-in families (``run.failed``, ``hook.failed``, ``tool_hook.failed``,
    ``memory.observe.failed``, ``skill.fork.failed``, ``error.context``) always count.
    Results of every implementation are combined.
    """


def pytest_rollout_redact_patterns(config: pytest.Config) -> Iterable[tuple[str, str]] | None:
    """Return extra redaction rules, as ``(label, regex)`` pairs.

    Every string of every recorded event is searched with them; a match (or its named group
    ``secret``, when the pattern has one) is replaced by ``[REDACTED:<label>]``. Keep
    patterns linear: start them at a boundary and use possessive quantifiers (``++``), as
    the built-in ones do. Results of every implementation are combined.
    """


def pytest_rollout_redact_keys(config: pytest.Config) -> Iterable[str] | None:
    """Return extra key names whose values are always redacted (case and ``-``/``_``
    insensitive, e.g. ``"x-internal-auth"``). Results of every implementation are combined.
    """


@pytest.hookspec(firstresult=True)
def pytest_rollout_rebuild_result(type_name: str, value: object) -> object | None:
    """Return the object a replayed tool result stands for, or ``None`` to leave it to
    pytest-rollout.

    ``type_name`` is the ``module:qualname`` of the type the tool returned when it was
    recorded, and ``value`` its recorded JSON value. Asked before the built-in rebuilding
    (dataclasses, pydantic models, attrs classes, ``NamedTuple``, enums, dates, UUID,
    ``Decimal``), so it may also take over one of those; the first result that is not
    ``None`` is used.
    """
