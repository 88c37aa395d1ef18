"""Each test's run: its golden, mode and options, what becomes of the run, and how a
divergence reaches the user through pytest's report.

Imported when the first test asks for the ``rollout`` fixture (or a collected test uses it):
a session without rollout tests never loads the engine, the recorder or the report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import pytest

from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions
from ..diff.divergence import caused_by_divergence
from ..diff.integrity import unrecorded_calls, unrecorded_text
from ..diff.report import render_headline, render_verdict
from ..errors import RolloutError, RolloutWarning
from ..format.bulk import Parsed
from ..format.files import WriteRoot
from ..format.loader import Rollout, loads_reference, read_rollout_bytes
from ..format.recorder import Recorder
from ..safety.redact import RedactionMode, Redactor
from ..safety.sanitize import sanitize
from ..session import Engine, Mode, RolloutSession
from ..session.tools import UnrecordedToolsError
from ..store.capture import capture_root, new_run_id
from ..store.golden import (
    SUFFIX,
    GoldenEditedError,
    GoldenMissingError,
    GoldenRef,
    golden_path,
    module_dir,
    recover_pair,
    write_golden_and_receipt,
)
from ..store.receipt import ReceiptStatus, make_receipt, verify, write_receipt
from ..view.session_report import ReportItem
from .paths import display, named_golden
from .settings import HookSettings, MarkerOptions, Settings
from .stash import CALL_REPORT_KEY, ENGINE_KEY, FAILURE_KEY, HOOKS_KEY, MARKER_KEY

if TYPE_CHECKING:
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


__all__ = ["TestRuns", "asserted"]

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

    def redactor_for(self, mode: RedactionMode, hooks: HookSettings = _NO_HOOKS) -> Redactor:
        """The redactor of ``mode`` with the ini key's rules and what the test's hooks add
        (built once for each combination: compiling the rules is not free)."""
        key = (mode, dataclasses.replace(hooks, ignore=(), rebuild=None))
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
        marker = item.get_closest_marker("rollout")
        name = marker.kwargs.get("golden") if marker else None
        if isinstance(name, str) and ("/" in name or name.endswith(SUFFIX)):
            return named_golden(self.config.rootpath, item.path.parent, name)
        return golden_path(
            self.settings.golden_dir, item.nodeid, name, redact_name=self._redact_name(item)
        )

    def _is_named(self, path: Path) -> bool:
        """Whether ``path`` is a golden named by path, outside the golden folder."""
        return not path.is_relative_to(self.settings.golden_dir)

    def _mode_for(self, marker: MarkerOptions, path: Path) -> Mode:
        s = self.settings
        if not marker.replay:
            # Deterministic fakes: run live in every mode, and never read or write a golden.
            return Mode.LIVE
        if s.mode is Mode.RECORD and not (s.record_new and path.exists()):
            return Mode.RECORD
        return marker.mode or (s.replay_mode if s.mode is Mode.RECORD else s.mode)

    def _options_for(self, marker: MarkerOptions, hooks: HookSettings) -> CanonicalOptions:
        extra = [*self.settings.ignore, *marker.ignore, *hooks.ignore]
        return DEFAULT_OPTIONS.extended(ignore_paths=extra, drop_keys=marker.drop_keys)

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
        if s.run_dir is not None and not self._is_named(path):
            return s.run_dir / path.relative_to(s.golden_dir), None, WriteRoot(s.run_dir)
        return None, None, None

    def session_for(self, item: pytest.Item) -> RolloutSession:
        s = self.settings
        marker = self.marker_for(item)
        hooks = self.hooks_for(item)
        path = self.golden_for(item)
        mode = self._mode_for(marker, path)
        redactor = self.redactor_for(marker.redact or s.redaction, hooks)
        analyzers = s.analyzers
        if marker.analyzers:
            enabled = analyzers.enabled | marker.analyzers
            analyzers = dataclasses.replace(analyzers, enabled=enabled)
        golden, golden_lines, golden_error = None, None, None
        if mode.replays_tools and not self._is_named(path):
            recover_pair(s.golden_dir, path)  # a write a crash interrupted: finish or undo it
        if mode.replays_tools and path.exists():
            try:
                golden, golden_lines = self._verified_golden(item, path, redactor)
            except RolloutError as exc:
                golden_error = exc
        if mode is Mode.DRY and golden is not None:
            golden_error = self._unrecorded_refusal(item, path, golden)
            golden = None if golden_error is not None else golden
        run_id = new_run_id()
        run_path, budget, run_root = self._run_path(path, run_id)
        allow = marker.allow_unconsumed
        session = RolloutSession(
            test_id=item.nodeid,
            mode=mode,
            recorder=Recorder(run_path, redactor=redactor, max_file_bytes=budget, root=run_root),
            golden_path=self._display(path),
            run_display=None if run_path is None else self._display(run_path),
            golden=golden,
            golden_lines=golden_lines,
            golden_error=golden_error,
            options=self._options_for(marker, hooks),
            allow_unconsumed=s.allow_unconsumed if allow is None else allow,
            error_types=self.plugin.error_types,
            missing_hint=(f"Record it with: pytest --rollout-record {shlex.quote(item.nodeid)}"),
            run_id=run_id,
            prices=s.prices,
            analyzers=analyzers,
            audit=None if self.plugin.audit is None else self.plugin.audit.sink,
            rebuild_hook=hooks.rebuild,
        )
        item.stash[ENGINE_KEY] = session.engine
        return session

    def _verified_golden(
        self, item: pytest.Item, path: Path, redactor: Redactor
    ) -> tuple[Rollout, Parsed | None]:
        """The golden at ``path``, once its receipt vouches for its bytes (docs/secrets.md),
        and its lines for the run to be read like it (``loads_reference``)."""
        data = read_rollout_bytes(path)
        check = verify(path, data)
        if check.status is not ReceiptStatus.OK and not self.settings.accept_edits:
            shown = dataclasses.replace(check, golden=self._display(path))
            raise GoldenEditedError(shown.message(item.nodeid))
        # A golden the loader refuses is never sealed.
        rollout, lines = loads_reference(data, path=str(path))
        if check.status is not ReceiptStatus.OK:
            self._seal(path, data, redactor)
            self.tally.counts["resealed"] += 1
        return rollout, lines

    def _unrecorded_refusal(
        self, item: pytest.Item, path: Path, golden: Rollout
    ) -> UnrecordedToolsError | None:
        """A golden whose tool calls were not recorded: in dry replay those tools would run
        live, so the test fails (or, ``rollout_unrecorded_tools = warn``, is warned)."""
        calls = unrecorded_calls(golden.events)
        if not calls:
            return None
        text = f"{self._display(path)}: {unrecorded_text(calls)}"
        if not self.settings.fail_unrecorded:
            warnings.warn(RolloutWarning(text), stacklevel=1)
            return None
        return UnrecordedToolsError(
            f"{text}\nThis dry replay would run them live, so it stops here. Wrap them, then "
            f"re-record: pytest --rollout-record {shlex.quote(item.nodeid)} (or set "
            f"rollout_unrecorded_tools = warn to let them run live)"
        )

    def _seal(self, path: Path, data: bytes, redactor: Redactor) -> None:
        receipt = make_receipt(
            data, redaction_mode=redactor.mode.value, rules_sha256=redactor.rules_digest
        )
        write_receipt(path, receipt)

    def finish(self, item: pytest.Item, engine: Engine) -> None:
        """The test is over: close its run, then keep, compare or seal what it recorded.

        Afterwards the item no longer holds the engine, so the golden, the replay and the
        recorder's lines are freed with the test, not kept to the end of the session.
        """
        try:
            engine.close()
            self._account(item, engine)
            if engine.used:
                self._keep(item, engine)
        finally:
            item.stash.__delitem__(ENGINE_KEY)
        if engine.used and engine.mode in (Mode.RECORD, Mode.FULL):
            _warn_unrecorded(engine)

    def _account(self, item: pytest.Item, engine: Engine) -> None:
        """Charge the capture budget, and say when the run could not be saved."""
        recorder = engine.recorder
        if self.plugin.capture is not None and recorder.path is not None:
            self.plugin.capture.charge(recorder.written)
        stats = recorder.stats
        if stats.leaked is not None:
            self.tally.problems.append(
                f"{item.nodeid}: its run was not saved: the file held a secret ({stats.leaked})"
            )
        if stats.refused is not None:
            self.tally.problems.append(f"{item.nodeid}: its run was not saved: {stats.refused}")
        if stats.write_errors and recorder.path is not None:
            self.tally.problems.append(
                f"{item.nodeid}: its run was not saved: writing "
                f"{self._display(Path(recorder.path))} failed (a full disk or a lost folder?)"
            )
        if stats.cut_from_file:
            self.tally.problems.append(
                f"{item.nodeid}: its saved run was cut at the size cap "
                f"({stats.cut_from_file} line(s) left out; the comparison saw them all)"
            )

    def _keep(self, item: pytest.Item, engine: Engine) -> None:
        """Hand the run to the features that keep it, then record or count it."""
        if self.plugin.otel is not None:
            try:
                events = engine.events()
            except RolloutError as exc:  # never breaks the test: said in the summary
                self.tally.problems.append(f"{item.nodeid}: its trace was not exported: {exc}")
            else:
                self.plugin.otel.add(item.nodeid, events)
        if self.plugin.html_report is not None:
            self.plugin.html_report.add(self._report_item(item, engine))
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
        if self._is_named(path):  # a file the user keeps (an imported incident): never rewritten
            self.tally.counts["named by path, left as is"] += 1
            return
        recorder = engine.recorder
        redactor = recorder.redactor
        assert isinstance(redactor, Redactor)
        result = write_golden_and_receipt(
            self.settings.golden_dir,
            path,
            recorder.getvalue(),
            engine.options,
            redaction_mode=redactor.mode.value,
            rules_sha256=redactor.rules_digest,
            scan=None if redactor.mode is RedactionMode.FULL else redactor.scan,
        )
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
        redactor = engine.recorder.redactor
        return ReportItem(
            test_id=redactor.redact_test_id(item.nodeid)
            if isinstance(redactor, Redactor)
            else item.nodeid,
            status=status,
            golden=str(golden),
            run=None if run is None else os.path.abspath(run),
            lines=lines,
            run_data=run_data,
        )

    def failure_lines(self, item: pytest.Item, engine: Engine) -> list[str] | None:
        """The failure report of a run that left its golden (``None`` when it did not),
        rendered once and kept in the item's stash."""
        found = item.stash.get(FAILURE_KEY, None)
        if found is not None:
            return found
        try:
            verdict = engine.verdict()
        except RolloutError:
            raise
        except Exception as exc:  # a bug of ours fails this test, never the whole session
            lines = [
                "pytest-rollout could not compare this run with its golden: "
                f"{type(exc).__name__}: {sanitize(str(exc))}"
            ]
        else:
            if verdict.matched:
                return None
            lines = render_verdict(verdict, verbose=self.config.get_verbosity())
        item.stash[FAILURE_KEY] = lines
        return lines

    def _failed_on_golden(
        self, engine: Engine, excinfo: pytest.ExceptionInfo[BaseException] | None
    ) -> bool:
        """Whether the test failed on ``assert rollout == golden`` (its explanation, the
        report's headline, is in the assertion's message)."""
        verdict = engine.compared
        if verdict is None or verdict.matched:
            return False
        return asserted(excinfo, render_headline(verdict))

    def whole(self, lines: list[str], excinfo: pytest.ExceptionInfo[BaseException]) -> str:
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


