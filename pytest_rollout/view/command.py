"""``rollout view``: the viewer page for rollouts given on the command line.

One file is shown as a run; a directory as every ``*.jsonl`` under it, and every partial
file a crashed run left there (``.<name>.partial``, shown as "cut short"); two files as a run
each and their difference (the first as the reference, like ``rollout diff``). A file the
loader refuses is shown with its reason, never skipped silently. ``--serve`` is
:mod:`.serve`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ..errors import RolloutError
from ..format.files import write_output
from ..format.gcpause import collector_paused
from ..safety.sanitize import sanitize
from .listing import collect_entries, rollout_files
from .page import page_bytes

__all__ = ["collect_entries", "rollout_files", "view_command"]


def view_command(
    paths: Sequence[str],
    *,
    out: TextIO,
    target: str | None = None,
    serve: bool = False,
    descriptors: Path | None = None,
) -> int:
    """Write (or serve) the page; returns the exit status.

    ``descriptors``: the folder of the descriptors of running viewers (``--serve``; default:
    the project's, see :mod:`.serve`)."""
    if serve:
        from .serve import serve_command  # noqa: PLC0415  (only --serve needs the server)

        return serve_command(paths, out=out, descriptors=descriptors)
    # The entries are trees (no reference cycles) of a hundred thousand containers and more
    # for a long run: the cyclic collector would only walk them again and again.
    with collector_paused():
        title, entries = collect_entries(paths)
        page = page_bytes(f"rollout view: {title}", entries)
    path = _write_page(page, target)
    print(sanitize(str(path)), file=out)
    # A run cut short has a notice and still its events: only a refused entry counts here.
    refused = sum(
        1
        for e in entries
        if e.get("notice") and (e.get("kind") == "diff" or e.get("state") == "refused")
    )
    if refused:
        print(
            f"{refused} of {len(entries)} rollout(s) could not be loaded: the page says why",
            file=out,
        )
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
