"""The HTML viewer in a real browser: headless Chromium driven through Playwright.

One browser serves the whole module; each test opens a fresh context (no shared state).
Every test fails on a console error, an uncaught exception, a CSP violation, a dialog or a
request for anything but the page itself.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from agent_runs import EVIL_AGENT, write_agent_run
from test_viewer import (
    HOSTILE,
    HOSTILE_TEXT,
    LYON,
    PARIS,
    hostile_entries,
    record_long,
    record_trip,
)
from usage_runs import CACHED_RUN, record, unreported

from pytest_rollout.view.entries import diff_entry, run_entry
from pytest_rollout.view.page import render_page
from pytest_rollout.view.server import ViewServer

pytestmark = pytest.mark.slow  # a browser

CHROMIUM = "/usr/bin/chromium"
if shutil.which(CHROMIUM) is None:
    pytest.skip(f"the browser tests need Chromium at {CHROMIUM}", allow_module_level=True)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser tests need the playwright package"
)
expect = sync_api.expect

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: Records what the page must never do; installed before any of the page's own code runs.
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(e.violatedDirective + " " + e.blockedURI);
});
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@dataclass
class Watched:
    """A page and everything it did that a safe page does not."""

    page: Any
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def open(self, url: str, state: str = "ready") -> None:
        self.page.goto(url)
        self.page.wait_for_selector(f"body[data-state={state}]")

    def assert_clean(self, *allowed: str) -> None:
        assert self.errors == []
        assert self.dialogs == []
        assert self.page.evaluate("window.__violations") == []
        assert self.page.evaluate("window.__pwned") is None
        assert [r for r in self.requests if r not in allowed] == []


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.add_init_script(WATCH)
    seen = Watched(page)

    def on_console(message: Any) -> None:
        if message.type in ("error", "warning"):
            seen.errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: seen.errors.append(str(exc)))
    page.on("request", lambda request: seen.requests.append(request.url))

    def on_dialog(dialog: Any) -> None:
        seen.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    yield seen
    context.close()


def write_page(path: Path, entries: list[dict[str, Any]], title: str = "Rollouts") -> str:
    path.write_text(render_page(title, entries), encoding="utf-8")
    return path.as_uri()


@pytest.fixture
def report(tmp_path: Path) -> tuple[str, list[dict[str, Any]]]:
    """A page like a test session's: passing runs, a refused one and a failing diff that
    parts at step 2 after a tall step 1 (so the first divergence starts out of view)."""
    golden = record_trip(tmp_path / "golden.jsonl", notes=60)
    run = record_trip(tmp_path / "run.jsonl", unit="fahrenheit", notes=60, fail=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"ts": "t", "seq": 0, "type": "run.started", "data": {}}\n{oops\n')
    entries = [
        run_entry(str(LYON), status="passed"),
        run_entry(str(PARIS), status="passed"),
        run_entry(str(bad), status="recorded"),
        diff_entry(str(golden), str(run), name="test_trip[paris]"),
    ]
    page = tmp_path / "report.html"
    return write_page(page, entries), entries


def visible_entries(page: Any) -> list[str]:
    names: list[str] = page.locator(".entry:visible .entry-name").all_inner_texts()
    return names


def test_the_report_opens_on_the_failing_diff_cleanly(
    watched: Watched, report: tuple[str, list[dict[str, Any]]]
) -> None:
    url, entries = report
    watched.open(url)
    page = watched.page
    # Failing and refused entries first, marked; the failing diff is shown.
    names = page.locator(".entry .entry-name").all_inner_texts()
    assert names[:2] == ["bad.jsonl", "test_trip[paris]"]
    assert page.locator(".entry.failing").count() == 2
    expect(page.locator(".entry.active")).to_have_attribute("data-kind", "diff")
    expect(page.locator("#view h2")).to_have_text("test_trip[paris]")
    expect(page.locator(".score")).to_contain_text("golden wins")
    expect(page.locator(".fork")).to_contain_text("rollout fork")
    expect(page.locator(".fork")).to_contain_text("--step 1")
    expect(page.locator(".report")).to_contain_text("this run left its golden at step 2")
    expect(page.locator(".changes")).to_contain_text("data.tool_calls[0].arguments.to")
    expect(page.locator(".changes")).to_contain_text('"fahrenheit"')
    assert page.locator(".step-row").count() == len(entries[3]["comparison"]["steps"])
    assert page.locator(".step-row.st-identical").count() == 2
    watched.assert_clean(url)


def test_the_first_divergent_step_is_highlighted_and_in_view(
    watched: Watched, report: tuple[str, list[dict[str, Any]]]
) -> None:
    url, _ = report
    watched.open(url)
    page = watched.page
    first = page.locator(".step-row.first-divergence")
    expect(first).to_have_count(1)
    expect(first).to_have_attribute("data-step", "2")
    expect(first).to_have_attribute("data-status", "diverged")
    expect(first).to_be_in_viewport()
    expect(first.locator(".event.differs")).to_have_count(2)
    # Step 1 is tall (60 notes): its top is out of view.
    expect(page.locator(".step-row[data-step='0']")).not_to_be_in_viewport()
    watched.assert_clean(url)


def test_type_and_step_filters(watched: Watched, report: tuple[str, list[dict[str, Any]]]) -> None:
    url, entries = report
    watched.open(url)
    page = watched.page
    page.locator(".entry", has_text="test_weather_agent[paris-fahrenheit]").click()
    events = page.locator("#view .event")
    expect(events).to_have_count(len(entries[1]["events"]))
    types = page.locator("#type-filter input[type=checkbox]")
    assert sorted(types.evaluate_all("boxes => boxes.map(b => b.value)")) == sorted(
        {row[2] for row in entries[1]["events"]}
    )
    page.click("#type-none")
    expect(events).to_have_count(0)
    page.check("#type-filter input[value='tool.call.started']")
    expect(events).to_have_count(2)
    assert set(events.evaluate_all("rows => rows.map(r => r.dataset.type)")) == {
        "tool.call.started"
    }
    page.click("#type-all")
    page.fill("#step-from", "2")
    page.fill("#step-to", "2")
    at_step_2 = [row for row in entries[1]["events"] if row[1] == 2]
    expect(events).to_have_count(len(at_step_2))
    assert set(events.evaluate_all("rows => rows.map(r => r.dataset.step)")) == {"2"}
    page.fill("#step-from", "")
    page.fill("#step-to", "")
    page.fill("#event-search", "convert_temperature")
    expect(events).to_have_count(
        sum("convert_temperature" in str(row) for row in entries[1]["events"])
    )
    watched.assert_clean(url)


def test_the_filters_narrow_a_diff(
    watched: Watched, report: tuple[str, list[dict[str, Any]]]
) -> None:
    url, _ = report
    watched.open(url)
    page = watched.page
    steps = page.locator(".step-row")
    expect(steps).to_have_count(4)
    page.click("#type-none")
    page.check("#type-filter input[value='tool.call.started']")
    expect(steps).to_have_count(2)  # the steps without a tool call are left out
    events = page.locator("#view .event")
    assert events.evaluate_all("rows => rows.map(r => r.dataset.type)") == ["tool.call.started"] * 4
    page.click("#type-all")
    page.fill("#step-from", "3")
    page.fill("#step-to", "3")
    expect(steps).to_have_count(1)
    expect(steps).to_have_attribute("data-step", "3")
    page.fill("#step-from", "")
    page.fill("#step-to", "")
    page.fill("#event-search", "thinking 59")
    expect(events).to_have_count(2)
    watched.assert_clean(url)


def test_a_click_expands_the_payload_highlighted(
    watched: Watched, report: tuple[str, list[dict[str, Any]]]
) -> None:
    url, _ = report
    watched.open(url)
    page = watched.page
    page.locator(".entry", has_text="test_weather_agent[lyon]").click()
    assert page.locator(".payload").count() == 0
    row = page.locator(".event[data-type='tool.call.started']")
    row.click()
    payload = page.locator(".payload")
    expect(payload).to_have_count(1)
    expect(payload).to_contain_text('"city": "Lyon"')
    assert payload.locator(".json-key").count() >= 4
    expect(payload.locator(".json-string", has_text='"Lyon"')).to_have_count(1)
    expect(payload.locator(".json-number")).to_have_count(1)
    row.click()
    expect(payload).to_have_count(0)
    watched.assert_clean(url)


def test_the_search_box_filters_the_entries(
    watched: Watched, report: tuple[str, list[dict[str, Any]]]
) -> None:
    url, _ = report
    watched.open(url)
    page = watched.page
    assert len(visible_entries(page)) == 4
    page.fill("#entry-search", "LYON")
    expect(page.locator(".entry:visible")).to_have_count(1)
    assert visible_entries(page) == ["test_weather_agent[lyon].jsonl"]
    page.fill("#entry-search", "golden.jsonl")  # a diff is found by its golden's path
    assert visible_entries(page) == ["test_trip[paris]"]
    page.fill("#entry-search", "no such thing")
    expect(page.locator(".entry:visible")).to_have_count(0)
    page.fill("#entry-search", "")
    expect(page.locator(".entry:visible")).to_have_count(4)
    watched.assert_clean(url)


def test_a_refused_rollout_shows_its_notice(
    watched: Watched, report: tuple[str, list[dict[str, Any]]]
) -> None:
    url, entries = report
    watched.open(url)
    page = watched.page
    page.locator(".entry", has_text="bad.jsonl").click()
    notice = page.locator("#view .notice")
    expect(notice).to_have_text(entries[2]["notice"])
    expect(notice).to_contain_text("bad.jsonl:2: invalid JSON")
    expect(page.locator("#view .event")).to_have_count(0)
    expect(page.locator("#view .totals")).to_have_count(0)
    watched.assert_clean(url)


def test_a_hostile_rollout_runs_no_script(watched: Watched, tmp_path: Path) -> None:
    run, diff, refused = entries = hostile_entries(tmp_path)
    title = HOSTILE[1] + HOSTILE[0]
    url = write_page(tmp_path / "hostile.html", entries, title=title)
    watched.open(url)
    page = watched.page

    def choose(entry: dict[str, Any]) -> None:
        page.click(f".entry[data-id='{entry['id']}']")

    for entry in entries:
        choose(entry)
        rows = page.locator("#view .event")
        for row in range(rows.count()):
            rows.nth(row).click()  # every payload expanded
    choose(run)
    page.fill("#event-search", "onerror")
    page.fill("#entry-search", "<img")
    page.wait_for_timeout(300)
    # Nothing ran, nothing was injected...
    watched.assert_clean(url)
    assert page.evaluate("document.querySelectorAll('img, svg, iframe, object').length") == 0
    assert page.evaluate("document.scripts.length") == 2
    # ...and every string is shown as it is, as text.
    assert page.title() == title
    assert page.text_content("#page-title") == title
    page.fill("#entry-search", "")
    page.fill("#event-search", "")
    choose(run)
    assert page.text_content("#view h2") == run["name"]
    assert page.text_content("#view .view-head .badge") == HOSTILE[1]
    page.click("#view .event[data-type='run.started']")
    payload = page.text_content("#view .payload")
    assert payload is not None
    for text in HOSTILE[:4]:
        assert text.replace('"', '\\"') in payload
    choose(diff)
    assert page.text_content("#view h2") == HOSTILE_TEXT
    assert HOSTILE[0] in (page.text_content("#view .changes") or "")
    assert page.text_content(".entry.active .entry-name") == HOSTILE_TEXT
    choose(refused)
    assert page.text_content("#view h2") == HOSTILE[2]
    assert page.text_content("#view .notice") == refused["notice"]
    watched.assert_clean(url)


@pytest.fixture
def server(report: tuple[str, list[dict[str, Any]]]) -> Iterator[ViewServer]:
    """``rollout view --serve``'s own server, on 127.0.0.1."""
    _, entries = report
    served = ViewServer("Served", entries)
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        served.shutdown()
        thread.join()


