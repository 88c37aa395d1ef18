"""The ``rollout`` subcommands: each takes the parsed arguments and where to print, and
returns the exit status.

Each subcommand imports what it needs when it runs, so a small command pays for its own
work only: ``rollout show`` never loads the comparison, the receipts or the viewer
(tests/cli/test_cli_imports.py pins it).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from ..errors import RolloutError, RolloutFormatError
from ..safety.sanitize import sanitize, terminal_json
from .otel_commands import export_otel, import_otel
from .serve_command import serve

if TYPE_CHECKING:
    from ..diff.canonical import CanonicalOptions
    from ..diff.integrity import IntegrityReport
    from ..diff.volatile import Volatile
    from ..format.events import Event
    from ..format.loader import Limits, Rollout
    from ..store.audit import AuditCheck
    from ..store.receipt import Receipt, Verification
    from ..store.replay_receipt import ReplayCheck

__all__ = ["COMMANDS", "DIFF_SCHEMA", "EXIT_DIFFERENT", "EXIT_ERROR", "EXIT_SAME", "Usage"]

EXIT_SAME = 0
EXIT_DIFFERENT = 1
EXIT_ERROR = 2
#: ``rollout diff --format json``'s schema, published as docs/schemas/diff-1.json: a field
#: is only ever added within a version; one renamed, removed or retyped makes the next.
DIFF_SCHEMA: Final = "pytest-rollout/diff/1"

_RULES_DIGEST = re.compile(r"[0-9a-f]{64}")
#: ``--max-events`` and ``--max-bytes``: a whole number, and a unit.
_LIMIT = re.compile(r"([0-9]+)([A-Z]?)", re.IGNORECASE)
#: What each of them takes, and its units (K, M, G, T: powers of 1024, as ``ls -h`` says).
_LIMIT_FLAGS: Final = {
    "--max-events": ("a whole number of events, e.g. 1000000", {"": 1}),
    "--max-bytes": (
        "a whole number of bytes, or of K, M, G or T (powers of 1024), e.g. 600M or 2G",
        {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40},
    ),
}
#: The largest limit taken (the loader hands limits to calls that take a C ``ssize_t``).
_MOST: Final = 2**62
_WHOLE_NUMBER = re.compile(r"[0-9]+")
_HEAD = re.compile(r"(?:sha256:)?([0-9a-f]{16,64})")
_HEAD_SHOWN = 16


class Usage(Exception):
    """A wrong argument found after parsing: one line on stderr, exit status 2."""


def _fork(args: argparse.Namespace, out: TextIO) -> int:
    from ..format.loader import loads, read_rollout_bytes
    from ..replay.fork import fork as fork_run
    from ..replay.fork import fork_prefix

    if args.force and args.out is None:
        raise Usage("--force replaces the file that --out names: give --out NEW.jsonl")
    data = read_rollout_bytes(args.file)  # one read: the bytes forked are the bytes digested
    events = loads(data, path=args.file).events
    result = fork_run(
        events,
        args.step,
        format=args.format,
        include_system=args.include_system,
        include_tool_calls=args.include_tool_calls,
        include_tool_results=args.include_tool_results,
    )
    report = result.to_json_obj()
    if not args.json and args.out is None:
        out.write(terminal_json(report) + "\n")  # the conversation, as it always was
        return EXIT_SAME
    run_id = None
    replayed = len(fork_prefix(events, args.step))
    if args.out is not None:
        from ..store.forked_run import write_forked_run

        written = write_forked_run(
            args.file, data, events, args.step, Path(args.out), force=args.force
        )
        run_id, replayed = written.run_id, written.events_replayed
        if not args.json:
            steps = result.original_steps
            out.write(_fork_line(args.file, written.path, run_id, args.step, steps, replayed))
            return EXIT_SAME
    report |= {
        "run_id": run_id,
        "out": args.out,
        "events_replayed": replayed,
        "step_count": args.step,
        "original_step_count": result.original_steps,
        "messages_restored": result.restored,
    }
    out.write(terminal_json(report) + "\n")
    return EXIT_SAME


def _fork_line(source: str, target: Path, run_id: str, step: int, steps: int, kept: int) -> str:
    """``rollout fork --out``'s line: what was written, its run id and its steps."""
    return (
        f"forked {sanitize(source)} at step {step} of {steps} into {sanitize(str(target))}: "
        f"run {sanitize(run_id)}, {kept} event{'' if kept == 1 else 's'} kept, "
        "sealed with its receipt\n"
    )


