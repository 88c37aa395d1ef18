"""syrupy's workflow for agent runs: ``assert rollout == snapshot(extension_class=...)``.

A user's project snapshots a live run of deterministic fakes (``rollout(replay=False)``) with
``RolloutSnapshotExtension``: ``--snapshot-update`` creates one canonical ``.jsonl`` per test,
an unchanged run passes and leaves the file alone (bytes, mtime and inode), a realistic change
fails with the first-divergence report instead of a line diff, and unused snapshots are listed
(``--snapshot-details``) and removed by ``--snapshot-update`` as syrupy does. Snapshots are made
in-process (fast); a change's report, an update and the removal of unused snapshots run
in-process and under pytest-xdist.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_agent import IN_PROCESS, XDIST, failure_sections, live_calls, run, write_project

from pytest_rollout import load

SNAPSHOT_TEST = """
import os

import pytest
from agent import TOOLS, ScriptedLLM, agent

from pytest_rollout import RolloutSnapshotExtension

CITIES = os.environ.get("CITIES", "Paris").split(",")


@pytest.mark.rollout(replay=False)
@pytest.mark.parametrize("city", CITIES)
def test_weather(rollout, snapshot, city):
    llm = rollout.provider(ScriptedLLM())
    tools = rollout.tools(TOOLS)
    question = f"What is the weather in {city}?"
    with rollout.run(prompt=question) as run:
        run.output = agent(llm, tools, question, os.environ.get("AGENT_CHANGE", ""))
    assert rollout == snapshot(extension_class=RolloutSnapshotExtension)
"""
ASSERT_LINE = 19  # the line of the assert in SNAPSHOT_TEST's file
PARIS = "__snapshots__/test_snap/test_weather[Paris].jsonl"
OSLO = "__snapshots__/test_snap/test_weather[Oslo].jsonl"
#: Fields that change from run to run: none of them may reach a snapshot.
VOLATILE = ("run_id", "latency_ms", "duration_ms", "total_duration_ms", "messages_hash")


@pytest.fixture(autouse=True)
def not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """syrupy tells an xdist worker by ``PYTEST_XDIST_WORKER``, which this suite, when it runs
    under xdist, hands down to the runs below: none of them is a worker."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


def literal(line: str) -> str:
    """``line`` as an fnmatch pattern that matches only itself."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in line)


def files(pytester: pytest.Pytester) -> dict[str, tuple[bytes, int, int]]:
    """Every snapshot's bytes, mtime and inode (a rewrite replaces the inode), by path."""
    root = pytester.path
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino)
        for p in sorted((root / "__snapshots__").rglob("*.jsonl"))
    }


def create(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cities: str = "Paris"
) -> None:
    """Write the project and its snapshots (in-process), and forget the live calls."""
    write_project(pytester, test_snap=SNAPSHOT_TEST)
    monkeypatch.setenv("CITIES", cities)
    result = pytester.runpytest_inprocess(*IN_PROCESS, "--snapshot-update")
    result.assert_outcomes(passed=len(cities.split(",")))
    live_calls(pytester)


def test_create_then_pass_unchanged_without_touching_the_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In-process only: the tests below make, update and delete snapshots under xdist too.
    write_project(pytester, test_snap=SNAPSHOT_TEST)

    created = run(pytester, (), "--snapshot-update", "--snapshot-details")

    created.assert_outcomes(passed=1)
    created.stdout.fnmatch_lines(
        ["1 snapshot generated.", "", literal(f"Generated test_weather[Paris] ({PARIS})")],
        consecutive=True,
    )
    assert list(files(pytester)) == [PARIS]
    assert live_calls(pytester) == ["llm", "get_weather", "get_time", "llm"]  # ran live
    assert not (pytester.path / "golden").exists()  # replay=False: no golden, read or written
    before = files(pytester)

    for args in [(), ("--snapshot-update",)]:
        again = run(pytester, (), *args)
        again.assert_outcomes(passed=1)
        again.stdout.fnmatch_lines(["1 snapshot passed."])
        again.stdout.no_fnmatch_line("*generated*")
        again.stdout.no_fnmatch_line("*updated*")
        assert files(pytester) == before  # same bytes, mtime and inode: never rewritten
        assert live_calls(pytester) == ["llm", "get_weather", "get_time", "llm"]


