"""Where CI users read besides the log (docs/ci.md): GitHub Actions annotations at each
diverged test's ``assert``, a Markdown summary appended to the job summary (or any file),
and a Markdown report (``--rollout-report=report.md``).

Each failing rollout test leaves a :class:`~pytest_rollout.diff.finding.Finding`, made
where the test's report is (in the worker, under pytest-xdist) and carried to the
controller in the tally; the controller writes everything once, at the end of the session.
None of it changes the exit status, and a file that cannot be written is a line in the
summary.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import pytest

from ..diff.annotations import annotation_lines
from ..diff.finding import Finding, finding_of
from ..diff.markdown import MAX_MARKDOWN_BYTES, markdown_report
from ..errors import RolloutWarning
from ..format.files import atomic_write
from ..replay.mode import Mode
from ..session.outcome import TestOutcome
from .settings import Settings
from .summary import compare_lines, record_line
from .tally import Tally, is_worker
from .unused import UnusedFinder

__all__ = ["CiPlugin", "finding_for"]

#: The most warnings the summary and the annotations list.
_WARNINGS: Final = 50
#: What GitHub accepts in one step's job summary file.
_STEP_SUMMARY_BYTES: Final = 1024 * 1024
_Findings = Sequence[Finding]
_Lines = Sequence[str]


def finding_for(
    config: pytest.Config, item: pytest.Item, outcome: TestOutcome, line: int | None
) -> Finding:
    """The finding of a failing rollout test, at ``line`` of its file (the failing
    ``assert``, or the call that raised; ``None``: the test's own first line)."""
    if line is None:
        line = (item.location[1] or 0) + 1
    shown = _relative(Path(item.path), config.rootpath)
    if outcome.verdict is not None:
        return finding_of(outcome.verdict, item.nodeid, shown, line)
    headline = outcome.summary or outcome.lines[0]
    return Finding(item.nodeid, shown, line, headline, golden="", detail=outcome.lines[0])


def _relative(path: Path, rootpath: Path) -> str:
    """``path`` as a pull request's diff names it: from the checkout's root on GitHub
    Actions (``GITHUB_WORKSPACE``), else from pytest's rootdir."""
    for base in (os.environ.get("GITHUB_WORKSPACE"), rootpath):
        if base:
            try:
                return path.resolve().relative_to(Path(base).resolve()).as_posix()
            except ValueError:
                continue
    return path.as_posix()


class CiPlugin:
    """Collects the session's findings and writes them where CI users read."""

    name: Final = "rollout-ci"

    def __init__(
        self, config: pytest.Config, settings: Settings, tally: Tally, unused: UnusedFinder
    ) -> None:
        self.config = config
        self.settings = settings
        self.tally = tally
        self.unused = unused
        report = settings.report_path
        self.markdown = report if report is not None and report.suffix == ".md" else None
        self.warnings: list[str] = []
        self.written: list[Path] = []

    def add(self, finding: Finding) -> None:
        self.tally.findings.append(finding.to_json())

    def pytest_warning_recorded(self, warning_message: Any, nodeid: str, **_: Any) -> None:
        """The plugin's warnings (an unrecorded tool, a typed result given back as JSON),
        as pytest-xdist hands the controller its workers' too."""
        category = getattr(warning_message, "category", None)
        ours = isinstance(category, type) and issubclass(category, RolloutWarning)
        if ours and not is_worker(self.config):
            where = f"{nodeid}: " if nodeid else ""
            self.warnings.append(f"{where}{warning_message.message}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The files, written once by the controller (every worker's findings are in)."""
        if is_worker(self.config):
            return
        # What both files say, made once (the unused goldens are found by a folder walk).
        findings, warnings, counts = self._findings(), self._warnings(), self._counts()
        summary = self.settings.summary_path
        if summary is not None:
            self._append(summary, findings, warnings, counts)
        if self.markdown is not None:
            self._write(self.markdown, findings, warnings, counts)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if is_worker(self.config):
            return
        if self.settings.annotations:
            for line in annotation_lines(self._findings(), self._warnings()):
                terminalreporter.write_line(line)
        for path in self.written:
            terminalreporter.write_line(f"rollout Markdown report: {path}")

    def _findings(self) -> list[Finding]:
        found = (Finding.from_json(data) for data in self.tally.findings)
        return sorted(found, key=lambda f: (f.path, f.line, f.test_id))

    def _warnings(self) -> list[str]:
        warnings = [*self.tally.ci_warnings, *self.warnings, *self.tally.problems]
        if len(warnings) > _WARNINGS:
            warnings = [*warnings[:_WARNINGS], f"... and {len(warnings) - _WARNINGS} more"]
        return warnings

    def _counts(self) -> list[str]:
        """What happened to goldens, as the terminal summary says it."""
        counts = [record_line(self.tally)] if self.tally.kept or self.tally.not_recorded else []
        counts += compare_lines(self.tally)
        if self.settings.mode is not Mode.RECORD and (stale := len(self.unused())):
            counts.append(f"{stale} unused golden(s): no collected test owns them")
        return counts

    def _markdown(self, findings: _Findings, warnings: _Lines, counts: _Lines, limit: int) -> str:
        page = self.settings.report_path
        shown = None if page is None or page == self.markdown else str(page)
        return markdown_report(counts, findings, warnings, page=shown, limit=limit)

    def _append(self, path: Path, findings: _Findings, warnings: _Lines, counts: _Lines) -> None:
        """Add the summary to the job summary file (other steps' text stays), within the
        room the file has left."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            used = path.stat().st_size if path.exists() else 0
            room = min(MAX_MARKDOWN_BYTES, _STEP_SUMMARY_BYTES - used)
            if room < 4096:
                self.tally.problems.append(
                    f"the rollout job summary was not written: {path} is full"
                )
                return
            with path.open("a", encoding="utf-8") as summary:
                summary.write(self._markdown(findings, warnings, counts, room))
        except OSError as exc:
            self.tally.problems.append(f"the rollout job summary was not written: {exc}")

    def _write(self, path: Path, findings: _Findings, warnings: _Lines, counts: _Lines) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            text = self._markdown(findings, warnings, counts, MAX_MARKDOWN_BYTES)
            atomic_write(path, text.encode("utf-8"))
        except OSError as exc:
            self.tally.problems.append(f"the rollout Markdown report was not written: {exc}")
        else:
            self.written.append(path)
