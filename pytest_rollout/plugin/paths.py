"""How the plugin shows a path: as a user would type it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..errors import RolloutError

__all__ = ["display", "named_golden"]


def display(config: pytest.Config, path: Path) -> str:
    """``path`` relative to where pytest was started, when it lies below it."""
    base = config.invocation_params.dir
    if path.is_relative_to(base):
        return os.path.relpath(path, base)
    return str(path)


def named_golden(root: Path, base: Path, name: str) -> Path:
    """The golden a marker names by path: ``name`` relative to ``base`` (the test file's
    folder), which must stay inside the project (``root``)."""
    path = Path(os.path.normpath(base / name))
    if not path.is_relative_to(root):
        raise RolloutError(
            f"@pytest.mark.rollout(golden={name!r}) points outside the project ({root}): "
            f"name a file under it"
        )
    return path
