"""Each test that uses the ``rollout`` fixture, mapped onto the library: which golden, mode,
options and redactor it gets, its session (with the golden the store opened), what becomes
of its run, and its report.

Imported when the first test asks for the ``rollout`` fixture (or a collected test uses it):
a session without rollout tests never loads the engine, the recorder or the report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

import pytest

from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions
from ..diff.volatile import BUILTIN, Volatile
from ..errors import RolloutError, RolloutWarning
from ..format.files import UnsafePathError, WriteRoot
from ..format.recorder import Recorder
from ..replay.mode import Mode
from ..safety.redact import RedactionMode, Redactor
from ..session.outcome import TestOutcome, outcome_of
from ..session.rollout import RolloutSession
from ..session.setup import RunSetup
from ..store.capture import capture_root, new_run_id
from ..store.golden import SUFFIX, GoldenMissingError, GoldenRef, golden_path, module_dir
from ..store.golden_store import GoldenStore, LoadedGolden
from ..view.session_report import ReportItem
from .paths import display, named_golden
from .settings import HookSettings, MarkerOptions, Settings
from .stash import CALL_REPORT_KEY, HOOKS_KEY, MARKER_KEY, OUTCOME_KEY, SESSION_KEY

if TYPE_CHECKING:
    from ..store.replay_receipt import ReplayRecord
    from .features import AuditPlugin, CapturePlugin, HtmlReportPlugin
    from .otel_trace import OtelPlugin
    from .tally import Tally


class PluginState(Protocol):
    """What the per-test machinery reads of the session's plugin object."""

    config: pytest.Config
    settings: Settings
    tally: Tally
    error_types: tuple[str, ...]
    capture: CapturePlugin | None
    audit: AuditPlugin | None
    html_report: HtmlReportPlugin | None
    otel: OtelPlugin | None


__all__ = ["TestRuns", "explain"]

_NO_HOOKS: Final = HookSettings()
#: The largest run the HTML report carries itself when it was not saved to a file.
REPORT_RUN_BYTES: Final = 8 * 1024 * 1024


