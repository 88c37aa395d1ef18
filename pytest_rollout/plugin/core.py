"""The rollout plugin object: the hooks every session runs (the mode in the report header,
which goldens the collected tests own, xdist merging, the terminal summary) and the hand-off
to :class:`~.runs.TestRuns` for each test that uses the ``rollout`` fixture.

Loading the plugin must stay cheap, since every pytest run pays for it: what only a rollout
test needs (the engine, the recorder, the report) is imported when such a test is collected
or run, never at start-up.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import pytest

from ..errors import RolloutError
from ..replay.mode import Mode
from .paths import display
from .settings import MarkerOptions, Settings
from .stash import CALL_REPORT_KEY, SESSION_KEY
from .summary import write_summary
from .tally import Tally, is_worker
from .unused import UnusedFinder

if TYPE_CHECKING:
    from ..session.outcome import TestOutcome
    from .ci import CiPlugin
    from .features import AuditPlugin, CapturePlugin, HtmlReportPlugin, PrunePlugin
    from .otel_trace import OtelPlugin
    from .runs import TestRuns

__all__ = ["PLUGIN_KEY", "RolloutPlugin"]

PLUGIN_KEY: Final[pytest.StashKey[RolloutPlugin]] = pytest.StashKey()
#: The key of a report's headline in the JSON an xdist worker sends.
HEADLINE: Final = "rollout_headline"


@dataclass(frozen=True, slots=True)
class Crash:
    """Where pytest's short test summary and the JUnit XML ``message`` read a failure's one
    line (``longrepr.reprcrash.message``)."""

    message: str


@dataclass(frozen=True, slots=True)
class RolloutRepr:
    """A report the plugin writes in place of a traceback: drawn whole, and summed up in one
    line by its headline (without it, the short test summary on CI repeats the report)."""

    text: str
    headline: str

    @property
    def reprcrash(self) -> Crash:
        return Crash(self.headline)

    def toterminal(self, tw: Any) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


class RolloutPlugin:
    """Per-session state and the hooks that need it."""

    name: Final = "rollout-plugin"

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.tally = Tally()
        self.deselected: list[pytest.Item] = []
        self.error_types = tuple(
            t
            for found in config.hook.pytest_rollout_error_types(config=config)
            for t in found or ()
        )
        self.collection_failed = False
        self.unused = UnusedFinder(settings.golden_dir, self.tally)
        self.capture: CapturePlugin | None = None
        self.audit: AuditPlugin | None = None
        self.html_report: HtmlReportPlugin | None = None
        self.ci: CiPlugin | None = None
        self.prune: PrunePlugin | None = None
        self.otel: OtelPlugin | None = None
        self._runs: TestRuns | None = None
        #: The report of the snapshot comparison the running test's ``assert`` failed on.
        self._snapshot_failure: list[str] | None = None
        if settings.redact_rules:  # a rule the redactor refuses stops the session now
            try:
                self.runs.redactor_for(settings.redaction)
            except RolloutError as exc:
                raise pytest.UsageError(str(exc)) from None

    def register_features(self) -> None:
        """Register one plugin object per feature that is turned on."""
        s, config = self.settings, self.config
        if s.otel_path is not None:
            from .otel_trace import OtelPlugin

            self.otel = OtelPlugin(config, s.otel_path, self.tally)
            config.pluginmanager.register(self.otel, OtelPlugin.name)
        if s.annotations or s.summary_path is not None or _markdown(s.report_path):
            from .ci import CiPlugin

            self.ci = CiPlugin(config, s, self.tally, self.unused)
            config.pluginmanager.register(self.ci, CiPlugin.name)
        if s.capture_root is None and s.report_path is None and s.mode is not Mode.RECORD:
            return
        from . import features  # only a session that turns a feature on pays for it

        manager = config.pluginmanager
        if s.capture_root is not None:
            self.capture = features.CapturePlugin(config, s, s.capture_root)
            manager.register(self.capture, features.CapturePlugin.name)
            if s.audit:
                self.audit = features.AuditPlugin(s, s.capture_root, self.tally)
                manager.register(self.audit, features.AuditPlugin.name)
        if s.report_path is not None and not _markdown(s.report_path):
            self.html_report = features.HtmlReportPlugin(config, s.report_path, self.tally)
            manager.register(self.html_report, features.HtmlReportPlugin.name)
        if s.mode is Mode.RECORD and not s.record_new:  # a partial record removes nothing
            self.prune = features.PrunePlugin(config, s.golden_dir, self.unused)
            manager.register(self.prune, features.PrunePlugin.name)

    @property
    def runs(self) -> TestRuns:
        """The per-test machinery, loaded on first use."""
        if self._runs is None:
            from .runs import TestRuns

            self._runs = TestRuns(self)
        return self._runs

    # -- reporting the mode ----------------------------------------------------------

    def pytest_report_header(self, config: pytest.Config) -> str:
        s = self.settings
        where = display(config, s.golden_dir) + os.sep
        if s.mode is Mode.RECORD and s.record_new:
            return (
                f"rollout: record new goldens to {where}, "
                f"replay the others ({s.replay_mode.value} replay)"
            )
        if s.mode is Mode.RECORD:
            return f"rollout: record goldens to {where}"
        return f"rollout: compare against {where} ({s.mode.value} replay)"

    # -- collection: which goldens are owned ------------------------------------------

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.extend(items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:  # before any deselection: a typo is an error wherever it is
            MarkerOptions.check_keywords(item)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        owners = [
            item
            for item in [*session.items, *self.deselected]
            if "rollout" in getattr(item, "fixturenames", ())
        ]
        if owners:
            self.runs.claim(owners)
        source = self.config.args_source
        default_args = source is pytest.Config.ArgsSource.TESTPATHS or (
            source is pytest.Config.ArgsSource.INVOCATION_DIR
            and self.config.invocation_params.dir == self.config.rootpath
        )
        # A file that failed to collect owns goldens nobody can see: never prune then.
        self.tally.full_selection = (
            default_args and not self.deselected and not self.collection_failed
        )

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_failed = True

    # -- reporting a test -------------------------------------------------------------

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self._snapshot_failure = None  # a snapshot report belongs to the test that made it

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        if call.when != "call":
            return (yield)
        session = item.stash.get(SESSION_KEY, None)
        excinfo = call.excinfo
        outcome = None
        if session is not None and not _skipped(excinfo):
            outcome = self.runs.outcome(item, session, None if excinfo is None else excinfo.value)
        where = None if excinfo is None else _line_in_test(item, excinfo)
        if excinfo is not None and _replaces(outcome, item):
            # The report stands in for the traceback: pytest need not read and draw the
            # source of every frame of the agent's SDK or framework (0.4-1.5 s a failure).
            excinfo.traceback = excinfo.traceback[-1:]
        report = yield
        item.stash[CALL_REPORT_KEY] = report
        snapshot, self._snapshot_failure = self._snapshot_failure, None
        failed_on_it = excinfo is not None and excinfo.errisinstance(AssertionError)
        if report.failed and snapshot is not None and excinfo is not None and failed_on_it:
            # A snapshot's report, uncut.
            _stand_in(report, RolloutRepr(self._whole(snapshot, excinfo), snapshot[0]))
            return report
        if outcome is not None and (report.passed or report.failed):
            self._apply(outcome, report, excinfo)
            if report.failed:
                self._found(item, outcome, where)
        if session is not None and report.failed:
            _defuse(report)
        return report

    def _apply(
        self,
        outcome: TestOutcome,
        report: pytest.TestReport,
        excinfo: pytest.ExceptionInfo[BaseException] | None,
    ) -> None:
        """Put the test's outcome in its report: in place of the traceback (failing a test
        that passed, for a run that left its golden), or beside it."""
        from ..session.outcome import How

        if outcome.how is How.BESIDE:
            report.sections.append(("rollout: this run left its golden", outcome.text))
            return
        report.outcome = "failed"
        text = outcome.text
        if outcome.asserted and excinfo is not None:
            text = self._whole(outcome.lines, excinfo)
        _stand_in(report, RolloutRepr(text, outcome.summary or outcome.lines[0]))

    def _found(self, item: pytest.Item, outcome: TestOutcome, line: int | None) -> None:
        """A failing rollout test's finding: in its JUnit properties (pytest's JUnit XML
        writes the item's, as its last report has them), and for the CI outputs."""
        from .ci import finding_for

        finding = finding_for(self.config, item, outcome, line)
        item.user_properties.extend(finding.properties())
        if self.ci is not None:
            self.ci.add(finding)

    def _whole(self, lines: Sequence[str], excinfo: pytest.ExceptionInfo[BaseException]) -> str:
        """A report in place of pytest's explanation, which pytest cuts to a few lines
        outside CI (the report is only useful whole), ending at the failing ``assert``."""
        entry = excinfo.traceback[-1]
        where = display(self.config, Path(entry.path))
        return "\n".join([*lines, "", f"{where}:{entry.lineno + 1}: AssertionError"])

    @pytest.hookimpl(tryfirst=True)  # ahead of syrupy's, for `rollout == snapshot(...)`
    def pytest_assertrepr_compare(
        self, config: pytest.Config, op: str, left: object, right: object
    ) -> list[str] | None:
        if op != "==":
            return None
        snapshot = sys.modules.get("pytest_rollout.plugin.snapshot")  # the extension in use
        if snapshot is not None:
            explained: list[str] | None = snapshot.explain_snapshot(config, left, right)
            if explained is not None:
                # The failing assert's whole report, which the test's report will show.
                self._snapshot_failure = explained
                return explained
        if self._runs is None:  # no rollout fixture was set up: no rollout to explain
            return None
        from .runs import explain

        return explain(left, right)

    # A report crosses from an xdist worker to the controller as JSON, where a
    # ``longrepr`` that is not pytest's own is sent as its text: the headline goes beside it.

    @pytest.hookimpl(wrapper=True)
    def pytest_report_to_serializable(
        self, config: pytest.Config, report: pytest.TestReport
    ) -> Generator[None, dict[str, Any] | None, dict[str, Any] | None]:
        data = yield
        longrepr: object = report.longrepr
        if data is not None and isinstance(longrepr, RolloutRepr):
            data[HEADLINE] = longrepr.headline
        return data

    @pytest.hookimpl(wrapper=True)
    def pytest_report_from_serializable(
        self, config: pytest.Config, data: dict[str, Any]
    ) -> Generator[None, Any, Any]:
        report = yield
        headline = data.get(HEADLINE)
        if isinstance(headline, str) and isinstance(getattr(report, "longrepr", None), str):
            _stand_in(report, RolloutRepr(report.longrepr, headline))
        return report

    # -- the end of the session -------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput["rollout"] = self.tally.to_json()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        data = getattr(node, "workeroutput", {}).get("rollout")
        if data is not None:
            self.tally.merge(data)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if is_worker(self.config):
            return
        pruned = [] if self.prune is None else self.prune.pruned
        write_summary(
            terminalreporter,
            self.tally,
            record=self.settings.mode is Mode.RECORD,
            unused=[] if pruned else self.unused(),
            pruned=pruned,
            page=None if self.html_report is None else self.html_report.written,
            show=lambda path: display(self.config, path),
        )


