"""A usage error of the ``rollout`` fixture is shown where the test made it: its traceback
ends in the test's own code, not in pytest-rollout's."""

from __future__ import annotations

import pytest
from plugin_agent import run

USAGE_ERRORS = """
def test_twice(rollout):
    with rollout.run(prompt="p"):
        pass
    with rollout.run(prompt="again"):
        pass


def test_unnamed(rollout):
    rollout.tools([lambda: 1])


def test_still_open(rollout):
    with rollout.run(prompt="p"):
        rollout.steps
"""


def test_a_usage_error_s_traceback_ends_in_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_usage=USAGE_ERRORS)

    result = run(pytester, (), "--rollout-record")

    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "test_usage.py:4: RolloutError",
            ">       rollout.tools([lambda: 1])",
            "E       TypeError: rollout.tools() cannot name the callable*",
            "test_usage.py:9: TypeError",
            ">           rollout.steps",
            "E           pytest_rollout.RolloutError: the run is still open*",
            "test_usage.py:14: RolloutError",
        ]
    )
    result.stdout.fnmatch_lines(["FAILED test_usage.py::test_twice - *rollout.run()*"])
    assert not any("pytest_rollout/" in line or "contextlib" in line for line in result.outlines)
