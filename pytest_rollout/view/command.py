"""``rollout view``: the viewer page for rollouts given on the command line.

One file is shown as a run; a directory as every ``*.jsonl`` under it; two files as a run
each and their difference (the first as the reference, like ``rollout diff``). A file the
loader refuses is shown with its reason, never skipped silently.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ..errors import RolloutError
from ..format.files import rollouts_in, write_output
from ..format.gcpause import collector_paused
from ..safety.sanitize import sanitize
from .entries import diff_entry, run_entry
from .page import page_bytes

__all__ = ["collect_entries", "view_command"]


def collect_entries(paths: Sequence[str]) -> tuple[str, list[dict[str, Any]]]:
    """The page's title and entries for ``paths``."""
    if len(paths) == 2 and not any(os.path.isdir(p) for p in paths):
        a, b = paths
        name = f"{Path(a).name} vs {Path(b).name}"
        return name, [diff_entry(a, b, name=name, status="compared")]
    entries = [run_entry(path, name=name) for path, name in rollouts_in(paths)]
    title = Path(paths[0]).name if len(paths) == 1 else f"{len(entries)} rollouts"
    return title, entries


def view_command(
    paths: Sequence[str], *, out: TextIO, target: str | None = None, serve: bool = False
) -> int:
    """Write (or serve) the page; returns the exit status."""
    # The entries are trees (no reference cycles) of a hundred thousand containers and more
    # for a long run: the cyclic collector would only walk them again and again.
    with collector_paused():
        title, entries = collect_entries(paths)
        page = None if serve else page_bytes(f"rollout view: {title}", entries)
    if page is None:
        return _serve(f"rollout view: {title}", entries, out)
    path = _write_page(page, target)
    print(sanitize(str(path)), file=out)
    # A run cut short has a notice and still its events: only a refused entry counts here.
    refused = sum(
        1
        for e in entries
        if e.get("notice") and (e.get("kind") == "diff" or e.get("totals") is None)
    )
    if refused:
        print(
            f"{refused} of {len(entries)} rollout(s) could not be loaded: the page says why",
            file=out,
        )
    return 0


def _serve(title: str, entries: list[dict[str, Any]], out: TextIO) -> int:
    """Serve the page until interrupted (Ctrl-C); returns the exit status."""
    from .server import ViewServer  # noqa: PLC0415  (only --serve needs the server)

    server = ViewServer(title, entries)
    print(f"serving {len(entries)} rollout(s) on 127.0.0.1 only; open:", file=out)
    print(server.url, file=out, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return 0


def _write_page(page: bytes, target: str | None) -> Path:
    """Write the page to ``target`` (a new temporary file when ``None``) and return where.

    A path that cannot be written (a directory, a missing or read-only folder) is a
    :class:`RolloutError` naming it and the system's reason, never a traceback.
    """
    path = None if target is None else Path(target)
    try:
        if path is None:
            fd, name = tempfile.mkstemp(prefix="rollout-view-", suffix=".html")
            os.close(fd)
            path = Path(name)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RolloutError(f"cannot write the page to {tempfile.gettempdir()}: {reason}") from None
    # A page is made again from the rollouts in a moment: it is put in place whole, but not
    # flushed to disk first (tens of megabytes for a long run).
    write_output(path, page, durable=False)
    return path