def _warn_unrecorded(engine: Engine) -> None:
    """Name the tools whose calls the run announced but never recorded (they ran outside
    ``rollout.tools``): said once the test is over, so that a warning turned into an error
    (``-W error``) never breaks the agent in the middle of its run."""
    try:
        calls = unrecorded_calls(engine.events())
    except RolloutError:
        return
    if calls:
        warnings.warn(RolloutWarning(unrecorded_text(calls)), stacklevel=2)


def asserted(excinfo: pytest.ExceptionInfo[BaseException] | None, headline: str) -> bool:
    """Whether ``excinfo`` is an ``AssertionError`` explained by a report with ``headline``."""
    return (
        excinfo is not None
        and excinfo.errisinstance(AssertionError)
        and headline in str(excinfo.value)
    )


def explain(left: object, right: object) -> list[str] | None:
    """``pytest_assertrepr_compare`` for ``rollout == golden``: the report's headline only
    (the whole report replaces pytest's explanation in the test's report, rendered once)."""
    session, golden = (left, right) if isinstance(left, RolloutSession) else (right, left)
    if not isinstance(session, RolloutSession) or not isinstance(golden, GoldenRef):
        return None
    verdict = session.engine.compared
    if verdict is None or verdict.matched:
        return None
    return [render_headline(verdict)]


