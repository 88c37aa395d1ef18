"""Where goldens live and how a run is set up: flags and their ini keys (docs/replay.md).

``--rollout-compare=DIR``, ``--rollout-golden-dir=DIR`` and the ``rollout_golden_dir`` ini
key choose the golden directory; ``rollout_mode`` the replay mode; ``--rollout-dir`` where
each run is saved for ``rollout diff``.
"""

from __future__ import annotations

import re

import pytest
from plugin_agent import WEATHER_TEST, goldens, live_calls, record, run, write_project

import pytest_rollout

STORE = ("--rollout-golden-dir=store",)


@pytest.mark.parametrize(
    ("record_args", "ini", "compare_args", "xdist"),
    [
        pytest.param(STORE, "", ("--rollout-compare=store",), (), id="compare-serial"),
        pytest.param(STORE, "", STORE, (), id="golden-dir-serial"),
        pytest.param((), "rollout_golden_dir = store", (), (), id="ini-serial"),
    ],
)
def test_the_golden_directory_can_be_chosen(
    pytester: pytest.Pytester,
    xdist: tuple[str, ...],
    record_args: tuple[str, ...],
    ini: str,
    compare_args: tuple[str, ...],
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    recorded = record(pytester, *record_args)
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines(["rollout: record goldens to store/"])
    assert goldens(pytester, "store") == ["test_weather/test_weather.jsonl"]

    result = run(pytester, xdist, *compare_args)

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["rollout: compare against store/ (dry replay)"])
    result.stdout.fnmatch_lines(
        ["1 golden(s) compared: 2/2 turns served, 2/2 tool calls matched, 0 diverged"]
    )
    assert not (pytester.path / "golden").exists()
    assert live_calls(pytester) == []


def test_ini_rollout_mode_full_runs_the_live_provider(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    pytester.makeini("[pytest]\nrollout_mode = full\n")
    record(pytester).assert_outcomes(passed=1)

    result = run(pytester, ())

    result.stdout.fnmatch_lines(["rollout: compare against golden/ (full replay)"])
    assert live_calls(pytester) == ["llm", "llm"]


def test_an_unknown_ini_rollout_mode_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    pytester.makeini("[pytest]\nrollout_mode = wet\n")

    result = run(pytester, ())

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: rollout_mode must be dry or full, got 'wet'"])


def test_rollout_dir_saves_each_run_for_rollout_diff(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_CHANGE", "argument")

    monkeypatch.delenv("ROLLOUT_DIR", raising=False)
    result = run(pytester, (), "--rollout-dir=runs")

    result.assert_outcomes(failed=1)
    (path,) = (pytester.path / "runs").rglob("*.jsonl")
    saved_as = path.relative_to(pytester.path).as_posix()
    assert re.fullmatch(r"runs/\d{4}-\d\d-\d\d/\d{8}T\d{12}Z-[0-9a-f]{12}\.jsonl", saved_as)
    result.stdout.fnmatch_lines(
        [
            "This run was saved; compare it with its golden:",
            f"  rollout diff golden/test_weather/test_weather.jsonl {saved_as}",
        ]
    )
    saved = pytest_rollout.load(path)
    assert saved.events[-1].type == "run.failed"
    assert saved.events[-1].data["error"]["class"] == "ReplayDivergenceError"


def test_without_the_cache_plugin_the_report_says_nothing_was_saved(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_CHANGE", "argument")

    result = run(pytester, (), "-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "this run left its golden at step 1: tool_call_mismatch (attributed to the agent)",
            "  rollout fork golden/test_weather/test_weather.jsonl --step 1",
        ]
    )
    result.stdout.no_fnmatch_line("*This run was saved*")
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
