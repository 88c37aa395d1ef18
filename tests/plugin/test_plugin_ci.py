"""Where CI users read: GitHub Actions annotations at the diverged test, the job summary, a
Markdown report and JUnit XML properties. The runner's environment is simulated with the
variables GitHub Actions sets (``GITHUB_ACTIONS``, ``GITHUB_STEP_SUMMARY``,
``GITHUB_WORKSPACE``)."""

from __future__ import annotations

import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from hostile import EVIL, assert_printable
from markdown_it import MarkdownIt
from plugin_agent import (
    WEATHER_TEST,
    record,
    run,
    run_showing_warnings,
    sdk_weather_test,
    write_project,
    write_sdk_project,
)

from pytest_rollout.diff.annotations import MAX_ANNOTATIONS, annotation_lines
from pytest_rollout.diff.finding import Finding
from pytest_rollout.diff.markdown import markdown_report

PASSING_TEST = WEATHER_TEST.replace("def test_weather(", "def test_steady(").replace(
    'os.environ.get("AGENT_CHANGE", "")', '""'
)
#: The line of WEATHER_TEST that calls the agent, where the divergence is raised.
AGENT_LINE = 1 + WEATHER_TEST.lstrip("\n").splitlines().index(
    '        run.output = agent(llm, tools, question, os.environ.get("AGENT_CHANGE", ""))'
)
ANNOTATION = (
    f"::error file=test_weather.py,line={AGENT_LINE},title=test_weather.py%3A%3Atest_weather%3A "
    "tool_call_mismatch at step 1 (attributed to the agent)%3A this run left its golden::"
    'call #1 of step 1: recorded get_weather(city="Paris"), got get_weather(city="PARIS")'
    '%0Afirst change: data.arguments.city: "Paris" -> "PARIS"'
    "%0Afork from the last good event (step 1's model turn): rollout fork "
    "golden/test_weather/test_weather.jsonl --step 1"
)


def tables(markdown: str) -> list[list[list[str]]]:
    """The tables of ``markdown`` as CommonMark with GitHub's tables reads them: rows of
    cell texts, escapes resolved (a table that does not parse is not there)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    found: list[list[list[str]]] = []
    inside = False
    for token in tokens:
        if token.type in ("table_open", "table_close"):
            inside = token.type == "table_open"
            found += [[]] if inside else []
        elif inside and token.type == "tr_open":
            found[-1].append([])
        elif inside and token.type == "inline":
            children = token.children or []
            found[-1][-1].append("".join(child.content for child in children))
    return found


def rendered(markdown: str) -> str:
    return str(MarkdownIt("commonmark").enable("table").render(markdown))


@pytest.fixture
def diverged(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project of two recorded tests; replayed, test_weather's agent changes an argument."""
    write_project(pytester, test_weather=WEATHER_TEST, test_steady=PASSING_TEST)
    record(pytester).assert_outcomes(passed=2)
    monkeypatch.setenv("AGENT_CHANGE", "argument")  # (conftest.py unsets GitHub's variables)
    return pytester


