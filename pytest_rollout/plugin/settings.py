"""Settings parsed once: the session's from flags and ini keys, each test's from its marker.

Every bad value is a ``pytest.UsageError`` that names the flag, ini key or marker keyword
the user wrote, raised before any test runs.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import pytest

from ..errors import RolloutError
from ..replay.mode import Mode
from .flags import (
    CAPTURE_DIR_VARIABLE,
    CAPTURE_LIMIT_KEYS,
    CAPTURE_LIMIT_VARIABLES,
    FLOAT_DIGITS,
    HMAC_KEY_VARIABLE,
    NETWORK_POLICIES,
    REDACTION_MODES,
    UNRECORDED_TOOLS,
)
from .volatile_settings import hook_volatile, ini_volatile, marker_exact, marker_volatile

if TYPE_CHECKING:  # start-up: what only a rollout test needs is imported when it is used
    from ..analysis.analyzer_options import AnalyzerOptions
    from ..diff.volatile import Volatile
    from ..safety.redact import RedactionMode, Rule
    from ..sdk.pricing import Price
    from ..store.capture import CaptureLimits

__all__ = ["MARKER_DOC", "HookSettings", "MarkerOptions", "Settings", "parse_rule"]

MARKER_DOC: Final = (
    "rollout(golden=None, ignore=(), drop_keys=(), mode=None, allow_unconsumed=None, "
    "replay=True, redact=None, analyzers=(), network=None, volatile=True, exact=(), "
    "unrecorded_tools=None, model_calls=True): per-test "
    "settings of pytest-rollout: the golden's file name, fields to leave out of the "
    "comparison, the replay mode (dry or full), whether unconsumed recorded turns or tool "
    "results are allowed, replay=False for tests whose providers and tools are deterministic "
    "fakes (run live, no golden), the redaction mode (redacted, hashed, full or none), "
    "analyzers to turn on, what a dry replay may connect to (loopback, sealed or open), "
    "volatile=False to compare dates, uuids and provider ids as they are (or a list of "
    "LABEL=REGEX patterns to rename as well), exact=[paths] whose values are never renamed, "
    "and model_calls=False for an agent that answers without a model on purpose"
)
_WHOLE_NUMBER: Final = re.compile(r"[0-9]+")

#: The ini key behind each analyzer option, for error messages.
_ANALYZER_KEYS: Final = {
    "cost_multiplier": "rollout_cost_anomaly_multiplier",
    "context_threshold": "rollout_context_window_threshold",
    "error_chain_calls": "rollout_error_chain_calls",
}


@dataclass(frozen=True, slots=True)
class Settings:
    """The session-wide settings, resolved from flags and ini keys.

    Every value is checked when the session starts. The redaction mode, the capture limits,
    the prices and the analyzers' options are built there only when the user set them;
    left at their defaults, they are built when a rollout test first asks for them, so a
    session without one never loads the redactor, the capture or the analyzers.
    """

    mode: Mode
    golden_dir: Path
    run_dir: Path | None
    ignore: tuple[str, ...]
    allow_unconsumed: bool
    #: ``--rollout-record-new``: a test that has a golden is replayed, in ``replay_mode``.
    record_new: bool = False
    replay_mode: Mode = Mode.DRY
    capture_root: Path | None = None
    redact_rules: tuple[Rule, ...] = ()
    redact_keys: tuple[str, ...] = ()
    accept_edits: bool = False
    unverified: bool = False
    report_path: Path | None = None
    otel_path: Path | None = None
    #: ``--rollout-annotations``, or GitHub Actions' ``GITHUB_ACTIONS=true``.
    annotations: bool = False
    #: ``--rollout-summary``, or GitHub Actions' ``GITHUB_STEP_SUMMARY``.
    summary_path: Path | None = None
    audit: bool = False
    audit_tools: tuple[str, ...] = ()
    audit_keywords: tuple[str, ...] = ()
    #: ``rollout_unrecorded_tools``: whether a dry replay of a golden with unrecorded tool
    #: calls fails (else it warns).
    fail_unrecorded: bool = True
    #: ``rollout_network``, checked, and ``rollout_allow_hosts``.
    network: str = NETWORK_POLICIES[0]
    allow_hosts: tuple[str, ...] = ()
    #: The redaction mode's name, checked (see :attr:`redaction`).
    redaction_name: str = "redacted"
    #: What the ini keys set, checked; ``None``: the default, built on first use.
    given_capture_limits: CaptureLimits | None = None
    given_prices: Mapping[str, Price] | None = None
    given_analyzers: AnalyzerOptions | None = None
    #: ``rollout_volatile``: the declared patterns, checked, as ``(label, regex)`` pairs.
    volatile: tuple[tuple[str, str], ...] = ()
    #: ``rollout_float_digits``, checked.
    float_digits: int = FLOAT_DIGITS

    @property
    def redaction(self) -> RedactionMode:
        from ..safety.redact import RedactionMode

        return RedactionMode(self.redaction_name)

    @property
    def capture_limits(self) -> CaptureLimits:
        if self.given_capture_limits is not None:
            return self.given_capture_limits
        from ..store.capture import CaptureLimits

        return CaptureLimits()

    @property
    def prices(self) -> Mapping[str, Price]:
        if self.given_prices is not None:
            return self.given_prices
        from ..sdk.pricing import PRICES

        return PRICES

    @property
    def analyzers(self) -> AnalyzerOptions:
        if self.given_analyzers is not None:
            return self.given_analyzers
        from ..analysis.analyzer_options import AnalyzerOptions

        return AnalyzerOptions()

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        invocation = config.invocation_params.dir
        mode = _mode(config)
        replay_mode = _replay_mode(config)
        capture_root, capture_limits = _capture(config)
        run_dir: Path | None = None
        if capture_root is None and (cache := getattr(config, "cache", None)) is not None:
            run_dir = cache.mkdir("rollout") / "runs"  # the last run of each test
        audit = config.getoption("rollout_audit") or bool(config.getini("rollout_audit"))
        if audit and capture_root is None:
            raise pytest.UsageError(
                "the audit trail is kept in the capture directory: set ROLLOUT_DIR, "
                "--rollout-dir or the ini key rollout_dir to use --rollout-audit or rollout_audit"
            )
        allow = config.getoption("rollout_allow_unconsumed")
        report = config.getoption("rollout_report")
        otel = config.getoption("rollout_otel")
        return cls(
            mode=mode,
            record_new=bool(config.getoption("rollout_record_new")),
            replay_mode=replay_mode,
            golden_dir=_golden_dir(config),
            run_dir=run_dir,
            ignore=_ignore(config),
            allow_unconsumed=bool(config.getini("rollout_allow_unconsumed"))
            if allow is None
            else bool(allow),
            capture_root=capture_root,
            given_capture_limits=capture_limits,
            redaction_name=_redaction(config),
            redact_rules=_redact_rules(config),
            redact_keys=_redact_keys(config),
            accept_edits=bool(config.getoption("rollout_accept_edits")),
            unverified=_unverified(config),
            given_prices=_prices(config),
            given_analyzers=_analyzer_options(config),
            report_path=None if report is None else invocation / str(report),
            otel_path=None if otel is None else invocation / str(otel),
            annotations=bool(config.getoption("rollout_annotations"))
            or os.environ.get("GITHUB_ACTIONS") == "true",
            summary_path=_summary_path(config, invocation),
            audit=audit,
            audit_tools=tuple(str(t) for t in config.getini("rollout_audit_tools")),
            audit_keywords=tuple(str(k) for k in config.getini("rollout_audit_keywords")),
            fail_unrecorded=_fail_unrecorded(config),
            network=_network(config),
            allow_hosts=tuple(str(h).strip() for h in config.getini("rollout_allow_hosts")),
            volatile=ini_volatile(config),
            float_digits=_float_digits(config),
        )


def _unverified(config: pytest.Config) -> bool:
    unverified = bool(config.getoption("rollout_unverified"))
    if unverified and config.getoption("rollout_accept_edits"):
        raise pytest.UsageError(
            "--rollout-unverified and --rollout-accept-edits cannot be combined: an edited "
            "golden is either replayed as it is, unsealed, or accepted and sealed anew"
        )
    return unverified


def _fail_unrecorded(config: pytest.Config) -> bool:
    value = str(config.getini("rollout_unrecorded_tools")).strip() or UNRECORDED_TOOLS[0]
    if value not in UNRECORDED_TOOLS:
        raise pytest.UsageError(f"rollout_unrecorded_tools must be fail or warn, got {value!r}")
    return value == "fail"


def _network(config: pytest.Config) -> str:
    value = str(config.getini("rollout_network")).strip() or NETWORK_POLICIES[0]
    if value not in NETWORK_POLICIES:
        raise pytest.UsageError(
            f"rollout_network must be one of {', '.join(NETWORK_POLICIES)}, got {value!r}"
        )
    return value


def _summary_path(config: pytest.Config, invocation: Path) -> Path | None:
    """Where the Markdown summary is appended: the flag's path, else the job summary file
    GitHub Actions names (the CI plugin writes it from the controller alone)."""
    given = config.getoption("rollout_summary") or os.environ.get("GITHUB_STEP_SUMMARY")
    return None if not given else invocation / str(given)


def _mode(config: pytest.Config) -> Mode:
    everything = bool(config.getoption("rollout_record"))
    new = bool(config.getoption("rollout_record_new"))
    if everything and new:
        raise pytest.UsageError("--rollout-record and --rollout-record-new cannot be combined")
    flag = "--rollout-record" if everything else "--rollout-record-new"
    if (everything or new) and config.getoption("rollout_compare") is not None:
        raise pytest.UsageError(f"{flag} and --rollout-compare cannot be combined")
    return Mode.RECORD if everything or new else _replay_mode(config)


def _replay_mode(config: pytest.Config) -> Mode:
    name = config.getoption("rollout_mode") or str(config.getini("rollout_mode"))
    if name not in (Mode.DRY.value, Mode.FULL.value):
        raise pytest.UsageError(f"rollout_mode must be dry or full, got {name!r}")
    return Mode(name)


def _golden_dir(config: pytest.Config) -> Path:
    invocation = config.invocation_params.dir
    compare = config.getoption("rollout_compare")
    if isinstance(compare, str):
        golden_dir = invocation / compare
        if compare.endswith(".py") or "::" in compare or golden_dir.is_file():
            raise pytest.UsageError(
                f"--rollout-compare takes a golden directory, got {compare!r}; "
                f"write --rollout-compare=DIR, or put test paths before the flag"
            )
        return golden_dir
    if config.getoption("rollout_golden_dir"):
        return invocation / str(config.getoption("rollout_golden_dir"))
    return config.rootpath / str(config.getini("rollout_golden_dir"))


def _capture(config: pytest.Config) -> tuple[Path | None, CaptureLimits | None]:
    """The capture root (``None``: capture is off) and the limits the ini keys set
    (``None``: the defaults)."""
    where = (
        os.environ.get(CAPTURE_DIR_VARIABLE),
        config.getoption("rollout_dir"),
        str(config.getini("rollout_dir")),
    )
    # Each limit from its environment variable when set, else from its ini key.
    caps = [
        (var, os.environ[var])
        if os.environ.get(var, "").strip()
        else (key, str(config.getini(key)))
        for var, key in zip(CAPTURE_LIMIT_VARIABLES, CAPTURE_LIMIT_KEYS, strict=True)
    ]
    if not any((text or "").strip() for text in (*where, *(text for _, text in caps))):
        return None, None  # capture is off and nothing to check: not even loaded
    from ..store.capture import CaptureLimits, resolve_root

    try:
        root = resolve_root(os.environ, where[1], where[2], config.invocation_params.dir)
        names, texts = zip(*caps, strict=True)
        given = any(text.strip() for text in texts)
        limits = CaptureLimits.from_ini(*texts, names=names) if given else None
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    return root, limits


def _redaction(config: pytest.Config) -> str:
    name = config.getoption("rollout_redact") or str(config.getini("rollout_redact"))
    if name and name not in REDACTION_MODES:
        raise pytest.UsageError(
            f"rollout_redact must be one of {', '.join(REDACTION_MODES)}, got {name!r}"
        )
    return str(name or REDACTION_MODES[0])


def _redact_rules(config: pytest.Config) -> tuple[Rule, ...]:
    """The ini key's rules (the hooks' rules are asked for per test: see ``HookSettings``)."""
    try:
        return tuple(parse_rule(str(line)) for line in config.getini("rollout_redact_patterns"))
    except ValueError as exc:
        raise pytest.UsageError(f"rollout_redact_patterns: {exc}") from None


def parse_rule(line: str) -> Rule:
    """A ``LABEL=REGEX`` redaction rule; ``ValueError`` says what is wrong with it."""
    label, sep, pattern = line.partition("=")
    if not sep or not label.strip() or not pattern.strip():
        raise ValueError(f"write each rule as LABEL=REGEX, got {line!r}")
    from ..safety.redact import Rule

    try:
        return Rule(label.strip(), pattern.strip())
    except RolloutError as exc:
        raise ValueError(str(exc)) from None


def _redact_keys(config: pytest.Config) -> tuple[str, ...]:
    return tuple(str(k) for k in config.getini("rollout_redact_keys"))


def _prices(config: pytest.Config) -> Mapping[str, Price] | None:
    """The built-in table with the ini key's prices over it (``None``: no price given)."""
    lines = config.getini("rollout_prices")
    if not lines:
        return None
    from ..sdk.pricing import PRICES, parse_price

    prices = dict(PRICES)
    for line in lines:
        try:
            model, price = parse_price(str(line))
        except ValueError as exc:
            raise pytest.UsageError(f"rollout_prices: {exc}") from None
        prices[model] = price
    return MappingProxyType(prices)


