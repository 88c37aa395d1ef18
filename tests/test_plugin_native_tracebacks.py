"""A failure whose report the plugin writes itself is drawn by pytest in the native style.

pytest builds a failed test's report before the plugin replaces it with its own text; in the
long style that meant reading and parsing the source of every frame of the agent's SDK or
framework (0.4-1.5 s a failure), only to throw it away.
"""

from __future__ import annotations

from typing import cast

import pytest

from pytest_rollout.plugin.runs import native_traceback


def _boom() -> None:
    raise ValueError("boom")


class _Item:
    """An item as far as drawing a failure goes."""

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
        return "drawn as configured"


def test_within_an_item_draws_failures_natively_then_as_before() -> None:
    item = cast(pytest.Item, _Item())
    with pytest.raises(ValueError, match="boom") as caught:
        _boom()
    with native_traceback(item):
        native = str(item.repr_failure(caught))
    assert native.startswith("Traceback (most recent call last):")
    assert native.rstrip().endswith("ValueError: boom")
    assert item.repr_failure(caught) == "drawn as configured"


#: A plain failure of a test that uses the fixture keeps pytest's own long traceback.
PLAIN_FAILURE = """
def test_plain(rollout):
    with rollout.run(prompt="p"):
        pass
    value = 1
    assert value == 2
"""


def test_a_failure_the_plugin_does_not_report_keeps_pytest_s_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_plain_failure=PLAIN_FAILURE)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([">       assert value == 2", "E       assert 1 == 2"])
