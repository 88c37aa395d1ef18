"""The framework matrix: real agent frameworks recorded and replayed against the fake service.

One weather agent per stack (``framework_agents.py``): the OpenAI Agents SDK, LangGraph with
langchain-openai, pydantic-ai, and plain OpenAI and Anthropic SDK loops, the tools their
frameworks' own tool objects, wrapped with ``rollout.tools([...])``. The fake service
(``fake_models.py``) gives fresh ids and timestamps on every call, as the real ones do.

Each stack's project is recorded, recorded again and replayed with the service gone, once per
stack (the runs are the expensive part: the first test of a stack makes them, in its
pytester, and the others read what they did). What a user relies on:

* re-recording an unchanged agent leaves every golden and receipt byte-identical;
* an unchanged agent replays green offline: parallel calls that complete out of order, tools
  returning a dataclass and a pydantic model, a tool raising its own exception class;
* a tool the test forgot to wrap is named by a ``RolloutWarning`` on record, and fails replay;
* each break fails with its divergence kind, at one step number in headline and body.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest
from framework_agents import SHARED, STACKS, USER_TESTS
from plugin_agent import IN_PROCESS, failure_sections

pytestmark = pytest.mark.slow  # real agent frameworks

HERE: Final = Path(__file__).parent.parent  # the tests folder, where the helpers are
TESTS: Final = "test_stack.py"
UNCHANGED: Final = ("test_parallel", "test_typed_results", "test_tool_error")
BREAKS: Final = {
    "argument": "tool_call_mismatch",
    "skipped-call": "missing_call",
    "instructions": "prompt_mismatch",
    "model": "setup_mismatch",  # run.started names the model and the tools
    "dropped-tool": "setup_mismatch",
}
#: Every warning reaches the inner run's summary (the outer suite turns warnings into errors).
SHOW_WARNINGS: Final = ("-W", "always::Warning")
NO_TRUNCATION: Final = ("-o", "truncation_limit_lines=0", "-o", "truncation_limit_chars=0")
_OUTCOME: Final = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+?)(?: - (.*))?$")
_HEADLINE: Final = re.compile(r"left its golden at step (\d+): (\w+) \(attributed to ([^)]+)\)")
_BODY_STEP: Final = re.compile(r"First divergence at step (\d+)")


@dataclass(frozen=True)
class StackRuns:
    """What one stack's project did: two recordings, and a replay with the service gone
    (``test_break`` replays the agent changed)."""

    stack: str
    record: pytest.RunResult
    rerecord: pytest.RunResult
    recorded: dict[str, bytes]
    rerecorded: dict[str, bytes]
    replay: pytest.RunResult


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (goldens and receipts), by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _inner(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(
        *SHOW_WARNINGS, *IN_PROCESS, "-p", "no:cacheprovider", "-rA", *NO_TRUNCATION, *args
    )


def _run_stack(pytester: pytest.Pytester, mp: pytest.MonkeyPatch, stack: str) -> StackRuns:
    source = STACKS[stack][0]
    pytester.makepyfile(
        fake_models=(HERE / "fake_models.py").read_text(encoding="utf-8"),
        shared=SHARED,
        stack=source,
        test_stack=USER_TESTS,
    )
    record = _inner(pytester, "--rollout-record")
    recorded = _tree(pytester.path / "golden")
    rerecord = _inner(pytester, "--rollout-record")
    rerecorded = _tree(pytester.path / "golden")
    mp.setenv("MODEL_OFFLINE", "1")
    replay = _inner(pytester)
    return StackRuns(stack, record, rerecord, recorded, rerecorded, replay)


@pytest.fixture(scope="module")
def done() -> dict[str, StackRuns]:
    """The runs of each stack, made once for all the tests of this module."""
    return {}


@pytest.fixture(params=list(STACKS))
def runs(request: pytest.FixtureRequest, done: dict[str, StackRuns]) -> StackRuns:
    stack: str = request.param
    if stack not in done:
        _, modules, pip = STACKS[stack]
        for module in modules:
            # Imported here, before pytester: it forgets what an inner run imports, and
            # pydantic does not survive a second import into one process.
            pytest.importorskip(module, reason=f"the {stack} stack needs it: {pip}")
        pytester: pytest.Pytester = request.getfixturevalue("pytester")
        monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
        done[stack] = _run_stack(pytester, monkeypatch, stack)
    return done[stack]


def _outcomes(result: pytest.RunResult) -> dict[str, tuple[str, str]]:
    """Each inner test's outcome and its one-line reason, from the ``-rA`` summary."""
    found: dict[str, tuple[str, str]] = {}
    for line in result.outlines:
        match = _OUTCOME.match(line)
        if match:
            name = match.group(2).split("::", 1)[-1]
            found[name] = (match.group(1), match.group(3) or "")
    return found