def _ignore(config: pytest.Config) -> tuple[str, ...]:
    ignore = tuple(str(p) for p in config.getini("rollout_ignore"))
    if not ignore:
        return ignore
    from ..diff.canonical import DEFAULT_OPTIONS

    try:
        DEFAULT_OPTIONS.extended(ignore_paths=ignore)
    except ValueError as exc:
        raise pytest.UsageError(f"rollout_ignore: {exc}") from None
    return ignore


def _float_digits(config: pytest.Config) -> int:
    text = str(config.getini("rollout_float_digits")).strip()
    if not text:
        return FLOAT_DIGITS
    if not _WHOLE_NUMBER.fullmatch(text):
        raise pytest.UsageError(
            f"rollout_float_digits must be a whole number of decimal places (0 or more), "
            f"got {text!r}"
        )
    return int(text)


def _analyzer_options(config: pytest.Config) -> AnalyzerOptions | None:
    """The analyzers the ini keys turn on, and their settings (``None``: none is set)."""
    if not _analyzers_set(config):
        return None
    from ..analysis.analyzer_options import AnalyzerOptions, parse_analyzers

    try:
        options: dict[str, Any] = {
            "enabled": parse_analyzers(str(n) for n in config.getini("rollout_analyzers")),
            "context_windows": _context_windows(config),
        }
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


