"""A run that others are compared with, read so that they can be read like it.

A line of the other run that is this run's line at the same place but for its timestamp, as
when a test replays its golden, is not parsed again: its event is made from this run's and
shares its data (the same objects, so neither run's events may be changed), and the
comparison finds the two equal without reading them (docs/performance.md). The events are
exactly those two separate loads give. :class:`Reference` holds what that takes, and is the
one place that knows it: :func:`load_pair` of ``rollout diff``, and a test's golden at its
verdict (:class:`~pytest_rollout.store.golden_store.LoadedGolden`), both go through it.
"""

from __future__ import annotations

import os

from .bulk import Parsed
from .loader import DEFAULT_LIMITS, Limits, Rollout, parse, read_rollout_bytes

__all__ = ["Reference", "load_pair"]


class Reference:
    """A run read to be compared with (a golden): its :attr:`rollout`, and :meth:`read` of
    another run like it. :meth:`release` lets go of what reading like it takes, once no
    other run will be read."""

    __slots__ = ("_parsed", "rollout")

    def __init__(self, rollout: Rollout, parsed: Parsed | None = None) -> None:
        self.rollout = rollout
        self._parsed = parsed

    @classmethod
    def loads(
        cls, data: bytes, *, path: str = "<bytes>", limits: Limits = DEFAULT_LIMITS
    ) -> Reference:
        """:func:`~.loader.loads` of a run others will be read like."""
        return cls(*parse(data, path=path, limits=limits))

    def read(
        self, data: bytes, *, path: str = "<bytes>", limits: Limits = DEFAULT_LIMITS
    ) -> Rollout:
        """:func:`~.loader.loads` of another run, its lines that are this run's but for their
        time sharing this run's data."""
        return parse(data, path=path, limits=limits, like=self._parsed)[0]

    @property
    def shares(self) -> bool:
        """Whether a run read like this one can share its data (its file was read by the
        loader's fast path, and :meth:`release` was not called)."""
        return self._parsed is not None

    def release(self) -> None:
        self._parsed = None


def load_pair(
    path_a: str | os.PathLike[str],
    path_b: str | os.PathLike[str],
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[Rollout, Rollout]:
    """:func:`~.loader.load` of two rollouts about to be compared, in that order (``a``'s
    refusal is raised before ``b`` is read), ``b`` read like ``a``. ``a``'s bytes are let go
    of before ``b``'s are read."""
    name_a, name_b = os.fspath(path_a), os.fspath(path_b)
    reference = Reference.loads(
        read_rollout_bytes(name_a, limits=limits), path=name_a, limits=limits
    )
    run_b = reference.read(read_rollout_bytes(name_b, limits=limits), path=name_b, limits=limits)
    return reference.rollout, run_b
