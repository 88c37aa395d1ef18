"""The capture directory made with redaction off: one note on stderr, the first time only
(docs/secrets.md, "Captured runs")."""

from __future__ import annotations

import pytest
from plugin_agent import IN_PROCESS, N2, WEATHER_TEST, record, run_subprocess, write_project

NOTE = (
    "pytest-rollout: note: the capture directory {root} is new, and with redaction off "
    "(redaction mode full) it will keep every run unredacted: prompts, answers, tool "
    "arguments and results, and any secret in them. Turn redaction on with "
    "--rollout-redact=redacted or the rollout_redact ini key (docs/secrets.md)."
)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("ROLLOUT_DIR", str(pytester.path / "runs"))
    write_project(pytester, test_weather=WEATHER_TEST)
    return pytester


def notes(result: pytest.RunResult) -> list[str]:
    return [line for line in result.errlines if "pytest-rollout: note:" in line]


def test_the_first_session_is_told_once_and_the_next_is_not(project: pytest.Pytester) -> None:
    first = record(project, "--rollout-redact=full")
    first.assert_outcomes(passed=1)
    assert notes(first) == [NOTE.format(root=project.path / "runs")]
    assert list((project.path / "runs").rglob("*.jsonl"))  # the run was kept there

    again = project.runpytest_inprocess(*IN_PROCESS, "--rollout-redact=full")
    again.assert_outcomes(passed=1)
    assert notes(again) == []


def test_the_ini_key_turns_it_on_as_the_flag_does(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nrollout_redact = full\n")
    assert notes(record(project)) == [NOTE.format(root=project.path / "runs")]


def test_redacted_runs_are_not_noted(project: pytest.Pytester) -> None:
    result = record(project)
    result.assert_outcomes(passed=1)
    assert notes(result) == []
    assert list((project.path / "runs").rglob("*.jsonl"))


def test_under_xdist_the_session_is_told_once(project: pytest.Pytester) -> None:
    result = run_subprocess(project, *N2, "--rollout-record", "--rollout-redact=full")
    result.assert_outcomes(passed=1)
    assert notes(result) == [NOTE.format(root=project.path / "runs")]