def _analyzers_set(config: pytest.Config) -> bool:
    """Whether an analyzer ini key, or the environment variable of the HMAC key, is set."""
    if os.environ.get(HMAC_KEY_VARIABLE):
        return True
    for key in ("rollout_analyzers", "rollout_context_windows", *_ANALYZER_KEYS.values()):
        value = config.getini(key)
        if value.strip() if isinstance(value, str) else value:
            return True
    return False


def _context_windows(config: pytest.Config) -> Mapping[str, int]:
    from ..analysis.analyzer_options import CONTEXT_WINDOWS

    windows = dict(CONTEXT_WINDOWS)
    for line in config.getini("rollout_context_windows"):
        model, sep, tokens = str(line).partition("=")
        if not sep or not model.strip() or not tokens.strip().isdigit():
            raise ValueError(
                f"rollout_context_windows: write each line as MODEL=TOKENS, got {line!r}"
            )
        windows[model.strip()] = int(tokens)
    return MappingProxyType(windows)


@dataclass(frozen=True, slots=True)
class MarkerOptions:
    """What ``@pytest.mark.rollout(...)`` says for one test (``None``: not said)."""

    golden: str | None = None
    ignore: tuple[str, ...] = ()
    drop_keys: tuple[str, ...] = ()
    mode: Mode | None = None
    allow_unconsumed: bool | None = None
    replay: bool = True
    redact: RedactionMode | None = None
    analyzers: frozenset[str] = frozenset()
    network: str | None = None
    #: ``volatile=``: the built-in kinds on or off and the patterns it declares (``None``:
    #: not said, the built-in kinds alone).
    volatile: Volatile | None = None
    #: ``exact=``: ``[TYPE:]path`` patterns whose values are compared as they are.
    exact: tuple[str, ...] = ()
    #: ``unrecorded_tools=``: ``"fail"`` or ``"warn"`` for this test's dry replay of a golden
    #: with unrecorded tool calls (``None``: the ini key's).
    unrecorded_tools: str | None = None
    #: ``model_calls=False``: the agent answers without a model on purpose, so a recorded
    #: run with no model turn is not taken for a client the plugin did not see.
    model_calls: bool = True

    @classmethod
    def check_keywords(cls, item: pytest.Item) -> None:
        """A usage error when ``item``'s ``rollout`` marker takes a keyword it does not know
        (a typo would otherwise be silently ignored), naming the keywords it takes."""
        marker = item.get_closest_marker("rollout")
        if marker is None:
            return
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(marker.kwargs) - set(known))
        if marker.args or unknown:
            said = ", ".join(unknown) if unknown else "positional arguments"
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.rollout does not take {said}; "
                f"its keywords are {', '.join(known)}"
            )

    @classmethod
    def from_item(cls, item: pytest.Item) -> MarkerOptions:
        """The closest ``rollout`` marker of ``item``; a bad value is a ``RolloutError``
        that fails this test only."""
        from ..analysis.analyzer_options import parse_analyzers
        from ..safety.redact import RedactionMode

        marker = item.get_closest_marker("rollout")
        kwargs: Mapping[str, Any] = marker.kwargs if marker else {}
        mode = kwargs.get("mode")
        if mode is not None and mode not in (Mode.DRY.value, Mode.FULL.value):
            raise RolloutError(
                f"@pytest.mark.rollout(mode=...) must be 'dry' or 'full', got {mode!r}"
            )
        redact = kwargs.get("redact")
        if redact is not None and redact not in REDACTION_MODES:
            raise RolloutError(
                f"@pytest.mark.rollout(redact=...) must be one of "
                f"{', '.join(REDACTION_MODES)}, got {redact!r}"
            )
        names = kwargs.get("analyzers") or ()
        try:
            analyzers = parse_analyzers([names] if isinstance(names, str) else names)
        except ValueError as exc:
            raise RolloutError(f"@pytest.mark.rollout(analyzers=...): {exc}") from None
        allow = kwargs.get("allow_unconsumed")
        golden = kwargs.get("golden")
        network = kwargs.get("network")
        if network is not None and network not in NETWORK_POLICIES:
            raise RolloutError(
                f"@pytest.mark.rollout(network=...) must be one of "
                f"{', '.join(NETWORK_POLICIES)}, got {network!r}"
            )
        unrecorded = kwargs.get("unrecorded_tools")
        if unrecorded is not None and unrecorded not in UNRECORDED_TOOLS:
            raise RolloutError(
                f"@pytest.mark.rollout(unrecorded_tools=...) must be 'fail' or 'warn', "
                f"got {unrecorded!r}"
            )
        return cls(
            golden=None if golden is None else str(golden),
            ignore=tuple(kwargs.get("ignore", ())),
            drop_keys=tuple(kwargs.get("drop_keys", ())),
            mode=None if mode is None else Mode(mode),
            allow_unconsumed=None if allow is None else bool(allow),
            replay=kwargs.get("replay") is not False,
            redact=None if redact is None else RedactionMode(redact),
            analyzers=frozenset(analyzers),
            network=network,
            volatile=marker_volatile(kwargs.get("volatile")),
            exact=marker_exact(kwargs.get("exact")),
            unrecorded_tools=unrecorded,
            model_calls=kwargs.get("model_calls") is not False,
        )


