"""Tests of the HTML viewer's generation: entries, refusals, escaping and the page's CSP."""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from pytest_rollout.diff.drift import Verdict, drift_report
from pytest_rollout.diff.render import describe_event
from pytest_rollout.diff.report import render_verdict, score_sentence
from pytest_rollout.diff.timeline import event_detail
from pytest_rollout.format.events import Event
from pytest_rollout.format.files import atomic_write
from pytest_rollout.format.loader import load
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.view.command import collect_entries, view_command
from pytest_rollout.view.entries import diff_entry, run_entry
from pytest_rollout.view.page import content_security_policy, page_data, render_page

ROOT = Path(__file__).resolve().parents[2]
LYON = (
    ROOT / "golden" / "tests" / "examples" / "test_example_agent" / "test_weather_agent[lyon].jsonl"
)
PARIS = (
    ROOT
    / "golden"
    / "tests"
    / "examples"
    / "test_example_agent"
    / "test_weather_agent[paris-fahrenheit].jsonl"
)
EXAMPLE_GOLDENS = sorted((ROOT / "examples" / "weather" / "golden").rglob("*.jsonl"))

# 2026-06-28T12:34:56Z
T0 = 1_782_650_096_000_000_000

#: Strings that would run script, break out of markup or trick a template if they were
#: ever written into the page as markup. Each sets ``window.__pwned`` if it ever runs.
HOSTILE = (
    "</script><script>window.__pwned=1;alert(1)</script>",
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    '"\'><svg onload="window.__pwned=1;alert(1)">',
    "<!--<script>window.__pwned=1</script>-->",
    "line\u2028separator\u2029paragraph",
    "\x1b[31mred\x1b[0m\x1b]0;title\x07",
    "{{constructor.constructor('window.__pwned=1')()}}",
    "${window.__pwned=1}",
    "javascript:window.__pwned=1",
    "&lt;b&gt;entity&amp;",
)
HOSTILE_TEXT = " ".join(HOSTILE)


def record_trip(
    path: Path,
    *,
    unit: str = "celsius",
    extra: str = "",
    notes: int = 0,
    fail: bool = False,
) -> Path:
    """A three-step run: look the weather up, convert it to ``unit``, answer.

    Two runs with different ``unit`` part at step 2. ``extra`` is appended to the prompt,
    the tool arguments, outputs and the answer; ``notes`` adds that many ``agent.note``
    events at step 1 (a tall first step).
    """
    ticks = itertools.count()
    recorder = Recorder(clock=lambda: T0 + next(ticks) * 250_000_000)
    emit = recorder.emit
    prompt = "Weather in Paris?" + extra
    usage = {"input_tokens": 40, "output_tokens": 10}
    emit(
        "run.started",
        {
            "run_id": "r1",
            "test_id": "tests/test_trip.py::test_weather",
            "model": "gpt-x",
            "provider": "openai",
            "tools": ["get_weather", "convert"],
            "prompt": prompt,
            "meta": {"note": extra},
        },
    )
    city = {"city": "Paris" + extra}
    emit("llm.turn.started", {"messages": [{"role": "user", "content": prompt}], "params": {}})
    emit(
        "llm.turn.completed",
        {
            "content": "Looking it up." + extra,
            "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": city}],
            "usage": usage,
            "cost_usd": 0.01,
        },
    )
    emit("tool.call.started", {"call_id": "c1", "name": "get_weather", "arguments": city})
    emit(
        "tool.call.completed",
        {"call_id": "c1", "name": "get_weather", "output": {"temp_c": 21, "note": extra}},
    )
    for n in range(notes):
        emit("agent.note", {"text": f"thinking {n}{extra}"})
    emit("llm.turn.started", {"messages": [{"role": "tool", "content": "21" + extra}]})
    convert = {"celsius": 21, "to": unit}
    emit(
        "llm.turn.completed",
        {
            "content": "",
            "tool_calls": [{"id": "c2", "name": "convert", "arguments": convert}],
            "usage": usage,
            "cost_usd": 0.01,
        },
    )
    emit("tool.call.started", {"call_id": "c2", "name": "convert", "arguments": convert})
    emit("tool.call.completed", {"call_id": "c2", "name": "convert", "output": 21})
    emit("llm.turn.started", {"messages": [{"role": "tool", "content": "21"}]})
    emit("llm.turn.completed", {"content": "It is 21." + extra, "usage": usage, "cost_usd": 0.01})
    if fail:
        emit("run.failed", {"error": {"class": "ValueError", "message": "bad unit" + extra}})
    else:
        emit(
            "run.completed",
            {
                "outcome": "completed",
                "output": "It is 21." + extra,
                "cost_totals": {"total_cost_usd": 0.03},
            },
        )
    path.write_bytes(recorder.getvalue())
    return path


