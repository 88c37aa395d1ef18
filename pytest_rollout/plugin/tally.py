"""What a process did with goldens, merged across pytest-xdist workers."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

__all__ = ["Tally", "is_worker"]


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is a pytest-xdist worker (the controller writes shared files)."""
    return getattr(config, "workerinput", None) is not None


@dataclass(slots=True)
class Tally:
    """What this process (or, merged, the whole session) did with goldens."""

    counts: Counter[str] = field(default_factory=Counter)
    owned: set[str] = field(default_factory=set)
    scopes: set[str] = field(default_factory=set)
    full_selection: bool | None = None  # unknown until collection (or every worker) says
    problems: list[str] = field(default_factory=list)  # runs that could not be saved
    #: For --rollout-report: each test's report item, in its JSON form (it crosses
    #: processes under xdist).
    report: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """What a worker hands the controller at the end of its session."""
        return {
            "counts": dict(self.counts),
            "owned": sorted(self.owned),
            "scopes": sorted(self.scopes),
            "full_selection": self.full_selection,
            "problems": self.problems,
            "report": self.report,
        }

    def merge(self, data: dict[str, Any]) -> None:
        """Add a worker's tally to this one."""
        self.counts.update(data.get("counts", {}))
        self.problems.extend(data.get("problems", ()))
        self.report.extend(data.get("report", ()))
        self.owned.update(data.get("owned", ()))
        self.scopes.update(data.get("scopes", ()))
        theirs = bool(data.get("full_selection"))
        self.full_selection = (
            theirs if self.full_selection is None else (self.full_selection and theirs)
        )
