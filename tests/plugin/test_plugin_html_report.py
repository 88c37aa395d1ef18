"""``--rollout-report=PATH``: one self-contained HTML page of the session's rollout tests."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from plugin_agent import WEATHER_TEST, XDIST, record, run, write_project

_DATA = re.compile(r'<script type="application/json" id="rollout-data">(.*?)</script>', re.S)

PASSING_TEST = WEATHER_TEST.replace("def test_weather(", "def test_steady(").replace(
    'os.environ.get("AGENT_CHANGE", "")', '""'
)


def _page_text(path: Path) -> str:
    found = _DATA.search(path.read_text(encoding="utf-8"))
    assert found is not None
    return orjson.dumps(orjson.loads(found.group(1))).decode()


@XDIST
def test_the_report_shows_the_failing_run_beside_its_golden(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST, test_steady=PASSING_TEST)
    record(pytester).assert_outcomes(passed=2)
    monkeypatch.setenv("AGENT_CHANGE", "argument")
    result = run(pytester, xdist, "--rollout-report=out/report.html")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["rollout report: out/report.html"])
    page = pytester.path / "out" / "report.html"
    text = _page_text(page)
    assert "test_weather.py::test_weather" in text
    assert "test_steady.py::test_steady" in text
    assert text.index("test_weather.py::test_weather") < text.index("test_steady.py::test_steady")
    assert "tool_call_mismatch" in text  # the failure report, as pytest showed it
    assert '\\"PARIS\\"' in text or "PARIS" in text  # the changed argument
    html = page.read_text(encoding="utf-8")
    assert "http://" not in html
    assert "https://" not in html


def test_no_report_unless_asked(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    result = run(pytester, ())
    result.assert_outcomes(passed=1)
    assert "rollout report" not in result.stdout.str()
    assert not list(pytester.path.rglob("*.html"))


def test_a_recording_session_reports_what_it_recorded(pytester: pytest.Pytester) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    result = record(pytester, "--rollout-report=report.html")
    result.assert_outcomes(passed=1)
    assert '"recorded"' in _page_text(pytester.path / "report.html")


def test_a_run_saved_nowhere_is_still_set_beside_its_golden(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_CHANGE", "argument")
    result = run(pytester, (), "-p", "no:cacheprovider", "--rollout-report=report.html")
    result.assert_outcomes(failed=1)
    found = _DATA.search((pytester.path / "report.html").read_text(encoding="utf-8"))
    assert found is not None
    [entry] = orjson.loads(found.group(1))["entries"]
    assert entry["kind"] == "diff"
    assert entry["comparison"]["first"]["step"] == 1
