"""One self-contained HTML page that shows rollouts and how two runs differ.

The page carries everything it needs inline (one script, one style sheet, the data as JSON)
and loads nothing from the network, so it can be attached to a CI run or opened from disk.
Rollouts may be hostile, so the page is built to treat every string from them as text:

* the data sits in ``<script type="application/json" id="rollout-data">`` (a data block the
  browser never runs), written with ``<``, ``>``, ``&``, U+2028 and U+2029 as ``\\u``
  escapes, so no string can end the element or start markup;
* the script builds every element with ``createElement`` and ``textContent``; it never uses
  ``innerHTML``, ``document.write`` or ``eval``, and class names never come from the data;
* the Content-Security-Policy (:func:`content_security_policy`, also set in a ``<meta>``)
  allows only the page's own script and style, by their hashes: even injected markup could
  not run a script or load anything.

Given ``data_url`` (a local server), :func:`render_page` embeds no data: the script fetches
it from that URL, sending the ``#token=...`` of the page's address as ``X-Rollout-Token``.

Entries (plain dicts at this JSON boundary): :func:`run_entry` describes one run (``kind``
``"run"``), :func:`diff_entry` a golden and a run compared (``kind`` ``"diff"``).

DOM hooks (stable, for tests and tools):

* ids: ``page-title``; ``entry-list`` (the list of entries), ``entry-search`` (filters it by
  name and path); ``view`` (the shown entry); in a run or diff view ``type-filter`` (a
  fieldset of checkboxes, one per event type present, ``value`` = the type; ``type-all`` and
  ``type-none`` check or clear them all), ``step-from`` and ``step-to`` (an inclusive step
  range, empty = open), ``event-search`` (text search over type, description and payload);
  ``first-divergence-link`` (a button that scrolls to the first divergent step).
* classes: ``entry`` (a button in the list; also ``failing`` for a failed or refused entry,
  ``active`` for the one shown; ``data-id`` and ``data-kind`` attributes); ``event`` (a
  timeline row, with ``data-type``, ``data-step`` and ``data-index``, the event's index in
  its run's ``events``; a click toggles its payload); ``payload`` (the expanded payload, a
  ``<pre>`` with spans ``json-key``, ``json-string``, ``json-number``, ``json-literal``);
  ``step-row`` (one step of a diff, with ``data-step``, ``data-status`` and a class
  ``st-<status>``); ``first-divergence`` (the first divergent step row); ``notice`` (a
  loader refusal or a failed fetch, in place of a timeline); ``totals`` (a run's totals);
  ``show-more`` (renders the next chunk of rows), ``show-earlier`` (the chunk before a
  window opened at a late first divergence); ``changes`` (the field-level difference);
  ``score``, ``fork`` and ``report`` (the score sentence, fork hint and report text).
* ``body[data-state]`` is ``ready`` once the first view is shown, ``error`` if the data
  could not be read or fetched.

Long timelines are rendered in chunks (500 events, or 200 steps of a diff, at a time; the
next chunk when scrolled to or on "show more"; a diff opens on a window around its first
divergence), and payloads only when expanded: a 10,000-event run opens in well under a
second in headless Chromium.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from ..diff.compare import Comparison, FieldChange, is_missing
from ..diff.drift import DriftReport, Verdict, drift_report
from ..diff.failure import render_verdict, score_sentence
from ..diff.report import describe_event
from ..diff.score import RunSummary, summarize
from ..errors import RolloutError
from ..format.events import Event
from ..format.loader import Rollout, load, loads
from ..safety.sanitize import excerpt, sanitize

__all__ = [
    "content_security_policy",
    "diff_entry",
    "page_data",
    "render_page",
    "run_entry",
]

#: Field-level changes listed for the first divergence, and the length of each value shown.
CHANGES_LIMIT: Final = 50
VALUE_LIMIT: Final = 2000

# -- entries ------------------------------------------------------------------------------


def _text(value: str) -> str:
    """``value`` as a string orjson can write: a lone surrogate (a file name that is not
    UTF-8) is shown as a backslash escape."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _entry_id(kind: str, *parts: str) -> str:
    digest = hashlib.sha256("\0".join((kind, *parts)).encode("utf-8", "backslashreplace"))
    return f"{kind}-{digest.hexdigest()[:16]}"


def _load(path: str, data: bytes | None) -> tuple[Rollout | None, str | None]:
    """The rollout, or the one-line reason it was refused (``file:line: reason``)."""
    try:
        rollout = load(path) if data is None else loads(data, path=path)
    except RolloutError as exc:  # RolloutFormatError says file:line: reason itself
        return None, sanitize(str(exc))
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL byte
        return None, sanitize(f"{path}: cannot read: {exc}")
    return rollout, None


def _totals(summary: RunSummary) -> dict[str, Any]:
    return {
        "steps": summary.steps,
        "turns": summary.turns,
        "tool_calls": {
            "total": sum(summary.tool_calls.values()),
            "by_name": [[name, count] for name, count in summary.tool_calls.most_common()],
        },
        "errors": summary.errors,
        "input_tokens": summary.input_tokens,
        "output_tokens": summary.output_tokens,
        "cost_usd": summary.cost_usd,
        "outcome": summary.outcome,
    }


def _row(event: Event) -> list[Any]:
    """``[seq, step, type, description, data]``: the description without the type."""
    described = describe_event(event)
    prefix = sanitize(event.type) + "  "
    detail = described[len(prefix) :] if described.startswith(prefix) else ""
    return [event.seq, event.step, event.type, detail, event.data]


