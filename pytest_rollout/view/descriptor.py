"""The descriptor of a running viewer: where ``rollout view --serve`` says it is listening.

A viewer writes one small JSON file while it runs, ``{"port", "token", "pid", "paths"}``,
readable by its owner alone (mode 0600), and removes it when it stops. A second ``--serve``
of the same rollouts reads it, asks the viewer whether it is alive (:func:`probe`, a GET of
``/health`` on 127.0.0.1 with the token) and, if it is, prints its address instead of
starting another. A descriptor whose viewer does not answer is stale: it is removed
(:func:`remove_descriptor`), and so is every descriptor whose process is gone
(:func:`sweep`).

The descriptors live in the project's pytest cache, ``<cache_dir>/d/rollout/view/`` (next to
the runs cache, see :mod:`pytest_rollout.store.project`), one per set of rollouts served:
``viewer-<16 hex digits of the paths' digest>.json``. A cache folder that does not exist yet
is made with a ``.gitignore`` of ``*``, as pytest makes it, so a token never lands in a
commit.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

from ..store.project import RUNS_CACHE, find_project

__all__ = [
    "Descriptor",
    "descriptor_folder",
    "descriptor_path",
    "probe",
    "read_descriptor",
    "remove_descriptor",
    "sweep",
    "write_descriptor",
]

#: The descriptors' folder, relative to the project's pytest cache folder.
FOLDER: Final = (*RUNS_CACHE[:-1], "view")
#: The path the server answers a health probe at.
HEALTH_PATH: Final = "/health"
#: Seconds a health probe waits for the viewer's answer.
PROBE_TIMEOUT: Final = 2.0
#: The largest descriptor read (a bigger file is not one).
_MAX_BYTES: Final = 64 * 1024
_GITIGNORE: Final = b"# Created by pytest-rollout (rollout view --serve).\n*\n"


@dataclass(frozen=True, slots=True)
class Descriptor:
    """A running viewer: its port on 127.0.0.1, its token, its process and what it shows."""

    port: int
    token: str
    pid: int
    paths: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        """The viewer's address, the token in its fragment."""
        return f"http://127.0.0.1:{self.port}/#token={self.token}"

    def to_json(self) -> bytes:
        document = {"port": self.port, "token": self.token, "pid": self.pid, "paths": self.paths}
        return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"


def descriptor_folder(start: Path) -> Path:
    """The descriptors' folder of the project ``start`` (a folder) is in."""
    return find_project(start.resolve()).cache_dir.joinpath(*FOLDER)


def descriptor_path(folder: Path, paths: Sequence[str]) -> Path:
    """The descriptor of a viewer of ``paths`` (the same paths, from anywhere: the same
    file)."""
    key = "\0".join(os.path.abspath(p) for p in paths)
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return folder / f"viewer-{digest}.json"


def _make_folder(folder: Path) -> None:
    """Make ``folder`` (owner only); a cache folder made here gets pytest's ``.gitignore``."""
    cache = folder.parents[len(FOLDER) - 1] if folder.parts[-len(FOLDER) :] == FOLDER else None
    fresh = cache is not None and not cache.exists()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if fresh and cache is not None:
        with contextlib.suppress(OSError):
            (cache / ".gitignore").write_bytes(_GITIGNORE)


def write_descriptor(path: Path, descriptor: Descriptor) -> None:
    """Write ``descriptor`` at ``path``, mode 0600, put in place whole (a reader sees the
    old file or the new one). Raises :class:`OSError`."""
    _make_folder(path.parent)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the file held before, and whatever the umask
        os.write(fd, descriptor.to_json())
    finally:
        os.close(fd)
    try:
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


def _int(value: object) -> int | None:
    return value if type(value) is int and value > 0 else None


def read_descriptor(path: Path) -> Descriptor | None:
    """The descriptor at ``path``; ``None`` when there is none or it is not one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = os.read(fd, _MAX_BYTES + 1) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(document, dict) or len(data) > _MAX_BYTES:
        return None
    port, pid, token = _int(document.get("port")), _int(document.get("pid")), document.get("token")
    if port is None or port > 65535 or pid is None or not isinstance(token, str) or not token:
        return None
    paths = document.get("paths")
    shown = tuple(p for p in paths if isinstance(p, str)) if isinstance(paths, list) else ()
    return Descriptor(port=port, token=token, pid=pid, paths=shown)


def probe(descriptor: Descriptor, *, timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether the viewer ``descriptor`` names answers on 127.0.0.1: its health answer
    (given its token) names its process."""
    if not token_safe(descriptor.token):
        return False
    connection = http.client.HTTPConnection("127.0.0.1", descriptor.port, timeout=timeout)
    try:
        connection.request(
            "GET", HEALTH_PATH, headers={"Authorization": f"Bearer {descriptor.token}"}
        )
        response = connection.getresponse()
        body = response.read(_MAX_BYTES)
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()
    if response.status != 200:
        return False
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(answer, dict) and answer.get("pid") == descriptor.pid


def token_safe(token: str) -> bool:
    """Whether ``token`` can travel in a header as it is (a token the server made can)."""
    return token.isascii() and token.isprintable() and " " not in token


def remove_descriptor(path: Path, *, token: str | None = None) -> None:
    """Remove the descriptor at ``path`` (given ``token``: only if it still holds it, so a
    viewer that stops never removes a newer viewer's descriptor)."""
    if token is not None:
        held = read_descriptor(path)
        if held is None or held.token != token:
            return
    with contextlib.suppress(OSError):
        path.unlink()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # someone else's process: alive
        return False
    return False


def sweep(folder: Path) -> list[Path]:
    """Remove the descriptors in ``folder`` whose process is gone, or that are not
    descriptors at all; returns the ones removed."""
    removed = []
    try:
        found = sorted(folder.glob("viewer-*.json"))
    except OSError:
        return []
    for path in found:
        held = read_descriptor(path)
        if held is None or _gone(held.pid):
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
    return removed
