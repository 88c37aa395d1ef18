"""The optional features, each a plugin object registered only when it is turned on:
the capture directory, the audit trail, the HTML report and the pruning of unused goldens.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import pytest

from ..format.files import atomic_write
from ..store.audit import AuditTrailSink
from ..store.capture import Budget, capture_path, enforce_retention, unredacted_note, usage
from ..store.golden import prune_empty_dirs
from ..store.receipt import receipt_path
from ..view.session_report import ReportItem, render_session_report
from .settings import Settings
from .tally import Tally, is_worker
from .unused import UnusedFinder

__all__ = ["AuditPlugin", "CapturePlugin", "HtmlReportPlugin", "PrunePlugin"]


class CapturePlugin:
    """Every run kept as ``ROOT/YYYY-MM-DD/RUN_ID.jsonl``, within the size and age caps."""

    name: Final = "rollout-capture"

    def __init__(self, config: pytest.Config, settings: Settings, root: Path) -> None:
        self.config = config
        self.root = root
        self.limits = settings.capture_limits
        self.redaction = settings.redaction_name
        self.budget: Budget | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not is_worker(self.config):  # once, in the main process
            note = unredacted_note(self.root, self.redaction)  # before any run makes it
            if note is not None:
                sys.stderr.write(f"{note}\n")
            enforce_retention(self.root, self.limits, datetime.now(UTC).date())
        self.budget = Budget(self.root, self.limits, usage(self.root))

    def new_run(self, run_id: str) -> tuple[Path, int | None]:
        """Where a new run is captured, and the bytes it may take (``None``: no cap)."""
        budget = None if self.budget is None else self.budget.for_new_run()
        return capture_path(self.root, run_id, datetime.now(UTC)), budget

    def charge(self, written: int) -> None:
        if self.budget is not None:
            self.budget.charge(written)


class AuditPlugin:
    """The day's hash-chained audit trail in the capture directory."""

    name: Final = "rollout-audit"

    def __init__(self, settings: Settings, root: Path, tally: Tally) -> None:
        self.sink = AuditTrailSink(
            root,
            tools=settings.audit_tools,
            keywords=settings.audit_keywords,
            on_error=tally.problems.append,
        )


class HtmlReportPlugin:
    """``--rollout-report``: one self-contained page of the session's rollout tests."""

    name: Final = "rollout-html-report"

    def __init__(self, config: pytest.Config, path: Path, tally: Tally) -> None:
        self.config = config
        self.path = path
        self.tally = tally
        self.written: Path | None = None

    def add(self, item: ReportItem) -> None:
        self.tally.report.append(item.to_json())

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if is_worker(self.config):
            return
        title = f"pytest-rollout report: {self.config.rootpath.name}"
        items = [ReportItem.from_json(data) for data in self.tally.report]
        page = render_session_report(items, title)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, page.encode("utf-8"))
        except OSError as exc:
            self.tally.problems.append(f"the rollout report was not written: {exc}")
        else:
            self.written = self.path


class PrunePlugin:
    """A record run over the whole suite removes the goldens no collected test owns."""

    name: Final = "rollout-prune"

    def __init__(self, config: pytest.Config, golden_dir: Path, unused: UnusedFinder) -> None:
        self.config = config
        self.golden_dir = golden_dir
        self.unused = unused
        self.pruned: list[Path] = []

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if is_worker(self.config):
            return
        if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return
        if not self.unused.full_selection():
            return
        for path in self.unused(everything=True):
            path.unlink(missing_ok=True)
            receipt_path(path).unlink(missing_ok=True)
            self.pruned.append(path)
            prune_empty_dirs(path.parent, self.golden_dir)