def _run_entry(
    path: str, rollout: Rollout | None, notice: str | None, name: str | None, status: str | None
) -> dict[str, Any]:
    if name is None:
        name = os.path.basename(path) or path
    shown = _text(name)
    events = rollout.events if rollout is not None else ()
    return {
        "kind": "run",
        "id": _entry_id("run", shown, _text(path)),
        "name": shown,
        "path": _text(path),
        "status": None if status is None else _text(status),
        "notice": notice,
        "totals": _totals(summarize(events)) if rollout is not None else None,
        "events": [_row(event) for event in events],
    }


def run_entry(
    path: str,
    *,
    name: str | None = None,
    status: str | None = None,
    data: bytes | None = None,
) -> dict[str, Any]:
    """A run for the page, loaded with the strict loader (from ``data`` when given).

    The dict: ``kind`` ``"run"``, ``id`` (stable: a digest of name and path), ``name``
    (default: the file name), ``path``, ``status`` (e.g. ``"passed"``, ``"failed"``,
    ``"recorded"`` or ``None``), ``notice`` (``None``, or why the file was refused:
    ``file:line: reason``), ``totals`` (``None`` when refused, else ``steps``, ``turns``,
    ``tool_calls`` ``{"total", "by_name": [[name, count], ...]}``, ``errors``,
    ``input_tokens``, ``output_tokens``, ``cost_usd``, ``outcome``) and ``events``, one
    ``[seq, step, type, description, data]`` row per event (none when refused). Never
    raises for a bad, missing or special file.
    """
    rollout, notice = _load(path, data)
    return _run_entry(path, rollout, notice, name, status)


def _value_text(value: Any) -> str:
    if is_missing(value):
        return "(absent)"
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except TypeError:
        text = repr(value)
    if len(text) > VALUE_LIMIT:
        return f"{text[:VALUE_LIMIT]}… (+{len(text) - VALUE_LIMIT} chars)"
    return text


def _change(change: FieldChange) -> dict[str, str]:
    return {
        "path": change.path,
        "kind": change.kind,
        "golden": _value_text(change.a),
        "run": _value_text(change.b),
    }