def _check(args: argparse.Namespace, out: TextIO) -> int:
    from ..diff.integrity import check as check_integrity
    from ..format.files import rollouts_in
    from ..format.loader import loads, read_rollout_bytes
    from ..store.receipt import verify

    checked: list[tuple[str, IntegrityReport, Verification, ReplayCheck | None]] = []
    refused = False
    for path, _ in rollouts_in(args.files):
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
        replay = _replay_check(args, path)
        checked.append((path, report, verification, replay))
        if not args.json:
            lines = _check_lines(path, report, verification)
            out.write("\n".join(lines + _replay_lines(replay)) + "\n")
    if args.json:
        files = [
            {
                "path": path,
                **report.to_json_obj(),
                "receipt": verification.to_json_obj(),
                **({} if replay is None else {"replay": _replay_json(replay)}),
            }
            for path, report, verification, replay in checked
        ]
        out.write(terminal_json({"files": files}) + "\n")
    if refused:
        return EXIT_ERROR
    clean = all(
        report.matched and not _receipt_failed(v) and (r is None or r.ok)
        for _, report, v, r in checked
    )
    return EXIT_SAME if clean else EXIT_DIFFERENT


def _replay_check(args: argparse.Namespace, path: str) -> ReplayCheck | None:
    """With ``--receipt``: the check of ``path``'s replay receipt (``None`` without it)."""
    if not args.receipt:
        if args.golden is not None:
            raise Usage("--golden goes with --receipt")
        return None
    from ..store.replay_receipt import check_replay

    return check_replay(Path(path), None if args.golden is None else Path(args.golden))


def _replay_lines(replay: ReplayCheck | None) -> list[str]:
    if replay is None:
        return []
    if not replay.ok:
        return [f"  replay receipt: REFUSED — {sanitize(p)}" for p in replay.problems]
    assert replay.record is not None
    lines = ["  replay receipt: ok"]
    lines += [f"    {line.strip()}" for line in replay.record.lines()]
    lines += [f"    checked: {sanitize(c)}" for c in replay.checked]
    return lines


def _replay_json(replay: ReplayCheck) -> dict[str, Any]:
    return {
        "ok": replay.ok,
        "problems": list(replay.problems),
        "checked": list(replay.checked),
        "record": None if replay.record is None else replay.record.to_json_obj(),
    }


def _receipt_failed(verification: Verification) -> bool:
    """A receipt that no longer matches its file, or cannot be read, is a difference."""
    from ..store.receipt import ReceiptStatus

    return verification.status in {ReceiptStatus.MISMATCH, ReceiptStatus.CORRUPT}


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
    for m in report.text_calls:
        line = "?" if m.line is None else m.line
        lines.append(f"  note: step {m.step}, call (no id) (line {line}): {sanitize(m.reason)}")
    lines.append(f"  receipt: {verification.summary()}")
    if _receipt_failed(verification):
        lines.append(f"  to accept the file as it is now: rollout seal {_shell(path)}")
    return lines


def _shell(path: str) -> str:
    """``path`` as a shell word that is safe to print."""
    return sanitize(shlex.quote(path))


