"""``rollout serve``: the recording endpoint on its own, for an agent (or a suite) in another
language (docs/cli.md). Its arguments (:func:`add_serve_parser`) and its work (:func:`serve`),
which imports the session only when it runs."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, Final, TextIO

from ..safety.sanitize import sanitize

__all__ = ["add_serve_parser", "serve"]

_EXIT_OK: Final = 0
_EXIT_DIFFERENT: Final = 1


def add_serve_parser(commands: Any) -> None:
    """``rollout serve --golden FILE [--record] [--upstream URL] [--port N]``."""
    parser = commands.add_parser(
        "serve",
        help="record or replay an agent in another process through a local endpoint",
        description="Serve the OpenAI, Anthropic and Gemini model APIs on 127.0.0.1 only, "
        "behind a token in the URL, for an agent in another process or language. The first "
        "line printed is the OpenAI base URL and the token (the Anthropic base URL is the "
        "same without its /v1). Serves until interrupted (Ctrl-C, SIGTERM), then: replaying "
        "(the default), compares the run with FILE and prints the verdict (exit 0 when it "
        "matches, 1 when not); with --record, writes the run as the golden FILE with its "
        "receipt (exit 0). Exit 2 on bad input.",
    )
    parser.add_argument(
        "--golden", metavar="FILE", required=True, help="the golden to replay, or to record"
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="forward to the real services (or --upstream) and write the run as FILE",
    )
    parser.add_argument(
        "--upstream",
        metavar="URL",
        help="with --record: the root URL requests are forwarded to (a proxy, a local model "
        "server), instead of each API's service; the key comes from this process's "
        "OPENAI_API_KEY / ANTHROPIC_API_KEY / GEMINI_API_KEY (or GOOGLE_API_KEY)",
    )
    parser.add_argument(
        "--port",
        metavar="N",
        type=int,
        default=0,
        help="the port to listen on, on 127.0.0.1 (default: a free one)",
    )


def serve(args: argparse.Namespace, out: TextIO) -> int:
    """Serve until interrupted, then compare or record; returns the exit status."""
    from ..session.endpoint_run import EndpointRun

    run = EndpointRun(Path(args.golden), record=args.record, upstream=args.upstream, port=args.port)
    with _interrupted_by_sigterm(), run as endpoint:
        out.write(f"{endpoint.base_url} {endpoint.token}\n")
        mode = "recording" if args.record else f"replaying {sanitize(args.golden)}"
        out.write(
            f"{mode} on 127.0.0.1:{endpoint.port} (Anthropic base URL {endpoint.url}); "
            f"stop with Ctrl-C\n"
        )
        out.flush()
        endpoint.wait()
    result = run.result
    assert result is not None  # the block ended on an interrupt, or raised
    out.write(result.text.rstrip("\n") + "\n")
    return _EXIT_OK if result.ok else _EXIT_DIFFERENT


@contextlib.contextmanager
def _interrupted_by_sigterm() -> Iterator[None]:
    """SIGTERM ends the serving as Ctrl-C does (what a test harness sends to stop it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