def _groups(events: Sequence[Event]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for index, event in enumerate(events):
        groups.setdefault(event.step, []).append(index)
    return groups


def _comparison(
    comparison: Comparison, golden: Sequence[Event], run: Sequence[Event]
) -> dict[str, Any]:
    """The step alignment of the two runs (event indices per step) and the first divergence."""
    in_golden = _groups(golden)
    in_run = _groups(run)
    status_of = {s.step: s.status.value for s in comparison.steps}
    steps: list[dict[str, Any]] = []
    for step in sorted(in_golden.keys() | in_run.keys() | status_of.keys()):
        left = in_golden.get(step, [])
        right = in_run.get(step, [])
        fallback = "identical" if left and right else "only_in_a" if left else "only_in_b"
        steps.append(
            {"step": step, "status": status_of.get(step, fallback), "golden": left, "run": right}
        )
    counts = dict.fromkeys(("identical", "diverged", "only_in_a", "only_in_b"), 0)
    for row in steps:
        status: str = row["status"]
        counts[status] = counts.get(status, 0) + 1
    first = comparison.first
    first_data: dict[str, Any] | None = None
    if first is not None:
        golden_index = {event.seq: i for i, event in enumerate(golden)}
        run_index = {event.seq: i for i, event in enumerate(run)}
        first_data = {
            "step": first.step,
            "status": first.status.value,
            "index": first.index,
            "golden_event": None if first.a_event is None else golden_index.get(first.a_event.seq),
            "run_event": None if first.b_event is None else run_index.get(first.b_event.seq),
            "changes": [_change(c) for c in first.changes[:CHANGES_LIMIT]],
            "more_changes": max(0, len(first.changes) - CHANGES_LIMIT),
        }
    return {
        "identical": comparison.identical,
        "counts": counts,
        "last_identical_step": comparison.last_identical_step,
        "steps": steps,
        "first": first_data,
    }


def _headline(report: DriftReport) -> dict[str, Any] | None:
    headline = report.headline
    if headline is None:
        return None
    return {
        "step": headline.step,
        "kind": headline.kind.value,
        "attribution": headline.attribution,
        "detail": excerpt(headline.detail, 400),
    }


def _fork_hint(golden_path: str, comparison: Comparison) -> dict[str, Any] | None:
    good = comparison.last_identical_step
    if comparison.first is None or good is None:
        return None
    return {
        "step": good,
        "text": f"Fork the conversation from the last good step ({good}):",
        "command": f"rollout fork {shlex.quote(sanitize(golden_path))} --step {good}",
    }


def diff_entry(
    golden_path: str,
    run_path: str,
    *,
    name: str,
    status: str = "failed",
    golden: bytes | None = None,
    run: bytes | None = None,
    report_lines: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A golden and a run compared, for the page (``golden``/``run``: the files' bytes).

    The dict: ``kind`` ``"diff"``, ``id``, ``name``, ``status``, ``notice`` (``None``, or the
    refusals of either file, one per line), ``golden`` and ``run`` (run entries), and, when
    both loaded, ``comparison`` (``identical``, ``counts`` per status, ``last_identical_step``,
    ``steps``: ``{"step", "status", "golden": [event indices], "run": [event indices]}`` per
    step, and ``first``: ``{"step", "status", "index" (in the step), "golden_event",
    "run_event" (indices or None), "changes": [{"path", "kind", "golden", "run"}],
    "more_changes"}`` or ``None``), ``headline`` (``{"step", "kind", "attribution",
    "detail"}`` or ``None``), ``score`` (the score sentence) and ``fork`` (``{"step", "text",
    "command"}`` or ``None``); those are ``None`` when a file was refused. ``report`` holds
    ``report_lines`` when given (the plugin's failure report), else the report
    :func:`~pytest_rollout.diff.failure.render_verdict` makes (golden as "golden", the run as
    "this run"). Never raises for a bad, missing or special file.
    """
    golden_rollout, golden_notice = _load(golden_path, golden)
    run_rollout, run_notice = _load(run_path, run)
    golden_entry = _run_entry(golden_path, golden_rollout, golden_notice, None, "golden")
    run_side = _run_entry(run_path, run_rollout, run_notice, None, status)
    notices = [n for n in (golden_notice, run_notice) if n is not None]
    entry: dict[str, Any] = {
        "kind": "diff",
        "id": _entry_id("diff", _text(name), _text(golden_path), _text(run_path)),
        "name": _text(name),
        "status": _text(status),
        "notice": "\n".join(notices) or None,
        "golden": golden_entry,
        "run": run_side,
        "comparison": None,
        "headline": None,
        "score": None,
        "fork": None,
        "report": None,
    }
    lines = None if report_lines is None else [_text(line) for line in report_lines]
    if golden_rollout is None or run_rollout is None:
        entry["report"] = lines if lines is not None else ["The runs cannot be compared:", *notices]
        return entry
    report = drift_report(golden_rollout.events, run_rollout.events)
    verdict = Verdict(golden_path, run_path, report)
    entry["comparison"] = _comparison(report.comparison, golden_rollout.events, run_rollout.events)
    entry["headline"] = _headline(report)
    entry["score"] = score_sentence(verdict)
    entry["fork"] = _fork_hint(golden_path, report.comparison)
    entry["report"] = lines if lines is not None else render_verdict(verdict)
    return entry


# -- the page -----------------------------------------------------------------------------

_SCRIPT_ESCAPES: Final = (
    (b"&", b"\\u0026"),
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def _script_safe(data: bytes) -> bytes:
    """JSON that cannot end a ``<script>`` element: the characters that could only occur in
    its strings are written as ``\\u`` escapes, which decode to the same data."""
    for raw, escaped in _SCRIPT_ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


def page_data(title: str, entries: Sequence[Mapping[str, Any]]) -> bytes:
    """The JSON the page reads: ``{"title": ..., "entries": [...]}``, embedded in the page
    or served at its ``data_url``. ``<``, ``>``, ``&``, U+2028 and U+2029 are escaped."""
    document = {"title": _text(title), "entries": [dict(entry) for entry in entries]}
    return _script_safe(orjson.dumps(document))


def _digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def _policy(*, frame_ancestors: bool) -> str:
    parts = [
        "default-src 'none'",
        f"script-src '{_digest(_SCRIPT)}'",
        f"style-src '{_digest(_STYLE)}'",
        "connect-src 'self'",
        "img-src data:",
        "base-uri 'none'",
        "form-action 'none'",
    ]
    if frame_ancestors:
        parts.append("frame-ancestors 'none'")
    return "; ".join(parts)


def content_security_policy() -> str:
    """The page's Content-Security-Policy, for a server's response header.

    Only the page's inline script and style run, by their sha256 hashes; nothing loads
    from anywhere except the page's own ``data_url`` (``connect-src 'self'``).
    """
    return _policy(frame_ancestors=True)


def render_page(
    title: str, entries: Sequence[Mapping[str, Any]], *, data_url: str | None = None
) -> str:
    """The HTML page showing ``entries`` (run and diff entries).

    With ``data_url`` the page embeds no data: its script fetches :func:`page_data` from
    that URL with the ``X-Rollout-Token`` header set from ``#token=...`` in its address.
    """
    if data_url is None:
        data = page_data(title, entries).decode("utf-8")
        block = f'<script type="application/json" id="rollout-data">{data}</script>'
    else:
        source = _script_safe(orjson.dumps({"data_url": _text(data_url)})).decode("utf-8")
        block = f'<script type="application/json" id="rollout-source">{source}</script>'
    shown = html.escape(_text(title), quote=True)
    return _PAGE.format(
        policy=html.escape(_policy(frame_ancestors=False), quote=True),
        title=shown,
        style=_STYLE,
        data=block,
        script=_SCRIPT,
    )


_PAGE: Final = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="data:,">
<style>{style}</style>
</head>
<body>
<div id="app">
<aside id="sidebar">
<h1 id="page-title">{title}</h1>
<input id="entry-search" type="search" placeholder="Filter by name or path"
 aria-label="Filter the list by name or path" autocomplete="off">
<div id="entry-list" role="list" aria-label="Runs and diffs"></div>
</aside>
<main id="view" aria-live="polite"><p class="loading">Loading...</p></main>
</div>
{data}
<script>{script}</script>
</body>
</html>
"""

_STYLE: Final = """
:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --panel: #f6f8fa;
  --accent: #0969da; --select: #ddf4ff; --bad: #cf222e; --bad-bg: #ffebe9;
  --good: #1a7f37; --good-bg: #dafbe1; --warn-bg: #fff8c5; --only-bg: #fbefff;
  --key: #0550ae; --string: #0a3069; --number: #953800; --literal: #8250df;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --fg: #e6edf3; --muted: #8d96a0; --line: #30363d; --panel: #161b22;
    --accent: #4493f8; --select: #1f2d3d; --bad: #f85149; --bad-bg: #3c1618;
    --good: #3fb950; --good-bg: #12261e; --warn-bg: #2e2a12; --only-bg: #2a1c33;
    --key: #79c0ff; --string: #a5d6ff; --number: #ffa657; --literal: #d2a8ff;
  }
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
html, body { height: 100%; margin: 0; }
body { font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
button, input { font: inherit; color: inherit; }
#app { display: grid; grid-template-columns: minmax(14rem, 20rem) 1fr; height: 100vh; }
#sidebar {
  display: flex; flex-direction: column; min-height: 0;
  background: var(--panel); border-right: 1px solid var(--line);
}
#page-title { font-size: 1rem; margin: .75rem; overflow-wrap: anywhere; }
#entry-search {
  margin: 0 .75rem .5rem; padding: .3rem .5rem;
  border: 1px solid var(--line); border-radius: 6px; background: var(--bg);
}
#entry-list { flex: 1; overflow: auto; border-top: 1px solid var(--line); }
.entry {
  display: block; width: 100%; padding: .45rem .75rem; text-align: left; cursor: pointer;
  background: none; border: 0; border-bottom: 1px solid var(--line);
}
.entry:hover { background: var(--select); }
.entry.failing { box-shadow: inset 3px 0 var(--bad); }
.entry.active { background: var(--select); box-shadow: inset 3px 0 var(--accent); }
.entry.active.failing { box-shadow: inset 3px 0 var(--bad), inset 6px 0 var(--accent); }
.entry-top { display: flex; gap: .4rem; align-items: center; }
.entry-kind { color: var(--muted); font-size: .8em; text-transform: uppercase; }
.entry-name { display: block; font-weight: 600; overflow-wrap: anywhere; }
.entry-path {
  display: block; color: var(--muted); font-size: .8em; overflow-wrap: anywhere;
  white-space: pre-line;
}
.badge {
  display: inline-block; padding: 0 .45rem; border-radius: 1rem; font-size: .75em;
  border: 1px solid var(--line); white-space: nowrap;
  max-width: 14rem; overflow: hidden; text-overflow: ellipsis;
}
.status-failed { color: var(--bad); background: var(--bad-bg); border-color: var(--bad); }
.status-passed { color: var(--good); background: var(--good-bg); border-color: var(--good); }
#view { min-width: 0; overflow: auto; padding: 1rem 1.5rem 3rem; }
.view-head { display: flex; gap: .75rem; align-items: baseline; flex-wrap: wrap; }
.view-head h2 { margin: 0; font-size: 1.25rem; overflow-wrap: anywhere; }
.path, .loading, .shown, .empty { color: var(--muted); overflow-wrap: anywhere; }
.paths p { margin: .2rem 0; }
.notice {
  margin: .75rem 0; padding: .5rem .75rem; border: 1px solid var(--bad); border-radius: 6px;
  background: var(--bad-bg); white-space: pre-wrap; overflow-wrap: anywhere;
}
.totals {
  display: grid; grid-template-columns: repeat(auto-fill, minmax(11rem, 1fr)); gap: .5rem;
  margin: .75rem 0;
}
.totals div { padding: .35rem .6rem; background: var(--panel); border-radius: 6px; }
.totals dt { color: var(--muted); font-size: .8em; }
.totals dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
.filters {
  display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: flex-end;
  margin: .75rem 0; padding: .5rem .75rem; background: var(--panel); border-radius: 6px;
}
.filters fieldset { margin: 0; padding: 0; border: 0; min-width: 0; }
.filters legend, .filters .label { color: var(--muted); font-size: .8em; }
.filters input[type=number] { width: 6rem; }
.filters input[type=search] { width: 16rem; }
.type-option { display: inline-flex; gap: .25rem; margin-right: .75rem; overflow-wrap: anywhere; }
.type-option .count, .count { color: var(--muted); }
.small { padding: 0 .4rem; font-size: .8em; }
.timeline, .aligned { border-top: 1px solid var(--line); }
.event {
  display: grid; grid-template-columns: 3.5em 4.5em minmax(8em, 15em) 1fr; gap: .5rem;
  padding: .15rem .35rem; cursor: pointer; border-bottom: 1px solid var(--line);
  font: 12.5px/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
}
.event:hover, .event:focus { background: var(--select); outline: none; }
.event.open { background: var(--select); }
.event span { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.ev-step, .ev-seq { color: var(--muted); text-align: right; }
.ev-type { font-weight: 600; }
.payload {
  margin: 0 0 .4rem; padding: .5rem .75rem; max-height: 36rem; overflow: auto;
  background: var(--panel); border-left: 3px solid var(--accent);
  font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  white-space: pre-wrap; overflow-wrap: anywhere;
}
.json-key { color: var(--key); }
.json-string { color: var(--string); }
.json-number { color: var(--number); }
.json-literal { color: var(--literal); font-weight: 600; }
.show-more, .show-earlier { margin: .5rem 0; padding: .25rem .75rem; cursor: pointer; }
.summary { margin: .75rem 0; }
.summary p { margin: .3rem 0; overflow-wrap: anywhere; }
.summary .label { color: var(--muted); }
.changes { border-collapse: collapse; margin: .4rem 0; width: 100%; table-layout: fixed; }
.changes th, .changes td {
  padding: .2rem .4rem; border: 1px solid var(--line); text-align: left; vertical-align: top;
  font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  white-space: pre-wrap; overflow-wrap: anywhere;
}
.changes th { font-family: inherit; background: var(--panel); }
.fork code, .report {
  display: block; padding: .4rem .6rem; background: var(--panel); border-radius: 6px;
  font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  white-space: pre-wrap; overflow-wrap: anywhere;
}
details { margin: .75rem 0; }
summary { cursor: pointer; color: var(--muted); }
.timeline-head {
  display: grid; grid-template-columns: 3.5em 4.5em minmax(8em, 15em) 1fr; gap: .5rem;
  padding: .2rem .35rem; font-weight: 600; border-bottom: 1px solid var(--line);
}
.timeline-head span:nth-child(-n+2) { text-align: right; }
.step-head, .step-row { display: grid; grid-template-columns: 7.5em 1fr 1fr; gap: 0 .75rem; }
.step-head { font-weight: 600; padding: .3rem .35rem; border-bottom: 1px solid var(--line); }
.step-row { padding: .25rem .35rem; border-bottom: 1px solid var(--line); }
.step-row .event { grid-template-columns: minmax(7em, 13em) 1fr; }
.step-row .ev-step, .step-row .ev-seq { display: none; }
.side { min-width: 0; }
.step-label { font-weight: 600; }
.step-label .count { display: block; font-weight: 400; font-size: .8em; }
.st-identical { opacity: .55; }
.st-identical:hover { opacity: 1; }
.st-diverged { background: var(--warn-bg); }
.st-only_in_a, .st-only_in_b { background: var(--only-bg); }
.event.differs { box-shadow: inset 3px 0 var(--bad); }
.step-row.first-divergence {
  opacity: 1; outline: 2px solid var(--bad); outline-offset: -2px; background: var(--bad-bg);
}
.nothing { color: var(--muted); font-style: italic; }
"""

_SCRIPT: Final = r"""
"use strict";
(() => {
  const CHUNK = 500;            // timeline rows rendered at a time
  const STEP_CHUNK = 200;       // diff step rows rendered at a time
  const CELL_LIMIT = 50;        // events per side of a diff step before "show all"
  const PRETTY_LIMIT = 200000;  // longer payloads are shown without highlighting
  const STATUS_TEXT = {
    identical: "identical", diverged: "diverged",
    only_in_a: "only in golden", only_in_b: "only in this run",
  };
  const view = document.getElementById("view");
  const haystacks = new WeakMap();
  let entries = [];
  let buttons = [];
  let observer = null;

  // -- small helpers: every string from the data goes through textContent ------------

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function button(className, text, onClick) {
    const node = el("button", className, text);
    node.type = "button";
    node.addEventListener("click", onClick);
    return node;
  }

  function failing(entry) {
    return entry.status === "failed" || entry.status === "error" || Boolean(entry.notice);
  }

  function statusText(entry) {
    if (entry.status) return String(entry.status);
    return entry.notice ? "refused" : entry.kind === "diff" ? "diff" : "run";
  }

  function statusClass(status) {
    if (status === "failed" || status === "error") return "badge status-failed";
    if (status === "passed") return "badge status-passed";
    return "badge";
  }

  function formatCost(cost) {
    if (typeof cost !== "number") return "unknown";
    const [whole, frac] = cost.toFixed(6).replace(/0+$/, "").split(".");
    return "$" + whole + "." + (frac || "").padEnd(2, "0");
  }

  function fail(message) {
    view.replaceChildren(el("p", "notice", message));
    document.body.dataset.state = "error";
  }

  // -- loading ------------------------------------------------------------------------

  function readJson(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  function boot() {
    let data;
    let source;
    try {
      data = readJson("rollout-data");
      source = data ? null : readJson("rollout-source");
    } catch (err) {
      fail("The rollout data in this page cannot be read: " + err.message);
      return;
    }
    if (data) {
      start(data);
      return;
    }
    if (!source || typeof source.data_url !== "string") {
      fail("This page carries no rollout data.");
      return;
    }
    const token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
    const advice = token
      ? "The server may have stopped, or the token may be stale: open the link it printed again."
      : "The address has no #token=...: open the exact link the server printed.";
    fetch(source.data_url, {
      headers: { "X-Rollout-Token": token },
      cache: "no-store",
      credentials: "same-origin",
      redirect: "error",
    })
      .then((response) => {
        if (!response.ok) {
          throw new Error("the server answered " + response.status + " " + response.statusText);
        }
        return response.json();
      })
      .then(start)
      .catch((err) => {
        fail("Could not load the rollout data from " + source.data_url + ": " +
             err.message + ". " + advice);
      });
  }

  function start(data) {
    try {
      showAll(data);
    } catch (err) {
      fail("The rollout data cannot be shown: " + err.message);
    }
  }

  function showAll(data) {
    if (typeof data.title === "string") {
      document.title = data.title;
      document.getElementById("page-title").textContent = data.title;
    }
    const all = Array.isArray(data.entries) ? data.entries : [];
    entries = all.slice().sort((a, b) => Number(failing(b)) - Number(failing(a)));
    buildList();
    if (entries.length) {
      const firstFailingDiff = entries.findIndex((e) => e.kind === "diff" && failing(e));
      show(firstFailingDiff >= 0 ? firstFailingDiff : 0);
    } else {
      view.replaceChildren(el("p", "empty", "No rollouts to show."));
    }
    document.body.dataset.state = "ready";
  }

  // -- the list of entries ------------------------------------------------------------

  function entryPaths(entry) {
    if (entry.kind === "diff") return entry.golden.path + "\n" + entry.run.path;
    return entry.path;
  }

  function buildList() {
    const list = document.getElementById("entry-list");
    const fragment = document.createDocumentFragment();
    buttons = entries.map((entry, index) => {
      const item = button("entry" + (failing(entry) ? " failing" : ""), null, () => show(index));
      item.dataset.id = String(entry.id);
      item.dataset.kind = entry.kind === "diff" ? "diff" : "run";
      item.setAttribute("role", "listitem");
      const top = el("span", "entry-top");
      top.append(el("span", statusClass(entry.status), statusText(entry)),
                 el("span", "entry-kind", item.dataset.kind));
      item.append(top, el("span", "entry-name", entry.name),
                  el("span", "entry-path", entryPaths(entry)));
      fragment.append(item);
      return item;
    });
    list.replaceChildren(fragment);
    const search = document.getElementById("entry-search");
    search.addEventListener("input", () => {
      const query = search.value.trim().toLowerCase();
      buttons.forEach((item, i) => {
        const text = (entries[i].name + "\n" + entryPaths(entries[i])).toLowerCase();
        item.hidden = query !== "" && !text.includes(query);
      });
    });
  }

  function show(index) {
    if (observer) observer.disconnect();
    observer = null;
    buttons.forEach((item, i) => {
      item.classList.toggle("active", i === index);
      if (i === index) item.setAttribute("aria-current", "true");
      else item.removeAttribute("aria-current");
    });
    const entry = entries[index];
    view.replaceChildren();
    view.scrollTop = 0;
    if (entry.kind === "diff") diffView(entry);
    else runView(entry);
  }

  function heading(entry) {
    const head = el("header", "view-head");
    head.append(el("h2", null, entry.name),
                el("span", statusClass(entry.status), statusText(entry)));
    view.append(head);
  }

  // -- payloads -----------------------------------------------------------------------

  function writeJson(value, indent, out) {
    if (value === null || typeof value === "boolean") {
      out.append(el("span", "json-literal", String(value)));
    } else if (typeof value === "number") {
      out.append(el("span", "json-number", JSON.stringify(value)));
    } else if (typeof value === "string") {
      out.append(el("span", "json-string", JSON.stringify(value)));
    } else if (Array.isArray(value)) {
      if (!value.length) { out.append("[]"); return; }
      const inner = indent + "  ";
      out.append("[\n");
      value.forEach((item, i) => {
        out.append(inner);
        writeJson(item, inner, out);
        out.append(i < value.length - 1 ? ",\n" : "\n");
      });
      out.append(indent + "]");
    } else {
      const keys = Object.keys(value);
      if (!keys.length) { out.append("{}"); return; }
      const inner = indent + "  ";
      out.append("{\n");
      keys.forEach((key, i) => {
        out.append(inner, el("span", "json-key", JSON.stringify(key)), ": ");
        writeJson(value[key], inner, out);
        out.append(i < keys.length - 1 ? ",\n" : "\n");
      });
      out.append(indent + "}");
    }
  }

  function togglePayload(row, ev) {
    const next = row.nextElementSibling;
    if (next && next.classList.contains("payload")) {
      next.remove();
      row.classList.remove("open");
      row.setAttribute("aria-expanded", "false");
      return;
    }
    const pre = el("pre", "payload");
    const text = JSON.stringify(ev[4], null, 2);
    if (text.length > PRETTY_LIMIT) {
      pre.textContent = text;
    } else {
      const fragment = document.createDocumentFragment();
      writeJson(ev[4], "", fragment);
      pre.append(fragment);
    }
    row.after(pre);
    row.classList.add("open");
    row.setAttribute("aria-expanded", "true");
  }

  function eventRow(run, index) {
    const ev = run.events[index];
    const row = el("div", "event");
    row.dataset.type = ev[2];
    row.dataset.step = String(ev[1]);
    row.dataset.index = String(index);
    row.tabIndex = 0;
    row.setAttribute("role", "button");
    row.setAttribute("aria-expanded", "false");
    row.title = ev[2] + "  " + ev[3];
    row.append(el("span", "ev-step", ev[1]), el("span", "ev-seq", ev[0]),
               el("span", "ev-type", ev[2]), el("span", "ev-desc", ev[3]));
    row.addEventListener("click", () => togglePayload(row, ev));
    row.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        togglePayload(row, ev);
      }
    });
    return row;
  }

  // -- filters ------------------------------------------------------------------------

  function typeCounts(runs) {
    const counts = new Map();
    for (const run of runs) {
      for (const ev of run.events || []) counts.set(ev[2], (counts.get(ev[2]) || 0) + 1);
    }
    return [...counts.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  function numberInput(id, label, placeholder) {
    const box = el("label");
    const input = el("input");
    input.type = "number";
    input.min = "0";
    input.id = id;
    input.placeholder = placeholder;
    box.append(el("span", "label", label), document.createElement("br"), input);
    return [box, input];
  }

  function filterBar(types, onChange) {
    const bar = el("div", "filters");
    const fieldset = el("fieldset");
    fieldset.id = "type-filter";
    const legend = el("legend", null, "Event types ");
    const checks = [];
    const setAll = (on) => {
      checks.forEach((c) => { c.checked = on; });
      onChange();
    };
    const all = button("small", "all", () => setAll(true));
    all.id = "type-all";
    const none = button("small", "none", () => setAll(false));
    none.id = "type-none";
    legend.append(all, " ", none);
    fieldset.append(legend);
    for (const [type, count] of types) {
      const option = el("label", "type-option");
      const check = el("input");
      check.type = "checkbox";
      check.value = type;
      check.checked = true;
      check.addEventListener("change", onChange);
      option.append(check, el("span", null, type), el("span", "count", "(" + count + ")"));
      fieldset.append(option);
      checks.push(check);
    }
    const [fromBox, from] = numberInput("step-from", "from step", "first");
    const [toBox, to] = numberInput("step-to", "to step", "last");
    const searchBox = el("label");
    const search = el("input");
    search.type = "search";
    search.id = "event-search";
    search.placeholder = "type, description or payload";
    searchBox.append(el("span", "label", "search events"), document.createElement("br"), search);
    let timer = 0;
    const later = () => {
      clearTimeout(timer);
      timer = setTimeout(onChange, 120);
    };
    from.addEventListener("input", later);
    to.addEventListener("input", later);
    search.addEventListener("input", later);
    bar.append(fieldset, fromBox, toBox, searchBox);
    const bound = (input) => {
      const n = parseInt(input.value, 10);
      return Number.isFinite(n) ? n : null;
    };
    const read = () => {
      const chosen = checks.filter((c) => c.checked).map((c) => c.value);
      return {
        types: chosen.length === checks.length ? null : new Set(chosen),
        from: bound(from),
        to: bound(to),
        query: search.value.trim().toLowerCase(),
      };
    };
    return { bar, read };
  }

  function haystack(run, index) {
    let texts = haystacks.get(run);
    if (!texts) haystacks.set(run, (texts = []));
    let text = texts[index];
    if (text === undefined) {
      const ev = run.events[index];
      text = texts[index] = (ev[2] + "\n" + ev[3] + "\n" + JSON.stringify(ev[4])).toLowerCase();
    }
    return text;
  }

  function matcher(filter, run) {
    return (index) => {
      const ev = run.events[index];
      if (filter.types && !filter.types.has(ev[2])) return false;
      if (filter.from !== null && ev[1] < filter.from) return false;
      if (filter.to !== null && ev[1] > filter.to) return false;
      return !filter.query || haystack(run, index).includes(filter.query);
    };
  }

  // A list rendered a window at a time: the next chunk when "show more" is clicked or
  // scrolled to; when the window opens around a later item, earlier chunks on request.
  function chunked(list, size, renderItem, describe) {
    const status = el("p", "shown");
    const earlier = button("show-earlier", "", () => previous());
    const more = button("show-more", "", () => later());
    let items = [];
    let begin = 0;
    let end = 0;
    const render = (from, to) => {
      const fragment = document.createDocumentFragment();
      for (let i = from; i < to; i++) fragment.append(renderItem(items[i], i));
      return fragment;
    };
    const update = () => {
      status.textContent = describe(begin, end, items.length);
      more.hidden = end >= items.length;
      more.textContent = "Show " + Math.min(size, items.length - end) + " more";
      earlier.hidden = begin <= 0;
      earlier.textContent = "Show " + Math.min(size, begin) + " earlier";
    };
    const later = () => {
      const stop = Math.min(items.length, end + size);
      list.append(render(end, stop));
      end = stop;
      update();
    };
    const previous = () => {
      const start = Math.max(0, begin - size);
      const height = view.scrollHeight;
      list.prepend(render(start, begin));
      view.scrollTop += view.scrollHeight - height;  // what was shown stays in place
      begin = start;
      update();
    };
    if ("IntersectionObserver" in window) {
      observer = new IntersectionObserver((seen) => {
        if (seen.some((s) => s.isIntersecting) && !more.hidden) later();
      }, { root: view, rootMargin: "400px" });
      observer.observe(more);
    }
    const fill = (newItems, around) => {
      items = newItems;
      begin = around >= size ? around - 20 : 0;
      end = begin;
      list.replaceChildren();
      later();
    };
    return { status, earlier, more, fill };
  }

  // -- a run --------------------------------------------------------------------------

  function totals(t) {
    const box = el("dl", "totals");
    const add = (label, value) => {
      const item = el("div");
      item.append(el("dt", null, label), el("dd", null, value));
      box.append(item);
    };
    const calls = t.tool_calls.by_name.map(([name, count]) => name + " x" + count).join(", ");
    add("outcome", t.outcome);
    add("steps / turns", t.steps + " / " + t.turns);
    add("input tokens", t.input_tokens);
    add("output tokens", t.output_tokens);
    add("cost", formatCost(t.cost_usd));
    add("errors", t.errors);
    add("tool calls", t.tool_calls.total + (calls ? " (" + calls + ")" : ""));
    return box;
  }

  function runView(entry) {
    heading(entry);
    view.append(el("p", "path", entry.path));
    if (entry.notice) view.append(el("p", "notice", entry.notice));
    if (!entry.events || !entry.events.length) {
      if (!entry.notice) view.append(el("p", "notice", "This rollout has no events."));
      return;
    }
    view.append(totals(entry.totals));
    const filters = filterBar(typeCounts([entry]), () => refresh());
    const table = el("div", "timeline");
    const head = el("div", "timeline-head");
    head.append(el("span", null, "step"), el("span", null, "seq"), el("span", null, "type"),
                el("span", null, "description"));
    const list = el("div", "events");
    const rows = chunked(list, CHUNK, (index) => eventRow(entry, index),
      (begin, end, total) => (total
        ? "Showing events " + (begin + 1) + " to " + end + " of the " + total + " that match"
        : "No events match the filters") +
        " (" + entry.events.length + " in the run); click an event for its payload.");
    table.append(head, rows.earlier, list);
    view.append(filters.bar, rows.status, table, rows.more);
    const refresh = () => {
      const match = matcher(filters.read(), entry);
      const shown = [];
      for (let i = 0; i < entry.events.length; i++) if (match(i)) shown.push(i);
      rows.fill(shown, 0);
    };
    refresh();
  }

  // -- a diff -------------------------------------------------------------------------

  function line(parent, label, text, className) {
    const p = el("p", className);
    p.append(el("span", "label", label + ": "), el("span", null, text));
    parent.append(p);
    return p;
  }

  function changesTable(first) {
    const table = el("table", "changes");
    const head = el("tr");
    head.append(el("th", null, "field"), el("th", null, "golden"), el("th", null, "this run"));
    table.append(head);
    for (const change of first.changes) {
      const row = el("tr");
      row.append(el("td", null, change.path), el("td", null, change.golden),
                 el("td", null, change.run));
      table.append(row);
    }
    return table;
  }

  function summary(entry, cmp, jump) {
    const box = el("section", "summary");
    const counts = cmp.counts;
    if (entry.headline) {
      const h = entry.headline;
      line(box, "Divergence", h.kind + " at step " + h.step + " (attributed to the " +
        h.attribution + "): " + h.detail);
    } else if (cmp.identical) {
      box.append(el("p", null, "This run matches its golden."));
    }
    line(box, "Steps", counts.identical + " identical, " + counts.diverged + " diverged, " +
      counts.only_in_a + " only in golden, " + counts.only_in_b + " only in this run");
    if (entry.score) line(box, "Score", entry.score, "score");
    const first = cmp.first;
    if (first) {
      const p = line(box, "First divergence", "step " + first.step + " (" +
        (STATUS_TEXT[first.status] || first.status) + "), event " + (first.index + 1) +
        " of the step ");
      const go = button("small", "show", () => jump(true));
      go.id = "first-divergence-link";
      p.append(go);
      if (first.changes.length) {
        box.append(changesTable(first));
        if (first.more_changes) {
          box.append(el("p", "count", "... and " + first.more_changes + " more changed fields"));
        }
      } else if (first.golden_event === null || first.run_event === null) {
        box.append(el("p", null, first.golden_event === null
          ? "Only this run has that event." : "Only the golden has that event."));
      }
    }
    if (entry.fork) {
      const fork = el("div", "fork");
      fork.append(el("p", null, entry.fork.text), el("code", null, entry.fork.command));
      box.append(fork);
    }
    return box;
  }

  function cell(run, indices, highlight) {
    const side = el("div", "side");
    if (!indices.length) {
      side.append(el("span", "nothing", "(nothing)"));
      return side;
    }
    const add = (from, to) => {
      const fragment = document.createDocumentFragment();
      for (let i = from; i < to; i++) {
        const row = eventRow(run, indices[i]);
        if (indices[i] === highlight) row.classList.add("differs");
        fragment.append(row);
      }
      side.append(fragment);
    };
    add(0, Math.min(indices.length, CELL_LIMIT));
    if (indices.length > CELL_LIMIT) {
      const rest = button("show-rest small", "show " + (indices.length - CELL_LIMIT) +
        " more events of this step", () => {
        rest.remove();
        add(CELL_LIMIT, indices.length);
      });
      side.append(rest);
    }
    return side;
  }

  function diffView(entry) {
    heading(entry);
    const golden = entry.golden;
    const run = entry.run;
    const cmp = entry.comparison;
    const paths = el("div", "paths");
    line(paths, "golden", golden.path, "path");
    line(paths, "this run", run.path, "path");
    view.append(paths);
    if (golden.notice) view.append(el("p", "notice", "Golden refused: " + golden.notice));
    if (run.notice) view.append(el("p", "notice", "Run refused: " + run.notice));
    let firstRow = null;
    const jump = (always) => {
      if (!firstRow) return;
      const row = firstRow.getBoundingClientRect();
      const box = view.getBoundingClientRect();
      if (always === true || row.top < box.top || row.bottom > box.bottom) {
        firstRow.scrollIntoView({ block: "center" });
      }
    };
    if (cmp) view.append(summary(entry, cmp, jump));
    const report = el("details");
    report.open = true;
    report.hidden = !(entry.report && entry.report.length);
    report.append(el("summary", null, "Failure report"),
                  el("pre", "report", (entry.report || []).join("\n")));
    if (!cmp) {
      view.append(report);
      return;
    }
    const first = cmp.first;
    const filters = filterBar(typeCounts([golden, run]), () => refresh());
    const table = el("div", "aligned");
    const head = el("div", "step-head");
    head.append(el("span", null, "step"), el("span", null, "golden"),
                el("span", null, "this run"));
    const list = el("div", "step-rows");
    const renderRow = (item) => {
      const s = item.step;
      const row = el("div", "step-row st-" + (STATUS_TEXT[s.status] ? s.status : "other"));
      row.dataset.step = String(s.step);
      row.dataset.status = String(s.status);
      const label = el("div", "step-label", "step " + s.step);
      label.append(el("span", "count", STATUS_TEXT[s.status] || String(s.status)));
      const isFirst = first !== null && s.step === first.step;
      row.append(label, cell(golden, item.golden, isFirst ? first.golden_event : null),
                 cell(run, item.run, isFirst ? first.run_event : null));
      if (isFirst) {
        row.classList.add("first-divergence");
        firstRow = row;
      }
      return row;
    };
    const rows = chunked(list, STEP_CHUNK, renderRow, (begin, end, total) => (total
      ? "Showing steps " + (begin + 1) + " to " + end + " of the " + total + " that match"
      : "No steps match the filters") + "; identical steps are muted.");
    table.append(head, rows.earlier, list);
    view.append(filters.bar, rows.status, table, rows.more, report);
    const refresh = () => {
      const f = filters.read();
      const inGolden = matcher(f, golden);
      const inRun = matcher(f, run);
      const narrowed = f.types !== null || f.query !== "";
      const items = [];
      let around = 0;
      for (const s of cmp.steps) {
        if (f.from !== null && s.step < f.from) continue;
        if (f.to !== null && s.step > f.to) continue;
        const item = { step: s, golden: s.golden.filter(inGolden), run: s.run.filter(inRun) };
        if (narrowed && !item.golden.length && !item.run.length) continue;
        items.push(item);
        if (first && s.step === first.step) around = items.length - 1;
      }
      firstRow = null;
      rows.fill(items, around);
    };
    refresh();
    jump();
  }

  boot();
})();
"""
