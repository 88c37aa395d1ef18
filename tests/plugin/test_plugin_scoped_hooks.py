"""Redaction and ignore hooks count for the tests below their conftest, and only for them.

A ``pytest_rollout_redact_patterns``, ``_redact_keys`` or ``_ignore`` hook in a nested
conftest is asked per test through the test's path-scoped hooks: it reaches the tests of
its folder (a secret it names never reaches their goldens) and never their siblings.
"""

from __future__ import annotations

import pytest
from plugin_agent import IN_PROCESS

NOTE_TEST = """
import pytest


@pytest.mark.rollout(model_calls=False)  # a run of custom events, no model
def test_note(rollout, golden):
    with rollout.run(prompt="hi") as run:
        rollout.emit("agent.note", text="ticket TICKET-4242", stamp="{stamp}")
        run.output = "done"
    assert rollout == golden
"""

SCOPED_CONFTEST = """
def pytest_rollout_redact_patterns(config):
    return [("ticket", r"TICKET-[0-9]++")]


def pytest_rollout_redact_keys(config):
    return ["stamp-secret"]


def pytest_rollout_ignore(config, item):
    return ["agent.note:stamp"]
"""


def _project(pytester: pytest.Pytester, stamp: str) -> None:
    for folder in ("a", "b"):
        (pytester.path / f"tests/{folder}").mkdir(parents=True, exist_ok=True)
        (pytester.path / f"tests/{folder}/test_{folder}.py").write_text(
            NOTE_TEST.replace("{stamp}", stamp), encoding="utf-8"
        )
    (pytester.path / "tests/a/conftest.py").write_text(SCOPED_CONFTEST, encoding="utf-8")


def _golden(pytester: pytest.Pytester, folder: str) -> bytes:
    return (pytester.path / f"golden/tests/{folder}/test_{folder}/test_note.jsonl").read_bytes()


def test_a_nested_conftest_redacts_its_own_tests_only(pytester: pytest.Pytester) -> None:
    _project(pytester, "one")
    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record")
    result.assert_outcomes(passed=2)
    assert b"[REDACTED:ticket]" in _golden(pytester, "a")
    assert b"TICKET-4242" not in _golden(pytester, "a")
    assert b"TICKET-4242" in _golden(pytester, "b")


def test_a_nested_conftest_ignores_fields_for_its_own_tests_only(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, "one")
    pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record").assert_outcomes(passed=2)
    _project(pytester, "two")  # the stamp changed: only tests/a ignores it

    result = pytester.runpytest_inprocess(*IN_PROCESS)

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED tests/b/test_b.py::test_note*"])


def test_a_bad_rule_from_a_hook_fails_the_tests_it_reaches(pytester: pytest.Pytester) -> None:
    _project(pytester, "one")
    (pytester.path / "tests/a/conftest.py").write_text(
        'def pytest_rollout_redact_patterns(config):\n    return [("bad", "(unclosed")]\n',
        encoding="utf-8",
    )

    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record")

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*pytest_rollout_redact_patterns: redaction rule 'bad': invalid regular expression*"]
    )
