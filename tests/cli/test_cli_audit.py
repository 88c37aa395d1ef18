"""Tests of ``rollout audit verify``: pinned output, exit codes, --head, refusals, sanitizing."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from command import python_m
from hostile import EVIL, assert_printable

from pytest_rollout.cli import main
from pytest_rollout.store.audit import append_entry

T0 = datetime(2026, 6, 28, 12, 34, 56, tzinfo=UTC)


def verify(*args: str | Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``rollout audit verify ARGS``."""
    out = io.StringIO()
    code = main(["audit", "verify", *map(str, args)], out=out)
    return code, out.getvalue(), capsys.readouterr().err


def make(path: Path, count: int) -> list[str]:
    return [
        append_entry(path, "run-1", "audit.action", {"i": i}, now=T0 + timedelta(seconds=i))
        for i in range(count)
    ]


def rows(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def put(path: Path, entries: list[dict[str, Any]]) -> None:
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))


@pytest.fixture
def trail(tmp_path: Path) -> Path:
    return tmp_path / "audit.jsonl"


# -- verdicts ------------------------------------------------------------------------------


def test_an_intact_chain(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hashes = make(trail, 3)
    assert verify(trail, capsys=capsys) == (
        0,
        f"{trail}: 3 entries, chain intact, head sha256:{hashes[-1][:16]}\n",
        "",
    )


def test_one_entry_is_singular(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (head,) = make(trail, 1)
    assert verify(trail, capsys=capsys) == (
        0,
        f"{trail}: 1 entry, chain intact, head sha256:{head[:16]}\n",
        "",
    )


def test_an_empty_file(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trail.write_bytes(b"")
    assert verify(trail, capsys=capsys) == (0, f"{trail}: 0 entries, nothing to verify\n", "")


def test_a_deleted_entry(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make(trail, 5)
    entries = rows(trail)
    del entries[3]
    put(trail, entries)
    assert verify(trail, capsys=capsys) == (
        1,
        f"{trail}:4: the audit chain breaks at entry 4: its prev_hash does not match the entry "
        "before it (an entry was deleted, inserted or moved)\n"
        f"{trail}: the 3 entries before it are intact\n",
        "",
    )


def test_an_edited_entry(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make(trail, 3)
    entries = rows(trail)
    entries[1]["payload"] = {"i": 99}
    put(trail, entries)
    assert verify(trail, capsys=capsys) == (
        1,
        f"{trail}:2: the audit chain breaks at entry 2: its entry_hash does not match its "
        "content (the entry was edited)\n"
        f"{trail}: the 1 entry before it is intact\n",
        "",
    )


def test_a_break_at_the_first_line(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trail.write_bytes(b"not json\n")
    assert verify(trail, capsys=capsys) == (
        1,
        f"{trail}:1: the audit chain breaks at entry 1: it is not valid JSON\n"
        f"{trail}: no entry comes before it\n",
        "",
    )


def test_a_partial_last_line(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make(trail, 2)
    trail.write_bytes(trail.read_bytes()[:-1])
    code, out, _ = verify(trail, capsys=capsys)
    assert code == 1
    assert out.splitlines() == [
        f"{trail}:2: the audit chain breaks at entry 2: it has no newline at the end "
        "(a partial write)",
        f"{trail}: the 1 entry before it is intact",
    ]


# -- refusals ------------------------------------------------------------------------------


def test_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nope.jsonl"
    assert verify(path, capsys=capsys) == (
        2,
        "",
        f"rollout audit: {path}: cannot open: No such file or directory\n",
    )


def test_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert verify(tmp_path, capsys=capsys) == (
        2,
        "",
        f"rollout audit: {tmp_path}: is a directory, not a regular file\n",
    )


@pytest.mark.parametrize("head", ["abc", "sha256:0123", "g" * 64, "0" * 65, "sha1:" + "0" * 40])
def test_a_bad_head_is_a_usage_error(
    trail: Path, capsys: pytest.CaptureFixture[str], head: str
) -> None:
    make(trail, 1)
    assert verify(trail, "--head", head, capsys=capsys) == (
        2,
        "",
        "rollout audit: error: --head must be the head hash: 64 hex digits, or sha256: and at "
        "least its first 16 as printed\n",
    )


def test_no_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["audit"])
    assert info.value.code == 2
    assert "rollout audit: error: the following arguments are required: COMMAND" in (
        capsys.readouterr().err
    )


# -- the kept head -------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["full", "printed", "upper", "bare prefix"])
def test_the_head_matches(trail: Path, capsys: pytest.CaptureFixture[str], form: str) -> None:
    head = make(trail, 3)[-1]
    given = {
        "full": head,
        "printed": f"sha256:{head[:16]}",
        "upper": head.upper(),
        "bare prefix": head[:20],
    }[form]
    assert verify(trail, "--head", given, capsys=capsys) == (
        0,
        f"{trail}: 3 entries, chain intact, head sha256:{head[:16]}, as expected\n",
        "",
    )


def test_entries_removed_from_the_end(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hashes = make(trail, 4)
    put(trail, rows(trail)[:2])  # still a valid chain: only the kept head shows the loss
    assert verify(trail, capsys=capsys)[0] == 0
    assert verify(trail, "--head", f"sha256:{hashes[-1][:16]}", capsys=capsys) == (
        1,
        f"{trail}: 2 entries, chain intact, head sha256:{hashes[1][:16]}\n"
        f"{trail}: the file ends at another entry than the expected head "
        f"sha256:{hashes[-1][:16]} (entries were removed from the end, or added after it)\n",
        "",
    )


def test_entries_added_after_the_head(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kept = make(trail, 2)[-1]
    make(trail, 1)
    code, out, _ = verify(trail, "--head", kept, capsys=capsys)
    assert code == 1
    assert out.splitlines()[1] == (
        f"{trail}: the file ends at another entry than the expected head sha256:{kept[:16]} "
        "(entries were removed from the end, or added after it)"
    )


def test_every_entry_removed(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kept = make(trail, 2)[-1]
    trail.write_bytes(b"")
    assert verify(trail, "--head", kept, capsys=capsys) == (
        1,
        f"{trail}: 0 entries, nothing to verify\n"
        f"{trail}: the file has no entries, not the expected head sha256:{kept[:16]} "
        "(entries were removed from the end)\n",
        "",
    )


def test_a_broken_chain_with_a_head(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = make(trail, 2)[-1]
    trail.write_bytes(trail.read_bytes() + b"{}\n")
    code, out, _ = verify(trail, "--head", head, capsys=capsys)
    assert code == 1
    assert out.splitlines() == [
        f'{trail}:3: the audit chain breaks at entry 3: it lacks the fields "timestamp", '
        '"run_id", "event_type", "payload", "prev_hash" and 1 more',
        f"{trail}: the 2 entries before it are intact",
    ]


# -- hostile text --------------------------------------------------------------------------


def test_hostile_file_names_are_sanitized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = EVIL.replace("\x00", "").replace("/", "")
    path = tmp_path / name
    make(path, 2)
    code, out, err = verify(path, capsys=capsys)
    assert code == 0
    assert_printable(out)
    assert out.startswith(str(tmp_path) + "/\\x1b[31mred")
    assert out.endswith(
        "2 entries, chain intact, head sha256:" + rows(path)[-1]["entry_hash"][:16] + "\n"
    )
    path.write_bytes(path.read_bytes() + b"x\n")
    code, out, err = verify(path, capsys=capsys)
    assert code == 1
    assert_printable(out)
    missing = tmp_path / (name + "-missing")
    code, out, err = verify(missing, capsys=capsys)
    assert (code, out) == (2, "")
    assert_printable(err)
    assert err.startswith("rollout audit: ")
    assert err.count("\n") == 1


def test_hostile_field_names_are_sanitized(trail: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make(trail, 1)
    entry = rows(trail)[0]
    entry[EVIL[:40]] = 1
    put(trail, [entry])
    code, out, _ = verify(trail, capsys=capsys)
    assert code == 1
    assert_printable(out)
    assert len(out.splitlines()) == 2
    assert "it has the unexpected field " in out


# -- as a command --------------------------------------------------------------------------


def test_the_command(trail: Path) -> None:
    head = make(trail, 2)[-1]
    result = python_m("audit", "verify", trail)
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        f"{trail}: 2 entries, chain intact, head sha256:{head[:16]}\n",
        "",
    )
    result = python_m("audit", "verify", trail, "--head", "f" * 64)
    assert result.returncode == 1


def test_the_help_says_what_it_does_not_do() -> None:
    result = python_m("audit", "verify", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "This is tamper detection, not prevention" in text
    assert "deleting entries from the end leaves a shorter chain that still verifies" in text
    assert "--head HASH" in text