class TestRuns:
    """What the plugin does for each test that uses the ``rollout`` fixture."""

    __test__ = False  # not a test class, whatever its name

    def __init__(self, plugin: PluginState) -> None:
        self.plugin = plugin
        self.config = plugin.config
        self.settings: Settings = plugin.settings
        self.tally = plugin.tally
        self.store = GoldenStore(
            self.settings.golden_dir,
            accept_edits=self.settings.accept_edits,
            unverified=self.settings.unverified,
            fail_unrecorded=self.settings.fail_unrecorded,
            show=self._display,
        )
        self._redactors: dict[tuple[RedactionMode, HookSettings], Redactor] = {}

    def claim(self, items: list[pytest.Item]) -> None:
        """Count the goldens of ``items`` as owned (the rest of the folder is unused)."""
        golden_dir = self.settings.golden_dir
        for item in items:
            try:
                path = self.golden_for(item)
            except RolloutError:
                continue  # a bad golden= path: the test itself reports it
            scope = module_dir(golden_dir, item.nodeid, redact_name=self._redact_name(item))
            self.tally.owned.add(str(path))
            self.tally.scopes.add(str(scope))

    def _display(self, path: Path) -> str:
        return display(self.config, path)

    # -- what each test gets ---------------------------------------------------------

    def redactor_for(self, mode: RedactionMode, hooks: HookSettings = _NO_HOOKS) -> Redactor:
        """The redactor of ``mode`` with the ini key's rules and what the test's hooks add
        (built once for each combination: compiling the rules is not free)."""
        key = (mode, dataclasses.replace(hooks, ignore=(), volatile=(), rebuild=None))
        found = self._redactors.get(key)
        if found is None:
            s = self.settings
            found = self._redactors[key] = Redactor(
                mode,
                extra_rules=(*s.redact_rules, *hooks.redact_rules),
                extra_keys=(*s.redact_keys, *hooks.redact_keys),
            )
        return found

    def hooks_for(self, item: pytest.Item) -> HookSettings:
        """What the test's path-scoped hooks add, asked once per test."""
        found = item.stash.get(HOOKS_KEY, None)
        if found is None:
            found = item.stash[HOOKS_KEY] = HookSettings.from_item(item)
        return found

    def _redact_name(self, item: pytest.Item) -> Callable[[str], str]:
        """How a secret in the test's id is hidden in its golden's name: by the rules that
        hide it in the test's content (in every mode, so the name never depends on it)."""
        return self.redactor_for(self.settings.redaction, self.hooks_for(item)).redact_name

    def _redactor(self, item: pytest.Item) -> Redactor:
        """The redactor of the test's run (its marker's mode, else the session's)."""
        mode = self.marker_for(item).redact or self.settings.redaction
        return self.redactor_for(mode, self.hooks_for(item))

    def marker_for(self, item: pytest.Item) -> MarkerOptions:
        """The test's marker settings, parsed once."""
        found = item.stash.get(MARKER_KEY, None)
        if found is None:
            found = item.stash[MARKER_KEY] = MarkerOptions.from_item(item)
        return found

    def golden_for(self, item: pytest.Item) -> Path:
        """The test's golden: under the golden folder, or the file ``golden=`` names by a
        path (one with a ``/`` or a ``.jsonl`` suffix), relative to the test file's folder
        and inside the project (an imported incident, kept beside its test)."""
        path = self._named_by_path(item)
        if path is not None:
            return named_golden(self.config.rootpath, item.path.parent, path)
        marker = item.get_closest_marker("rollout")
        name = marker.kwargs.get("golden") if marker else None
        return golden_path(
            self.settings.golden_dir, item.nodeid, name, redact_name=self._redact_name(item)
        )

    @staticmethod
    def _named_by_path(item: pytest.Item) -> str | None:
        """The golden the test's marker names by a path (``golden=`` with a ``/`` or a
        ``.jsonl`` suffix), if it does."""
        marker = item.get_closest_marker("rollout")
        name = marker.kwargs.get("golden") if marker else None
        if isinstance(name, str) and ("/" in name or name.endswith(SUFFIX)):
            return name
        return None

    def _mode_for(self, marker: MarkerOptions, path: Path, *, named: bool) -> Mode:
        s = self.settings
        if not marker.replay:
            # Deterministic fakes: run live in every mode, and never read or write a golden.
            return Mode.LIVE
        # A golden named by path (an imported incident, another test's golden to fork) is
        # never written by a record run: while it exists, the test replays it instead of
        # running its agent live for nothing.
        if s.mode is Mode.RECORD and not ((s.record_new or named) and path.exists()):
            return Mode.RECORD
        return marker.mode or (s.replay_mode if s.mode is Mode.RECORD else s.mode)

    def _options_for(self, marker: MarkerOptions, hooks: HookSettings) -> CanonicalOptions:
        s = self.settings
        extra = [*s.ignore, *marker.ignore, *hooks.ignore]
        return DEFAULT_OPTIONS.extended(
            ignore_paths=extra,
            drop_keys=marker.drop_keys,
            float_digits=s.float_digits,
            volatile=_volatile_for(s, marker, hooks),
            exact_paths=marker.exact,
        )

    def _run_path(
        self, path: Path, run_id: str
    ) -> tuple[Path | None, int | None, WriteRoot | None]:
        """Where this test's run is saved, its size cap, and the folder below which no
        symbolic link is followed."""
        s = self.settings
        capture = self.plugin.capture
        if capture is not None:
            run_path, budget = capture.new_run(run_id)
            return run_path, budget, capture_root(capture.root)
        if s.run_dir is not None and self.store.owns(path):
            return s.run_dir / path.relative_to(s.golden_dir), None, WriteRoot(s.run_dir)
        return None, None, None

    def session_for(self, item: pytest.Item) -> RolloutSession:
        """The test's session: its setup, a recorder, and (replaying) its golden."""
        s = self.settings
        marker = self.marker_for(item)
        hooks = self.hooks_for(item)
        path = self.golden_for(item)
        mode = self._mode_for(marker, path, named=self._named_by_path(item) is not None)
        redactor = self._redactor(item)
        run_id = new_run_id()
        run_path, budget, run_root = self._run_path(path, run_id)
        analyzers = s.analyzers
        if marker.analyzers:
            analyzers = dataclasses.replace(analyzers, enabled=analyzers.enabled | marker.analyzers)
        allow = marker.allow_unconsumed
        setup = RunSetup(
            test_id=item.nodeid,
            mode=mode,
            golden_path=path,
            options=self._options_for(marker, hooks),
            allow_unconsumed=s.allow_unconsumed if allow is None else allow,
            error_types=self.plugin.error_types,
            run_id=run_id,
            run_display=None if run_path is None else self._display(run_path),
            prices=s.prices,
            analyzers=analyzers,
            rebuild=hooks.rebuild,
            expects_model=marker.model_calls,
        )
        golden: LoadedGolden | None = None
        if mode.replays_tools:
            unrecorded = marker.unrecorded_tools
            golden = self.store.open(
                path,
                mode,
                test_id=item.nodeid,
                redactor=redactor,
                fail_unrecorded=None if unrecorded is None else unrecorded == "fail",
            )
            self.tally.resealed += golden.resealed
            self.tally.unverified += golden.unverified
            if golden.resealed:
                self.tally.ci_warnings.append(
                    f"{golden.shown}: edited since it was recorded; accepted and sealed anew "
                    "(--rollout-accept-edits)"
                )
            if golden.unverified:
                self.tally.ci_warnings.append(
                    f"{golden.shown}: does not match its receipt; replayed unverified "
                    "(--rollout-unverified)"
                )
        recorder = Recorder(run_path, redactor=redactor, max_file_bytes=budget, root=run_root)
        audit = None if self.plugin.audit is None else self.plugin.audit.sink
        session = RolloutSession(setup, recorder, golden, audit)
        item.stash[SESSION_KEY] = session
        return session

    def seal_for(
        self, item: pytest.Item, session: RolloutSession
    ) -> contextlib.AbstractContextManager[object]:
        """What keeps the test's dry replay off the network (nothing in the other modes,
        nor under ``rollout_network = open``): refusals fail the test (docs/replay.md)."""
        from ..replay.seal import NetworkPolicy, NetworkSeal

        policy = NetworkPolicy(self.marker_for(item).network or self.settings.network)
        if session.engine.mode is not Mode.DRY or policy is NetworkPolicy.OPEN:
            return contextlib.nullcontext()
        breaches = session.network_breaches
        return NetworkSeal(policy, self.settings.allow_hosts, on_breach=breaches.append)

    # -- the end of each test --------------------------------------------------------

    def finish(self, item: pytest.Item, session: RolloutSession) -> None:
        """The test is over: close its run, then keep, compare or seal what it recorded.

        Afterwards the item no longer holds the session, so the golden, the replay and the
        recorder's lines are freed with the test, not kept to the end of the session.
        """
        engine = session.engine
        try:
            engine.close()
            self._account(item, session)
            if engine.used:
                self._keep(item, session)
            self._count(engine.golden, session)
            self._evidence(item, session)
        finally:
            del item.stash[SESSION_KEY]
        if engine.used and engine.mode in (Mode.RECORD, Mode.FULL):
            # Said once the test is over, so that a warning turned into an error (-W error)
            # never breaks the agent in the middle of its run.
            unrecorded = session.unrecorded_tools()
            if unrecorded is not None:
                warnings.warn(RolloutWarning(unrecorded), stacklevel=2)

    def _account(self, item: pytest.Item, session: RolloutSession) -> None:
        """Charge the capture budget, and say when the run could not be saved."""
        recorder = session.recorder
        if self.plugin.capture is not None and recorder.path is not None:
            self.plugin.capture.charge(recorder.written)
        stats = recorder.stats
        problems = self.tally.problems
        if stats.leaked is not None:
            problems.append(
                f"{item.nodeid}: its run was not saved: the file held a secret ({stats.leaked})"
            )
        if stats.refused is not None:
            problems.append(f"{item.nodeid}: its run was not saved: {stats.refused}")
        if stats.write_errors and recorder.path is not None:
            problems.append(
                f"{item.nodeid}: its run was not saved: writing "
                f"{self._display(Path(recorder.path))} failed (a full disk or a lost folder?)"
            )
        if stats.cut_from_file:
            problems.append(
                f"{item.nodeid}: its saved run was cut at the size cap "
                f"({stats.cut_from_file} line(s) left out; the comparison saw them all)"
            )

    def _keep(self, item: pytest.Item, session: RolloutSession) -> None:
        """Hand the run to the features that keep it, then make it the golden."""
        engine = session.engine
        if self.plugin.otel is not None:
            try:
                events = engine.events()
            except RolloutError as exc:  # never breaks the test: said in the summary
                self.tally.problems.append(f"{item.nodeid}: its trace was not exported: {exc}")
            else:
                self.plugin.otel.add(item.nodeid, events)
        if self.plugin.html_report is not None:
            self.plugin.html_report.add(self._report_item(item, session))
        if engine.mode is Mode.RECORD:
            self._record_golden(item, session)

    def _count(self, golden: LoadedGolden | None, session: RolloutSession) -> None:
        """What became of the test's golden, as the summary tells it."""
        if golden is None:
            return
        if isinstance(golden.error, GoldenMissingError):
            self.tally.missing += 1
        elif session.engine.fork is not None:
            self.tally.forked += 1
        elif session.engine.compared is not None:
            self.tally.compared += 1
        elif golden.loaded and session.engine.replay_started:
            self.tally.not_compared += 1

    def _evidence(self, item: pytest.Item, session: RolloutSession) -> None:
        """Count what the replay matched, and leave its receipt beside the saved run."""
        from ..session.replay_evidence import replay_evidence

        try:
            evidence = replay_evidence(session.engine)
        except RolloutError as exc:  # never breaks the test: said in the summary
            self.tally.problems.append(f"{item.nodeid}: its replay was not accounted: {exc}")
            return
        if evidence is None:
            return
        record = evidence.record
        tally = self.tally
        tally.turns_served += record.turns_served
        tally.turns_recorded += record.turns_recorded
        tally.calls_matched += record.calls_matched
        tally.calls_recorded += record.calls_recorded
        tally.diverged += evidence.diverged
        wrote = self._write_evidence(item, session, record)
        if self.config.get_verbosity() > 0:
            tally.replays.append({"test": item.nodeid, "lines": record.lines(wrote)})

    def _write_evidence(
        self, item: pytest.Item, session: RolloutSession, record: ReplayRecord
    ) -> str | None:
        """Write the replay receipt beside the saved run (nothing when no run was saved,
        or it could not be); the run's path as the user reads it, once written."""
        from ..format.loader import read_rollout_bytes
        from ..store.replay_receipt import write_replay_receipt

        recorder = session.recorder
        stats = recorder.stats
        if recorder.path is None or stats.leaked or stats.refused or stats.write_errors:
            return None
        run = Path(recorder.path)
        redactor = self._redactor(item)
        golden = session.engine.golden
        assert golden is not None
        try:
            write_replay_receipt(
                run,
                read_rollout_bytes(run),
                record,
                replay_of=golden.receipt_digest,
                redaction_mode=redactor.mode.value,
                rules_sha256=redactor.rules_digest,
            )
        except (OSError, RolloutError) as exc:  # never breaks the test: said in the summary
            self.tally.problems.append(f"{item.nodeid}: its replay receipt was not written: {exc}")
            return None
        return self._display(run)

    def _record_golden(self, item: pytest.Item, session: RolloutSession) -> None:
        report = item.stash.get(CALL_REPORT_KEY, None)
        if report is None or not report.passed or session.engine.unfit_for_golden:
            self.tally.not_recorded += 1
            return
        engine = session.engine
        path = engine.setup.golden_path
        assert path is not None
        try:
            kept = self.store.keep(
                path, session.recorder.getvalue(), self._redactor(item), engine.setup.options
            )
        except (OSError, UnsafePathError) as exc:
            # A full disk, a folder swapped for a link: said in the summary, never a teardown
            # error (a secret the last scan finds still fails the test, on purpose).
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.tally.problems.append(f"{item.nodeid}: its golden was not written: {reason}")
            return
        self.tally.kept[kept.value] += 1

    def _report_item(self, item: pytest.Item, session: RolloutSession) -> ReportItem:
        """What --rollout-report shows of this test."""
        engine = session.engine
        call = item.stash.get(CALL_REPORT_KEY, None)
        status: str = "error" if call is None else call.outcome
        if engine.mode is Mode.RECORD and status == "passed":
            status = "recorded"
        outcome = self.outcome(item, session, None)
        lines = () if outcome is None else outcome.lines
        run = session.recorder.path
        run_data = None
        if lines and run is None:  # saved nowhere: the report carries it (bounded)
            data = session.recorder.getvalue()
            if len(data) <= REPORT_RUN_BYTES:
                run_data = data.decode("utf-8", errors="replace")
        return ReportItem(
            test_id=self._redactor(item).redact_test_id(item.nodeid),
            status=status,
            golden=str(engine.setup.golden_path),
            run=None if run is None else os.path.abspath(run),
            lines=lines,
            run_data=run_data,
        )

    # -- the test's report -----------------------------------------------------------

    def outcome(
        self, item: pytest.Item, session: RolloutSession, error: BaseException | None
    ) -> TestOutcome | None:
        """What the test's report says of its run, decided once (the report, the HTML page
        and the CI log show the same lines)."""
        if OUTCOME_KEY not in item.stash:
            verbose = self.config.get_verbosity()
            item.stash[OUTCOME_KEY] = outcome_of(session, error, verbose=verbose)
        return item.stash[OUTCOME_KEY]


def _volatile_for(settings: Settings, marker: MarkerOptions, hooks: HookSettings) -> Volatile:
    """What the test renames: the built-in kinds unless its marker turns them off, and the
    patterns the ini key, the marker and the test's hooks declare. The same rules rename the
    run and its golden, and key its requests, so each test takes them whole at its start."""
    said = BUILTIN if marker.volatile is None else marker.volatile
    declared = (*settings.volatile, *said.declared, *hooks.volatile)
    if not declared:
        return said
    return Volatile(said.builtin).with_declared(declared)


def explain(left: object, right: object) -> list[str] | None:
    """``pytest_assertrepr_compare`` for ``rollout == golden``: the report's headline only
    (the whole report stands in for pytest's explanation in the test's report)."""
    session, golden = (left, right) if isinstance(left, RolloutSession) else (right, left)
    if not isinstance(session, RolloutSession) or not isinstance(golden, GoldenRef):
        return None
    failed = session.failed_comparison
    if failed is None:
        return None
    from ..diff.report import render_headline

    return [render_headline(failed.verdict)]
