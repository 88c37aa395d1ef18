"""The ``rollout`` command: forensics on rollout files outside pytest.

Exit status: 0 when the answer is "no difference", 1 when differences were found, 2 when an
input could not be loaded or the arguments are wrong (a refusal is one line, never a
traceback). For ``check``, a golden that does not match its receipt (or whose receipt is
corrupt) is a difference; a file without a receipt is not. For ``audit verify``, a broken hash
chain, or one that does not end at the head hash given, is a difference.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NoReturn, TextIO

from ..errors import RolloutError
from ..safety.sanitize import sanitize
from .commands import COMMANDS, EXIT_ERROR, Usage
from .parser import COMMAND_NAMES, build_parser

__all__ = ["entry", "main"]


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the ``rollout`` command; returns the exit status."""
    out = sys.stdout if out is None else out
    argv = sys.argv[1:] if argv is None else list(argv)
    # A subcommand's own parser is built alone: building all of them costs more than a
    # small command's work.
    command = argv[0] if argv and argv[0] in COMMAND_NAMES else None
    args = _parser(command).parse_args(argv)
    try:
        _find_runs(args)
        status: int = COMMANDS[args.command](args, out)
        return status
    except RolloutError as exc:
        print(f"rollout: error: {sanitize(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except Usage as exc:
        print(f"rollout {args.command}: error: {sanitize(str(exc))}", file=sys.stderr)
        return EXIT_ERROR


#: The arguments, by subcommand, that name rollouts to read: each may also be a run id or the
#: start of one, looked up in the capture directory and the runs cache (docs/cli.md). ``seal``
#: takes files only: it writes a receipt beside each, and those two folders are the plugin's
#: own (a golden, the file a receipt is for, is always named by its path).
_RUN_ARGUMENTS: Final = {
    "diff": ("a", "b"),
    "fork": ("file",),
    "check": ("files",),
    "show": ("file",),
    "view": ("paths",),
    "export": ("rollouts",),
}


def _find_runs(args: argparse.Namespace) -> None:
    """Each argument of :data:`_RUN_ARGUMENTS` that names a run by its id, replaced by the
    run's file; a path always wins. :class:`Usage` when no run, or more than one, has it."""
    finder = None
    for name in _RUN_ARGUMENTS.get(args.command, ()):
        value: str | list[str] = getattr(args, name)
        texts = value if isinstance(value, list) else [value]
        if all(os.path.lexists(text) for text in texts):
            continue  # files, as they almost always are: nothing to look up, nor to import
        from ..store.run_lookup import RunFinder, RunLookupError

        try:
            finder = finder or RunFinder(Path.cwd(), os.environ)
            found = [finder.rollout(text) for text in texts]
        except OSError:
            return  # no current folder to look from: each file is refused as it is named
        except RunLookupError as exc:
            raise Usage(str(exc)) from None
        setattr(args, name, found if isinstance(value, list) else found[0])


@functools.cache
def _parser(command: str | None) -> argparse.ArgumentParser:
    """The parser of ``command`` (``None``: of them all), built once a process (a parser
    keeps nothing from one ``parse_args`` to the next)."""
    return build_parser(command)


def entry() -> NoReturn:
    """The console script."""
    # A terminal or log that cannot encode some character must not end the report in a
    # traceback (an ASCII or cp1252 stdout meets "—" or a CJK tool argument).
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    status = main()
    sys.exit(_output_written(status))


def _output_written(status: int) -> int:
    """``status``, once what the command printed is written. Output that cannot be written
    (a full disk) is an error, status 120 as Python gives it, said in one line; a reader
    that went away (``rollout show run.jsonl | head``) is not. A stream that failed is
    pointed at the null device, so that Python's own flush at exit finds nothing left to
    fail on (and prints no "Exception ignored")."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            _to_null(stream)
        except (OSError, ValueError) as exc:
            with contextlib.suppress(OSError):
                os.write(2, f"rollout: error: cannot write the output: {exc}\n".encode())
            _to_null(stream)
            status = status or 120
    return status


def _to_null(stream: TextIO) -> None:
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