def on_github(monkeypatch: pytest.MonkeyPatch, pytester: pytest.Pytester) -> Path:
    summary = pytester.path / "step_summary.md"
    summary.write_text("## an earlier step's summary\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    return summary


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_on_github_actions_a_diverged_test_is_annotated_and_summarized_once(
    diverged: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    summary = on_github(monkeypatch, diverged)
    result = run(diverged, xdist)
    result.assert_outcomes(passed=1, failed=1)  # the exit status is the tests' own
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    annotations = [line for line in result.outlines if line.startswith("::")]
    assert annotations == [ANNOTATION]
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## an earlier step's summary\n## pytest-rollout\n")
    assert text.count("## pytest-rollout") == 1  # one summary, not one per worker
    (table,) = tables(text)
    assert table == [
        ["Test", "Step", "Kind", "Attributed to", "First change", "Score", "Cost change"],
        [
            "test_weather.py::test_weather<br>test_weather.py:" + str(AGENT_LINE),
            "1",
            "tool_call_mismatch",
            "agent",
            'data.arguments.city: "Paris" -> "PARIS"',
            "golden wins 4-2",
            "-$0.00055",
        ],
    ]
    html = rendered(text)
    assert "<code>rollout fork golden/test_weather/test_weather.jsonl --step 1</code>" in html
    assert "2 golden(s) compared" in html
    assert "unused" not in html


def test_the_summary_counts_goldens_no_test_owns(
    diverged: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = diverged.path / "golden" / "test_gone" / "test_old.jsonl"
    stale.parent.mkdir()
    stale.write_bytes((diverged.path / "golden/test_weather/test_weather.jsonl").read_bytes())
    summary = on_github(monkeypatch, diverged)
    run(diverged, ())
    assert "1 unused golden\\(s\\): no collected test owns them" in summary.read_text()


def test_a_plugin_warning_is_a_warning_annotation(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recording an agent whose tool ran outside rollout.tools warns, on the run page too."""
    write_sdk_project(pytester, test_unwrapped=sdk_weather_test("test_weather", wrapped=False))
    on_github(monkeypatch, pytester)
    result = run_showing_warnings(pytester, "--rollout-record")
    result.assert_outcomes(passed=1, warnings=1)
    (warning,) = [line for line in result.outlines if line.startswith("::")]
    assert warning.startswith(
        "::warning title=pytest-rollout::test_unwrapped.py::test_weather: tool calls ran "
        'outside rollout.tools, so they were not recorded and a replay would run them live: "'
        'get_weather" (step 1, call call_'
    )


def test_nothing_is_annotated_or_summarized_outside_ci_unless_asked(
    diverged: pytest.Pytester,
) -> None:
    result = run(diverged, ())
    result.assert_outcomes(passed=1, failed=1)
    assert not any(line.startswith("::") for line in result.outlines)
    assert not list(diverged.path.glob("*.md"))


def test_the_flags_ask_for_them_anywhere(diverged: pytest.Pytester) -> None:
    result = run(diverged, (), "--rollout-annotations", "--rollout-summary=out/summary.md")
    assert [line for line in result.outlines if line.startswith("::")] == [ANNOTATION]
    assert "| tool\\_call\\_mismatch |" in (diverged.path / "out" / "summary.md").read_text()


def test_a_markdown_report_is_written_for_a_report_path_ending_in_md(
    diverged: pytest.Pytester,
) -> None:
    result = run(diverged, (), "--rollout-report=review/report.md")
    result.assert_outcomes(passed=1, failed=1)
    report = diverged.path / "review" / "report.md"
    result.stdout.fnmatch_lines([f"rollout Markdown report: {report}"])
    (table,) = tables(report.read_text(encoding="utf-8"))
    assert table[1][2:4] == ["tool_call_mismatch", "agent"]
    assert not (diverged.path / "review" / "report.html").exists()


def test_junit_xml_carries_the_findings_properties_and_the_headline(
    diverged: pytest.Pytester,
) -> None:
    run(diverged, (), "--junitxml=junit.xml")
    root = ET.parse(diverged.path / "junit.xml").getroot()
    (case,) = [c for c in root.iter("testcase") if c.get("name") == "test_weather"]
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties == {
        "rollout.golden": "golden/test_weather/test_weather.jsonl",
        "rollout.step": "1",
        "rollout.kind": "tool_call_mismatch",
        "rollout.attributed_to": "agent",
        "rollout.score": "golden wins 4-2",
    }
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == (
        "tool_call_mismatch at step 1 (attributed to the agent): this run left its golden"
    )
    (steady,) = [c for c in root.iter("testcase") if c.get("name") == "test_steady"]
    assert not list(steady.iter("property"))


# -- the renderers, on hostile and many findings ---------------------------------------------


def finding(number: int = 0, text: str = "") -> Finding:
    return Finding(
        test_id=f"tests/test_agent.py::test_{number}{text}",
        path=f"tests/test_agent{text}.py",
        line=12,
        headline=f"tool_call_mismatch at step 2 {text}",
        golden=f"golden/t{text}.jsonl",
        kind="tool_call_mismatch",
        step=2,
        attributed_to="agent",
        detail=f"call #1 {text}",
        first_change=f'data.arguments.q: "a" -> "{text}"',
        score="golden wins 4-0",
        cost_delta=0.0003,
        fork=f"rollout fork golden/t{text}.jsonl --step 1",
    )


HOSTILE = [
    EVIL,
    "%0A::set-env name=PATH::/evil",
    "\n::add-mask::x",
    "a|b</td><script>alert(1)</script>",
    "[click](javascript:alert(1)) ![x](http://evil/x.png)",
    "`code` **bold** # heading",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_no_recorded_text_gets_out_raw_in_an_annotation(text: str) -> None:
    lines = annotation_lines([finding(0, text)], [f"a warning {text}"])
    assert len(lines) == 2
    for line in lines:
        command, _, data = line.partition("::")[2].partition("::")
        assert line.startswith(("::error ", "::warning "))
        assert "\n" not in line
        assert "\r" not in line
        assert "%0A::" not in data.replace("%0Afirst change", "").replace("%0Afork", "")
        assert "::" not in command
        assert_printable(data)


@pytest.mark.parametrize("text", HOSTILE)
def test_no_recorded_text_gets_out_raw_in_the_markdown(text: str) -> None:
    markdown = markdown_report(["1 golden(s) compared"], [finding(0, text)], [f"w {text}"])
    assert_printable(markdown.replace("\n", " "))
    html = rendered(markdown)
    assert "<script" not in html
    assert "<img" not in html
    assert "href" not in html
    assert "<a " not in html
    (table,) = tables(markdown)
    assert len(table) == 2
    assert len(table[1]) == 7  # the row's cells were not split by a "|" in the text


def test_annotations_stop_at_the_cap_with_a_count() -> None:
    lines = annotation_lines([finding(n) for n in range(MAX_ANNOTATIONS + 7)], ["w"])
    assert len(lines) == MAX_ANNOTATIONS + 1
    assert lines[-1] == (
        f"pytest-rollout: 8 more annotation(s) not shown (at most {MAX_ANNOTATIONS})"
    )


def test_the_markdown_stays_within_its_bound_and_says_what_it_left_out() -> None:
    markdown = markdown_report(["counts"], [finding(n) for n in range(2000)], limit=20_000)
    assert len(markdown.encode()) <= 20_000
    (table,) = tables(markdown)
    shown = len(table) - 1
    assert 10 < shown < 2000
    assert f"\n{2000 - shown} more diverged test(s) not shown (size limit).\n" in markdown


def test_a_finding_crosses_processes_as_json() -> None:
    original = finding(3, "x")
    data: dict[str, Any] = original.to_json()
    assert Finding.from_json({**data, "added_later": 1}) == original


# -- the jobs of docs/ci.md, run as their runners would ---------------------------------------

CI_DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"


def jobs() -> dict[str, Any]:
    """Every job of docs/ci.md's YAML blocks, by name (a block that is not YAML fails)."""
    found: dict[str, Any] = {}
    for block in re.findall(r"```yaml\n(.*?)```", CI_DOC.read_text(encoding="utf-8"), re.S):
        data = yaml.safe_load(block)
        found.update(data.get("jobs", data))
    return found


def pytest_args(commands: list[str]) -> list[str]:
    (command,) = [c for c in commands if c.startswith("pytest ")]
    return shlex.split(command)[1:]


def test_the_github_actions_job_annotates_summarizes_and_leaves_its_artifacts(
    diverged: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = jobs()["agents"]["steps"]
    summary = on_github(monkeypatch, diverged)
    result = run(diverged, (), *pytest_args([s["run"] for s in steps if "run" in s]))
    result.assert_outcomes(passed=1, failed=1)
    assert [line for line in result.outlines if line.startswith("::")] == [ANNOTATION]
    assert "## pytest-rollout" in summary.read_text(encoding="utf-8")
    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    for path in upload["with"]["path"].split():
        assert (diverged.path / path).exists(), path


def test_the_gitlab_job_leaves_its_junit_report_and_markdown(
    diverged: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = jobs()["agent-tests"]
    monkeypatch.setenv("GITLAB_CI", "true")
    monkeypatch.setenv("CI", "true")
    result = run(diverged, (), *pytest_args(job["script"]))
    result.assert_outcomes(passed=1, failed=1)
    assert not any(line.startswith("::") for line in result.outlines)  # not GitHub
    artifacts = job["artifacts"]
    junit = ET.parse(diverged.path / artifacts["reports"]["junit"]).getroot()
    assert [p.get("name") for p in junit.iter("property")][:2] == ["rollout.golden", "rollout.step"]
    for path in artifacts["paths"]:
        assert (diverged.path / path).exists(), path
    report = (diverged.path / "rollout-report.md").read_text(encoding="utf-8")
    assert tables(report)[0][1][2] == "tool_call_mismatch"