def _outcome(result: pytest.RunResult, test: str) -> str:
    """An inner test's outcome (``PASSED``, ``FAILED``, ...)."""
    return _outcomes(result).get(test, ("MISSING", ""))[0]


def _section(result: pytest.RunResult, test: str) -> str:
    """An inner test's failure report (empty when it did not fail)."""
    return "\n".join(failure_sections(result).get(test, []))


def _break_test(change: str) -> str:
    return f"test_break[{change}]"


def _warnings_summary(result: pytest.RunResult) -> Iterator[str]:
    inside = False
    for line in result.outlines:
        if line.startswith("=") and "warnings summary" in line:
            inside = True
        elif line.startswith("="):
            inside = False
        elif inside:
            yield line


def _summary_line(result: pytest.RunResult, text: str) -> str:
    return next((line for line in result.outlines if text in line), f"no line with {text!r}")


# -- record --------------------------------------------------------------------------------


def test_every_test_records(runs: StackRuns) -> None:
    outcomes = _outcomes(runs.record)
    failed = {name: why for name, (status, why) in outcomes.items() if status != "PASSED"}
    assert failed == {}
    assert len(outcomes) == len(UNCHANGED) + 1 + len(BREAKS)


def test_rerecording_leaves_goldens_and_receipts_byte_identical(runs: StackRuns) -> None:
    assert runs.recorded, "no golden was written"
    assert sorted(runs.rerecorded) == sorted(runs.recorded)
    changed = sorted(p for p, data in runs.rerecorded.items() if runs.recorded[p] != data)
    assert changed == [], _summary_line(runs.rerecord, "golden(s) written")


# -- replay, unchanged ---------------------------------------------------------------------


@pytest.mark.parametrize("test", UNCHANGED)
def test_an_unchanged_agent_replays_green_with_the_service_gone(runs: StackRuns, test: str) -> None:
    assert _outcome(runs.replay, test) == "PASSED", _section(runs.replay, test)


def test_replay_never_reaches_the_service(runs: StackRuns) -> None:
    assert "the live model was called during replay" not in runs.replay.stdout.str()


# -- a tool the test forgot to wrap --------------------------------------------------------


def test_an_unwrapped_tool_is_named_by_a_warning_on_record(runs: StackRuns) -> None:
    summary = "\n".join(_warnings_summary(runs.record))
    assert "RolloutWarning" in summary
    assert "local_time" in summary
    assert "rollout.tools" in summary


def test_an_unwrapped_tool_fails_dry_replay_naming_it(runs: StackRuns) -> None:
    assert _outcome(runs.replay, "test_unwrapped_tool") == "FAILED"
    section = _section(runs.replay, "test_unwrapped_tool")
    assert "local_time" in section
    assert "rollout.tools" in section


# -- breaks ----------------------------------------------------------------------------------


@pytest.mark.parametrize("change", list(BREAKS))
def test_a_break_fails_with_its_kind_at_one_step(runs: StackRuns, change: str) -> None:
    test = _break_test(change)
    assert _outcome(runs.replay, test) == "FAILED"
    report = _section(runs.replay, test)
    headline = _HEADLINE.search(report)
    assert headline is not None, report
    assert headline.group(2) == BREAKS[change], report
    body = _BODY_STEP.search(report)
    assert body is not None, report
    assert body.group(1) == headline.group(1), report