def test_the_served_page_fetches_its_data_with_the_token(
    watched: Watched, server: ViewServer
) -> None:
    page = watched.page
    sent: list[dict[str, str]] = []
    page.on(
        "request",
        lambda r: sent.append(r.headers) if r.url.endswith("/data.json") else None,
    )
    watched.open(server.url)
    expect(page.locator(".entry")).to_have_count(4)
    expect(page.locator(".step-row.first-divergence")).to_be_in_viewport()
    root = f"http://127.0.0.1:{server.port}/"
    # The token left the address for this tab's sessionStorage, and went as a Bearer.
    assert page.evaluate("location.href") == root
    assert page.evaluate("sessionStorage.getItem('rollout-view-token')") == server.token
    assert [h.get("authorization") for h in sent] == [f"Bearer {server.token}"]
    page.reload()
    page.wait_for_selector("body[data-state=ready]")
    expect(page.locator(".entry")).to_have_count(4)
    assert [h.get("authorization") for h in sent] == [f"Bearer {server.token}"] * 2
    watched.assert_clean(root, root + "data.json")


def test_the_served_page_says_when_the_fetch_fails(watched: Watched, server: ViewServer) -> None:
    root = f"http://127.0.0.1:{server.port}/"
    # The 403 is logged by the browser as a failed resource: expected here.
    watched.open(root + "#token=wrong", state="error")
    notice = watched.page.locator("#view .notice")
    expect(notice).to_contain_text("Could not load the rollout data from /data.json")
    expect(notice).to_contain_text("403")
    assert watched.page.locator(".entry").count() == 0
    assert [e for e in watched.errors if "403" not in e] == []
    watched.errors.clear()
    watched.open(root, state="error")
    expect(notice).to_contain_text("no #token=")


