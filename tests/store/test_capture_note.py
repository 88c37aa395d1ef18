"""The note a session gives once when it is about to make the capture directory with
redaction off (docs/secrets.md, "Captured runs")."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_rollout.store.capture import unredacted_note


def test_a_new_directory_with_redaction_off_gets_the_note(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    assert unredacted_note(root, "full") == (
        f"pytest-rollout: note: the capture directory {root} is new, and with redaction off "
        "(redaction mode full) it will keep every run unredacted: prompts, answers, tool "
        "arguments and results, and any secret in them. Turn redaction on with "
        "--rollout-redact=redacted or the rollout_redact ini key (docs/secrets.md)."
    )
    assert not root.exists()  # said, not made


@pytest.mark.parametrize("mode", ["redacted", "hashed", "none"])
def test_redacted_runs_get_no_note(tmp_path: Path, mode: str) -> None:
    assert unredacted_note(tmp_path / "runs", mode) is None


def test_a_directory_that_was_there_before_gets_no_note(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    assert unredacted_note(root, "full") is None
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")  # set up by someone: not made by this session
    assert unredacted_note(link, "full") is None


def test_the_path_is_printed_safely(tmp_path: Path) -> None:
    root = tmp_path / "runs\x1b[2J\u202e"
    note = unredacted_note(root, "full")
    assert note is not None
    assert "\x1b" not in note
    assert "\u202e" not in note
