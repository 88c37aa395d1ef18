"""``rollout view --serve`` finds the viewer already running: its descriptor (port, token, pid,
mode 0600), the health probe, the sweep of stale descriptors, and data that follows the
files."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from test_viewer import record_trip

from pytest_rollout.view.descriptor import (
    Descriptor,
    descriptor_folder,
    descriptor_path,
    probe,
    read_descriptor,
    sweep,
    write_descriptor,
)
from pytest_rollout.view.serve import Viewer, open_viewer

pytestmark = pytest.mark.slow  # servers on loopback


def _serving(viewer: Viewer) -> threading.Thread:
    assert viewer.server is not None
    thread = threading.Thread(target=viewer.server.serve_forever, daemon=True)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def trip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_trip(tmp_path_factory.mktemp("runs") / "trip.jsonl")


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory, trip: Path) -> Iterator[tuple[Viewer, Path]]:
    """A viewer of ``trip``, serving, and its descriptors' folder."""
    folder = tmp_path_factory.mktemp("descriptors") / "view"
    viewer = open_viewer([str(trip)], folder=folder)
    thread = _serving(viewer)
    yield viewer, folder
    viewer.close()
    thread.join(timeout=5)


def _free_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port: int = listener.getsockname()[1]
    return port


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_viewer_writes_its_descriptor_for_its_owner_only(
    running: tuple[Viewer, Path], trip: Path
) -> None:
    viewer, folder = running
    assert viewer.server is not None
    place = descriptor_path(folder, [str(trip)])
    assert viewer.descriptor == place
    assert stat.S_IMODE(place.stat().st_mode) == 0o600
    written = orjson.loads(place.read_bytes())
    assert written == {
        "port": viewer.server.port,
        "token": viewer.server.token,
        "pid": os.getpid(),
        "paths": [str(trip)],
    }
    assert viewer.url == f"http://127.0.0.1:{viewer.server.port}/#token={viewer.server.token}"
    assert probe(Descriptor(viewer.server.port, viewer.server.token, os.getpid()))
    assert not probe(Descriptor(viewer.server.port, "wrong", os.getpid()))
    assert not probe(Descriptor(viewer.server.port, viewer.server.token, os.getpid() + 1))


def test_a_second_serve_reuses_the_running_viewer(running: tuple[Viewer, Path], trip: Path) -> None:
    viewer, folder = running
    again = open_viewer([str(trip)], folder=folder)
    assert again.server is None
    assert (again.url, again.pid) == (viewer.url, os.getpid())
    again.close()  # a viewer found running is left alone
    assert read_descriptor(viewer.descriptor) is not None
    assert viewer.server is not None
    assert probe(Descriptor(viewer.server.port, viewer.server.token, os.getpid()))


def test_a_stale_descriptor_is_swept_and_a_new_viewer_started(tmp_path: Path, trip: Path) -> None:
    place = descriptor_path(tmp_path, [str(trip)])
    # Its process is alive (this one) but nothing answers at its port.
    write_descriptor(place, Descriptor(port=_free_port(), token="old", pid=os.getpid()))
    viewer = open_viewer([str(trip)], folder=tmp_path)
    try:
        assert viewer.server is not None
        held = read_descriptor(place)
        assert held is not None
        assert (held.port, held.token) == (viewer.server.port, viewer.server.token)
    finally:
        viewer.close()
    assert not place.exists()  # removed when the viewer stops


def test_descriptors_of_processes_gone_are_swept(tmp_path: Path) -> None:
    gone = tmp_path / "viewer-0000000000000000.json"
    write_descriptor(gone, Descriptor(port=1, token="t", pid=_gone_pid()))
    junk = tmp_path / "viewer-1111111111111111.json"
    junk.write_bytes(b"not a descriptor")
    alive = tmp_path / "viewer-2222222222222222.json"
    write_descriptor(alive, Descriptor(port=1, token="t", pid=os.getpid()))
    other = tmp_path / "notes.json"
    other.write_bytes(b"{}")
    assert sweep(tmp_path) == [gone, junk]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, other.name])


def test_a_stopping_viewer_leaves_a_newer_descriptor_alone(tmp_path: Path, trip: Path) -> None:
    viewer = open_viewer([str(trip)], folder=tmp_path)
    newer = Descriptor(port=1, token="newer", pid=os.getpid())
    write_descriptor(viewer.descriptor, newer)
    viewer.close()
    assert read_descriptor(viewer.descriptor) == newer


def test_the_descriptors_live_in_the_projects_pytest_cache(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    folder = descriptor_folder(tmp_path / "sub")
    assert folder == tmp_path / ".pytest_cache" / "d" / "rollout" / "view"
    write_descriptor(folder / "viewer-x.json", Descriptor(port=1, token="t", pid=1))
    # A cache folder made here is ignored by git, as pytest makes it.
    assert (tmp_path / ".pytest_cache" / ".gitignore").read_text(encoding="utf-8").endswith("*\n")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # Written over, a descriptor is still its owner's alone.
    (folder / "viewer-x.json").chmod(0o644)
    write_descriptor(folder / "viewer-x.json", Descriptor(port=2, token="t", pid=1))
    assert stat.S_IMODE((folder / "viewer-x.json").stat().st_mode) == 0o600


def test_the_same_rollouts_from_elsewhere_have_the_same_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    here = descriptor_path(tmp_path, ["runs/a.jsonl"])
    assert here == descriptor_path(tmp_path, [str(tmp_path / "runs" / "a.jsonl")])
    assert here != descriptor_path(tmp_path, ["runs/b.jsonl"])
    assert here != descriptor_path(tmp_path, ["runs/a.jsonl", "runs/b.jsonl"])


def _names(viewer: Viewer) -> list[str]:
    assert viewer.server is not None
    connection = http.client.HTTPConnection("127.0.0.1", viewer.server.port, timeout=10)
    headers = {"Authorization": f"Bearer {viewer.server.token}"}
    connection.request("GET", "/data.json", headers=headers)
    data = orjson.loads(connection.getresponse().read())
    return [entry["name"] for entry in data["entries"]]


def test_the_data_follows_the_files(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    record_trip(runs / "a.jsonl")
    viewer = open_viewer([str(runs)], folder=tmp_path / "view")
    thread = _serving(viewer)
    try:
        assert _names(viewer) == ["a.jsonl"]
        record_trip(runs / "b.jsonl")
        assert _names(viewer) == ["a.jsonl", "b.jsonl"]
    finally:
        viewer.close()
        thread.join(timeout=5)


def test_rollout_view_serve_twice_reuses_the_first(tmp_path: Path, trip: Path) -> None:
    """The command as a user runs it: the second ``--serve`` prints the first's address."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    command = [sys.executable, "-m", "pytest_rollout", "view", "--serve", str(trip)]
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    with subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, text=True, env=env, encoding="utf-8"
    ) as first:
        try:
            assert first.stdout is not None
            assert first.stdout.readline() == "serving 1 rollout(s) on 127.0.0.1 only; open:\n"
            url = first.stdout.readline().strip()
            second = subprocess.run(
                command,
                check=False,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            assert second.returncode == 0, second.stderr
            assert second.stdout == (
                f"a viewer of these rollouts is already running (pid {first.pid}); open:\n{url}\n"
            )
        finally:
            first.send_signal(signal.SIGINT)
            first.wait(timeout=30)
    assert first.returncode == 0
    assert list((tmp_path / ".pytest_cache" / "d" / "rollout" / "view").iterdir()) == []