@dataclass(frozen=True, slots=True)
class HookSettings:
    """What the ``pytest_rollout_*`` hooks add for one test, asked through the test's own
    path-scoped hooks: a conftest counts for the tests below it, never for its siblings."""

    redact_rules: tuple[Rule, ...] = ()
    redact_keys: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    #: ``pytest_rollout_volatile``'s patterns, checked, as ``(label, regex)`` pairs.
    volatile: tuple[tuple[str, str], ...] = ()
    #: ``pytest_rollout_rebuild_result`` as the engine calls it, when a plugin implements it.
    rebuild: Callable[[str, Any], Any] | None = None

    @classmethod
    def from_item(cls, item: pytest.Item) -> HookSettings:
        """The hooks' answers for ``item``; a bad rule is a ``RolloutError`` for this test."""
        hook, config = item.ihook, item.config
        rules: list[Rule] = []
        for found in hook.pytest_rollout_redact_patterns(config=config):
            for label, pattern in found or ():
                try:
                    rules.append(parse_rule(f"{label}={pattern}"))
                except ValueError as exc:
                    raise RolloutError(f"pytest_rollout_redact_patterns: {exc}") from None
        keys = [
            str(k) for found in hook.pytest_rollout_redact_keys(config=config) for k in found or ()
        ]
        ignore = [
            str(p)
            for found in hook.pytest_rollout_ignore(config=config, item=item)
            for p in found or ()
        ]
        volatile = hook_volatile(hook, config, item)
        return cls(tuple(rules), tuple(keys), tuple(ignore), volatile, rebuild=_rebuild_hook(hook))


def _rebuild_hook(hook: Any) -> Callable[[str, Any], Any] | None:
    """The ``pytest_rollout_rebuild_result`` hooks that reach a test (its conftests and
    plugins), as one callable; ``None`` when nothing implements it."""
    rebuild = hook.pytest_rollout_rebuild_result
    if not rebuild.get_hookimpls():
        return None
    return lambda type_name, value: rebuild(type_name=type_name, value=value)