def _seal(args: argparse.Namespace, out: TextIO) -> int:
    from ..format.loader import loads, read_rollout_bytes
    from ..store.receipt import make_receipt, receipt_path, short_digest, verify, write_receipt

    mode: str | None = args.redaction_mode
    rules: str | None = args.rules_sha256
    if mode is not None and not mode:
        raise Usage("--redaction-mode must not be empty")
    if rules and not _RULES_DIGEST.fullmatch(rules):
        raise Usage("--rules-sha256 must be 64 lowercase hex digits (or empty: unknown)")
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
    from ..diff.timeline import cut_short_line, parse_step_range, render_show
    from ..format.loader import load

    steps = None
    if args.step is not None:
        try:
            steps = parse_step_range(args.step)
        except ValueError as exc:
            raise Usage(str(exc)) from None
    if args.graph and (args.type or args.step is not None or args.grep is not None):
        raise Usage("--graph shows the whole run: leave out --type, --step and --grep")
    # A run cut short by a crash (a flight recorder's partial file) is shown as far as it got.
    rollout = load(args.file, tolerant=True)
    if args.graph:
        lines = _graph_lines(rollout.events)
    else:
        lines = render_show(rollout.events, types=args.type, steps=steps, grep=args.grep)
    if rollout.cut_short_after is not None:
        lines.insert(0, cut_short_line(rollout.cut_short_after))
    out.write("\n".join(lines) + "\n")
    return EXIT_SAME


def _graph_lines(events: Sequence[Event]) -> list[str]:
    """``rollout show --graph``: the run's causal graph, from its snapshot when it has one."""
    from ..diff.causal_graph import graph_of_run, render_graph

    graph, recorded = graph_of_run(events)
    source = "its causal.graph.snapshot" if recorded else "built from its events"
    lines = render_graph(graph)
    return [f"causal graph ({source}): {lines[0]}", *lines[1:]]


def _diff(args: argparse.Namespace, out: TextIO) -> int:
    from ..format.gcpause import collector_paused

    limits = _diff_limits(args.max_events, args.max_bytes)
    options = _diff_options(args)
    # The command is a short-lived process, and what it builds (two runs of events, which
    # are trees, and the report on them) holds no reference cycles: the cyclic collector
    # would only re-scan it, pass after pass (a third of the time, at 100k events).
    with collector_paused():
        return _diff_report(args, options, limits, out)


def _diff_options(args: argparse.Namespace) -> CanonicalOptions:
    """The canonical form the flags ask for; a bad value is :class:`Usage` naming its flag."""
    from ..diff.canonical import DEFAULT_OPTIONS

    digits = None if args.float_digits is None else _float_digits(args.float_digits)
    try:
        return DEFAULT_OPTIONS.extended(
            drop_keys=args.drop_key,
            ignore_paths=args.ignore,
            float_digits=digits,
            volatile=_volatile(args.volatile, args.no_volatile),
        )
    except ValueError as exc:
        raise Usage(str(exc)) from None


def _volatile(declared: list[str], off: bool) -> Volatile | None:
    """``--volatile`` and ``--no-volatile`` (``None``: neither, the built-in kinds alone).
    A bad pattern is a ``ValueError`` that names ``--volatile``."""
    if not declared and not off:
        return None
    from ..diff.volatile import Volatile, parse_declared

    return Volatile(builtin=not off).with_declared(
        parse_declared(text, "--volatile") for text in declared
    )


def _float_digits(text: str) -> int:
    if not _WHOLE_NUMBER.fullmatch(text.strip()):
        raise Usage(
            f"--float-digits takes a whole number of decimal places (0 or more); got {text!r}"
        )
    return int(text)


def _diff_limits(max_events: str | None, max_bytes: str | None) -> Limits:
    """The loader's limits for the two files: the defaults, but for the events and the
    size the user gave (``--max-events``, ``--max-bytes``), higher or lower."""
    from dataclasses import replace

    from ..format.loader import DEFAULT_LIMITS

    limits = DEFAULT_LIMITS
    if max_events is not None:
        limits = replace(limits, events=_limit("--max-events", max_events))
    if max_bytes is not None:
        limits = replace(limits, total_bytes=_limit("--max-bytes", max_bytes))
    return limits


def _limit(flag: str, text: str) -> int:
    """The limit ``text`` gives to ``flag`` (one of :data:`_LIMIT_FLAGS`), or :class:`Usage`."""
    takes, units = _LIMIT_FLAGS[flag]
    match = _LIMIT.fullmatch(text.strip())
    unit = None if match is None else units.get(match.group(2).upper())
    if match is None or unit is None:
        raise Usage(f"{flag} takes {takes}; got {text!r}")
    value = int(match.group(1)) * unit
    if not 1 <= value <= _MOST:
        raise Usage(f"{flag} must be from 1 to 2**62; got {text!r}")
    return value


