"""What a replay leaves (docs/replay.md, replay receipts): the summary's counts of what
matched, a receipt beside each saved run that ``rollout check --receipt`` verifies later,
and ``--rollout-unverified`` for a golden no receipt vouches for."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from plugin_agent import N2, WEATHER_TEST, failure_sections, record, run, write_project

from pytest_rollout.cli import main

RUN = Path(".pytest_cache/d/rollout/runs/test_weather/test_weather.jsonl")
GOLDEN = Path("golden/test_weather/test_weather.jsonl")


def check_receipt(project: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        code = main(["check", "--receipt", str(RUN), *args], out=out)
    return code, out.getvalue()


def receipt_of(project: Path) -> dict[str, object]:
    data = orjson.loads((project / f"{RUN}.receipt").read_bytes())
    assert isinstance(data, dict)
    return data


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    return pytester


def test_a_matching_replay_says_what_it_matched_and_leaves_a_receipt(
    recorded: pytest.Pytester,
) -> None:
    result = run(recorded, (), "-v")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "1 golden(s) compared: 2/2 turns served, 2/2 tool calls matched, 0 diverged",
            "test_weather.py::test_weather: replay dry of sha256:????????????…",
            "  recording verified against receipt  turns 2/2  calls matched 2/2",
            "  replay trajectory sha256:????????????…  identical=True",
            "  no divergence",
            f"  wrote {RUN} and its replay receipt (+.receipt)",
        ]
    )
    receipt = receipt_of(recorded.path)
    replay = receipt["replay"]
    assert isinstance(replay, dict)
    assert replay["verified"] is True
    assert replay["identical"] is True
    assert replay["canonical"]["golden"] == replay["canonical"]["run"]
    assert replay["golden"] == str(GOLDEN)
    golden_receipt = orjson.loads((recorded.path / f"{GOLDEN}.receipt").read_bytes())
    assert receipt["replay_of"] == golden_receipt["body_sha256"]

    code, out = check_receipt(recorded.path)
    assert code == 0, out
    assert "  replay receipt: ok" in out
    assert "    checked: golden matches the receipt the replay names (replay_of)" in out
    assert "    checked: canonical trajectories recomputed: identical=True" in out


def test_the_summary_is_quiet_about_each_replay_without_verbose(recorded: pytest.Pytester) -> None:
    result = run(recorded, ())

    result.assert_outcomes(passed=1)
    assert not any("replay dry of" in line for line in result.outlines)


@pytest.mark.parametrize("xdist", [pytest.param((), id="serial"), pytest.param(N2, id="xdist")])
def test_the_counts_add_up_over_a_suite_with_a_diverged_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST, test_other=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=2)
    monkeypatch.setenv("AGENT_CHANGE", "argument")
    # Only one of the two tests changes: the other replays as recorded.
    (pytester.path / "test_other.py").write_text(
        WEATHER_TEST.replace('os.environ.get("AGENT_CHANGE", "")', '""')
    )

    result = run(pytester, xdist)

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["2 golden(s) compared: 3/4 turns served, 2/4 tool calls matched, 1 diverged"]
    )


def test_a_diverged_replay_receipt_names_the_divergence(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_CHANGE", "argument")

    result = run(recorded, (), "-v")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  recording verified against receipt  turns 1/2  calls matched 0/2",
            "  replay trajectory sha256:*  identical=False",
            "  divergence: tool_call_mismatch at step 1 (agent)",
        ]
    )
    replay = receipt_of(recorded.path)["replay"]
    assert isinstance(replay, dict)
    assert replay["divergences"][0] == {
        "kind": "tool_call_mismatch",
        "step": 1,
        "attribution": "agent",
    }
    code, out = check_receipt(recorded.path)
    # The receipt proves what happened, divergence and all; the run itself fails the
    # integrity check (its tool call is not the one its turn announced).
    assert "  replay receipt: ok" in out
    assert "1 mismatch" in out
    assert code == 1


def edit_golden(project: Path) -> bytes:
    """Change a value of the golden by hand (its receipt then no longer matches)."""
    path = project / GOLDEN
    data = path.read_bytes().replace(b'"Paris"', b'"Lyon"', 1)
    path.write_bytes(data)
    return data


def test_an_unverified_replay_is_said_everywhere_and_seals_nothing(
    recorded: pytest.Pytester,
) -> None:
    receipt_before = (recorded.path / f"{GOLDEN}.receipt").read_bytes()
    edited = edit_golden(recorded.path)

    result = run(recorded, (), "-v", "--rollout-unverified")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*golden(s) compared*, 1 golden(s) replayed unverified (no matching receipt)",
            "*  recording UNVERIFIED (no matching receipt)  turns *",
        ]
    )
    report = "\n".join(failure_sections(result)["test_weather"])
    assert f"Golden: {GOLDEN} (unverified: no receipt vouches for it)" in report
    # Nothing was sealed: the golden and its receipt are as they were left.
    assert (recorded.path / GOLDEN).read_bytes() == edited
    assert (recorded.path / f"{GOLDEN}.receipt").read_bytes() == receipt_before
    replay = receipt_of(recorded.path)["replay"]
    assert isinstance(replay, dict)
    assert replay["verified"] is False
    assert receipt_of(recorded.path)["replay_of"] is None
    code, out = check_receipt(recorded.path)
    assert code == 0, out
    assert "    checked: the replay was unverified: the golden had no matching receipt" in out


def test_without_the_flag_an_edited_golden_is_still_refused(recorded: pytest.Pytester) -> None:
    edit_golden(recorded.path)

    result = run(recorded, ())

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*does not match its receipt*"])


def test_unverified_and_accept_edits_cannot_be_combined(recorded: pytest.Pytester) -> None:
    result = run(recorded, (), "--rollout-unverified", "--rollout-accept-edits")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --rollout-unverified and --rollout-accept-edits cannot be combined: an "
            "edited golden is either replayed as it is, unsealed, or accepted and sealed anew"
        ]
    )
