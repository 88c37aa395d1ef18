"""Receipts in the plugin (docs/secrets.md): a golden changed after it was recorded is refused.

``--rollout-record`` seals each golden it writes with a receipt beside it; compare mode
checks the receipt before replaying a byte of the golden; ``--rollout-accept-edits`` (or
re-recording) is how a deliberate change is accepted.
"""

from __future__ import annotations

import pytest
from plugin_agent import IN_PROCESS, WEATHER_TEST, XDIST, live_calls, record, run, write_project

from pytest_rollout.store.receipt import ReceiptStatus, make_receipt, receipt_path, verify

GOLDEN = "golden/test_weather/test_weather.jsonl"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    return pytester


def test_recording_seals_each_golden(project: pytest.Pytester) -> None:
    golden = project.path / GOLDEN
    assert verify(golden).status is ReceiptStatus.OK
    receipt = receipt_path(golden)
    before = receipt.read_bytes(), receipt.stat().st_mtime_ns
    record(project).assert_outcomes(passed=1)  # unchanged: neither file is rewritten
    assert (receipt.read_bytes(), receipt.stat().st_mtime_ns) == before


@XDIST
def test_an_edited_golden_is_refused_before_anything_is_replayed(
    project: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    golden = project.path / GOLDEN
    golden.write_bytes(golden.read_bytes().replace(b"light rain", b"light snow"))
    result = run(project, xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "golden */test_weather.jsonl does not match its receipt "
            "(*test_weather.jsonl.receipt): it changed after it was recorded or sealed.",
            "  expected sha256: *",
            "  actual sha256:   *",
            "To accept the golden as it is: re-record it with "
            "`pytest --rollout-record test_weather.py::test_weather`,",
            "or accept a deliberate edit with `pytest --rollout-accept-edits` or "
            "`rollout seal *test_weather.jsonl`.",
        ]
    )
    assert live_calls(project) == []


def test_a_truncated_golden_is_refused(project: pytest.Pytester) -> None:
    golden = project.path / GOLDEN
    lines = golden.read_bytes().splitlines(keepends=True)
    golden.write_bytes(b"".join(lines[:-2] + lines[-1:]))
    result = run(project, ())
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*bytes: * in the file, * in the receipt (shorter)"])


def test_a_golden_without_a_receipt_is_refused(project: pytest.Pytester) -> None:
    receipt_path(project.path / GOLDEN).unlink()
    result = run(project, ())
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["golden */test_weather.jsonl has no receipt*"])


def test_accepting_edits_compares_against_the_edited_golden_and_seals_it(
    project: pytest.Pytester,
) -> None:
    golden = project.path / GOLDEN
    golden.write_bytes(golden.read_bytes().replace(b'"ts":"20', b'"ts":"19', 1))
    result = run(project, (), "--rollout-accept-edits")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "1 golden(s) compared: 2/2 turns served, 2/2 tool calls matched, 0 diverged, "
            "1 edited golden(s) accepted and sealed anew"
        ]
    )
    assert verify(golden).status is ReceiptStatus.OK
    run(project, ()).assert_outcomes(passed=1)


def test_an_edit_that_changes_the_run_is_reported_once_accepted(project: pytest.Pytester) -> None:
    golden = project.path / GOLDEN
    golden.write_bytes(golden.read_bytes().replace(b"light rain", b"light snow"))
    result = run(project, (), "--rollout-accept-edits")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*light snow*"])


def test_re_recording_replaces_an_edited_golden(project: pytest.Pytester) -> None:
    golden = project.path / GOLDEN
    # Timestamps are left out of the comparison: the run is canonically the same, but the
    # file is not what the recorder wrote, so re-recording writes it anew.
    golden.write_bytes(golden.read_bytes().replace(b'"ts":"20', b'"ts":"19', 1))
    assert verify(golden).status is ReceiptStatus.MISMATCH
    result = record(project)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 golden(s) written (0 created, 1 updated), 0 unchanged*"])
    assert verify(golden).status is ReceiptStatus.OK
    assert b'"ts":"19' not in golden.read_bytes()


def test_pruning_an_unused_golden_removes_its_receipt(project: pytest.Pytester) -> None:
    extra = project.path / "golden/test_weather/test_gone.jsonl"
    extra.write_bytes((project.path / GOLDEN).read_bytes())
    receipt_path(extra).write_bytes(receipt_path(project.path / GOLDEN).read_bytes())
    project.runpytest_inprocess(*IN_PROCESS, "--rollout-record").assert_outcomes(passed=1)
    assert not extra.exists()
    assert not receipt_path(extra).exists()


def test_accepting_edits_never_seals_a_golden_the_loader_refuses(
    project: pytest.Pytester,
) -> None:
    golden = project.path / GOLDEN
    receipt = receipt_path(golden).read_bytes()
    golden.write_bytes(golden.read_bytes() + b"not json\n")
    result = run(project, (), "--rollout-accept-edits")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_weather.jsonl:*: *"])
    assert receipt_path(golden).read_bytes() == receipt
    assert verify(golden).status is ReceiptStatus.MISMATCH


def test_a_write_killed_after_its_commit_point_is_finished_by_the_next_run(
    project: pytest.Pytester,
) -> None:
    """Compare mode settles the golden's folder before it reads the golden."""
    golden = project.path / GOLDEN
    old = golden.read_bytes()
    new = old.replace(b'"ts":"20', b'"ts":"19', 1)
    # What a kill between the receipt's rename and the golden's leaves: the new receipt,
    # the old golden, and the new golden whole in its pending file.
    (golden.parent / f".{golden.name}.0123abcd.tmp").write_bytes(new)
    receipt_path(golden).write_bytes(
        make_receipt(new, redaction_mode="redacted", rules_sha256="").to_bytes(golden.name)
    )
    assert verify(golden).status is ReceiptStatus.MISMATCH
    run(project, ()).assert_outcomes(passed=1)
    assert golden.read_bytes() == new
    assert verify(golden).status is ReceiptStatus.OK
    assert [p.name for p in golden.parent.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("mode", ["compare", "record"])
def test_temporary_files_of_an_interrupted_write_are_removed_by_the_next_run(
    project: pytest.Pytester, mode: str
) -> None:
    """A golden and its receipt are written as one unit, and stale pending files go."""
    folder = (project.path / GOLDEN).parent
    stale = [
        folder / ".test_weather.jsonl.k3j4h5g6.tmp",
        folder / ".test_weather.jsonl.receipt.9f8e7d6c.tmp",
    ]
    for path in stale:
        path.write_bytes(b"half of a file")
    result = record(project) if mode == "record" else run(project, ())
    result.assert_outcomes(passed=1)
    assert not any(path.exists() for path in stale)
    assert verify(project.path / GOLDEN).status is ReceiptStatus.OK
