"""The ``rollout`` command's arguments: one function per subcommand.

Building a subcommand's parser costs about half a millisecond (argparse looks up the
translation of its help texts on disk each time), more than a small command's work, so
:func:`build_parser` can build the parser of one subcommand alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, Final, NoReturn

from .. import __version__
from ..safety.sanitize import sanitize
from .commands import EXIT_ERROR
from .otel_commands import add_export_parser, add_import_parser
from .serve_command import add_serve_parser

__all__ = ["COMMAND_NAMES", "FORK_FORMATS", "build_parser"]

#: ``rollout fork --format``'s choices: the values of ``replay.fork.ForkFormat``, written
#: here so that building the parser does not load the fork (a test keeps them the same).
FORK_FORMATS: Final = ("neutral", "openai", "responses", "anthropic", "gemini")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        # The message can quote arguments (file names) verbatim: sanitize it like any output.
        self.exit(EXIT_ERROR, f"{self.prog}: error: {sanitize(message)}\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``rollout`` and its subcommands; given one of :data:`COMMAND_NAMES`,
    the parser of that subcommand alone under it (which parses that subcommand's arguments
    the same way, and says so in the same words)."""
    parser = _Parser(prog="rollout", description="Forensics for agent rollout files.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, add in _SUBCOMMANDS.items():
        if command is None or name == command:
            add(commands)
    return parser


def _add_diff(commands: Any) -> None:
    diff = commands.add_parser(
        "diff",
        help="compare two rollouts step by step",
        description="Compare rollout A (the reference) with rollout B and show the first "
        "step where they part. Exit 0 when identical, 1 when they differ, 2 on bad input.",
    )
    diff.add_argument(
        "a", metavar="A.jsonl", help="the reference run (e.g. the golden), or its run id"
    )
    diff.add_argument("b", metavar="B.jsonl", help="the run to check, or its run id")
    diff.add_argument(
        "--ignore",
        metavar="PATH",
        action="append",
        default=[],
        help="also ignore this field, as [TYPE:]path (repeatable), e.g. "
        "'tool.call.completed:output.fetched_at' or '**.request_id'",
    )
    diff.add_argument(
        "--drop-key",
        metavar="KEY",
        action="append",
        default=[],
        help="also drop this key from the top level of every event's data (repeatable)",
    )
    diff.add_argument(
        "--volatile",
        metavar="LABEL=REGEX",
        action="append",
        default=[],
        help="also rename what REGEX matches, by first appearance, as <LABEL#1>, <LABEL#2>... "
        "before comparing, as dates, uuids and provider ids are (repeatable), e.g. "
        "'order=ORD-[0-9]{6}'",
    )
    diff.add_argument(
        "--no-volatile",
        action="store_true",
        help="compare dates, timestamps, uuids and provider ids as they are (the built-in "
        "kinds off; --volatile patterns still apply)",
    )
    diff.add_argument(
        "--float-digits",
        metavar="N",
        help="round floats to N decimal places before comparing (default 9)",
    )
    diff.add_argument(
        "--format",
        choices=("text", "json", "markdown"),
        default="text",
        help="text (default); json: the drift report as one JSON object (its schema: "
        "docs/schemas/diff-1.json); markdown: the divergence for a review comment",
    )
    diff.add_argument(
        "--json",
        action="store_const",
        const="json",
        dest="format",
        help="the same as --format json",
    )
    diff.add_argument(
        "--agent",
        metavar="NAME",
        help="compare one agent's events only (a run with several agents): the runs' start "
        "and end and the events NAME did, its turns numbered from 1 in each run",
    )
    diff.add_argument(
        "--max-events",
        metavar="N",
        help="refuse a file of more than N events (default 100000): for files you trust",
    )
    diff.add_argument(
        "--max-bytes",
        metavar="SIZE",
        help="refuse a file of more than SIZE bytes (default 256M); SIZE is bytes, or a "
        "number with K, M, G or T (powers of 1024), e.g. 600M or 2G: for files you trust",
    )


def _add_fork(commands: Any) -> None:
    fork = commands.add_parser(
        "fork",
        help="rebuild the conversation up to a step, or write the run up to it as a new run",
        description="Rebuild the conversation of a rollout up to and including step N and "
        "print it as JSON, ready to hand to a live model. Rollouts can be untrusted, so the "
        "system prompt, tool calls and tool results are left out unless asked for. With "
        "--out, also write the run up to step N as a new rollout of its own (a new run id, "
        "the run it was forked from, sealed with a receipt). Exit 0 when done, 2 on bad input.",
    )
    fork.add_argument("file", metavar="FILE.jsonl", help="the rollout to fork, or its run id")
    fork.add_argument("--step", type=int, required=True, help="the last step to keep")
    fork.add_argument(
        "--format",
        choices=FORK_FORMATS,
        default=FORK_FORMATS[0],
        help="message shape: neutral, openai (Chat Completions), responses (OpenAI "
        "Responses API input items), anthropic (Messages) or gemini (generateContent contents)",
    )
    fork.add_argument("--include-system", action="store_true", help="keep the system prompt")
    fork.add_argument(
        "--include-tool-calls", action="store_true", help="keep the assistant's tool calls"
    )
    fork.add_argument(
        "--include-tool-results", action="store_true", help="keep the tool result messages"
    )
    fork.add_argument(
        "-o",
        "--out",
        metavar="NEW.jsonl",
        help="write the run's events up to step N as a new rollout, sealed with its receipt "
        "(the message options shape only the conversation printed)",
    )
    fork.add_argument(
        "--force",
        action="store_true",
        help="replace NEW.jsonl (and its receipt) when it exists",
    )
    fork.add_argument(
        "--json",
        action="store_true",
        help="print the conversation with the fork's report (run_id, events_replayed, "
        "step_count, original_step_count, messages_restored) as JSON",
    )


def _add_check(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="check that every tool call was announced and completed",
        description="Check each rollout offline: every tool call answers a call the turn "
        "before it announced (same name and arguments), every call completes, no call_id is "
        "reused; and a file with a receipt (FILE.jsonl.receipt) still has the bytes it "
        "vouches for. Exit 0 when all match, 1 on a mismatch or a receipt that does not "
        "match (or is corrupt), 2 when a file cannot be loaded. A missing receipt is shown, "
        "not counted.",
    )
    check.add_argument(
        "files",
        metavar="FILE.jsonl",
        nargs="+",
        help="the rollouts to check, or their run ids (a directory: every *.jsonl under it)",
    )
    check.add_argument("--json", action="store_true", help="print the reports as JSON")
    check.add_argument(
        "--receipt",
        action="store_true",
        help="also verify each run's replay receipt against the run and its golden: the "
        "golden is the file replayed, still vouched for by the receipt the replay names, and "
        "the counts and canonical digests are computed again",
    )
    check.add_argument(
        "--golden",
        metavar="GOLDEN.jsonl",
        default=None,
        help="with --receipt: the golden the runs replayed (default: the path each replay "
        "receipt names, from the current directory)",
    )


def _add_seal(commands: Any) -> None:
    seal = commands.add_parser(
        "seal",
        help="accept rollouts as they are: write their receipts",
        description="Write a receipt beside each rollout (FILE.jsonl.receipt) that vouches "
        "for its exact bytes: the explicit way to accept a deliberate hand edit of a golden. "
        "Each file is validated by the loader first; when any is refused, nothing is sealed. "
        "A receipt shows a file is unchanged since it was sealed, not who sealed it. "
        "Exit 0 when sealed, 2 on bad input.",
    )
    seal.add_argument("files", metavar="FILE.jsonl", nargs="+", help="the rollouts to seal")
    seal.add_argument(
        "--redaction-mode",
        metavar="MODE",
        help="the redaction mode the file was recorded with "
        "(default: the existing receipt's, else 'unknown')",
    )
    seal.add_argument(
        "--rules-sha256",
        metavar="HEX",
        help="the sha256 of the redaction rules it was recorded with "
        "(default: the existing receipt's, else empty: unknown)",
    )


def _add_show(commands: Any) -> None:
    show = commands.add_parser(
        "show",
        help="print a rollout as a readable timeline, with its totals",
        description="Print one line per event (step, seq, type and what it did), then the "
        "totals of the whole run. Filters choose which events are listed.",
    )
    show.add_argument("file", metavar="FILE.jsonl", help="the rollout to show, or its run id")
    show.add_argument(
        "--type",
        metavar="TYPE",
        action="append",
        default=[],
        help="only events of this type, exact or a dotted prefix such as 'tool.' (repeatable)",
    )
    show.add_argument("--step", metavar="N|A-B", help="only this step, or this range of steps")
    show.add_argument(
        "--grep", metavar="TEXT", help="only events whose JSON contains TEXT (any case)"
    )
    show.add_argument(
        "--graph",
        action="store_true",
        help="print the run's causal graph instead: its turns and tool calls, and which "
        "earlier result each turn saw (context) or each call was given (data_flow)",
    )


def _add_audit(commands: Any) -> None:
    audit = commands.add_parser(
        "audit",
        help="verify an audit trail's hash chain",
        description="Work with the audit trail (<rollout_dir>/<YYYY-MM-DD>/audit.jsonl).",
    )
    audit_commands = audit.add_subparsers(
        dest="audit_command", metavar="COMMAND", required=True, parser_class=_Parser
    )
    audit_verify = audit_commands.add_parser(
        "verify",
        help="check that no entry was edited, deleted, inserted or moved",
        description="Walk the hash chain of an audit file and report the first entry that "
        "breaks it, or print its head (the last entry's hash). Exit 0 when the chain is "
        "intact, 1 when it breaks (or does not end at --head), 2 when the file cannot be "
        "read. This is tamper detection, not prevention: anyone who can write the file can "
        "rewrite the whole chain so that it verifies again, and deleting entries from the "
        "end leaves a shorter chain that still verifies. Both are detected only against a "
        "head hash you kept somewhere the writer cannot change: pass it as --head.",
    )
    audit_verify.add_argument("file", metavar="FILE", help="the audit file (audit.jsonl)")
    audit_verify.add_argument(
        "--head",
        metavar="HASH",
        help="the head hash you kept: the chain must end at it (64 hex digits, or "
        "sha256:<first 16 or more>, as printed)",
    )


def _add_view(commands: Any) -> None:
    view = commands.add_parser(
        "view",
        help="look at rollouts in a browser",
        description="Write one self-contained HTML page showing the rollouts (a file, every "
        "*.jsonl under a directory, or two files and their difference) and print its path; "
        "with --serve, serve it on 127.0.0.1 instead, behind a random token.",
    )
    view.add_argument(
        "paths",
        metavar="FILE|DIR",
        nargs="+",
        help="a rollout, a directory, or two rollouts (a rollout may be named by its run id)",
    )
    view.add_argument(
        "--out",
        metavar="PATH",
        help="where to write the page (default: a new file in the temporary directory)",
    )
    view.add_argument(
        "--serve",
        action="store_true",
        help="serve the page on 127.0.0.1 (a free port) until interrupted, instead of writing it",
    )


#: Each subcommand's parser, in the order ``rollout --help`` lists them.
_SUBCOMMANDS: Final[dict[str, Callable[[Any], None]]] = {
    "diff": _add_diff,
    "fork": _add_fork,
    "check": _add_check,
    "seal": _add_seal,
    "show": _add_show,
    "audit": _add_audit,
    "view": _add_view,
    "import": add_import_parser,
    "export": add_export_parser,
    "serve": add_serve_parser,
}

#: The subcommands' names.
COMMAND_NAMES: Final = frozenset(_SUBCOMMANDS)