def test_the_snapshot_is_the_canonical_run_in_the_rollout_format(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    create(pytester, monkeypatch)
    path = pytester.path / PARIS

    events = load(path).events  # the strict loader reads it: rollout diff/show/fork do too

    assert [e.type for e in events] == [
        "run.started",
        *["llm.turn.started", "llm.turn.completed", "usage.delta"],
        *["tool.call.started", "tool.call.completed"] * 2,
        *["llm.turn.started", "llm.turn.completed", "usage.delta"],
        "run.completed",
    ]
    assert [e.step for e in events] == [0, *[1] * 7, *[2] * 4]
    assert {e.ts for e in events} == {"1970-01-01T00:00:00Z"}
    assert [e.seq for e in events] == list(range(len(events)))
    text = path.read_text(encoding="utf-8")
    assert not [key for key in VOLATILE if f'"{key}"' in text]
    assert '"cost_usd"' not in text  # cost and usage are scored, never compared
    assert '"usage"' not in text
    assert events[4].data == {
        "arguments": {"city": "Paris"},
        "call_id": "call_1",
        "name": "get_weather",
        "step": 1,
    }
    assert text.splitlines()[4] == (
        '{"ts":"1970-01-01T00:00:00Z","seq":4,"type":"tool.call.started","data":'
        '{"arguments":{"city":"Paris"},"call_id":"call_1","name":"get_weather","step":1}}'
    )


#: The whole report for a realistic change: the agent upper-cases a tool argument.
ARGUMENT_REPORT = [
    "this run left its snapshot at step 1: tool_call_mismatch (attributed to the agent)",
    f"Snapshot: {PARIS}",
    "Divergence: first difference in data.arguments.city",
    "First divergence at step 1 (diverged)",
    "  snapshot did:",
    '    llm.turn.started  2 new messages, last user: "What is the weather in Paris?"',
    '    llm.turn.completed  "Let me look that up." -> get_weather(city="Paris"), '
    'get_time(city="Paris")',
    "    usage.delta",
    '  > tool.call.started  get_weather(city="Paris")',
    '    tool.call.completed  get_weather -> {"city":"Paris","sky":"light rain","temp_c":18.5}',
    '    tool.call.started  get_time(city="Paris")',
    '    tool.call.completed  get_time -> "12:00"',
    "  this run did:",
    '    llm.turn.started  2 new messages, last user: "What is the weather in Paris?"',
    '    llm.turn.completed  "Let me look that up." -> get_weather(city="Paris"), '
    'get_time(city="Paris")',
    "    usage.delta",
    '  > tool.call.started  get_weather(city="PARIS")',
    "    tool.call.completed  get_weather raised LookupError: no weather station for 'PARIS'",
    '    tool.call.started  get_time(city="Paris")',
    '    tool.call.completed  get_time -> "12:00"',
    "  Difference (event 4 of the step):",
    '    data.arguments.city: "Paris" -> "PARIS"',
    "  After it: 1 more step differs (1 diverged)",
    "Steps 0-2: 1 identical, 2 diverged, 0 only in snapshot, 0 only in this run",
    "Score: tie 0-0",
    "Fork the conversation from the last good event (step 1's model turn):",
    f"  rollout fork '{PARIS}' --step 1",
    "This run was saved; compare it with its snapshot:",
    f"  rollout diff '{PARIS}' '.pytest_cache/d/rollout/runs/test_snap/test_weather[Paris].jsonl'",
    "",
    f"test_snap.py:{ASSERT_LINE}: AssertionError",
]


def test_a_realistic_change_fails_with_the_first_divergence_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    create(pytester, monkeypatch)
    before = files(pytester)
    monkeypatch.setenv("AGENT_CHANGE", "argument")
    # Outside CI pytest cuts explanations to 8 lines: the report is shown whole anyway.
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)

    result = run(pytester, ())

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_weather[[]Paris[]] _*",
            *(literal(line) for line in ARGUMENT_REPORT),
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(["*- snapshot report summary -*", "1 snapshot failed."])
    result.stdout.no_fnmatch_line("*[[]+ received[]]*")  # no line diff
    assert files(pytester) == before  # a failure writes nothing

    updated = run(pytester, (), "--snapshot-update")

    updated.assert_outcomes(passed=1)
    updated.stdout.fnmatch_lines(["1 snapshot updated."])
    assert '"city":"PARIS"' in (pytester.path / PARIS).read_text(encoding="utf-8")
    after = files(pytester)
    run(pytester, ()).assert_outcomes(passed=1)
    assert files(pytester) == after  # the unchanged run leaves the updated snapshot alone


