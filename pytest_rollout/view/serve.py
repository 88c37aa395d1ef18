"""``rollout view --serve``: start a viewer of the rollouts, or find the one already running.

A viewer that starts writes its descriptor (:mod:`.descriptor`: port, token, pid; mode 0600)
in the project's pytest cache and removes it when it stops. Before starting, the descriptors
of viewers whose process is gone are swept; if a viewer of the same rollouts is running and
answers its health probe, its address is printed again and nothing new is started. A
descriptor whose viewer does not answer is removed and a new viewer started in its place.

A viewer's data follows its files: when a rollout it shows has changed on disk (or a folder
it shows holds other files), the next data request, a reload of the page, shows the new
state. So reusing a viewer never shows an old run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..errors import RolloutError
from ..format.gcpause import collector_paused
from ..safety.sanitize import sanitize
from .descriptor import (
    Descriptor,
    descriptor_folder,
    descriptor_path,
    probe,
    read_descriptor,
    remove_descriptor,
    sweep,
    write_descriptor,
)
from .listing import collect_entries, rollout_files
from .server import ViewServer

__all__ = ["Viewer", "open_viewer", "serve_command"]

_Stamp = tuple[tuple[str, int, int, int] | tuple[str], ...]


class _Watched:
    """The rollouts ``paths`` name, reloaded when their files change."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._paths = list(paths)
        self._stamp = self._now()

    def _now(self) -> _Stamp | None:
        try:
            listing = rollout_files(self._paths)
        except RolloutError:
            return None
        stamps: list[tuple[str, int, int, int] | tuple[str]] = []
        for path, _ in listing:
            try:
                seen = os.stat(path)
            except (OSError, ValueError):
                stamps.append((path,))
                continue
            stamps.append((path, seen.st_mtime_ns, seen.st_size, seen.st_ino))
        return tuple(stamps)

    def load(self) -> tuple[str, list[dict[str, Any]]]:
        # The entries are trees of many containers: the cyclic collector would only walk them.
        with collector_paused():
            title, entries = collect_entries(self._paths)
        return f"rollout view: {title}", entries

    def reload(self) -> tuple[str, Sequence[Mapping[str, Any]]] | None:
        """New entries when the files changed since last seen, else ``None``."""
        stamp = self._now()
        if stamp is None or stamp == self._stamp:
            return None
        self._stamp = stamp
        try:
            return self.load()
        except RolloutError:
            return None


@dataclass
class Viewer:
    """A viewer to open: started here (``server``), or found running (``server`` is
    ``None``). ``count``: the rollouts it shows; ``note``: why no descriptor was written, if
    it was not."""

    url: str
    pid: int
    descriptor: Path
    server: ViewServer | None = None
    count: int = 0
    note: str | None = None

    def close(self) -> None:
        """Stop a viewer started here and remove its descriptor."""
        if self.server is not None:
            self.server.shutdown()
            remove_descriptor(self.descriptor, token=self.server.token)


def _running(place: Path) -> Descriptor | None:
    """The viewer the descriptor at ``place`` names, if it answers; a stale one is removed."""
    held = read_descriptor(place)
    if held is not None and probe(held):
        return held
    if held is not None or place.exists():
        remove_descriptor(place)
    return None


def open_viewer(paths: Sequence[str], *, folder: Path | None = None) -> Viewer:
    """The viewer of ``paths``: the running one if it answers, else a new one, listening but
    not yet serving (its :meth:`ViewServer.serve_forever` serves). ``folder``: where the
    descriptors are (default: the project's, see :mod:`.descriptor`)."""
    if folder is None:
        folder = descriptor_folder(Path.cwd())
    place = descriptor_path(folder, paths)
    sweep(folder)
    held = _running(place)
    if held is not None:
        return Viewer(url=held.url, pid=held.pid, descriptor=place)
    watched = _Watched(paths)
    title, entries = watched.load()
    server = ViewServer(title, entries, reload=watched.reload)
    absolute = tuple(os.path.abspath(p) for p in paths)
    descriptor = Descriptor(port=server.port, token=server.token, pid=os.getpid(), paths=absolute)
    note = None
    try:
        write_descriptor(place, descriptor)
    except OSError as exc:
        note = f"no descriptor written at {place}: {exc.strerror or type(exc).__name__}"
    return Viewer(
        url=server.url,
        pid=os.getpid(),
        descriptor=place,
        server=server,
        count=len(entries),
        note=note,
    )


def serve_command(paths: Sequence[str], *, out: TextIO, descriptors: Path | None = None) -> int:
    """Serve the rollouts until interrupted (Ctrl-C), or print the address of the viewer of
    the same rollouts already running; returns the exit status."""
    viewer = open_viewer(paths, folder=descriptors)
    if viewer.server is None:
        print(f"a viewer of these rollouts is already running (pid {viewer.pid}); open:", file=out)
        print(viewer.url, file=out, flush=True)
        return 0
    if viewer.note is not None:
        print(sanitize(viewer.note), file=out)
    print(f"serving {viewer.count} rollout(s) on 127.0.0.1 only; open:", file=out)
    print(viewer.url, file=out, flush=True)
    try:
        viewer.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        viewer.close()
    return 0
