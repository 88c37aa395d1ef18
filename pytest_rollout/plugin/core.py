"""The rollout plugin object: which golden, mode and options each test gets, what becomes
of its run, and how a divergence reaches the user through pytest's report."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any, Final

import pytest

from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions
from ..diff.divergence import caused_by_divergence
from ..diff.failure import render_headline, render_verdict
from ..errors import RolloutError
from ..format.loader import Rollout, loads, read_rollout_bytes
from ..format.recorder import Recorder
from ..safety.capture import new_run_id
from ..safety.receipt import ReceiptStatus, make_receipt, verify, write_receipt
from ..safety.redact import RedactionMode, Redactor
from ..session import Engine, GoldenEditedError, GoldenMissingError, Mode, RolloutSession
from ..session.golden import GoldenRef, WriteResult, golden_path, module_dir, write_golden
from ..view.report import ReportItem
from .features import (
    REPORT_RUN_BYTES,
    AuditPlugin,
    CapturePlugin,
    HtmlReportPlugin,
    PrunePlugin,
    UnusedFinder,
    display,
    is_worker,
)
from .settings import HookSettings, MarkerOptions, Settings
from .summary import write_summary
from .tally import Tally

__all__ = ["ENGINE_KEY", "PLUGIN_KEY", "RolloutPlugin"]

PLUGIN_KEY: Final = pytest.StashKey["RolloutPlugin"]()
ENGINE_KEY: Final = pytest.StashKey[Engine]()
MARKER_KEY: Final = pytest.StashKey[MarkerOptions]()
CALL_REPORT_KEY: Final = pytest.StashKey[pytest.TestReport]()
#: The failure report of a test, rendered once: the report, the HTML page and the CI log
#: all show these lines.
FAILURE_KEY: Final = pytest.StashKey[list[str]]()
_NO_HOOKS: Final = HookSettings()


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
        self._redactors: dict[tuple[RedactionMode, HookSettings], Redactor] = {}
        try:
            self.redactor_for(settings.redaction)  # a bad user rule stops the session now
        except RolloutError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.unused = UnusedFinder(settings.golden_dir, self.tally)
        self.capture: CapturePlugin | None = None
        self.audit: AuditPlugin | None = None
        self.html_report: HtmlReportPlugin | None = None
        self.prune: PrunePlugin | None = None

    def register_features(self) -> None:
        """Register one plugin object per feature that is turned on."""
        s, config = self.settings, self.config
        manager = config.pluginmanager
        if s.capture_root is not None:
            self.capture = CapturePlugin(config, s, s.capture_root)
            manager.register(self.capture, CapturePlugin.name)
            if s.audit:
                self.audit = AuditPlugin(s, s.capture_root, self.tally)
                manager.register(self.audit, AuditPlugin.name)
        if s.report_path is not None:
            self.html_report = HtmlReportPlugin(config, s.report_path, self.tally)
            manager.register(self.html_report, HtmlReportPlugin.name)
        if s.mode is Mode.RECORD:
            self.prune = PrunePlugin(config, s.golden_dir, self.unused)
            manager.register(self.prune, PrunePlugin.name)

    def redactor_for(self, mode: RedactionMode, hooks: HookSettings = _NO_HOOKS) -> Redactor:
        """The redactor of ``mode`` with the ini key's rules and what the test's hooks add
        (built once for each combination: compiling the rules is not free)."""
        key = (mode, dataclasses.replace(hooks, ignore=()))
        found = self._redactors.get(key)
        if found is None:
            s = self.settings
            found = self._redactors[key] = Redactor(
                mode,
                extra_rules=(*s.redact_rules, *hooks.redact_rules),
                extra_keys=(*s.redact_keys, *hooks.redact_keys),
            )
        return found

    def _display(self, path: Path) -> str:
        return display(self.config, path)

    # -- reporting the mode ----------------------------------------------------------

    def pytest_report_header(self, config: pytest.Config) -> str:
        s = self.settings
        where = self._display(s.golden_dir) + os.sep
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
        for item in [*session.items, *self.deselected]:
            if "rollout" not in getattr(item, "fixturenames", ()):
                continue
            self.tally.owned.add(str(self.golden_for(item)))
            self.tally.scopes.add(str(module_dir(self.settings.golden_dir, item.nodeid)))
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

    # -- one test ---------------------------------------------------------------------

    def marker_for(self, item: pytest.Item) -> MarkerOptions:
        """The test's marker settings, parsed once."""
        found = item.stash.get(MARKER_KEY, None)
        if found is None:
            found = item.stash[MARKER_KEY] = MarkerOptions.from_item(item)
        return found

    def golden_for(self, item: pytest.Item) -> Path:
        marker = item.get_closest_marker("rollout")
        name = marker.kwargs.get("golden") if marker else None
        return golden_path(self.settings.golden_dir, item.nodeid, name)

    def _mode_for(self, marker: MarkerOptions) -> Mode:
        if not marker.replay:
            # Deterministic fakes: run live in every mode, and never read or write a golden.
            return Mode.LIVE
        if self.settings.mode is not Mode.RECORD and marker.mode is not None:
            return marker.mode
        return self.settings.mode

    def _options_for(self, marker: MarkerOptions, hooks: HookSettings) -> CanonicalOptions:
        extra = [*self.settings.ignore, *marker.ignore, *hooks.ignore]
        return DEFAULT_OPTIONS.extended(ignore_paths=extra, drop_keys=marker.drop_keys)

    def _run_path(self, path: Path, run_id: str) -> tuple[Path | None, int | None]:
        """Where this test's run is saved, and its size cap."""
        s = self.settings
        if self.capture is not None:
            return self.capture.new_run(run_id)
        if s.run_dir is not None:
            return s.run_dir / path.relative_to(s.golden_dir), None
        return None, None

    def session_for(self, item: pytest.Item) -> RolloutSession:
        s = self.settings
        marker = self.marker_for(item)
        hooks = HookSettings.from_item(item)
        mode = self._mode_for(marker)
        path = self.golden_for(item)
        redactor = self.redactor_for(marker.redact or s.redaction, hooks)
        analyzers = s.analyzers
        if marker.analyzers:
            enabled = analyzers.enabled | marker.analyzers
            analyzers = dataclasses.replace(analyzers, enabled=enabled)
        golden, golden_error = None, None
        if mode.replays_tools and path.exists():
            try:
                golden = self._verified_golden(item, path, redactor)
            except RolloutError as exc:
                golden_error = exc
        run_id = new_run_id()
        run_path, budget = self._run_path(path, run_id)
        allow = marker.allow_unconsumed
        session = RolloutSession(
            test_id=item.nodeid,
            mode=mode,
            recorder=Recorder(run_path, redactor=redactor, max_file_bytes=budget),
            golden_path=self._display(path),
            run_display=None if run_path is None else self._display(run_path),
            golden=golden,
            golden_error=golden_error,
            options=self._options_for(marker, hooks),
            allow_unconsumed=s.allow_unconsumed if allow is None else allow,
            error_types=self.error_types,
            missing_hint=(f"Record it with: pytest --rollout-record {shlex.quote(item.nodeid)}"),
            run_id=run_id,
            prices=s.prices,
            analyzers=analyzers,
            audit=None if self.audit is None else self.audit.sink,
        )
        item.stash[ENGINE_KEY] = session.engine
        return session

    def _verified_golden(self, item: pytest.Item, path: Path, redactor: Redactor) -> Rollout:
        """The golden at ``path``, once its receipt vouches for its bytes (docs/secrets.md)."""
        data = read_rollout_bytes(path)
        check = verify(path, data)
        if check.status is not ReceiptStatus.OK and not self.settings.accept_edits:
            shown = dataclasses.replace(check, golden=self._display(path))
            raise GoldenEditedError(shown.message(item.nodeid))
        rollout = loads(data, path=str(path))  # a golden the loader refuses is never sealed
        if check.status is not ReceiptStatus.OK:
            self._seal(path, data, redactor)
            self.tally.counts["resealed"] += 1
        return rollout

    def _seal(self, path: Path, data: bytes, redactor: Redactor) -> None:
        receipt = make_receipt(
            data, redaction_mode=redactor.mode.value, rules_sha256=redactor.rules_digest
        )
        write_receipt(path, receipt)

    def finish(self, item: pytest.Item, engine: Engine) -> None:
        """The test is over: close its run, then keep, compare or seal what it recorded."""
        engine.close()
        recorder = engine.recorder
        if self.capture is not None and recorder.path is not None:
            self.capture.charge(recorder.written)
        if recorder.stats.leaked is not None:
            self.tally.problems.append(
                f"{item.nodeid}: its run was not saved: the file held a secret "
                f"({recorder.stats.leaked})"
            )
        if not engine.used:
            return
        if self.html_report is not None:
            self.html_report.add(self._report_item(item, engine))
        if engine.mode is Mode.RECORD:
            self._record_golden(item, engine)
        elif engine.mode is not Mode.LIVE:
            self.tally.counts["compared"] += 1

    def _record_golden(self, item: pytest.Item, engine: Engine) -> None:
        report = item.stash.get(CALL_REPORT_KEY, None)
        if report is None or not report.passed:
            self.tally.counts["not recorded (test failed)"] += 1
            return
        path = self.golden_for(item)
        recorder = engine.recorder
        redactor = recorder.redactor
        assert redactor is not None
        data = recorder.getvalue()
        sealed = path.exists() and verify(path).status is ReceiptStatus.OK
        result = write_golden(
            self.settings.golden_dir,
            path,
            data,
            engine.options,
            scan=None if redactor.mode is RedactionMode.FULL else redactor.scan,
            keep_unchanged=sealed,
        )
        if result is not WriteResult.UNCHANGED:
            self._seal(path, data, redactor)
        self.tally.counts[result.value] += 1

    def _report_item(self, item: pytest.Item, engine: Engine) -> ReportItem:
        """What --rollout-report shows of this test."""
        call = item.stash.get(CALL_REPORT_KEY, None)
        status: str = "error" if call is None else call.outcome
        if engine.mode is Mode.RECORD and status == "passed":
            status = "recorded"
        golden = self.golden_for(item)
        lines: tuple[str, ...] = ()
        if engine.mode.replays_tools and golden.exists():
            with contextlib.suppress(RolloutError):
                lines = tuple(self.failure_lines(item, engine) or ())
        run = engine.recorder.path
        run_data = None
        if lines and run is None:  # saved nowhere: the report carries it (bounded)
            data = engine.recorder.getvalue()
            if len(data) <= REPORT_RUN_BYTES:
                run_data = data.decode("utf-8", errors="replace")
        return ReportItem(
            test_id=item.nodeid,
            status=status,
            golden=str(golden),
            run=None if run is None else os.path.abspath(run),
            lines=lines,
            run_data=run_data,
        )

    # -- reporting failures -----------------------------------------------------------

    def failure_lines(self, item: pytest.Item, engine: Engine) -> list[str] | None:
        """The failure report of a run that left its golden (``None`` when it did not),
        rendered once and kept in the item's stash."""
        found = item.stash.get(FAILURE_KEY, None)
        if found is not None:
            return found
        verdict = engine.verdict()
        if verdict.matched:
            return None
        lines = render_verdict(verdict, verbose=self.config.get_verbosity())
        item.stash[FAILURE_KEY] = lines
        return lines

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.when != "call":
            return report
        item.stash[CALL_REPORT_KEY] = report
        excinfo = call.excinfo
        explained = self._snapshot_report(item, excinfo) if report.failed else None
        if explained is not None:
            assert excinfo is not None
            report.longrepr = self._whole(explained, excinfo)  # a snapshot's report, uncut
            return report
        engine = item.stash.get(ENGINE_KEY, None)
        if engine is None:
            return report
        if excinfo is not None and isinstance(
            excinfo.value, GoldenMissingError | GoldenEditedError
        ):
            report.longrepr = str(excinfo.value)
        elif report.failed and self._failed_on_golden(engine, excinfo):
            # pytest cuts assertion explanations to a few lines outside CI; the report is
            # only useful whole, so it stands in for the explanation here.
            assert excinfo is not None
            lines = self.failure_lines(item, engine)
            assert lines is not None
            report.longrepr = self._whole(lines, excinfo)
        elif engine.replay_started and (report.passed or report.failed):
            self._report_divergence(item, engine, report, excinfo)
        return report

    def _snapshot_report(
        self, item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException] | None
    ) -> list[str] | None:
        """The whole report of a failed ``x == snapshot`` with the rollout extension, when
        that is what the test failed on (syrupy keeps the failed execution on the test's
        snapshot fixture, whatever its name)."""
        snapshot = sys.modules.get("pytest_rollout.plugin.snapshot")  # the extension in use
        if snapshot is None or excinfo is None:
            return None
        funcargs: dict[str, Any] = getattr(item, "funcargs", {})
        for value in funcargs.values():
            lines = snapshot.explain_snapshot(self.config, value, funcargs.get("rollout"))
            if lines and _asserted(excinfo, lines[0]):
                return list(lines)
        return None

    def _failed_on_golden(
        self, engine: Engine, excinfo: pytest.ExceptionInfo[BaseException] | None
    ) -> bool:
        """Whether the test failed on ``assert rollout == golden`` (its explanation, the
        report's headline, is in the assertion's message)."""
        verdict = engine.compared
        if verdict is None or verdict.matched:
            return False
        return _asserted(excinfo, render_headline(verdict))

    def _whole(self, lines: list[str], excinfo: pytest.ExceptionInfo[BaseException]) -> str:
        entry = excinfo.traceback[-1]
        where = self._display(Path(entry.path))
        return "\n".join([*lines, "", f"{where}:{entry.lineno + 1}: AssertionError"])

    def _report_divergence(
        self,
        item: pytest.Item,
        engine: Engine,
        report: pytest.TestReport,
        excinfo: pytest.ExceptionInfo[BaseException] | None,
    ) -> None:
        if report.passed and not engine.divergences():
            return
        try:
            lines = self.failure_lines(item, engine)
        except RolloutError:
            return
        if lines is None:
            return
        text = "\n".join(lines)
        if report.passed or (excinfo is not None and caused_by_divergence(excinfo.value)):
            report.outcome = "failed"
            report.longrepr = text
        else:
            report.sections.append(("rollout: this run left its golden", text))

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
                return explained
        session, golden = (left, right) if isinstance(left, RolloutSession) else (right, left)
        if not isinstance(session, RolloutSession) or not isinstance(golden, GoldenRef):
            return None
        verdict = session.engine.compared
        if verdict is None or verdict.matched:
            return None
        # The headline only: the whole report replaces pytest's explanation in the test's
        # report (see pytest_runtest_makereport), rendered once.
        return [render_headline(verdict)]

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
            show=self._display,
        )


def _asserted(excinfo: pytest.ExceptionInfo[BaseException] | None, headline: str) -> bool:
    """Whether ``excinfo`` is an ``AssertionError`` explained by a report with ``headline``."""
    return (
        excinfo is not None
        and excinfo.errisinstance(AssertionError)
        and headline in str(excinfo.value)
    )
