"""The goldens that no collected test owns."""

from __future__ import annotations

from pathlib import Path

from .tally import Tally

__all__ = ["UnusedFinder"]


class UnusedFinder:
    """The goldens that no collected test owns, from the (merged) tally."""

    def __init__(self, golden_dir: Path, tally: Tally) -> None:
        self.golden_dir = golden_dir
        self.tally = tally

    def full_selection(self) -> bool:
        return self.tally.full_selection is True

    def __call__(self, *, everything: bool = False) -> list[Path]:
        if not self.golden_dir.is_dir():
            return []
        from ..store.golden import find_unused  # start-up: only a golden folder needs it

        if everything or self.full_selection():
            scopes = [self.golden_dir]
        else:
            scopes = [Path(p) for p in self.tally.scopes]
        owned = (Path(p) for p in self.tally.owned)
        return find_unused(self.golden_dir, owned, scopes)