def record_long(path: Path, turns: int) -> Path:
    """A run of ``turns`` tool-calling turns: four events a turn, plus start and end."""
    ticks = itertools.count()
    recorder = Recorder(clock=lambda: T0 + next(ticks) * 1_000_000, flush_every=4096)
    emit = recorder.emit
    emit("run.started", {"model": "gpt-x", "prompt": "Count the cities.", "meta": {}})
    for n in range(turns):
        call = {"id": f"c{n}", "name": "lookup", "arguments": {"city": f"city-{n}", "page": n}}
        emit("llm.turn.started", {"messages": [{"role": "tool", "content": f"result {n - 1}"}]})
        emit(
            "llm.turn.completed",
            {
                "content": f"Looking up city {n}.",
                "tool_calls": [call],
                "usage": {"input_tokens": 100 + n, "output_tokens": 20},
                "cost_usd": 0.0001,
            },
        )
        emit(
            "tool.call.started",
            {"call_id": call["id"], "name": "lookup", "arguments": call["arguments"]},
        )
        emit(
            "tool.call.completed",
            {
                "call_id": call["id"],
                "name": "lookup",
                "output": {"population": n * 1000, "ok": True},
            },
        )
    emit("run.completed", {"outcome": "completed", "output": f"{turns} cities"})
    path.write_bytes(recorder.getvalue())
    return path


def split_page(page: str) -> tuple[str, str]:
    """The page without its embedded JSON, and the JSON."""
    match = re.search(
        r'<script type="application/json" id="rollout-data">(.*?)</script>', page, re.DOTALL
    )
    assert match is not None
    return page[: match.start(1)] + page[match.end(1) :], match.group(1)


def inline(page: str, tag: str) -> str:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", page, re.DOTALL)
    assert match is not None
    return match.group(1)


def digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


# -- run entries ----------------------------------------------------------------------------


def test_run_entry_from_a_golden() -> None:
    entry = run_entry(str(LYON), status="passed")
    events = load(LYON).events
    assert entry["kind"] == "run"
    assert entry["name"] == "test_weather_agent[lyon].jsonl"
    assert entry["path"] == str(LYON)
    assert entry["status"] == "passed"
    assert entry["notice"] is None
    assert entry["totals"] == {
        "first_step": 0,
        "steps": 2,
        "turns": 2,
        "tool_calls": {"total": 1, "by_name": [["get_weather", 1]]},
        "errors": 0,
        "input_tokens": 240,
        "output_tokens": 36,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "tokens_per_second": 137404.6,  # the fake model answers in microseconds
        "timed_turns": 2,
        "unreported_turns": 0,
        "cost_usd": 0.000552,
        "outcome": "completed",
    }
    assert len(entry["events"]) == len(events) == 10
    for row, event in zip(entry["events"], events, strict=True):
        seq, step, kind, description, data = row
        assert (seq, step, kind, data) == (event.seq, event.step, event.type, event.data)
        assert event_detail(event) == description
        assert describe_event(event).startswith(f"{kind}  {description}".split("  (")[0])
    assert entry["events"][4][3] == 'get_weather(city="Lyon")'


def test_run_entry_ids_are_stable_and_distinct() -> None:
    assert run_entry(str(LYON))["id"] == run_entry(str(LYON))["id"]
    assert run_entry(str(LYON))["id"] != run_entry(str(PARIS))["id"]
    assert run_entry(str(LYON), name="other")["id"] != run_entry(str(LYON))["id"]
    assert re.fullmatch(r"run-[0-9a-f]{16}", run_entry(str(LYON))["id"])


@pytest.mark.parametrize("path", EXAMPLE_GOLDENS, ids=lambda p: p.name)
def test_run_entry_of_each_example_golden(path: Path) -> None:
    entry = run_entry(str(path), name="example")
    assert entry["notice"] is None
    assert entry["name"] == "example"
    assert len(entry["events"]) == len(load(path).events)
    assert entry["totals"]["outcome"] in {"completed", "failed"}