def _diff_report(
    args: argparse.Namespace, options: CanonicalOptions, limits: Limits, out: TextIO
) -> int:
    from ..diff.drift import Verdict, drift_report
    from ..diff.report import CLI_LABELS, render_verdict

    run_a, run_b = _load_trusted_pair(args.a, args.b, limits)
    events_a, events_b = _agents_part(args.agent, run_a, run_b)
    report = drift_report(events_a, events_b, options)
    status = EXIT_SAME if report.comparison.identical else EXIT_DIFFERENT
    verdict = Verdict(golden_path=run_a.path, run_path=run_b.path, report=report)
    if args.format == "text":
        lines = render_verdict(verdict, labels=CLI_LABELS, files=True)
        if args.agent is not None:
            lines.insert(1, f"Agent: {sanitize(args.agent)} only (its turns numbered from 1)")
        out.write("\n".join(lines) + "\n")
        return status
    from ..diff.finding import finding_of
    from ..diff.report import render_headline

    found = None
    if not report.comparison.identical:
        found = finding_of(verdict, "B", run_b.path, 0, labels=CLI_LABELS)
    headline = render_headline(verdict, CLI_LABELS)
    if args.format == "markdown":
        from ..diff.markdown import markdown_pair

        out.write(markdown_pair(run_a.path, run_b.path, headline, found))
        return status
    data: dict[str, Any] = {"schema": DIFF_SCHEMA, "a": run_a.path, "b": run_b.path}
    data["headline"] = headline
    data["first_change"] = None if found is None else found.first_change
    out.write(terminal_json({**data, **report.to_json_obj()}) + "\n")
    return status


def _agents_part(
    agent: str | None, run_a: Rollout, run_b: Rollout
) -> tuple[Sequence[Event], Sequence[Event]]:
    """The events ``rollout diff`` compares: all of them, or ``--agent``'s part of each."""
    if agent is None:
        return run_a.events, run_b.events
    from ..diff.agents import agents_named, only_agent

    named = list(dict.fromkeys([*agents_named(run_a.events), *agents_named(run_b.events)]))
    if agent not in named:
        acting = ", ".join(sanitize(repr(n)) for n in named) or "none: they name no agent"
        raise Usage(f"--agent {sanitize(repr(agent))} acts in neither run (agents: {acting})")
    return only_agent(run_a.events, agent), only_agent(run_b.events, agent)


def _load_trusted_pair(a: str, b: str, limits: Limits) -> tuple[Rollout, Rollout]:
    """:func:`~pytest_rollout.format.pair.load_pair` under ``limits``; a file refused for
    its number of events or its size is refused with the flag that lifts that limit."""
    from ..format.pair import load_pair

    try:
        return load_pair(a, b, limits=limits)
    except RolloutFormatError as exc:
        flag = None
        if exc.reason == f"more than {limits.events} events":
            flag = "--max-events N"
        elif exc.reason.endswith(f"over the {limits.total_bytes}-byte limit"):
            flag = "--max-bytes SIZE"
        if flag is None:
            raise
        raise RolloutFormatError(
            exc.path, exc.line, f"{exc.reason} (for a file you trust, {flag} raises the limit)"
        ) from None


def _audit(args: argparse.Namespace, out: TextIO) -> int:
    from ..store.audit import AuditError, verify_audit

    expected: str | None = None
    if args.head is not None:
        match = _HEAD.fullmatch(args.head.strip().lower())
        if match is None:
            raise Usage(
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


def _view(args: argparse.Namespace, out: TextIO) -> int:
    from ..view.command import view_command

    return view_command(args.paths, out=out, target=args.out, serve=args.serve)


#: Each subcommand's handler.
COMMANDS: Final[dict[str, Callable[[argparse.Namespace, TextIO], int]]] = {
    "diff": _diff,
    "fork": _fork,
    "check": _check,
    "show": _show,
    "seal": _seal,
    "audit": _audit,
    "view": _view,
    "import": import_otel,
    "export": export_otel,
    "serve": serve,
}