def _line_in_test(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> int | None:
    """The line (1-based) of the test's own code the error went through last: the failing
    ``assert``, or the call into the agent that raised."""
    for entry in reversed(excinfo.traceback):
        if Path(entry.path) == Path(item.path):
            return entry.lineno + 1
    return None


def _markdown(path: Path | None) -> bool:
    """Whether ``--rollout-report`` asks for the Markdown report rather than the page."""
    return path is not None and path.suffix == ".md"


def _stand_in(report: pytest.TestReport, longrepr: RolloutRepr) -> None:
    """Put ``longrepr`` in the report in place of its traceback (pytest draws anything with
    ``toterminal``, as it does its own representations)."""
    report.longrepr = cast(Any, longrepr)


def _defuse(report: pytest.TestReport) -> None:
    """A native traceback that quotes recorded text (a replayed error's message, a tool's
    class name) holding an escape sequence, a bidi control or a CI workflow command, drawn
    sanitized line by line, its short summary line too: pytest would print them raw."""
    from ..safety.sanitize import sanitize

    longrepr = report.longrepr
    if longrepr is None or isinstance(longrepr, RolloutRepr):
        return
    lines = str(longrepr).splitlines()
    safe = [sanitize(line) for line in lines]
    if safe == lines:
        return
    crash = getattr(longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    headline = sanitize(message) if isinstance(message, str) else safe[-1] if safe else ""
    _stand_in(report, RolloutRepr("\n".join(safe), headline))


def _skipped(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    """Whether the test skipped itself (``pytest.skip``): its run is not reported on."""
    return excinfo is not None and excinfo.errisinstance(pytest.skip.Exception)


def _replaces(outcome: TestOutcome | None, item: pytest.Item) -> bool:
    """Whether the outcome's text will stand in for the test's traceback. An expected
    failure keeps its traceback, for the reporters that show it."""
    if outcome is None or outcome.how == "beside":
        return False
    xfail = item.get_closest_marker("xfail") is not None
    return not xfail or bool(getattr(item.config.option, "runxfail", False))