@pytest.mark.parametrize(
    ("change", "headline", "score"),
    [
        pytest.param(
            "extra-turn",
            "this run left its snapshot at step 2: response_mismatch (attributed to the agent)",
            "Score: snapshot wins 1-0: steps (snapshot 2 vs this run 3)",
            id="extra-turn",
        ),
        pytest.param(
            "skip-call",
            "this run left its snapshot at step 1: missing_call (attributed to the agent)",
            "Score: tie 0-0",
            id="skip-call",
        ),
        pytest.param(
            "stop-early",
            "this run left its snapshot at step 1: response_mismatch (attributed to the agent)",
            "Score: this run wins 1-0: steps (snapshot 2 vs this run 1)",
            id="stop-early",
        ),
    ],
)
def test_other_changes_name_their_kind_and_score(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    change: str,
    headline: str,
    score: str,
) -> None:
    create(pytester, monkeypatch)
    monkeypatch.setenv("AGENT_CHANGE", change)

    result = pytester.runpytest_inprocess(*IN_PROCESS)

    result.assert_outcomes(failed=1)
    report = failure_sections(result)["test_weather[Paris]"]
    assert report[0] == headline
    assert score in report


def test_untrusted_text_in_the_report_is_escaped(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    create(pytester, monkeypatch, cities="Evil")  # the tool answers with escapes and `::`
    monkeypatch.setenv("AGENT_CHANGE", "argument")

    result = pytester.runpytest_inprocess(*IN_PROCESS)

    result.assert_outcomes(failed=1)
    report = failure_sections(result)["test_weather[Evil]"]
    assert report[0].startswith("this run left its snapshot at step 1: tool_call_mismatch")
    text = "\n".join(report)
    assert "\\x1b[31mred" in text  # shown escaped...
    for raw in ("\x1b", "\u202e", "\u2028"):
        assert raw not in text  # ...never raw
    assert not [line for line in report if line.lstrip().startswith("::")]


@XDIST
def test_unused_snapshot_is_reported_and_removed_by_snapshot_update(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    create(pytester, monkeypatch, cities="Paris,Oslo")
    assert list(files(pytester)) == [OSLO, PARIS]
    kept = files(pytester)[PARIS]
    monkeypatch.setenv("CITIES", "Paris")  # the Oslo case is gone from the suite

    plain = run(pytester, xdist)

    plain.assert_outcomes(passed=1)
    assert plain.ret == 1  # syrupy fails a run that leaves snapshots unused
    plain.stdout.fnmatch_lines(
        [
            "1 snapshot passed. 1 snapshot unused.",
            "",
            "Re-run pytest with --snapshot-update to delete unused snapshots.",
        ],
        consecutive=True,
    )

    detailed = run(pytester, xdist, "--snapshot-details")

    detailed.stdout.fnmatch_lines(
        [
            "1 snapshot passed. 1 snapshot unused.",
            "",
            f"Unused * ({literal(OSLO)})",
            "Re-run pytest with --snapshot-update to delete unused snapshots.",
        ],
        consecutive=True,
    )
    assert list(files(pytester)) == [OSLO, PARIS]

    cleaned = run(pytester, xdist, "--snapshot-update", "--snapshot-details")

    cleaned.assert_outcomes(passed=1)
    assert cleaned.ret == 0
    cleaned.stdout.fnmatch_lines(
        ["1 snapshot passed. 1 unused snapshot deleted.", "", f"Deleted * ({literal(OSLO)})"],
        consecutive=True,
    )
    assert files(pytester) == {PARIS: kept}
    assert not Path(pytester.path / OSLO).exists()
