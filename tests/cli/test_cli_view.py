"""``rollout view``: a page for a file, a directory, or two files and their difference."""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
from pathlib import Path

import orjson
import pytest
from command import python_m

from pytest_rollout.cli import main

WEATHER = Path(__file__).resolve().parents[2] / "examples" / "weather" / "golden"
_DATA = re.compile(r'<script type="application/json" id="rollout-data">(.*?)</script>', re.S)


def _page_data(path: Path) -> dict[str, object]:
    found = _DATA.search(path.read_text(encoding="utf-8"))
    assert found is not None
    return dict(orjson.loads(found.group(1)))


def test_view_writes_a_page_and_prints_its_path(tmp_path: Path) -> None:
    golden = next(WEATHER.rglob("*.jsonl"))
    target = tmp_path / "page.html"
    done = python_m("view", golden, "--out", target)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{target}\n"
    assert '<meta http-equiv="Content-Security-Policy"' in target.read_text(encoding="utf-8")


def test_view_of_a_directory_shows_every_rollout_in_it(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    done = python_m("view", WEATHER, "--out", target)
    assert done.returncode == 0, done.stderr
    text = orjson.dumps(_page_data(target)).decode()
    for golden in WEATHER.rglob("*.jsonl"):
        assert golden.relative_to(WEATHER).as_posix() in text


def test_view_without_out_writes_a_new_temporary_file() -> None:
    golden = next(WEATHER.rglob("*.jsonl"))
    done = python_m("view", golden)
    assert done.returncode == 0, done.stderr
    written = Path(done.stdout.strip())
    try:
        assert written.name.startswith("rollout-view-")
        assert written.suffix == ".html"
        assert written.stat().st_size > 0
    finally:
        written.unlink()


def test_view_of_a_refused_file_says_so_and_still_writes_the_page(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    target = tmp_path / "page.html"
    done = python_m("view", bad, "--out", target)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == (
        "1 of 1 rollout(s) could not be loaded: the page says why"
    )
    assert "bad.jsonl:1" in orjson.dumps(_page_data(target)).decode()


def test_view_of_two_files_shows_their_difference(tmp_path: Path) -> None:
    golden = next(WEATHER.rglob("*.jsonl"))
    other = tmp_path / "other.jsonl"
    shutil.copy(golden, other)
    target = tmp_path / "page.html"
    done = python_m("view", golden, other, "--out", target)
    assert done.returncode == 0, done.stderr
    assert f"{golden.name} vs other.jsonl" in orjson.dumps(_page_data(target)).decode()


def test_view_of_an_empty_directory_is_an_error(tmp_path: Path) -> None:
    done = python_m("view", tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"rollout: error: no rollout (*.jsonl) under {tmp_path}\n"


def _view_in_process(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    out = io.StringIO()
    status = main(["view", *(str(a) for a in argv)], out=out)
    return status, out.getvalue(), capsys.readouterr().err


def test_view_out_a_directory_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = next(WEATHER.rglob("*.jsonl"))
    status, out, err = _view_in_process(capsys, golden, "--out", tmp_path)
    assert (status, out) == (2, "")
    assert err == f"rollout: error: {tmp_path}: it is a directory\n"
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


@pytest.mark.parametrize(
    ("below", "reason"),
    [
        ("missing/page.html", "its folder {folder} does not exist"),
        ("a-file/page.html", "cannot look at it: Not a directory"),
    ],
)
def test_view_out_a_path_that_cannot_be_made_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], below: str, reason: str
) -> None:
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    target = tmp_path / below
    status, out, err = _view_in_process(capsys, next(WEATHER.rglob("*.jsonl")), "--out", target)
    assert (status, out) == (2, "")
    expected = reason.format(folder=target.parent)
    assert err == f"rollout: error: {target}: {expected}\n"
    assert not (tmp_path / "missing").exists()  # no folder is made


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, devices and links of POSIX")
def test_view_out_writes_into_a_pipe_or_device_and_refuses_a_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import threading

    golden = next(WEATHER.rglob("*.jsonl"))
    # A device is written to, never replaced by a file.
    assert _view_in_process(capsys, golden, "--out", os.devnull)[0] == 0
    assert Path(os.devnull).is_char_device()
    # A FIFO: what a reader at its other end gets is the page.
    fifo = tmp_path / "page.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert _view_in_process(capsys, golden, "--out", fifo)[0] == 0
    reader.join(timeout=30)
    assert got
    assert got[0].startswith(b"<!DOCTYPE html>")
    assert fifo.is_fifo()
    # A link to a regular file is refused; the file it points to is left as it was.
    kept = tmp_path / "kept.html"
    kept.write_text("mine", encoding="utf-8")
    link = tmp_path / "link.html"
    link.symlink_to(kept)
    status, _, err = _view_in_process(capsys, golden, "--out", link)
    assert status == 2
    assert err == (
        f"rollout: error: refusing to write {link}: it is a symbolic link; "
        "name the file it points to\n"
    )
    assert kept.read_text(encoding="utf-8") == "mine"


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="permissions do not bind root"
)
def test_view_out_in_a_read_only_folder_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        target = locked / "page.html"
        status, _, err = _view_in_process(capsys, WEATHER, "--out", target)
    finally:
        locked.chmod(0o700)
    assert status == 2
    assert err == f"rollout: error: cannot write the page to {target}: Permission denied\n"
    assert list(locked.iterdir()) == []