def timed_open(watched: Watched, path: Path, entries: list[dict[str, Any]], wait_for: str) -> str:
    """Write the page, open it and wait for ``wait_for``; print the time and size."""
    url = write_page(path, entries)
    start = time.perf_counter()
    watched.page.goto(url)
    watched.page.wait_for_selector("body[data-state=ready]")
    watched.page.wait_for_selector(wait_for)
    elapsed = time.perf_counter() - start
    events = sum(
        len(e.get("events") or e["golden"]["events"] + e["run"]["events"]) for e in entries
    )
    rows = watched.page.locator(".event").count()
    print(
        f"{path.stem}: {events} events, page {path.stat().st_size / 1e6:.2f} MB, "
        f"loaded and rendered in {elapsed:.2f} s ({rows} event rows in the DOM)"
    )
    assert elapsed < 10
    return url


def test_a_10k_event_run_opens_quickly(watched: Watched, tmp_path: Path) -> None:
    entries = [run_entry(str(record_long(tmp_path / "run.jsonl", 2500)), status="passed")]
    url = timed_open(watched, tmp_path / "10k-event-run.html", entries, ".event")
    page = watched.page
    events = page.locator(".event")
    # Rendered in chunks: the first chunk, the next when asked or scrolled to.
    expect(events).to_have_count(500)
    page.evaluate("document.querySelector('.show-more').click()")
    expect(events).to_have_count(1000)
    page.evaluate("document.getElementById('view').scrollTop = 1e9")
    expect(events).to_have_count(1500)
    page.fill("#step-from", "2500")
    expect(events).to_have_count(5)
    page.fill("#event-search", "city-2500")  # no such city: searched in payloads
    expect(events).to_have_count(0)
    page.fill("#step-from", "")
    page.fill("#event-search", "city-2499")  # its turn's tool call, and the call
    expect(events).to_have_count(2)
    watched.assert_clean(url)


