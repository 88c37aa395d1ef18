"""The ``rollout`` command: forensics on rollout files outside pytest.

Exit status: 0 when the answer is "no difference", 1 when differences were found, 2 when an
input could not be loaded or the arguments are wrong (a refusal is one line, never a
traceback). For ``check``, a golden that does not match its receipt (or whose receipt is
corrupt) is a difference; a file without a receipt is not. For ``audit verify``, a broken hash
chain, or one that does not end at the head hash given, is a difference.
"""

from __future__ import annotations

import argparse
import io
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from . import __version__
from .diff.canonical import DEFAULT_OPTIONS, CanonicalOptions
from .diff.drift import drift_report
from .diff.integrity import IntegrityReport
from .diff.integrity import check as check_integrity
from .diff.report import Labels, render_divergence, render_header, render_score
from .diff.timeline import parse_step_range, render_show
from .errors import RolloutError
from .format.loader import load, loads, read_rollout_bytes
from .replay.fork import ForkFormat
from .replay.fork import fork as fork_run
from .safety.audit import AuditCheck, AuditError, verify_audit
from .safety.receipt import (
    Receipt,
    ReceiptStatus,
    Verification,
    make_receipt,
    receipt_path,
    short_digest,
    verify,
    write_receipt,
)
from .safety.sanitize import excerpt, sanitize, terminal_json
from .view.command import view_command

__all__ = ["main"]

EXIT_SAME = 0
EXIT_DIFFERENT = 1
EXIT_ERROR = 2

