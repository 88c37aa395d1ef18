"""The pytest plugin: wires pytest's flags, ini keys, markers and hooks to the library.

Registered through the ``pytest11`` entry point. Recording, replay, comparison and the
failure report live in modules that never import pytest; this module only decides, per
test, which golden, mode and options apply, and reports through pytest's channels.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
from collections import Counter
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from ..analysis.analyzers import (
    ANALYZERS,
    CONTEXT_WINDOWS,
    HMAC_KEY_VARIABLE,
    AnalyzerOptions,
    parse_analyzers,
)
from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions
from ..diff.divergence import caused_by_divergence
from ..diff.failure import render_verdict
from ..errors import RolloutError
from ..format.files import atomic_write
from ..format.loader import Rollout, loads, read_rollout_bytes
from ..format.recorder import Recorder
from ..safety.audit import AuditTrailSink
from ..safety.capture import (
    Budget,
    CaptureLimits,
    capture_path,
    enforce_retention,
    new_run_id,
    resolve_root,
    usage,
)
from ..safety.receipt import (
    ReceiptStatus,
    make_receipt,
    receipt_path,
    verify,
    write_receipt,
)
from ..safety.redact import RedactionMode, Redactor, Rule
from ..sdk.pricing import PRICES, Price, parse_price
from ..session.engine import GoldenEditedError, GoldenMissingError, Mode, RolloutSession
from ..session.golden import (
    GoldenRef,
    WriteResult,
    find_unused,
    golden_path,
    module_dir,
    prune_empty_dirs,
    write_golden,
)
from ..view.report import ReportItem, render_session_report
from . import hookspecs as hooks

__all__ = ["RolloutPlugin"]

PLUGIN_KEY = pytest.StashKey["RolloutPlugin"]()
SESSION_KEY = pytest.StashKey[RolloutSession]()
CALL_REPORT_KEY = pytest.StashKey[pytest.TestReport]()

MARKER_DOC = (
    "rollout(golden=None, ignore=(), drop_keys=(), mode=None, allow_unconsumed=None, "
    "replay=True, redact=None, analyzers=()): per-test settings of pytest-rollout: the "
    "golden's file name, fields to leave out of the comparison, the replay mode (dry or full), "
    "whether unconsumed recorded turns or tool results are allowed, replay=False for tests "
    "whose providers and tools are deterministic fakes (run live, no golden), the redaction "
    "mode (redacted, hashed, full or none) and analyzers to turn on"
)
REDACTION_MODES = tuple(m.value for m in RedactionMode)
#: The largest run the HTML report carries itself when it was not saved to a file.
REPORT_RUN_BYTES = 8 * 1024 * 1024


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rollout", "golden-run trace diffing of agent runs (pytest-rollout)")
    group.addoption(
        "--rollout-record",
        action="store_true",
        default=False,
        help="run providers and tools live and write each test's rollout as its golden",
    )
    group.addoption(
        "--rollout-compare",
        nargs="?",
        const=True,
        default=None,
        metavar="DIR",
        help="replay each test from its golden and compare (the default); "
        "DIR overrides the golden directory (write --rollout-compare=DIR)",
    )
    group.addoption(
        "--rollout-golden-dir",
        default=None,
        metavar="DIR",
        help="golden directory for this run (overrides the rollout_golden_dir ini key)",
    )
    group.addoption(
        "--rollout-mode",
        choices=[Mode.DRY.value, Mode.FULL.value],
        default=None,
        help="dry: provider and tools replayed (default); full: live provider, tools replayed",
    )
    group.addoption(
        "--rollout-dir",
        default=None,
        metavar="DIR",
        help="capture every run as DIR/YYYY-MM-DD/RUN_ID.jsonl "
        "(the ROLLOUT_DIR environment variable takes precedence)",
    )
    group.addoption(
        "--rollout-redact",
        choices=REDACTION_MODES,
        default=None,
        help="how secrets are written: redacted (the default), hashed, full (verbatim) "
        "or none (events holding one are dropped)",
    )
    group.addoption(
        "--rollout-accept-edits",
        action="store_true",
        default=False,
        help="accept goldens changed since they were recorded (their receipts no longer "
        "match): compare against them and seal them anew",
    )
    group.addoption(
        "--rollout-report",
        default=None,
        metavar="PATH",
        help="write one self-contained HTML page of the session's rollout tests, with each "
        "failing run and its golden side by side",
    )
    group.addoption(
        "--rollout-audit",
        action="store_true",
        default=None,
        help="append every run, and every call of a state-modifying tool, to the day's "
        "hash-chained audit trail in the capture directory",
    )
    group.addoption(
        "--rollout-allow-unconsumed",
        action="store_true",
        default=None,
        help="do not fail a test whose run left recorded turns or tool results unused",
    )
    parser.addini("rollout_golden_dir", "directory of golden rollouts", default="golden")
    parser.addini("rollout_mode", "replay mode in compare runs: dry or full", default="dry")
    parser.addini(
        "rollout_ignore",
        "fields left out of every comparison, one [TYPE:]path per line",
        type="linelist",
        default=[],
    )
    parser.addini(
        "rollout_dir",
        "capture every run under this directory (YYYY-MM-DD/RUN_ID.jsonl)",
        default="",
    )
    parser.addini(
        "rollout_capture_max_file_mb", "size cap of one captured run, in MB (0: none)", default=""
    )
    parser.addini(
        "rollout_capture_max_total_mb",
        "size cap of the capture directory, oldest runs removed first, in MB (0: none)",
        default="",
    )
    parser.addini(
        "rollout_capture_retention_days",
        "captured runs older than this many days are removed (0: kept forever)",
        default="",
    )
    parser.addini(
        "rollout_redact", "how secrets are written: redacted, hashed, full or none", default=""
    )
    parser.addini(
        "rollout_redact_patterns",
        "extra redaction rules, one LABEL=REGEX per line",
        type="linelist",
        default=[],
    )
    parser.addini(
        "rollout_redact_keys",
        "extra key names whose values are always redacted, one per line",
        type="linelist",
        default=[],
    )
    parser.addini(
        "rollout_prices",
        "model prices for the cost of SDK turns, one MODEL=INPUT,OUTPUT (USD per million "
        "tokens) per line, over the built-in table",
        type="linelist",
        default=[],
    )
    parser.addini(
        "rollout_analyzers",
        "analyzers to run over every test's events (" + ", ".join(ANALYZERS) + ", or all)",
        type="args",
        default=[],
    )
    parser.addini(
        "rollout_cost_anomaly_multiplier",
        "cost.anomaly when a step costs more than this times the earlier steps' mean (default 2.0)",
        default="",
    )
    parser.addini(
        "rollout_context_window_threshold",
        "context.window.warning past this fraction of the model's context window (default 0.8)",
        default="",
    )
    parser.addini(
        "rollout_context_windows",
        "context window sizes in tokens, one MODEL=TOKENS per line, over the built-in table",
        type="linelist",
        default=[],
    )
    parser.addini(
        "rollout_error_chain_calls",
        "how many of the last tool calls error.context lists (default 5)",
        default="",
    )
    parser.addini(
        "rollout_audit",
        "append runs and state-modifying tool calls to the day's audit trail",
        type="bool",
        default=False,
    )
    parser.addini(
        "rollout_audit_tools",
        "more tool names whose calls are audit actions, one per line",
        type="linelist",
        default=[],
    )
    parser.addini(
        "rollout_audit_keywords",
        "more name tokens (delete, approve, ...) that make a tool's calls audit actions",
        type="linelist",
        default=[],
    )
    parser.addini(
        "rollout_allow_unconsumed",
        "do not fail tests whose run left recorded turns or tool results unused",
        type="bool",
        default=False,
    )


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_DOC)
    plugin = RolloutPlugin(config, Settings.from_config(config))
    config.stash[PLUGIN_KEY] = plugin
    config.pluginmanager.register(plugin, "rollout-plugin")


@dataclass(frozen=True, slots=True)
class Settings:
    """The session-wide settings, resolved from flags and ini keys."""

    mode: Mode
    golden_dir: Path
    run_dir: Path | None
    ignore: tuple[str, ...]
    allow_unconsumed: bool
    capture_root: Path | None = None
    capture_limits: CaptureLimits = field(default_factory=CaptureLimits)
    redaction: RedactionMode = RedactionMode.REDACTED
    redact_rules: tuple[Rule, ...] = ()
    redact_keys: tuple[str, ...] = ()
    accept_edits: bool = False
    prices: Mapping[str, Price] = field(default_factory=lambda: PRICES)
    analyzers: AnalyzerOptions = field(default_factory=AnalyzerOptions)
    report_path: Path | None = None
    audit: bool = False
    audit_tools: tuple[str, ...] = ()
    audit_keywords: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        record = bool(config.getoption("rollout_record"))
        compare = config.getoption("rollout_compare")
        if record and compare is not None:
            raise pytest.UsageError("--rollout-record and --rollout-compare cannot be combined")
        invocation = config.invocation_params.dir
        if isinstance(compare, str):
            golden_dir = invocation / compare
            if compare.endswith(".py") or "::" in compare or golden_dir.is_file():
                raise pytest.UsageError(
                    f"--rollout-compare takes a golden directory, got {compare!r}; "
                    f"write --rollout-compare=DIR, or put test paths before the flag"
                )
        elif config.getoption("rollout_golden_dir"):
            golden_dir = invocation / config.getoption("rollout_golden_dir")
        else:
            golden_dir = config.rootpath / str(config.getini("rollout_golden_dir"))
        mode_name = config.getoption("rollout_mode") or str(config.getini("rollout_mode"))
        if mode_name not in (Mode.DRY.value, Mode.FULL.value):
            raise pytest.UsageError(f"rollout_mode must be dry or full, got {mode_name!r}")
        try:
            capture_root = resolve_root(
                os.environ,
                config.getoption("rollout_dir"),
                str(config.getini("rollout_dir")),
                invocation,
            )
            capture_limits = CaptureLimits.from_ini(
                str(config.getini("rollout_capture_max_file_mb")),
                str(config.getini("rollout_capture_max_total_mb")),
                str(config.getini("rollout_capture_retention_days")),
            )
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        run_dir: Path | None = None
        if capture_root is None and (cache := getattr(config, "cache", None)) is not None:
            run_dir = cache.mkdir("rollout") / "runs"  # the last run of each test
        redaction = config.getoption("rollout_redact") or str(config.getini("rollout_redact"))
        if redaction and redaction not in REDACTION_MODES:
            raise pytest.UsageError(
                f"rollout_redact must be one of {', '.join(REDACTION_MODES)}, got {redaction!r}"
            )
        rules = [*config.getini("rollout_redact_patterns")]
        rules.extend(
            f"{label}={pattern}"
            for found in config.hook.pytest_rollout_redact_patterns(config=config)
            for label, pattern in found or ()
        )
        keys = [str(k) for k in config.getini("rollout_redact_keys")]
        keys.extend(
            str(k)
            for found in config.hook.pytest_rollout_redact_keys(config=config)
            for k in found or ()
        )
        prices = dict(PRICES)
        for line in config.getini("rollout_prices"):
            try:
                model, price = parse_price(str(line))
            except ValueError as exc:
                raise pytest.UsageError(f"rollout_prices: {exc}") from None
            prices[model] = price
        analyzers = _analyzer_options(config)
        report = config.getoption("rollout_report")
        audit = config.getoption("rollout_audit") or bool(config.getini("rollout_audit"))
        if audit and capture_root is None:
            raise pytest.UsageError(
                "the audit trail is kept in the capture directory: set ROLLOUT_DIR, "
                "--rollout-dir or the ini key rollout_dir to use --rollout-audit or rollout_audit"
            )
        allow = config.getoption("rollout_allow_unconsumed")
        ignore = tuple(str(p) for p in config.getini("rollout_ignore"))
        try:
            DEFAULT_OPTIONS.extended(ignore_paths=ignore)
        except ValueError as exc:
            raise pytest.UsageError(f"rollout_ignore: {exc}") from None
        return cls(
            mode=Mode.RECORD if record else Mode(mode_name),
            golden_dir=golden_dir,
            run_dir=run_dir,
            ignore=ignore,
            allow_unconsumed=bool(config.getini("rollout_allow_unconsumed"))
            if allow is None
            else bool(allow),
            capture_root=capture_root,
            capture_limits=capture_limits,
            redaction=RedactionMode(redaction or RedactionMode.REDACTED),
            redact_rules=tuple(_rule(line) for line in rules),
            redact_keys=tuple(keys),
            accept_edits=bool(config.getoption("rollout_accept_edits")),
            prices=MappingProxyType(prices),
            analyzers=analyzers,
            report_path=None if report is None else invocation / str(report),
            audit=audit,
            audit_tools=tuple(str(t) for t in config.getini("rollout_audit_tools")),
            audit_keywords=tuple(str(k) for k in config.getini("rollout_audit_keywords")),
        )


def _analyzer_options(config: pytest.Config) -> AnalyzerOptions:
    """The analyzers the ini keys turn on, and their settings."""
    options: dict[str, Any] = {}
    try:
        options["enabled"] = parse_analyzers(str(n) for n in config.getini("rollout_analyzers"))
        for key, name, kind in (
            ("rollout_cost_anomaly_multiplier", "cost_multiplier", float),
            ("rollout_context_window_threshold", "context_threshold", float),
            ("rollout_error_chain_calls", "error_chain_calls", int),
        ):
            text = str(config.getini(key)).strip()
            if text:
                try:
                    options[name] = kind(text)
                except ValueError:
                    raise ValueError(f"{key} must be a number, got {text!r}") from None
        windows = dict(CONTEXT_WINDOWS)
        for line in config.getini("rollout_context_windows"):
            model, sep, tokens = str(line).partition("=")
            if not sep or not model.strip() or not tokens.strip().isdigit():
                raise ValueError(
                    f"rollout_context_windows: write each line as MODEL=TOKENS, got {line!r}"
                )
            windows[model.strip()] = int(tokens)
        options["context_windows"] = MappingProxyType(windows)
        secret = os.environ.get(HMAC_KEY_VARIABLE)
        if secret:
            options["hmac_key"] = secret.encode()
        return AnalyzerOptions(**options)
    except ValueError as exc:
        message = str(exc)
        for name, key in _ANALYZER_KEYS.items():  # name the ini key the user wrote
            if message.startswith(name + " "):
                message = key + message.removeprefix(name)
        raise pytest.UsageError(message) from None


#: The ini key behind each analyzer option, for error messages.
_ANALYZER_KEYS = {
    "cost_multiplier": "rollout_cost_anomaly_multiplier",
    "context_threshold": "rollout_context_window_threshold",
    "error_chain_calls": "rollout_error_chain_calls",
}


def _rule(line: str) -> Rule:
    label, sep, pattern = str(line).partition("=")
    if not sep or not label.strip() or not pattern.strip():
        raise pytest.UsageError(
            f"rollout_redact_patterns: write each rule as LABEL=REGEX, got {line!r}"
        )
    try:
        return Rule(label.strip(), pattern.strip())
    except RolloutError as exc:
        raise pytest.UsageError(f"rollout_redact_patterns: {exc}") from None


@dataclass(slots=True)
class Tally:
    """What this process (or, merged, the whole session) did with goldens."""

    counts: Counter[str] = field(default_factory=Counter)
    owned: set[str] = field(default_factory=set)
    scopes: set[str] = field(default_factory=set)
    full_selection: bool | None = None  # unknown until collection (or every worker) says
    problems: list[str] = field(default_factory=list)  # runs that could not be saved
    report: list[ReportItem] = field(default_factory=list)  # for --rollout-report

    def to_json(self) -> dict[str, Any]:
        return {
            "counts": dict(self.counts),
            "owned": sorted(self.owned),
            "scopes": sorted(self.scopes),
            "full_selection": self.full_selection,
            "problems": self.problems,
            "report": [item.to_json() for item in self.report],
        }

    def merge(self, data: dict[str, Any]) -> None:
        self.counts.update(data.get("counts", {}))
        self.problems.extend(data.get("problems", ()))
        self.report.extend(ReportItem.from_json(item) for item in data.get("report", ()))
        self.owned.update(data.get("owned", ()))
        self.scopes.update(data.get("scopes", ()))
        theirs = bool(data.get("full_selection"))
        self.full_selection = (
            theirs if self.full_selection is None else (self.full_selection and theirs)
        )


class RolloutPlugin:
    """Per-session state and the hooks that need it."""

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
        self.workers_reported = 0
        self.pruned: list[Path] = []
        self.explained: list[str] | None = None  # the last snapshot report given to pytest
        self._redactors: dict[RedactionMode, Redactor] = {}
        try:
            self.redactor_for(settings.redaction)  # a bad user rule stops the session now
        except RolloutError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.budget: Budget | None = None
        self.audit: AuditTrailSink | None = None
        self.report_written: Path | None = None
        if settings.audit and settings.capture_root is not None:
            self.audit = AuditTrailSink(
                settings.capture_root,
                tools=settings.audit_tools,
                keywords=settings.audit_keywords,
                on_error=self.tally.problems.append,
            )

    def redactor_for(self, mode: RedactionMode) -> Redactor:
        found = self._redactors.get(mode)
        if found is None:
            s = self.settings
            found = self._redactors[mode] = Redactor(
                mode, extra_rules=s.redact_rules, extra_keys=s.redact_keys
            )
        return found

    # -- the capture directory ---------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        root = self.settings.capture_root
        if root is None:
            return
        limits = self.settings.capture_limits
        if getattr(self.config, "workerinput", None) is None:  # once, in the main process
            enforce_retention(root, limits, datetime.now(UTC).date())
        self.budget = Budget(root, limits, usage(root))

    # -- reporting the mode ----------------------------------------------------------

    def pytest_report_header(self, config: pytest.Config) -> str:
        s = self.settings
        where = self._display(s.golden_dir)
        if s.mode is Mode.RECORD:
            return f"rollout: record goldens to {where}"
        return f"rollout: compare against {where} ({s.mode.value} replay)"

    def _display(self, path: Path) -> str:
        """``path`` as a user would type it: relative to where pytest was started."""
        base = self.config.invocation_params.dir
        if path.is_relative_to(base):
            return os.path.relpath(path, base) + os.sep
        return str(path) + os.sep

    # -- collection: which goldens are owned ------------------------------------------

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.extend(items)

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

    def golden_for(self, item: pytest.Item) -> Path:
        marker = item.get_closest_marker("rollout")
        name = marker.kwargs.get("golden") if marker else None
        return golden_path(self.settings.golden_dir, item.nodeid, name)

    def session_for(self, item: pytest.Item) -> RolloutSession:
        s = self.settings
        marker = item.get_closest_marker("rollout")
        kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
        path = self.golden_for(item)
        mode = s.mode
        if kwargs.get("replay") is False:
            # Deterministic fakes: run live in every mode, and never read or write a golden.
            mode = Mode.LIVE
        elif mode is not Mode.RECORD and kwargs.get("mode") is not None:
            try:
                mode = Mode(kwargs["mode"])
            except ValueError:
                raise RolloutError(
                    f"@pytest.mark.rollout(mode=...) must be 'dry' or 'full', "
                    f"got {kwargs['mode']!r}"
                ) from None
        extra: list[str] = list(s.ignore)
        extra.extend(kwargs.get("ignore", ()))
        for found in item.config.hook.pytest_rollout_ignore(config=item.config, item=item):
            extra.extend(found or ())
        options: CanonicalOptions = DEFAULT_OPTIONS.extended(
            ignore_paths=extra, drop_keys=kwargs.get("drop_keys", ())
        )
        allow = kwargs.get("allow_unconsumed")
        redaction = kwargs.get("redact", s.redaction)
        if redaction not in REDACTION_MODES:
            raise RolloutError(
                f"@pytest.mark.rollout(redact=...) must be one of "
                f"{', '.join(REDACTION_MODES)}, got {redaction!r}"
            )
        redactor = self.redactor_for(RedactionMode(redaction))
        analyzers = s.analyzers
        if kwargs.get("analyzers"):
            names = kwargs["analyzers"]
            try:
                enabled = parse_analyzers([names] if isinstance(names, str) else names)
            except ValueError as exc:
                raise RolloutError(f"@pytest.mark.rollout(analyzers=...): {exc}") from None
            analyzers = dataclasses.replace(analyzers, enabled=analyzers.enabled | enabled)
        golden = None
        golden_error: RolloutError | None = None
        if mode.replays_tools and path.exists():
            try:
                golden = self._verified_golden(item, path, redactor)
            except RolloutError as exc:
                golden_error = exc
        run_id = new_run_id()
        run_path = None
        budget = None
        if s.capture_root is not None:
            run_path = capture_path(s.capture_root, run_id, datetime.now(UTC))
            budget = None if self.budget is None else self.budget.for_new_run()
        elif s.run_dir is not None:
            run_path = s.run_dir / path.relative_to(s.golden_dir)
        session = RolloutSession(
            test_id=item.nodeid,
            mode=mode,
            recorder=Recorder(run_path, redactor=redactor, max_file_bytes=budget),
            golden_path=self._display(path).rstrip(os.sep),
            run_display=None if run_path is None else self._display(run_path).rstrip(os.sep),
            golden=golden,
            golden_error=golden_error,
            options=options,
            allow_unconsumed=s.allow_unconsumed if allow is None else bool(allow),
            error_types=self.error_types,
            missing_hint=(f"Record it with: pytest --rollout-record {shlex.quote(item.nodeid)}"),
            run_id=run_id,
            prices=s.prices,
            analyzers=analyzers,
            audit=self.audit,
        )
        item.stash[SESSION_KEY] = session
        return session

    def _verified_golden(self, item: pytest.Item, path: Path, redactor: Redactor) -> Rollout:
        """The golden at ``path``, once its receipt vouches for its bytes (docs/secrets.md)."""
        data = read_rollout_bytes(path)
        check = verify(path, data)
        if check.status is not ReceiptStatus.OK and not self.settings.accept_edits:
            shown = dataclasses.replace(check, golden=self._display(path).rstrip(os.sep))
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

    def finish(self, item: pytest.Item, session: RolloutSession) -> None:
        session.close()
        recorder = session.recorder
        stats = recorder.stats
        if self.budget is not None and recorder.path is not None:
            self.budget.charge(recorder.written)
        if stats.leaked is not None:
            self.tally.problems.append(
                f"{item.nodeid}: its run was not saved: the file held a secret ({stats.leaked})"
            )
        if not session.used:
            return
        if self.settings.report_path is not None:
            self.tally.report.append(self._report_item(item, session))
        if session.mode is Mode.RECORD:
            report = item.stash.get(CALL_REPORT_KEY, None)
            if report is None or not report.passed:
                self.tally.counts["not recorded (test failed)"] += 1
                return
            path = self.golden_for(item)
            redactor = recorder.redactor
            assert redactor is not None
            data = recorder.getvalue()
            sealed = path.exists() and verify(path).status is ReceiptStatus.OK
            result = write_golden(
                self.settings.golden_dir,
                path,
                data,
                session.options,
                scan=None if redactor.mode is RedactionMode.FULL else redactor.scan,
                keep_unchanged=sealed,
            )
            if result is not WriteResult.UNCHANGED:
                self._seal(path, data, redactor)
            self.tally.counts[result.value] += 1
        elif session.mode is not Mode.LIVE:
            self.tally.counts["compared"] += 1

    def _report_item(self, item: pytest.Item, session: RolloutSession) -> ReportItem:
        """What --rollout-report shows of this test."""
        call = item.stash.get(CALL_REPORT_KEY, None)
        status: str = "error" if call is None else call.outcome
        if session.mode is Mode.RECORD and status == "passed":
            status = "recorded"
        golden = self.golden_for(item)
        lines: tuple[str, ...] = ()
        if session.mode.replays_tools and golden.exists():
            try:
                verdict = session.verdict()
            except RolloutError:
                pass
            else:
                if not verdict.matched:
                    lines = tuple(render_verdict(verdict, verbose=self.config.get_verbosity()))
        run = session.recorder.path
        run_data = None
        if lines and run is None:  # saved nowhere: the report carries it (bounded)
            data = session.recorder.getvalue()
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

    def _write_report(self) -> None:
        path = self.settings.report_path
        if path is None:
            return
        title = f"pytest-rollout report: {self.config.rootpath.name}"
        page = render_session_report(self.tally.report, title)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, page.encode("utf-8"))
        except OSError as exc:
            self.tally.problems.append(f"the rollout report was not written: {exc}")
        else:
            self.report_written = path

    # -- reporting failures -----------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.when != "call":
            return report
        item.stash[CALL_REPORT_KEY] = report
        excinfo = call.excinfo
        explained, self.explained = self.explained, None
        if (
            explained
            and report.failed
            and excinfo is not None
            and excinfo.errisinstance(AssertionError)
            and explained[0] in str(excinfo.value)
        ):
            report.longrepr = self._whole(explained, excinfo)  # a snapshot's report, uncut
            return report
        session = item.stash.get(SESSION_KEY, None)
        if session is None:
            return report
        if excinfo is not None and isinstance(
            excinfo.value, GoldenMissingError | GoldenEditedError
        ):
            report.longrepr = str(excinfo.value)
        elif session.reported:
            if report.failed and excinfo is not None and excinfo.errisinstance(AssertionError):
                # pytest cuts assertion explanations to a few lines outside CI; the report
                # is only useful whole, so it replaces the explanation here.
                report.longrepr = self._full_report(session, excinfo)
        elif session.replay_started and (report.passed or report.failed):
            self._report_divergence(item, session, report, excinfo)
        return report

    def _full_report(
        self, session: RolloutSession, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str:
        lines = render_verdict(session.verdict(), verbose=self.config.get_verbosity())
        return self._whole(lines, excinfo)

    def _whole(self, lines: list[str], excinfo: pytest.ExceptionInfo[BaseException]) -> str:
        entry = excinfo.traceback[-1]
        where = self._display(Path(entry.path)).rstrip(os.sep)
        return "\n".join([*lines, "", f"{where}:{entry.lineno + 1}: AssertionError"])

    def _report_divergence(
        self,
        item: pytest.Item,
        session: RolloutSession,
        report: pytest.TestReport,
        excinfo: pytest.ExceptionInfo[BaseException] | None,
    ) -> None:
        if report.passed and not session.divergences():
            return
        try:
            verdict = session.verdict()
        except RolloutError:
            return
        if verdict.matched:
            return
        session.reported = True
        text = "\n".join(render_verdict(verdict, verbose=self.config.get_verbosity()))
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
        snapshot = sys.modules.get(
            "pytest_rollout.plugin.snapshot"
        )  # RolloutSnapshotExtension in use
        if snapshot is not None:
            self.explained = snapshot.explain_snapshot(config, left, right)
            if self.explained is not None:
                return self.explained
        session, golden = (left, right) if isinstance(left, RolloutSession) else (right, left)
        if not isinstance(session, RolloutSession) or not isinstance(golden, GoldenRef):
            return None
        session.reported = True
        return render_verdict(session.verdict(), verbose=config.get_verbosity())

    # -- the end of the session -------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput["rollout"] = self.tally.to_json()
            return
        self._write_report()
        prunable = exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
        full = self.tally.full_selection is True
        if self.settings.mode is Mode.RECORD and full and prunable:
            for path in self.unused(everything=True):
                path.unlink(missing_ok=True)
                receipt_path(path).unlink(missing_ok=True)
                self.pruned.append(path)
                prune_empty_dirs(path.parent, self.settings.golden_dir)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        data = getattr(node, "workeroutput", {}).get("rollout")
        if data is not None:
            self.workers_reported += 1
            self.tally.merge(data)

    def unused(self, *, everything: bool = False) -> list[Path]:
        golden_dir = self.settings.golden_dir
        if everything or self.tally.full_selection is True:
            scopes = [golden_dir]
        else:
            scopes = [Path(p) for p in self.tally.scopes]
        return find_unused(golden_dir, (Path(p) for p in self.tally.owned), scopes)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if getattr(self.config, "workerinput", None) is not None:
            return
        counts = self.tally.counts
        unused = [] if self.pruned else self.unused()
        problems = self.tally.problems
        page = self.report_written
        if not counts and not unused and not self.pruned and not problems and not page:
            return
        tr = terminalreporter
        tr.section("rollout")
        if page is not None:
            tr.write_line(f"rollout report: {self._display(page).rstrip(os.sep)}")
        if self.settings.mode is Mode.RECORD:
            written = counts[WriteResult.CREATED.value] + counts[WriteResult.UPDATED.value]
            line = (
                f"{written} golden(s) written ({counts[WriteResult.CREATED.value]} created, "
                f"{counts[WriteResult.UPDATED.value]} updated), "
                f"{counts[WriteResult.UNCHANGED.value]} unchanged"
            )
            if counts["not recorded (test failed)"]:
                line += f", {counts['not recorded (test failed)']} not recorded (test failed)"
            tr.write_line(line)
        else:
            line = f"{counts['compared']} golden(s) compared"
            if counts["resealed"]:
                line += f", {counts['resealed']} edited golden(s) accepted and sealed anew"
            tr.write_line(line)
        for problem in problems[:20]:
            tr.write_line(problem)
        for path in self.pruned:
            tr.write_line(f"removed unused golden {self._display(path).rstrip(os.sep)}")
        if unused:
            tr.write_line(f"{len(unused)} unused golden(s): no collected test owns them")
            for path in unused[:20]:
                tr.write_line(f"  {self._display(path).rstrip(os.sep)}")
            if len(unused) > 20:
                tr.write_line(f"  ... and {len(unused) - 20} more")
            tr.write_line("  (pytest --rollout-record over the whole suite removes them)")


# -- fixtures ----------------------------------------------------------------------------


@pytest.fixture
def rollout(request: pytest.FixtureRequest) -> Iterator[RolloutSession]:
    """This test's agent run: wrap providers and tools with it, run the agent inside
    ``rollout.run()``, then ``assert rollout == golden``."""
    plugin = request.config.stash[PLUGIN_KEY]
    session = plugin.session_for(request.node)
    yield session
    plugin.finish(request.node, session)


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> GoldenRef:
    """This test's golden file, for ``assert rollout == golden``."""
    plugin = request.config.stash[PLUGIN_KEY]
    return GoldenRef(str(plugin.golden_for(request.node)))


@pytest.fixture
def recorded_provider(rollout: RolloutSession) -> Any:
    """A provider that serves this test's golden turns, for agents that take one directly."""
    return rollout.recorded_provider()