#: Failures whose report is the error's own text.
_REFUSED: Final = (GoldenMissingError, GoldenEditedError, UnrecordedToolsError)


def replaces_traceback(
    runs: TestRuns,
    item: pytest.Item,
    engine: Engine,
    excinfo: pytest.ExceptionInfo[BaseException],
) -> bool:
    """Whether :func:`report_call` will put its own text in place of pytest's traceback of
    this failure: a golden refused, or a run a replay divergence ended. pytest need not draw
    that traceback in its long style then, reading and parsing the source of every frame
    of the agent's SDK or framework on the way (0.4-1.5 s a failure)."""
    if item.get_closest_marker("xfail") is not None and not getattr(
        item.config.option, "runxfail", False
    ):
        return False  # an expected failure keeps its traceback, for the reporters that show it
    if isinstance(excinfo.value, _REFUSED):
        return True
    if not (engine.replay_started and caused_by_divergence(excinfo.value)):
        return False
    try:
        return runs.failure_lines(item, engine) is not None
    except RolloutError:
        return False


#: No ``repr_failure`` of the item's own.
_NONE: Final = object()


@contextlib.contextmanager
def native_traceback(item: pytest.Item) -> Iterator[None]:
    """Within: ``item`` draws a failure in the native style (what Python prints, one source
    line a frame), as a stand-in for the report that replaces it."""
    own = vars(item)
    saved = own.get("repr_failure", _NONE)  # one set on the item already is put back
    own["repr_failure"] = _native
    try:
        yield
    finally:
        if saved is _NONE:
            own.pop("repr_failure", None)
        else:
            own["repr_failure"] = saved


def _native(excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
    return excinfo.getrepr(style="native")


def report_call(
    runs: TestRuns,
    item: pytest.Item,
    engine: Engine,
    report: pytest.TestReport,
    excinfo: pytest.ExceptionInfo[BaseException] | None,
) -> None:
    """Put the right report of a test that used the ``rollout`` fixture in ``report``."""
    if excinfo is not None and isinstance(excinfo.value, _REFUSED):
        report.longrepr = str(excinfo.value)
    elif report.failed and runs._failed_on_golden(engine, excinfo):
        # pytest cuts assertion explanations to a few lines outside CI; the report is
        # only useful whole, so it stands in for the explanation here.
        assert excinfo is not None
        lines = runs.failure_lines(item, engine)
        assert lines is not None
        report.longrepr = runs.whole(lines, excinfo)
    elif engine.replay_started and (report.passed or report.failed):
        runs._report_divergence(item, engine, report, excinfo)