def test_run_entry_from_bytes_names_the_path(tmp_path: Path) -> None:
    data = record_trip(tmp_path / "trip.jsonl").read_bytes()
    entry = run_entry("somewhere/else.jsonl", data=data, status="recorded")
    assert entry["name"] == "else.jsonl"
    assert entry["path"] == "somewhere/else.jsonl"
    assert entry["status"] == "recorded"
    assert entry["totals"]["tool_calls"] == {
        "total": 2,
        "by_name": [["get_weather", 1], ["convert", 1]],
    }


# -- refusals -------------------------------------------------------------------------------


def test_a_bad_json_line_is_a_notice(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = record_trip(tmp_path / "trip.jsonl").read_bytes().splitlines(keepends=True)
    path.write_bytes(good[0] + b"{not json\n" + b"".join(good[1:]))
    entry = run_entry(str(path), status="failed")
    assert entry["notice"].startswith(f"{path}:2: invalid JSON")
    assert entry["events"] == []
    assert entry["totals"] is None
    assert "\n" not in entry["notice"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs need POSIX")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    entry = run_entry(str(fifo))
    assert entry["notice"] == f"{fifo}: is a FIFO, not a regular file"
    assert entry["events"] == []


def test_a_missing_file_is_a_notice(tmp_path: Path) -> None:
    entry = run_entry(str(tmp_path / "nope.jsonl"))
    assert entry["notice"].startswith(f"{tmp_path / 'nope.jsonl'}: cannot open")
    assert entry["name"] == "nope.jsonl"


def test_a_run_cut_short_is_shown_as_far_as_it_got(tmp_path: Path) -> None:
    # What a crash leaves: no terminal event, and a last line cut in the middle.
    data = record_trip(tmp_path / "trip.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    cut = b"".join(lines[:-2]) + lines[-2][:20]
    entry = run_entry("cut.jsonl.partial", data=cut)
    kept = len(lines) - 2
    assert entry["notice"] == f"cut short after event {kept}: the file ends before the run did"
    assert len(entry["events"]) == kept
    assert entry["totals"]["outcome"] == "incomplete"
    page = render_page("cut", [entry])
    assert "cut short after event" in page


def test_a_diff_still_refuses_a_run_cut_short(tmp_path: Path) -> None:
    path = record_trip(tmp_path / "trip.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    entry = diff_entry(str(path), "cut.jsonl", name="n", run=b"".join(lines[:-1]))
    assert "no terminal event" in entry["notice"]
    assert entry["comparison"] is None


def test_token_totals_past_2_53_still_make_a_page(tmp_path: Path) -> None:
    turn = orjson.dumps(
        {
            "ts": "t",
            "seq": 1,
            "type": "llm.turn.completed",
            "data": {"step": 1, "usage": {"input_tokens": 2**53, "output_tokens": 2**53}},
        }
    )
    lines = [
        b'{"ts":"t","seq":0,"type":"run.started","data":{}}',
        *(turn.replace(b'"seq":1', b'"seq":%d' % n) for n in range(1, 2100)),
        b'{"ts":"t","seq":3000,"type":"run.completed","data":{}}',
    ]
    entry = run_entry("big.jsonl", data=b"\n".join(lines))
    assert entry["notice"] is None
    assert entry["totals"]["input_tokens"] == float(2099 * 2**53)  # past 2**64 as a sum
    assert page_data("big", [entry])


def test_hostile_path_and_notice_are_one_line_and_encodable(tmp_path: Path) -> None:
    name = os.fsdecode(b"bad\xff\nname.jsonl")
    entry = run_entry(str(tmp_path / name))
    assert "\n" not in entry["notice"]
    assert "\\udcff" in entry["path"]
    orjson.loads(page_data("t", [entry]))  # a lone surrogate would make orjson refuse


def test_a_refused_side_of_a_diff_is_a_notice(tmp_path: Path) -> None:
    run = record_trip(tmp_path / "run.jsonl")
    entry = diff_entry(str(tmp_path / "missing.jsonl"), str(run), name="t")
    assert entry["golden"]["notice"].startswith(f"{tmp_path / 'missing.jsonl'}: cannot open")
    assert entry["run"]["notice"] is None
    assert entry["notice"] == entry["golden"]["notice"]
    assert entry["comparison"] is None
    assert entry["score"] is None
    assert entry["fork"] is None
    assert entry["report"] == ["The runs cannot be compared:", entry["golden"]["notice"]]
    lines = ["this run left its golden", "x"]
    given = diff_entry(str(tmp_path / "missing.jsonl"), str(run), name="t", report_lines=lines)
    assert given["report"] == lines


# -- diff entries ---------------------------------------------------------------------------


def test_diff_entry_of_runs_that_part_at_step_two(tmp_path: Path) -> None:
    golden = record_trip(tmp_path / "golden.jsonl")
    run = record_trip(tmp_path / "run.jsonl", unit="fahrenheit", fail=True)
    entry = diff_entry(str(golden), str(run), name="test_trip[paris]")
    assert entry["kind"] == "diff"
    assert entry["name"] == "test_trip[paris]"
    assert entry["status"] == "failed"
    assert entry["notice"] is None
    assert entry["golden"]["status"] == "golden"
    assert entry["run"]["status"] == "failed"
    comparison = entry["comparison"]
    assert [(s["step"], s["status"]) for s in comparison["steps"]] == [
        (0, "identical"),
        (1, "identical"),
        (2, "diverged"),
        (3, "diverged"),
    ]
    golden_events = entry["golden"]["events"]
    for row in comparison["steps"]:
        assert row["golden"] == [i for i, e in enumerate(golden_events) if e[1] == row["step"]]
    assert comparison["counts"] == {"identical": 2, "diverged": 2, "only_in_a": 0, "only_in_b": 0}
    first = comparison["first"]
    assert first["step"] == 2
    assert first["status"] == "diverged"
    assert golden_events[first["golden_event"]][2] == "llm.turn.completed"
    assert entry["run"]["events"][first["run_event"]][1] == 2
    assert {
        "path": "data.tool_calls[0].arguments.to",
        "kind": "changed",
        "golden": '"celsius"',
        "run": '"fahrenheit"',
    } in first["changes"]
    assert first["more_changes"] == 0
    assert entry["headline"]["step"] == 2
    report = drift_report(load(golden).events, load(run).events)
    verdict = Verdict(str(golden), str(run), report)
    assert entry["score"] == score_sentence(verdict)
    assert entry["score"].startswith("golden wins")
    assert entry["fork"] == {
        "step": 1,
        "text": "Fork the conversation from the last good step (1):",
        "command": f"rollout fork {golden} --step 1",
    }
    assert entry["report"] == render_verdict(verdict)
    assert any(line.startswith("Fork the conversation") for line in entry["report"])


def test_diff_entry_shows_the_given_report_verbatim(tmp_path: Path) -> None:
    golden = record_trip(tmp_path / "golden.jsonl")
    run = record_trip(tmp_path / "run.jsonl", unit="kelvin")
    lines = ["this run left its golden at step 2", "  exact text"]
    entry = diff_entry(str(golden), str(run), name="t", report_lines=lines)
    assert entry["report"] == lines
    assert entry["comparison"]["first"]["step"] == 2


def test_diff_entry_of_identical_runs(tmp_path: Path) -> None:
    golden = record_trip(tmp_path / "golden.jsonl")
    entry = diff_entry(str(golden), "run.jsonl", name="t", status="passed", run=golden.read_bytes())
    assert entry["comparison"]["identical"] is True
    assert entry["comparison"]["first"] is None
    assert entry["fork"] is None
    assert entry["headline"] is None
    assert entry["report"] == ["this run matches its golden"]
    assert entry["score"] == "tie 0-0"


def test_diff_entry_of_two_project_goldens() -> None:
    entry = diff_entry(str(LYON), str(PARIS), name="lyon vs paris")
    assert entry["comparison"]["first"]["step"] == 0
    assert entry["comparison"]["counts"]["only_in_b"] == 1
    assert entry["fork"] is None  # nothing before step 0 to fork from


def test_an_event_only_one_side_has_is_described(tmp_path: Path) -> None:
    golden = record_trip(tmp_path / "golden.jsonl")
    run = record_trip(tmp_path / "run.jsonl", notes=1)
    first = diff_entry(str(golden), str(run), name="t")["comparison"]["first"]
    assert first["golden_event"] is None
    assert first["changes"][0]["path"] == "(event)"
    assert first["changes"][0]["golden"] == "(absent)"


# -- the page -------------------------------------------------------------------------------


def hostile_entries(tmp_path: Path) -> list[dict[str, Any]]:
    golden = record_trip(tmp_path / "golden.jsonl", extra=HOSTILE_TEXT)
    name = "\"'><svg onload=alert(1)> <img src=x onerror=alert(1)>.jsonl"
    run = record_trip(tmp_path / name, unit=HOSTILE_TEXT, extra=HOSTILE_TEXT, fail=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"evil": "' + HOSTILE[0].encode() + b'"\n')
    return [
        run_entry(str(run), status=HOSTILE[1]),
        diff_entry(str(golden), str(run), name=HOSTILE_TEXT, status="failed"),
        run_entry(str(bad), name=HOSTILE[2]),
    ]


def test_hostile_strings_never_reach_the_markup(tmp_path: Path) -> None:
    entries = hostile_entries(tmp_path)
    page = render_page("Rollouts", entries)
    outside, data = split_page(page)
    for text in HOSTILE:
        assert text not in outside
    for fragment in ("<svg", "<img", "onerror", "onload", "{{", "${", "alert("):
        assert fragment not in outside
    for char in ("<", ">", "&", "\u2028", "\u2029", "\x1b", "\x07"):
        assert char not in data
    assert "\x1b" not in page
    assert orjson.loads(data) == orjson.loads(page_data("Rollouts", entries))
    # The hostile strings are all there, as data.
    shown = orjson.loads(data)["entries"]
    assert shown[1]["name"] == HOSTILE_TEXT
    assert shown[0]["events"][0][4]["prompt"] == "Weather in Paris?" + HOSTILE_TEXT
    assert shown[0]["status"] == HOSTILE[1]


def test_a_hostile_title_is_escaped() -> None:
    page = render_page(HOSTILE[0] + HOSTILE[1], [])
    outside, data = split_page(page)
    assert "<script>window" not in outside
    assert "<img" not in outside
    assert html.escape(HOSTILE[1]) in outside
    assert orjson.loads(data)["title"] == HOSTILE[0] + HOSTILE[1]


def test_page_data_round_trips(tmp_path: Path) -> None:
    entries = [
        run_entry(str(LYON), status="passed"),
        diff_entry(str(LYON), str(PARIS), name="lyon vs paris"),
        *hostile_entries(tmp_path),
    ]
    data = page_data("Title \u2028 <x>", entries)
    assert orjson.loads(data) == {"title": "Title \u2028 <x>", "entries": entries}
    assert b"<" not in data
    assert "\u2028".encode() not in data


def test_the_csp_hashes_match_the_inline_script_and_style() -> None:
    page = render_page("t", [run_entry(str(LYON))])
    script = inline(page, "script")
    style = inline(page, "style")
    policy = content_security_policy()
    directives = dict(d.split(" ", 1) for d in policy.split("; "))
    assert directives == {
        "default-src": "'none'",
        "script-src": f"'{digest(script)}'",
        "style-src": f"'{digest(style)}'",
        "connect-src": "'self'",
        "img-src": "data:",
        "base-uri": "'none'",
        "form-action": "'none'",
        "frame-ancestors": "'none'",
    }
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
    assert meta is not None
    assert html.unescape(meta.group(1)) == policy.replace("; frame-ancestors 'none'", "")
    # The meta comes before anything it governs.
    assert page.index("Content-Security-Policy") < page.index("<style>")


def test_the_page_has_one_script_that_builds_text_only() -> None:
    page = render_page("t", [run_entry(str(LYON))])
    outside, _ = split_page(page)
    assert outside.count("<script") == 2  # the JSON data block and the page's script
    script = inline(page, "script")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script
    assert "new Function" not in script
    assert not re.search(r"\son\w+=", outside)  # no inline event handlers


def test_the_page_loads_nothing_from_anywhere(tmp_path: Path) -> None:
    page = render_page("t", [run_entry(str(LYON)), *hostile_entries(tmp_path)])
    assert not re.search(r"(?i)https?:", page)
    assert not re.search(r"(?i)\b(src|href)=\"(?!data:)", page)
    assert "@import" not in page
    assert "url(" not in page


def test_the_data_url_page_embeds_no_data() -> None:
    page = render_page("Served <x>", [run_entry(str(LYON))], data_url="/data.json")
    assert 'id="rollout-data"' not in page
    assert "get_weather" not in page
    match = re.search(r'<script type="application/json" id="rollout-source">(.*?)</script>', page)
    assert match is not None
    assert orjson.loads(match.group(1)) == {"data_url": "/data.json"}
    assert "Served &lt;x&gt;" in page
    assert inline(page, "script") == inline(render_page("t", []), "script")


def test_a_large_run_makes_a_page(tmp_path: Path) -> None:
    path = record_long(tmp_path / "long.jsonl", 2500)
    entry = run_entry(str(path))
    assert len(entry["events"]) == 10_002
    assert entry["totals"]["tool_calls"]["total"] == 2500
    page = render_page("long", [entry])
    assert len(page) < 5_000_000


def test_event_rows_keep_the_data_of_any_type(tmp_path: Path) -> None:
    path = tmp_path / "custom.jsonl"
    lines = [
        {"ts": "t", "seq": 0, "type": "run.started", "data": {"n": 1}},
        {"ts": "t", "seq": 1, "type": HOSTILE[0], "data": {"x": [1, 2.5, None, True]}},
        {"ts": "t", "seq": 2, "type": "run.completed", "data": {"outcome": "completed"}},
    ]
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    rows = run_entry(str(path))["events"]
    assert rows[1][2] == HOSTILE[0]
    assert rows[1][4] == {"x": [1, 2.5, None, True]}
    assert isinstance(load(path).events[1], Event)


def test_the_page_is_put_in_place_whole_but_not_flushed_to_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A page is made again from its rollouts in a moment: waiting for the disk to hold tens
    # of megabytes of it (a long run) buys nothing. It is still written by a rename.
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    (tmp_path / "page.html").write_text("old")
    out = io.StringIO()
    status = view_command(
        [str(record_trip(tmp_path / "a.jsonl"))], out=out, target=str(tmp_path / "page.html")
    )
    assert status == 0
    assert out.getvalue() == f"{tmp_path / 'page.html'}\n"
    assert (tmp_path / "page.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "page.html"]
    assert synced == []
    # What else is written atomically is flushed, as before.
    atomic_write(tmp_path / "golden.jsonl", b"{}\n")
    assert len(synced) == 2  # the file, then its folder


# -- the listing: a crash's partial file is "cut short", a whole run "complete" ---------------


def test_a_directory_lists_a_crashed_runs_partial_file_as_cut_short(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "sub").mkdir(parents=True)
    record_trip(runs / "whole.jsonl")
    lines = record_trip(tmp_path / "crashed.jsonl").read_bytes().splitlines(keepends=True)
    (runs / "sub" / ".crashed.jsonl.partial").write_bytes(b"".join(lines[:-2]))
    (runs / "notes.txt").write_text("not a rollout", encoding="utf-8")
    out = io.StringIO()
    status = view_command([str(runs)], out=out, target=str(tmp_path / "page.html"))
    assert status == 0
    assert out.getvalue() == f"{tmp_path / 'page.html'}\n"  # nothing refused
    _, data = split_page((tmp_path / "page.html").read_text(encoding="utf-8"))
    shown = {e["name"]: e for e in orjson.loads(data)["entries"]}
    assert list(shown) == ["sub/.crashed.jsonl.partial", "whole.jsonl"]
    crashed = shown["sub/.crashed.jsonl.partial"]
    assert crashed["state"] == "cut short"
    assert crashed["notice"].startswith("cut short after event")
    assert len(crashed["events"]) == len(lines) - 2
    assert shown["whole.jsonl"]["state"] == "complete"


def test_a_directory_with_only_a_partial_file_is_listed(tmp_path: Path) -> None:
    lines = record_trip(tmp_path / "crashed.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "crashed.jsonl").unlink()
    (tmp_path / ".crashed.jsonl.partial").write_bytes(b"".join(lines[:-1]))
    _, entries = collect_entries([str(tmp_path)])
    assert [(e["name"], e["state"]) for e in entries] == [(".crashed.jsonl.partial", "cut short")]


def test_a_refused_file_has_the_refused_state(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"{oops\n")
    assert run_entry(str(bad))["state"] == "refused"
    assert run_entry(str(LYON))["state"] == "complete"
