"""A run that could not be saved whole is said in the terminal summary, and its test passes.

Recording never breaks the user's test, so the summary is where a user learns that a run
was lost to a full disk or cut at the capture directory's size cap.
"""

from __future__ import annotations

import pytest
from plugin_agent import IN_PROCESS, WEATHER_TEST, write_project

FULL_DISK = """
import errno

import pytest


@pytest.fixture(autouse=True)
def full_disk(monkeypatch):
    import pytest_rollout.format.partial as partial

    def refuse(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(partial, "_write_all", refuse)
"""

BIG_RUN = """
def test_big(rollout):
    with rollout.run(prompt="hi") as run:
        for i in range(3):
            rollout.emit("agent.note", text="x" * 600_000, i=i)
        run.output = "done"
"""


def test_a_run_lost_to_a_full_disk_is_said_and_the_test_passes(
    pytester: pytest.Pytester,
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    pytester.makeconftest(FULL_DISK)
    rollout_dir = pytester.path / "runs"

    result = pytester.runpytest_inprocess(
        *IN_PROCESS, "--rollout-record", f"--rollout-dir={rollout_dir}"
    )

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "test_weather.py::test_weather: its run was not saved: writing runs/*.jsonl failed "
            "(a full disk or a lost folder?)"
        ]
    )


def test_a_run_cut_at_the_size_cap_is_said(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_big=BIG_RUN)
    pytester.makeini("[pytest]\nrollout_capture_max_file_mb = 1\n")

    result = pytester.runpytest_inprocess(*IN_PROCESS, f"--rollout-dir={pytester.path / 'runs'}")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["test_big.py::test_big: its saved run was cut at the size cap (* line(s) left out;*"]
    )
