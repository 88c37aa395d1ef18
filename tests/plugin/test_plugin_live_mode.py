"""A replay=False test runs live and reads no golden: ``rollout == golden`` there could never
fail, so it is refused in words instead of passing, and ``rollout.fork`` says why it has
nothing to fork even when the golden's file exists."""

from __future__ import annotations

from typing import Final

import pytest
from plugin_agent import IN_PROCESS, WEATHER_TEST, record, write_project

LIVE_TEST: Final = WEATHER_TEST.replace(
    "def test_weather(rollout, golden):",
    "import pytest\n\n\n@pytest.mark.rollout(replay=os.environ.get('LIVE') != '1')\n"
    "def test_weather(rollout, golden):",
).replace(
    "    assert rollout == golden",
    "    if os.environ.get('FORK') == '1':\n        rollout.fork(1)\n    assert rollout == golden",
)


@pytest.fixture
def recorded(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    write_project(pytester, test_weather=LIVE_TEST)
    record(pytester).assert_outcomes(passed=1)
    assert (pytester.path / "golden" / "test_weather" / "test_weather.jsonl").is_file()
    monkeypatch.setenv("LIVE", "1")
    monkeypatch.setenv("AGENT_CHANGE", "argument")  # a live run that is not the golden's
    return pytester


REFUSALS: Final = {
    "compare": "rollout == golden cannot compare anything in a replay=False test: it runs live "
    "and reads no golden, so the assertion could never fail. Compare the run with a syrupy "
    "snapshot (docs/replay.md, syrupy snapshots), or drop replay=False to replay and compare "
    "with the golden",
    "fork": "a replay=False test reads no golden, so there is none to fork or compare here, "
    "even when the file exists: fork it with `rollout fork FILE --step N` (docs/cli.md), or "
    "drop replay=False",
}


@pytest.mark.parametrize("asked", REFUSALS)
def test_a_replay_false_test_cannot_compare_with_or_fork_a_golden(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, asked: str
) -> None:
    """``rollout == golden`` used to pass whatever the live run did."""
    monkeypatch.setenv("FORK", "1" if asked == "fork" else "0")
    result = recorded.runpytest_inprocess(*IN_PROCESS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"E * pytest_rollout.RolloutError: {REFUSALS[asked]}"])
