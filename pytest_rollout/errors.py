"""The exception and warning roots of pytest-rollout."""

from __future__ import annotations

import os

__all__ = ["RolloutError", "RolloutFileError", "RolloutFormatError", "RolloutWarning"]


class RolloutError(Exception):
    """Root of every error pytest-rollout raises on purpose."""

    __module__ = "pytest_rollout"


class RolloutFileError(RolloutError):
    """An error about one file (a receipt, an audit trail): ``path`` names it and ``reason``
    says why, in one sentence."""

    __module__ = "pytest_rollout"

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")

    def __reduce__(self) -> tuple[type[RolloutFileError], tuple[str, str]]:
        return (type(self), (self.path, self.reason))


class RolloutFormatError(RolloutError):
    """A rollout file was refused: it breaks the on-disk contract or a loader limit.

    ``path`` is the file, ``line`` the 1-based line number (``None`` when the refusal
    concerns the whole file, e.g. its size or kind) and ``reason`` a sentence saying
    what is wrong.
    """

    __module__ = "pytest_rollout"

    def __init__(self, path: str | os.PathLike[str], line: int | None, reason: str) -> None:
        self.path = os.fspath(path)
        self.line = line
        self.reason = reason
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self) -> tuple[type[RolloutFormatError], tuple[str, int | None, str]]:
        return (type(self), (self.path, self.line, self.reason))


class RolloutWarning(UserWarning):
    """Root of every warning pytest-rollout emits."""

    __module__ = "pytest_rollout"
