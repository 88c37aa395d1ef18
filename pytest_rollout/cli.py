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
from .drift import drift_report
from .errors import RolloutError
from .fork import ForkFormat
from .fork import fork as fork_run
from .integrity import IntegrityReport
from .integrity import check as check_integrity
from .loader import load
from .report import Labels, render_divergence, render_header, render_score
from .sanitize import excerpt, sanitize, terminal_json
from .timeline import parse_step_range, render_show

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
    diff.add_argument(
        "--json",
        action="store_true",
        help="print the drift report as one JSON object (steps added, removed and changed, "
        "divergent tool calls, cost delta, outcome, score, divergences, likely causes)",
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
    check = commands.add_parser(
        "check",
        help="check that every tool call was announced and completed",
        description="Check each rollout offline: every tool call answers a call the turn "
        "before it announced (same name and arguments), every call completes, no call_id is "
        "reused. Exit 0 when all match, 1 on a mismatch, 2 when a file cannot be loaded.",
    )
    check.add_argument("files", metavar="FILE.jsonl", nargs="+", help="the rollouts to check")
    check.add_argument("--json", action="store_true", help="print the reports as JSON")
    show = commands.add_parser(
        "show",
        help="print a rollout as a readable timeline, with its totals",
        description="Print one line per event (step, seq, type and what it did), then the "
        "totals of the whole run. Filters choose which events are listed.",
    )
    show.add_argument("file", metavar="FILE.jsonl", help="the rollout to show")
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


def _check(args: argparse.Namespace, out: TextIO) -> int:
    checked: list[tuple[str, IntegrityReport]] = []
    refused = False
    for path in args.files:
        try:
            report = check_integrity(load(path).events)
        except RolloutError as exc:
            # One refused file does not hide the verdict on the others.
            print(f"rollout: error: {sanitize(str(exc))}", file=sys.stderr)
            refused = True
            continue
        checked.append((path, report))
        if not args.json:
            out.write("\n".join(_check_lines(path, report)) + "\n")
    if args.json:
        files = [{"path": path, **report.to_json_obj()} for path, report in checked]
        out.write(terminal_json({"files": files}) + "\n")
    if refused:
        return EXIT_ERROR
    return EXIT_SAME if all(report.matched for _, report in checked) else EXIT_DIFFERENT


def _check_lines(path: str, report: IntegrityReport) -> list[str]:
    count = len(report.mismatches)
    verdict = "matched" if report.matched else f"{count} mismatch{'es' if count != 1 else ''}"
    lines = [
        f"{sanitize(path)}: {verdict}",
        f"  events replayed: {report.events}, steps: {report.steps}",
    ]
    for m in report.mismatches:
        call = "(no id)" if m.call_id is None else sanitize(m.call_id)
        line = "?" if m.line is None else m.line
        lines.append(f"  step {m.step}, call {call} (line {line}): {sanitize(m.reason)}")
    return lines


def _show(args: argparse.Namespace, out: TextIO) -> int:
    steps = None
    if args.step is not None:
        try:
            steps = parse_step_range(args.step)
        except ValueError as exc:
            raise _Usage(str(exc)) from None
    events = load(args.file).events
    lines = render_show(events, types=args.type, steps=steps, grep=args.grep)
    out.write("\n".join(lines) + "\n")
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
    report = drift_report(run_a.events, run_b.events, options)
    comparison = report.comparison
    if args.json:
        data = {"a": run_a.path, "b": run_b.path, **report.to_json_obj()}
        out.write(terminal_json(data) + "\n")
        return EXIT_SAME if comparison.identical else EXIT_DIFFERENT
    labels = Labels()
    lines = render_header(report.a_summary, report.b_summary, comparison, labels)
    lines.append(f"Winner: {render_score(report.score, labels)}")
    if not comparison.identical:
        lines.append("")
        lines.extend(render_divergence(comparison, labels))
        lines.extend(f"Likely cause: {excerpt(c, 200)}" for c in report.likely_causes)
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
        if args.command == "check":
            return _check(args, out)
        if args.command == "show":
            return _show(args, out)
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
