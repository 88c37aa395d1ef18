"""``--rollout-record``: each passing test's run becomes its golden.

``golden/<test file path without .py>/<test name>.jsonl``, one ``{"ts","seq","type","data"}``
object a line, loadable by :func:`pytest_rollout.load`; written only when its canonical
content changed, so re-recording an unchanged run leaves the bytes and the mtime alone; and
never for a test that failed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_agent import XDIST, goldens, live_calls, run, write_project

import pytest_rollout

IDS = ["plain", "a/b", "two words", "..", "../../up", "ünïcode", "a::b"]

RECORD_TEST = f"""
import os

import pytest
from agent import TOOLS, ScriptedLLM, agent

IDS = {IDS!r}


@pytest.mark.parametrize("city", ["Paris"] * len(IDS), ids=IDS)
def test_city(rollout, golden, city):
    tools = rollout.tools(TOOLS)
    question = f"What is the weather in {{city}}?"
    with rollout.run(prompt=question) as run:
        llm = rollout.provider(ScriptedLLM())
        run.output = agent(llm, tools, question, os.environ.get("AGENT_CHANGE", ""))
    assert rollout == golden


def test_fails_after_its_run(rollout, golden):
    with rollout.run(prompt="What is the weather in Oslo?") as run:
        llm = rollout.provider(ScriptedLLM())
        run.output = agent(llm, rollout.tools(TOOLS), "What is the weather in Oslo?")
    assert run.output == "something else"


def test_checks_its_answer(rollout, golden):
    with rollout.run(prompt="What is the weather in Oslo?") as run:
        llm = rollout.provider(ScriptedLLM())
        change = os.environ.get("AGENT_CHANGE", "")
        run.output = agent(llm, rollout.tools(TOOLS), "What is the weather in Oslo?", change)
    assert run.output.startswith("It is")


def test_without_rollout():
    pass
"""
PASSED = len(IDS) + 2  # the ids, the test that checks its answer, the one without rollout
RECORDED = len(IDS) + 1


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every golden's bytes and mtime, by path."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*.jsonl"))
    }


@XDIST
def test_record_writes_one_golden_per_passing_test(
    pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    write_project(pytester, test_record=RECORD_TEST)

    result = run(pytester, xdist, "--rollout-record")

    result.assert_outcomes(passed=PASSED, failed=1)
    result.stdout.fnmatch_lines(["rollout: record goldens to golden/"])
    result.stdout.fnmatch_lines(
        [
            "*= rollout =*",
            f"{RECORDED} golden(s) written ({RECORDED} created, 0 updated), 0 unchanged, "
            "1 not recorded (test failed)",
        ]
    )
    # Recording runs the provider and the tools live: two turns and two calls per run.
    calls = live_calls(pytester)
    assert calls.count("llm") == 2 * (RECORDED + 1)
    assert calls.count("get_weather") == calls.count("get_time") == RECORDED + 1

    root = pytester.path / "golden"
    written = goldens(pytester)
    assert "test_record/test_checks_its_answer.jsonl" in written
    assert not any(name.startswith("test_record/test_fails") for name in written)
    assert not any(name.startswith("test_record/test_without") for name in written)
    # One distinct file per test id, in the test file's directory: readable ids keep
    # their name; the others are made safe and told apart by a short hash.
    cities = [name for name in written if name.startswith("test_record/test_city[")]
    assert len(cities) == len(IDS)
    assert "test_record/test_city[plain].jsonl" in cities
    assert any(name.startswith("test_record/test_city[two_words]-") for name in cities)
    for path in root.rglob("*"):
        assert path.resolve().is_relative_to(root.resolve())
    assert not (pytester.path / "up").exists()

    for name in cities:
        path = root / name
        lines = path.read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines]
        assert all(set(r) == {"ts", "seq", "type", "data"} for r in records), name
        assert [r["seq"] for r in records] == list(range(len(records)))
        loaded = pytest_rollout.load(path)
        assert loaded.events[0].type == "run.started"
        assert loaded.events[-1].type == "run.completed"
        assert loaded.events[-1].data["output"] == "It is 18.5 C with light rain in Paris."


def test_rerecord_writes_only_what_changed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_record=RECORD_TEST)
    run(pytester, (), "--rollout-record").assert_outcomes(passed=PASSED, failed=1)
    root = pytester.path / "golden"
    before = snapshot(root)

    again = run(pytester, (), "--rollout-record")

    again.stdout.fnmatch_lines(
        [
            f"0 golden(s) written (0 created, 0 updated), {RECORDED} unchanged, "
            "1 not recorded (test failed)"
        ]
    )
    assert snapshot(root) == before

    # A real change to the agent updates the goldens of the tests that pass; a test that
    # now fails keeps its old golden.
    monkeypatch.setenv("AGENT_CHANGE", "post-process")
    changed = run(pytester, (), "--rollout-record")

    changed.assert_outcomes(passed=PASSED - 1, failed=2)
    changed.stdout.fnmatch_lines(
        [
            f"{len(IDS)} golden(s) written (0 created, {len(IDS)} updated), 0 unchanged, "
            "2 not recorded (test failed)"
        ]
    )
    after = snapshot(root)
    assert sorted(after) == sorted(before)
    kept = "test_record/test_checks_its_answer.jsonl"
    assert after[kept] == before[kept]
    for name in after.keys() - {kept}:
        assert after[name][0] != before[name][0], name
        output = pytest_rollout.load(root / name).events[-1].data["output"]
        assert output == "IT IS 18.5 C WITH LIGHT RAIN IN PARIS."
