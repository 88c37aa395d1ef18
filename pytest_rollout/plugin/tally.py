"""What a process did with goldens, merged across pytest-xdist workers."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

import pytest

__all__ = ["Tally", "is_worker"]


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is a pytest-xdist worker (the controller writes shared files)."""
    return getattr(config, "workerinput", None) is not None


@dataclass(slots=True)
class Tally:
    """What this process (or, merged, the whole session) did with goldens. Every count is
    told in the terminal summary when it is not zero."""

    #: Goldens read and compared with their test's run (a verdict was made).
    compared: int = 0
    #: Goldens replayed whose run was never compared (no ``assert rollout == golden``, and
    #: nothing diverged).
    not_compared: int = 0
    #: Replaying tests that had no golden (each failed, naming the command that records it).
    missing: int = 0
    #: Tests that forked their golden (``rollout.fork(step, override=...)``): not compared.
    forked: int = 0
    #: Goldens edited since they were recorded, accepted and sealed anew.
    resealed: int = 0
    #: Goldens replayed though no receipt vouched for them (``--rollout-unverified``).
    unverified: int = 0
    #: Over every replay: the golden's model turns served of those recorded, its tool
    #: calls matched of those recorded, and the replays that diverged.
    turns_served: int = 0
    turns_recorded: int = 0
    calls_matched: int = 0
    calls_recorded: int = 0
    diverged: int = 0
    #: What recording did with each passing test's run, by :class:`~pytest_rollout.store.
    #: golden_store.Kept` value.
    kept: Counter[str] = field(default_factory=Counter)
    #: Recorded tests that failed: their run did not become a golden.
    not_recorded: int = 0
    owned: set[str] = field(default_factory=set)
    scopes: set[str] = field(default_factory=set)
    full_selection: bool | None = None  # unknown until collection (or every worker) says
    problems: list[str] = field(default_factory=list)  # runs that could not be saved
    #: For --rollout-report: each test's report item, in its JSON form (it crosses
    #: processes under xdist).
    report: list[dict[str, Any]] = field(default_factory=list)
    #: For the annotations and the job summary: each failing rollout test's finding (as
    #: JSON), and what else they warn of (a golden accepted after an edit).
    findings: list[dict[str, Any]] = field(default_factory=list)
    ci_warnings: list[str] = field(default_factory=list)
    #: Under ``-v``: each replayed test's account of its replay (``test``, ``lines``).
    replays: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """What a worker hands the controller at the end of its session."""
        data = {name: getattr(self, name) for name in _COUNTS}
        return {
            **data,
            "kept": dict(self.kept),
            "owned": sorted(self.owned),
            "scopes": sorted(self.scopes),
            "full_selection": self.full_selection,
            "problems": self.problems,
            "report": self.report,
            "findings": self.findings,
            "ci_warnings": self.ci_warnings,
            "replays": self.replays,
        }

    def merge(self, data: dict[str, Any]) -> None:
        """Add a worker's tally to this one."""
        for name in _COUNTS:
            setattr(self, name, getattr(self, name) + int(data.get(name, 0)))
        self.kept.update(data.get("kept", {}))
        self.problems.extend(data.get("problems", ()))
        self.report.extend(data.get("report", ()))
        self.findings.extend(data.get("findings", ()))
        self.ci_warnings.extend(data.get("ci_warnings", ()))
        self.replays.extend(data.get("replays", ()))
        self.owned.update(data.get("owned", ()))
        self.scopes.update(data.get("scopes", ()))
        theirs = bool(data.get("full_selection"))
        self.full_selection = (
            theirs if self.full_selection is None else (self.full_selection and theirs)
        )

    @property
    def anything(self) -> bool:
        """Whether there is anything to tell."""
        return any(getattr(self, name) for name in _COUNTS) or bool(self.kept or self.problems)


#: The plain counts, by name.
_COUNTS: Final = tuple(f.name for f in dataclasses.fields(Tally) if f.type == "int")