_RULES_DIGEST = re.compile(r"[0-9a-f]{64}")
_HEAD = re.compile(r"(?:sha256:)?([0-9a-f]{16,64})")
_HEAD_SHOWN = 16


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
        "reused; and a file with a receipt (FILE.jsonl.receipt) still has the bytes it "
        "vouches for. Exit 0 when all match, 1 on a mismatch or a receipt that does not "
        "match (or is corrupt), 2 when a file cannot be loaded. A missing receipt is shown, "
        "not counted.",
    )
    check.add_argument("files", metavar="FILE.jsonl", nargs="+", help="the rollouts to check")
    check.add_argument("--json", action="store_true", help="print the reports as JSON")
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
    view = commands.add_parser(
        "view",
        help="look at rollouts in a browser",
        description="Write one self-contained HTML page showing the rollouts (a file, every "
        "*.jsonl under a directory, or two files and their difference) and print its path; "
        "with --serve, serve it on 127.0.0.1 instead, behind a random token.",
    )
    view.add_argument(
        "paths", metavar="FILE|DIR", nargs="+", help="a rollout, a directory, or two rollouts"
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


_RECEIPT_FAILURES = frozenset({ReceiptStatus.MISMATCH, ReceiptStatus.CORRUPT})


def _check(args: argparse.Namespace, out: TextIO) -> int:
    checked: list[tuple[str, IntegrityReport, Verification]] = []
    refused = False
    for path in args.files:
        try:
            # One read: the bytes checked against the receipt are the bytes loaded.
            data = read_rollout_bytes(path)
            report = check_integrity(loads(data, path=path).events)
        except RolloutError as exc:
            # One refused file does not hide the verdict on the others.
            print(f"rollout: error: {sanitize(str(exc))}", file=sys.stderr)
            refused = True
            continue
        verification = verify(Path(path), data)
        checked.append((path, report, verification))
        if not args.json:
            out.write("\n".join(_check_lines(path, report, verification)) + "\n")
    if args.json:
        files = [
            {"path": path, **report.to_json_obj(), "receipt": verification.to_json_obj()}
            for path, report, verification in checked
        ]
        out.write(terminal_json({"files": files}) + "\n")
    if refused:
        return EXIT_ERROR
    clean = all(
        report.matched and verification.status not in _RECEIPT_FAILURES
        for _, report, verification in checked
    )
    return EXIT_SAME if clean else EXIT_DIFFERENT


def _check_lines(path: str, report: IntegrityReport, verification: Verification) -> list[str]:
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
    lines.append(f"  receipt: {verification.summary()}")
    if verification.status in _RECEIPT_FAILURES:
        lines.append(f"  to accept the file as it is now: rollout seal {_shell(path)}")
    return lines


def _shell(path: str) -> str:
    """``path`` as a shell word that is safe to print."""
    return sanitize(shlex.quote(path))


def _seal(args: argparse.Namespace, out: TextIO) -> int:
    mode: str | None = args.redaction_mode
    rules: str | None = args.rules_sha256
    if mode is not None and not mode:
        raise _Usage("--redaction-mode must not be empty")
    if rules and not _RULES_DIGEST.fullmatch(rules):
        raise _Usage("--rules-sha256 must be 64 lowercase hex digits (or empty: unknown)")
    sealing: list[tuple[str, Receipt]] = []
    for path in args.files:
        try:
            data = read_rollout_bytes(path)
            loads(data, path=path)  # only a file the loader accepts is sealed
        except RolloutError as exc:
            print(f"rollout: error: {sanitize(str(exc))}", file=sys.stderr)
            continue
        # A receipt that still reads (even one that no longer matches) keeps its settings.
        previous = verify(Path(path), data).receipt
        receipt = make_receipt(
            data,
            redaction_mode=mode or (previous.redaction_mode if previous else "unknown"),
            rules_sha256=rules
            if rules is not None
            else (previous.rules_sha256 if previous else ""),
        )
        sealing.append((path, receipt))
    if len(sealing) < len(args.files):
        print("rollout seal: nothing was sealed", file=sys.stderr)
        return EXIT_ERROR
    status = EXIT_SAME
    for path, receipt in sealing:
        try:
            write_receipt(Path(path), receipt)
        except OSError as exc:
            where = sanitize(str(receipt_path(Path(path))))
            print(f"rollout: error: cannot write {where}: {exc.strerror}", file=sys.stderr)
            status = EXIT_ERROR
            continue
        out.write(
            f"sealed {sanitize(path)} (sha256 {short_digest(receipt.sha256)}, "
            f"{receipt.events} event{'' if receipt.events == 1 else 's'})\n"
        )
    return status


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


def _audit(args: argparse.Namespace, out: TextIO) -> int:
    expected: str | None = None
    if args.head is not None:
        match = _HEAD.fullmatch(args.head.strip().lower())
        if match is None:
            raise _Usage(
                "--head must be the head hash: 64 hex digits, or sha256: and at least its "
                "first 16 as printed"
            )
        expected = match.group(1)
    try:
        check = verify_audit(args.file)
    except AuditError as exc:
        print(f"rollout audit: {sanitize(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    out.write("\n".join(_audit_lines(sanitize(args.file), check, expected)) + "\n")
    if not check.ok:
        return EXIT_DIFFERENT
    if expected is not None and not (check.head or "").startswith(expected):
        return EXIT_DIFFERENT
    return EXIT_SAME


def _audit_lines(name: str, check: AuditCheck, expected: str | None) -> list[str]:
    n = check.entries
    if not check.ok:
        before = (
            "no entry comes before it"
            if n == 0
            else f"the {n} entr{'y' if n == 1 else 'ies'} before it {'is' if n == 1 else 'are'}"
            " intact"
        )
        return [
            f"{name}:{check.broken_line}: the audit chain breaks at entry {check.broken_line}: "
            f"{sanitize(check.reason or '')}",
            f"{name}: {before}",
        ]
    wanted = None if expected is None else f"sha256:{expected[:_HEAD_SHOWN]}"
    if check.head is None:
        lines = [f"{name}: 0 entries, nothing to verify"]
        if wanted is not None:
            lines.append(
                f"{name}: the file has no entries, not the expected head {wanted} "
                "(entries were removed from the end)"
            )
        return lines
    head = f"sha256:{check.head[:_HEAD_SHOWN]}"
    line = f"{name}: {n} entr{'y' if n == 1 else 'ies'}, chain intact, head {head}"
    if expected is None:
        return [line]
    if check.head.startswith(expected):
        return [f"{line}, as expected"]
    return [
        line,
        f"{name}: the file ends at another entry than the expected head {wanted} "
        "(entries were removed from the end, or added after it)",
    ]


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
        if args.command == "seal":
            return _seal(args, out)
        if args.command == "audit":
            return _audit(args, out)
        if args.command == "view":
            return view_command(args.paths, out=out, target=args.out, serve=args.serve)
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