def test_a_10k_event_diff_opens_at_its_late_divergence(watched: Watched, tmp_path: Path) -> None:
    golden = record_long(tmp_path / "golden.jsonl", 2500)
    run = record_long(tmp_path / "run.jsonl", 2499)
    entries = [diff_entry(str(golden), str(run), name="long")]
    first = ".step-row.first-divergence"
    url = timed_open(watched, tmp_path / "10k-event-diff.html", entries, first)
    page = watched.page
    expect(page.locator(first)).to_be_in_viewport()
    expect(page.locator(first)).to_have_attribute("data-step", "2499")
    # Only a window around the divergence is rendered; earlier steps on request.
    rows = page.locator(".step-row")
    shown = rows.count()
    assert shown < 100
    page.evaluate("document.querySelector('.show-earlier').click()")
    expect(rows).to_have_count(shown + 200)
    expect(page.locator(first)).to_be_in_viewport()
    watched.assert_clean(url)


def test_tokens_a_run_did_not_report_are_not_shown_as_counts(
    watched: Watched, tmp_path: Path
) -> None:
    none = record(tmp_path / "none.jsonl", unreported(CACHED_RUN, 1, 2))
    some = record(tmp_path / "some.jsonl", unreported(CACHED_RUN, 2))
    url = write_page(tmp_path / "usage.html", [run_entry(str(none)), run_entry(str(some))])
    watched.open(url)
    page = watched.page

    def totals_of(name: str) -> dict[str, str]:
        page.locator(".entry", has_text=name).click()
        expect(page.locator("#view h2")).to_have_text(name)
        terms = page.locator("#view .totals dt").all_inner_texts()
        return dict(zip(terms, page.locator("#view .totals dd").all_inner_texts(), strict=True))

    shown = totals_of("none.jsonl")
    assert shown["tokens"] == "not reported"
    assert "input tokens" not in shown
    assert "output tokens" not in shown
    shown = totals_of("some.jsonl")
    assert shown["input tokens"] == "1200 (1000 cache read, 150 cache write)"
    assert shown["output tokens"] == "40 (usage from 1 of 2 turns)"
    watched.assert_clean(url)


