"""Goldens that no collected test owns: listed in the summary, removed by a full record.

A record run that selected every test removes them (and the directories they leave empty);
a run narrowed by ``-k`` or by a test-file argument removes nothing, and never touches the
goldens of deselected tests.
"""

from __future__ import annotations

import shutil

import pytest
from plugin_agent import N2, WEATHER_TEST, XDIST, goldens, record, run, write_project

TWO_TESTS = """
from agent import TOOLS, ScriptedLLM, agent


def ask(rollout, question):
    with rollout.run(prompt=question) as run:
        run.output = agent(rollout.provider(ScriptedLLM()), rollout.tools(TOOLS), question)


def test_one(rollout, golden):
    ask(rollout, "What is the weather in Oslo?")
    assert rollout == golden


def test_two(rollout, golden):
    ask(rollout, "What is the weather in Paris?")
    assert rollout == golden
"""

OWNED = [
    "test_a/test_weather.jsonl",
    "test_b/test_one.jsonl",
    "test_b/test_two.jsonl",
]
ORPHANS = ["test_a/test_renamed.jsonl", "test_deleted/deep/test_gone.jsonl"]


def project_with_orphans(pytester: pytest.Pytester) -> None:
    """Two test files recorded, then a renamed test and a deleted test file's goldens."""
    write_project(pytester, test_a=WEATHER_TEST, test_b=TWO_TESTS)
    record(pytester).assert_outcomes(passed=3)
    root = pytester.path / "golden"
    for orphan in ORPHANS:
        (root / orphan).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / OWNED[0], root / orphan)
    assert goldens(pytester) == sorted(OWNED + ORPHANS)


@XDIST
def test_unused_goldens_are_listed_then_removed_by_a_full_record(
    pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    project_with_orphans(pytester)

    compared = run(pytester, xdist)

    compared.assert_outcomes(passed=3)
    compared.stdout.fnmatch_lines(
        [
            "3 golden(s) compared: 6/6 turns served, 6/6 tool calls matched, 0 diverged",
            "2 unused golden(s): no collected test owns them",
            "  golden/test_a/test_renamed.jsonl",
            "  golden/test_deleted/deep/test_gone.jsonl",
            "  (pytest --rollout-record over the whole suite removes them)",
        ],
        consecutive=True,
    )
    assert goldens(pytester) == sorted(OWNED + ORPHANS)

    recorded = run(pytester, xdist, "--rollout-record")

    recorded.assert_outcomes(passed=3)
    recorded.stdout.fnmatch_lines(
        [
            "0 golden(s) written (0 created, 0 updated), 3 unchanged",
            "removed unused golden golden/test_a/test_renamed.jsonl",
            "removed unused golden golden/test_deleted/deep/test_gone.jsonl",
        ],
        consecutive=True,
    )
    recorded.stdout.no_fnmatch_line("*unused golden(s)*")
    assert goldens(pytester) == OWNED
    assert not (pytester.path / "golden" / "test_deleted").exists()


@pytest.mark.parametrize(
    ("narrowed", "xdist"),
    [
        pytest.param(("-k", "test_one"), (), id="deselected-serial"),
        # Under xdist each worker deselects on its own: the controller must hear of it.
        pytest.param(("-k", "test_one"), N2, id="deselected-xdist"),
        pytest.param(("test_b.py",), (), id="file-argument-serial"),
    ],
)
def test_a_narrowed_record_removes_nothing(
    pytester: pytest.Pytester, xdist: tuple[str, ...], narrowed: tuple[str, ...]
) -> None:
    project_with_orphans(pytester)

    result = run(pytester, xdist, "--rollout-record", *narrowed)

    result.assert_outcomes(passed=1 if narrowed[0] == "-k" else 2)
    result.stdout.no_fnmatch_line("removed unused golden*")
    assert goldens(pytester) == sorted(OWNED + ORPHANS)
    if narrowed[0] == "-k":
        # Deselected tests are still collected: the orphan beside them is listed.
        result.stdout.fnmatch_lines(
            [
                "1 unused golden(s): no collected test owns them",
                "  golden/test_a/test_renamed.jsonl",
            ]
        )
    else:
        result.stdout.no_fnmatch_line("*unused golden(s)*")


def test_a_test_file_that_fails_to_import_keeps_its_goldens(pytester: pytest.Pytester) -> None:
    project_with_orphans(pytester)
    broken = pytester.path / "test_b.py"
    broken.write_text("import a_module_that_is_not_installed\n" + TWO_TESTS, encoding="utf-8")

    result = run(pytester, (), "--rollout-record", "--continue-on-collection-errors")

    result.assert_outcomes(passed=1, errors=1)
    assert goldens(pytester) == sorted(OWNED + ORPHANS)
