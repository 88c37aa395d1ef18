"""The ``rollout`` command: forensics on rollout files outside pytest.

Exit status: 0 when the answer is "no difference", 1 when differences were found, 2 when an
input could not be loaded or the arguments are wrong (a refusal is one line, never a
traceback).
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO

from . import __version__
from .canonical import DEFAULT_OPTIONS, CanonicalOptions
from .compare import compare
from .errors import RolloutError
from .fork import ForkFormat
from .fork import fork as fork_run
from .loader import load
from .report import Labels, render_divergence, render_header, render_score
from .sanitize import sanitize, terminal_json
from .score import score, summarize

__all__ = ["main"]

EXIT_SAME = 0
EXIT_DIFFERENT = 1
EXIT_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        # The message can quote arguments (file names) verbatim: sanitize it like any output.
        self.exit(EXIT_ERROR, f"{self.prog}: error: {sanitize(message)}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rollout", description="Forensics for agent rollout files.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    diff = commands.add_parser(
        "diff",
        help="compare two rollouts step by step",
        description="Compare rollout A (the reference) with rollout B and show the first "
        "step where they part. Exit 0 when identical, 1 when they differ, 2 on bad input.",
    )
    diff.add_argument("a", metavar="A.jsonl", help="the reference run (e.g. the golden)")
    diff.add_argument("b", metavar="B.jsonl", help="the run to check")
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
    fork = commands.add_parser(
        "fork",
        help="rebuild the conversation up to a step, as JSON",
        description="Rebuild the conversation of a rollout up to and including step N and "
        "print it as JSON, ready to hand to a live model. Rollouts can be untrusted, so the "
        "system prompt, tool calls and tool results are left out unless asked for.",
    )
    fork.add_argument("file", metavar="FILE.jsonl", help="the rollout to fork")
    fork.add_argument("--step", type=int, required=True, help="the last step to keep")
    fork.add_argument(
        "--format",
        choices=[f.value for f in ForkFormat],
        default=ForkFormat.NEUTRAL.value,
        help="message shape: neutral, openai (Chat Completions) or anthropic (Messages)",
    )
    fork.add_argument("--include-system", action="store_true", help="keep the system prompt")
    fork.add_argument(
        "--include-tool-calls", action="store_true", help="keep the assistant's tool calls"
    )
    fork.add_argument(
        "--include-tool-results", action="store_true", help="keep the tool result messages"
    )
    return parser


def _fork(args: argparse.Namespace, out: TextIO) -> int:
    result = fork_run(
        load(args.file).events,
        args.step,
        format=args.format,
        include_system=args.include_system,
        include_tool_calls=args.include_tool_calls,
        include_tool_results=args.include_tool_results,
    )
    out.write(terminal_json(result.to_json_obj()) + "\n")
    return EXIT_SAME


def _diff(args: argparse.Namespace, out: TextIO) -> int:
    options: CanonicalOptions = DEFAULT_OPTIONS
    if args.ignore or args.drop_key:
        try:
            options = options.extended(drop_keys=args.drop_key, ignore_paths=args.ignore)
        except ValueError as exc:
            raise _Usage(str(exc)) from None
    run_a = load(args.a)
    run_b = load(args.b)
    comparison = compare(run_a.events, run_b.events, options)
    sum_a = summarize(run_a.events)
    sum_b = summarize(run_b.events)
    labels = Labels()
    lines = render_header(sum_a, sum_b, comparison, labels)
    lines.append(f"Winner: {render_score(score(sum_a, sum_b), labels)}")
    if not comparison.identical:
        lines.append("")
        lines.extend(render_divergence(comparison, labels))
    out.write("\n".join(lines) + "\n")
    return EXIT_SAME if comparison.identical else EXIT_DIFFERENT


class _Usage(Exception):
    pass


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the ``rollout`` command; returns the exit status."""
    out = sys.stdout if out is None else out
    args = _parser().parse_args(argv)
    try:
        if args.command == "diff":
            return _diff(args, out)
        if args.command == "fork":
            return _fork(args, out)
    except RolloutError as exc:
        print(f"rollout: error: {sanitize(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except _Usage as exc:
        print(f"rollout {args.command}: error: {sanitize(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    raise AssertionError(f"unhandled command {args.command!r}")  # pragma: no cover


def entry() -> NoReturn:
    # A terminal or log that cannot encode some character must not end the report in a
    # traceback (an ASCII or cp1252 stdout meets "—" or a CJK tool argument).
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    sys.exit(main())
