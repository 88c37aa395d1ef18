"""The HTML report of a test session (``--rollout-report``): every rollout test, and for each
one that left its golden, the two runs side by side.

The plugin hands over one :class:`ReportItem` per test that used the ``rollout`` fixture
(workers send theirs to the controller as JSON); :func:`render_session_report` turns them
into the viewer's page (:mod:`pytest_rollout.view.page`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .entries import diff_entry, run_entry
from .page import render_page

__all__ = ["ReportItem", "render_session_report"]

#: How a test's status sorts in the report: failures first.
_ORDER = {"failed": 0, "error": 1, "passed": 2, "recorded": 3, "skipped": 4}


@dataclass(frozen=True, slots=True)
class ReportItem:
    """One rollout test of the session: how it ended and where its runs are.

    ``lines`` is the failure report when the run left its golden (the text pytest showed);
    ``run_data`` is that run itself when it was saved nowhere (no cache, no capture
    directory), so that the report can still set it beside its golden.
    """

    test_id: str
    status: str
    golden: str | None = None
    run: str | None = None
    lines: tuple[str, ...] = ()
    run_data: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "test_id": self.test_id,
            "status": self.status,
            "golden": self.golden,
            "run": self.run,
            "lines": list(self.lines),
            "run_data": self.run_data,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReportItem:
        return cls(
            test_id=str(data["test_id"]),
            status=str(data["status"]),
            golden=data.get("golden"),
            run=data.get("run"),
            lines=tuple(str(line) for line in data.get("lines") or ()),
            run_data=data.get("run_data"),
        )


def _exists(path: str | None) -> bool:
    return path is not None and os.path.isfile(path)


def _entry(item: ReportItem) -> dict[str, Any]:
    if item.lines and item.golden is not None:
        if _exists(item.run):
            assert item.run is not None
            return diff_entry(
                item.golden,
                item.run,
                name=item.test_id,
                status=item.status,
                report_lines=item.lines,
            )
        if item.run_data is not None:
            return diff_entry(
                item.golden,
                "this run (not saved)",
                name=item.test_id,
                status=item.status,
                run=item.run_data.encode("utf-8"),
                report_lines=item.lines,
            )
    # Nothing to set side by side: show the run (or, when it was not saved, the golden).
    shown = item.run if _exists(item.run) else item.golden
    if shown is None:
        shown = item.run or ""
    return run_entry(shown, name=item.test_id, status=item.status)


def render_session_report(items: Sequence[ReportItem], title: str) -> str:
    """The self-contained HTML page of the session: failing tests first."""
    ordered = sorted(items, key=lambda i: (_ORDER.get(i.status, 5), i.test_id))
    return render_page(title, [_entry(item) for item in ordered])
