"""The command-line flags and ini keys of pytest-rollout, declared in one table each.

Every pytest run loads this module, so it names what the options need itself rather than
import the redactor, the analyzers or the capture for it (tests/test_startup.py checks that
these names stay the library's).
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from ..replay.mode import Mode

__all__ = [
    "ANALYZERS",
    "CAPTURE_DIR_VARIABLE",
    "CAPTURE_LIMIT_KEYS",
    "CAPTURE_LIMIT_VARIABLES",
    "FLOAT_DIGITS",
    "HMAC_KEY_VARIABLE",
    "NETWORK_POLICIES",
    "REDACTION_MODES",
    "UNRECORDED_TOOLS",
    "add_options",
]

#: The redaction modes, the default first (``safety.redact.RedactionMode``).
REDACTION_MODES: Final = ("redacted", "hashed", "full", "none")
#: What a dry replay lets reach the network, the default first (``replay.seal.NetworkPolicy``).
NETWORK_POLICIES: Final = ("loopback", "sealed", "open")
#: What a dry replay does with a golden whose tool calls were not recorded, the default first.
UNRECORDED_TOOLS: Final = ("fail", "warn")
#: The analyzers' names (``analysis.analyzer_options.ANALYZERS``).
ANALYZERS: Final = (
    "cost_anomaly",
    "antipatterns",
    "error_chain",
    "context_window",
    "tool_decisions",
    "request_envelope",
    "causal_graph",
)
#: The decimal places floats are compared to by default
#: (``diff.canonical.CanonicalOptions.float_digits``).
FLOAT_DIGITS: Final = 9
#: The environment variable naming the capture directory (``store.capture.ENV_VAR``).
CAPTURE_DIR_VARIABLE: Final = "ROLLOUT_DIR"
#: The capture limits' ini keys and the environment variables that take precedence over
#: them (``store.capture.INI_KEYS`` and ``ENV_VARS``).
CAPTURE_LIMIT_KEYS: Final = (
    "rollout_capture_max_file_mb",
    "rollout_capture_max_total_mb",
    "rollout_capture_retention_days",
)
CAPTURE_LIMIT_VARIABLES: Final = (
    "ROLLOUT_MAX_FILE_MB",
    "ROLLOUT_MAX_TOTAL_MB",
    "ROLLOUT_RETENTION_DAYS",
)
#: The environment variable of the request hashes' HMAC key
#: (``analysis.analyzer_options.HMAC_KEY_VARIABLE``).
HMAC_KEY_VARIABLE: Final = "ROLLOUT_HMAC_KEY"

#: (flag, keyword arguments of ``addoption``), in the order ``pytest --help`` shows them.
FLAGS: Final[tuple[tuple[str, dict[str, Any]], ...]] = (
    (
        "--rollout-record",
        {
            "action": "store_true",
            "default": False,
            "help": "run providers and tools live and write each test's rollout as its golden",
        },
    ),
    (
        "--rollout-record-new",
        {
            "action": "store_true",
            "default": False,
            "help": "record only the tests that have no golden yet; replay the others",
        },
    ),
    (
        "--rollout-compare",
        {
            "nargs": "?",
            "const": True,
            "default": None,
            "metavar": "DIR",
            "help": "replay each test from its golden and compare (the default); "
            "DIR overrides the golden directory (write --rollout-compare=DIR)",
        },
    ),
    (
        "--rollout-golden-dir",
        {
            "default": None,
            "metavar": "DIR",
            "help": "golden directory for this run (overrides the rollout_golden_dir ini key)",
        },
    ),
    (
        "--rollout-mode",
        {
            "choices": [Mode.DRY.value, Mode.FULL.value],
            "default": None,
            "help": "dry: provider and tools replayed (default); "
            "full: live provider, tools replayed",
        },
    ),
    (
        "--rollout-dir",
        {
            "default": None,
            "metavar": "DIR",
            "help": "capture every run as DIR/YYYY-MM-DD/RUN_ID.jsonl "
            "(the ROLLOUT_DIR environment variable takes precedence)",
        },
    ),
    (
        "--rollout-redact",
        {
            "choices": REDACTION_MODES,
            "default": None,
            "help": "how secrets are written: redacted (the default), hashed, full (verbatim) "
            "or none (events holding one are dropped)",
        },
    ),
    (
        "--rollout-accept-edits",
        {
            "action": "store_true",
            "default": False,
            "help": "accept goldens changed since they were recorded (their receipts no "
            "longer match): compare against them and seal them anew",
        },
    ),
    (
        "--rollout-unverified",
        {
            "action": "store_true",
            "default": False,
            "help": "replay goldens whose receipt is missing or does not match as they are, "
            "without sealing them; every report of their replay says unverified",
        },
    ),
    (
        "--rollout-report",
        {
            "default": None,
            "metavar": "PATH",
            "help": "write one self-contained HTML page of the session's rollout tests, with "
            "each failing run and its golden side by side (a PATH ending in .md: a Markdown "
            "report of the diverged tests instead)",
        },
    ),
    (
        "--rollout-annotations",
        {
            "action": "store_true",
            "default": False,
            "help": "print a GitHub Actions annotation at each diverged test's assert (on by "
            "default when GITHUB_ACTIONS=true)",
        },
    ),
    (
        "--rollout-summary",
        {
            "default": None,
            "metavar": "PATH",
            "help": "append a Markdown summary of the session's rollout tests to PATH (by "
            "default $GITHUB_STEP_SUMMARY when it is set)",
        },
    ),
    (
        "--rollout-otel",
        {
            "default": None,
            "metavar": "FILE",
            "help": "write every rollout test's run as an OpenTelemetry GenAI trace "
            "(OTLP/JSON lines) to FILE at the end of the session",
        },
    ),
    (
        "--rollout-audit",
        {
            "action": "store_true",
            "default": None,
            "help": "append every run, and every call of a state-modifying tool, to the day's "
            "hash-chained audit trail in the capture directory",
        },
    ),
    (
        "--rollout-allow-unconsumed",
        {
            "action": "store_true",
            "default": None,
            "help": "do not fail a test whose run left recorded turns or tool results unused",
        },
    ),
)

#: (ini key, help, type, default); type ``None`` is pytest's plain string.
INI_KEYS: Final[tuple[tuple[str, str, str | None, Any], ...]] = (
    ("rollout_golden_dir", "directory of golden rollouts", None, "golden"),
    ("rollout_mode", "replay mode in compare runs: dry or full", None, "dry"),
    (
        "rollout_ignore",
        "fields left out of every comparison, one [TYPE:]path per line",
        "linelist",
        [],
    ),
    (
        "rollout_volatile",
        "more values that change every run, renamed by first appearance before comparing "
        "(dates, timestamps, uuids and provider ids are built in), one LABEL=REGEX per line",
        "linelist",
        [],
    ),
    (
        "rollout_float_digits",
        f"decimal places floats are rounded to before comparing (default {FLOAT_DIGITS})",
        None,
        "",
    ),
    ("rollout_dir", "capture every run under this directory (YYYY-MM-DD/RUN_ID.jsonl)", None, ""),
    ("rollout_capture_max_file_mb", "size cap of one captured run, in MB (0: none)", None, ""),
    (
        "rollout_capture_max_total_mb",
        "size cap of the capture directory, oldest runs removed first, in MB (0: none)",
        None,
        "",
    ),
    (
        "rollout_capture_retention_days",
        "captured runs older than this many days are removed (0: kept forever)",
        None,
        "",
    ),
    ("rollout_redact", "how secrets are written: redacted, hashed, full or none", None, ""),
    (
        "rollout_redact_patterns",
        "extra redaction rules, one LABEL=REGEX per line",
        "linelist",
        [],
    ),
    (
        "rollout_redact_keys",
        "extra key names whose values are always redacted, one per line",
        "linelist",
        [],
    ),
    (
        "rollout_prices",
        "model prices for the cost of SDK turns, one MODEL=INPUT,OUTPUT (USD per million "
        "tokens) per line, over the built-in table",
        "linelist",
        [],
    ),
    (
        "rollout_analyzers",
        "analyzers to run over every test's events (" + ", ".join(ANALYZERS) + ", or all)",
        "args",
        [],
    ),
    (
        "rollout_cost_anomaly_multiplier",
        "cost.anomaly when a step costs more than this times the earlier steps' mean (default 2.0)",
        None,
        "",
    ),
    (
        "rollout_context_window_threshold",
        "context.window.warning past this fraction of the model's context window (default 0.8)",
        None,
        "",
    ),
    (
        "rollout_context_windows",
        "context window sizes in tokens, one MODEL=TOKENS per line, over the built-in table",
        "linelist",
        [],
    ),
    (
        "rollout_error_chain_calls",
        "how many of the last tool calls error.context lists (default 5)",
        None,
        "",
    ),
    (
        "rollout_audit",
        "append runs and state-modifying tool calls to the day's audit trail",
        "bool",
        False,
    ),
    (
        "rollout_audit_tools",
        "more tool names whose calls are audit actions, one per line",
        "linelist",
        [],
    ),
    (
        "rollout_audit_keywords",
        "more name tokens (delete, approve, ...) that make a tool's calls audit actions",
        "linelist",
        [],
    ),
    (
        "rollout_allow_unconsumed",
        "do not fail tests whose run left recorded turns or tool results unused",
        "bool",
        False,
    ),
    (
        "rollout_network",
        "what a dry replay may connect to outside pytest-rollout: loopback (the default: "
        "this machine only, for local fakes), sealed (nothing) or open (anything)",
        None,
        "loopback",
    ),
    (
        "rollout_allow_hosts",
        "hosts a dry replay may connect to whatever rollout_network says (one per line)",
        "linelist",
        [],
    ),
    (
        "rollout_unrecorded_tools",
        "a golden whose tool calls were not recorded (tools run outside rollout.tools) "
        "fails its dry replay (fail, the default) or only warns (warn)",
        None,
        "fail",
    ),
)


def add_options(parser: pytest.Parser) -> None:
    """Declare every flag (in one option group) and every ini key."""
    group = parser.getgroup("rollout", "golden-run trace diffing of agent runs (pytest-rollout)")
    for flag, kwargs in FLAGS:
        group.addoption(flag, **kwargs)
    for name, help_text, kind, default in INI_KEYS:
        if kind is None:
            parser.addini(name, help_text, default=default)
        else:
            parser.addini(name, help_text, type=kind, default=default)  # type: ignore[arg-type]