# -- runs with several agents: lanes, the filter by agent, call_id links, the causal graph --


@pytest.fixture
def agents_page(tmp_path: Path) -> str:
    """A run with three agents (one named with markup) beside a crashed run's partial file."""
    run = write_agent_run(tmp_path / "multi.jsonl")
    lines = record_trip(tmp_path / "crashed.jsonl").read_bytes().splitlines(keepends=True)
    partial = tmp_path / ".crashed.jsonl.partial"
    partial.write_bytes(b"".join(lines[:-2]))
    return write_page(tmp_path / "agents.html", [run_entry(str(run)), run_entry(str(partial))])


def shown_seqs(page: Any) -> list[int]:
    seqs: list[str] = page.locator("#view .event .ev-seq").all_inner_texts()
    return [int(seq) for seq in seqs]


def test_actor_lanes_and_handoffs_are_drawn(watched: Watched, agents_page: str) -> None:
    watched.open(agents_page)
    page = watched.page
    badges = page.locator(".entry .badge").all_inner_texts()
    assert badges == ["cut short", "complete"]  # the crashed run first, as a failure
    page.locator(".entry", has_text="multi.jsonl").click()
    legend = page.locator(".lane-legend .lane-name").all_inner_texts()
    assert legend == ["triage", "billing", EVIL_AGENT, "(no agent)"]
    expect(page.locator(".timeline.with-lanes")).to_have_count(1)
    rows = page.locator("#view .event")
    lanes = rows.evaluate_all("rs => rs.map(r => [r.dataset.lane, r.dataset.handoff || null])")
    unnamed, triage, billing, evil = ["3", None], ["0", None], ["1", None], ["2", None]
    assert lanes == [
        unnamed,
        *[triage] * 4,
        ["0", "0>1"],  # the handoff from triage to billing
        *[billing] * 4,
        ["1", "1>2"],
        evil,
        unnamed,
        unnamed,
    ]
    assert rows.nth(5).locator(".lane-from-r").count() == 1
    assert rows.nth(5).locator(".lane-to-r").count() == 1
    expect(page.locator("#view .lane-dot")).to_have_count(12)
    # The agent named with markup is text: no element made, no script run.
    assert page.evaluate("document.querySelectorAll('img, svg, iframe, object').length") == 0
    watched.assert_clean(agents_page)


