"""``rollout import otel`` and ``rollout export otel``: OpenTelemetry GenAI traces in and out
(docs/otel.md). Their arguments (``add_import_parser``, ``add_export_parser``) and their work
(``import_otel``, ``export_otel``), each returning the exit status. The work imports what it
needs when it runs: ``rollout --help`` and the other commands never load the OTel bridge."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Final, TextIO

from ..safety.sanitize import sanitize

__all__ = ["add_export_parser", "add_import_parser", "export_otel", "import_otel"]

_EXIT_OK: Final = 0
_EXIT_ERROR: Final = 2


def _nested(parser: Any, dest: str) -> Any:
    return parser.add_subparsers(
        dest=dest, metavar="FORMAT", required=True, parser_class=type(parser)
    )


def add_import_parser(commands: Any) -> None:
    """``rollout import otel TRACE -o ROLLOUT [--trace-id ID] [--force]``."""
    parser = commands.add_parser(
        "import", help="make a rollout of a trace", description="Make a rollout of a trace."
    )
    otel = _nested(parser, "import_format").add_parser(
        "otel",
        help="an OpenTelemetry GenAI trace (OTLP/JSON lines)",
        description="Read an OTLP/JSON trace file (one ExportTraceServiceRequest a line, as "
        "the Collector's file exporter writes) and write one of its traces as a rollout: the "
        "--trace-id given, else the only or the latest trace (the others are listed). What "
        "the trace lacks is said in a warning, never made up. The rollout is redacted like "
        "everything recorded. Exit 0 when written, 2 on bad input.",
    )
    otel.add_argument("trace", metavar="TRACE", help="the trace file (OTLP/JSON lines)")
    otel.add_argument(
        "-o", "--out", metavar="ROLLOUT", required=True, help="the rollout to write (.jsonl)"
    )
    otel.add_argument("--trace-id", metavar="ID", help="the trace to import (32 hex digits)")
    otel.add_argument(
        "--force",
        action="store_true",
        help="replace ROLLOUT (and its receipt) when it exists: a golden is not replaced unasked",
    )


def add_export_parser(commands: Any) -> None:
    """``rollout export otel ROLLOUT... -o TRACE``."""
    parser = commands.add_parser(
        "export", help="write rollouts as traces", description="Write rollouts as traces."
    )
    otel = _nested(parser, "export_format").add_parser(
        "otel",
        help="as OpenTelemetry GenAI traces (OTLP/JSON lines)",
        description="Write each rollout as one trace of spans named and attributed as the "
        "OpenTelemetry GenAI conventions say (invoke_agent, chat, execute_tool), one "
        "ExportTraceServiceRequest a line, ready for an OTLP viewer. Exporting the same run "
        "again gives the same bytes. Exit 0 when written, 2 on bad input.",
    )
    otel.add_argument(
        "rollouts", metavar="ROLLOUT", nargs="+", help="the rollouts to export, or their run ids"
    )
    otel.add_argument("-o", "--out", metavar="TRACE", required=True, help="the trace file to write")
    otel.add_argument(
        "--input-messages",
        choices=("full", "new"),
        default="full",
        help="what each chat span's gen_ai.input.messages holds: the request's whole input, "
        "as the conventions say (default; the file grows with the square of the turns), or "
        "only the messages new since the previous chat span (linear, for long runs)",
    )


def import_otel(args: argparse.Namespace, out: TextIO) -> int:
    """Import one trace; print what was written, the other traces and the warnings."""
    from ..errors import RolloutError
    from ..format.loader import read_rollout_bytes
    from ..otel.importer import import_otel as import_trace
    from ..safety.redact import RedactionMode, Redactor
    from ..store.receipt import make_receipt, write_receipt

    target = Path(args.out)
    if target.is_symlink() or (target.exists() and not target.is_file()):
        # A rollout is sealed by a receipt beside it: it is a file of its own, never a link,
        # a pipe or a device written through.
        raise RolloutError(f"{target} is not a regular file: import to a file of its own")
    if not args.force and target.exists():
        raise RolloutError(
            f"{target} exists: a golden and its receipt are not replaced unasked; "
            f"import to another file, or pass --force to replace it"
        )
    target.parent.mkdir(parents=True, exist_ok=True)  # as --rollout-record makes golden folders
    redactor = Redactor(RedactionMode.REDACTED)
    run, rollout = import_trace(args.trace, target, trace_id=args.trace_id, redactor=redactor)
    # The user made this file on purpose: seal it, so a test can replay it as its golden.
    receipt = make_receipt(
        read_rollout_bytes(target),
        redaction_mode=redactor.mode.value,
        rules_sha256=redactor.rules_digest,
    )
    write_receipt(target, receipt)
    for warning in run.warnings:
        print(f"rollout import: warning: {sanitize(warning)}", file=sys.stderr)
    steps = rollout.steps
    out.write(
        f"imported trace {run.trace_id} into {sanitize(str(target))} "
        f"({len(rollout.events)} events, {steps} step{'' if steps == 1 else 's'})\n"
    )
    if run.others:
        out.write(f"the file holds {len(run.others)} other trace(s); pick one with --trace-id:\n")
        out.write("".join(f"  {trace}\n" for trace in run.others))
    return _EXIT_OK


def export_otel(args: argparse.Namespace, out: TextIO) -> int:
    """Export the rollouts, one trace each."""
    from ..format.files import write_output
    from ..format.loader import load
    from ..otel.exporter import export_runs

    runs = [load(path).events for path in args.rollouts]
    data = export_runs(runs, input_messages=args.input_messages)
    target = Path(args.out)
    write_output(target, data)
    count = len(runs)
    out.write(f"exported {count} trace{'' if count == 1 else 's'} to {sanitize(str(target))}\n")
    _warn_when_too_big(data)
    return _EXIT_OK


def _warn_when_too_big(data: bytes) -> None:
    """Say so when ``rollout import otel`` could not read the file back."""
    from ..otel.otlp import DEFAULT_TRACE_LIMITS as LIMITS

    longest = _longest_line(data)
    if len(data) <= LIMITS.file_bytes and longest <= LIMITS.line_bytes:
        return
    print(
        f"rollout export: warning: the file is {_size(len(data))}, its longest trace "
        f"{_size(longest)}: over what `rollout import otel` reads back "
        f"({_size(LIMITS.file_bytes)} a file, {_size(LIMITS.line_bytes)} a trace); "
        "--input-messages new keeps each chat span to the messages new since the last one",
        file=sys.stderr,
    )


def _longest_line(data: bytes) -> int:
    """The length of ``data``'s longest line, found without copying it (an export of a long
    run can be hundreds of megabytes, one line a trace)."""
    longest = start = 0
    while (end := data.find(b"\n", start)) >= 0:
        longest, start = max(longest, end - start), end + 1
    return max(longest, len(data) - start)


def _size(count: int) -> str:
    mib = 1024 * 1024
    return f"{count // mib} MiB" if count >= mib else f"{count} bytes"