def test_filter_by_agent_call_id_links_and_the_causal_graph(
    watched: Watched, agents_page: str
) -> None:
    watched.open(agents_page)
    page = watched.page
    page.locator(".entry", has_text="multi.jsonl").click()
    page.select_option("#agent-filter", label="billing")
    # Its events, the handoffs to and from it, the run's start and end.
    expect(page.locator("#view .event")).to_have_count(8)
    assert shown_seqs(page) == [0, 5, 6, 7, 8, 9, 10, 13]
    page.select_option("#agent-filter", label=EVIL_AGENT)
    expect(page.locator("#view .event")).to_have_count(4)
    assert shown_seqs(page) == [0, 10, 11, 13]
    page.locator(".lane-legend .lane-name", has_text="(no agent)").click()  # a chip
    expect(page.locator("#view .event")).to_have_count(3)
    assert shown_seqs(page) == [0, 12, 13]
    page.select_option("#agent-filter", value="")
    expect(page.locator("#view .event")).to_have_count(14)
    # The turn that announced call c1 and the call's two events are linked.
    linked = page.locator("#view .event.linked .ev-seq")
    page.locator(".event[data-index='2']").hover()
    expect(linked).to_have_text(["3", "4"])
    page.locator(".event[data-index='0']").hover()
    expect(linked).to_have_count(0)
    page.locator(".event[data-index='4']").click()
    links = page.locator(".links .call-link")
    expect(links).to_have_text(["seq 2 llm.turn.completed", "seq 3 tool.call.started"])
    links.first.click()
    expect(page.locator(".event.target")).to_have_attribute("data-index", "2")
    # The causal graph's edges, on demand.
    edges = page.locator(".graph-edge")
    expect(edges).to_have_count(0)
    page.click("#graph-toggle")
    expect(edges).to_have_text(
        ["turn:2 <- call:c1 (context)", 'call:c2 <- call:c1 (data_flow: "ACC-12345")']
    )
    edges.nth(1).locator("button").hover()
    expect(linked).to_have_text(["2", "3", "4", "7", "8", "9"])
    page.click("#graph-toggle")
    expect(edges.first).to_be_hidden()
    assert page.evaluate("document.querySelectorAll('img, svg, iframe, object').length") == 0
    watched.assert_clean(agents_page)


def test_the_served_page_of_one_agent(watched: Watched, tmp_path: Path) -> None:
    run = write_agent_run(tmp_path / "multi.jsonl")
    served = ViewServer("Agents", [run_entry(str(run))])
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    try:
        root = f"http://127.0.0.1:{served.port}/"
        query = "?agent=" + quote(EVIL_AGENT)
        watched.open(f"{root}{query}#token={served.token}")
        page = watched.page
        assert page.evaluate("location.href") == root + query
        expect(page.locator(".served-agent")).to_contain_text(EVIL_AGENT)
        assert shown_seqs(page) == [0, 10, 11, 13]  # as the server sent them
        selected = page.eval_on_selector("#agent-filter", "s => s.selectedOptions[0].text")
        assert selected == EVIL_AGENT
        assert page.evaluate("document.querySelectorAll('img, svg, iframe, object').length") == 0
        # The page asks for the data of the agent its address names (encodeURIComponent).
        asked = "data.json?agent=" + quote(EVIL_AGENT, safe="!*'()")
        watched.assert_clean(root + query, root + asked)
    finally:
        served.shutdown()
        thread.join()
