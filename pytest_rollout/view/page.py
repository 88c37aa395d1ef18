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
it from that URL (with ``?agent=NAME`` when the page's own address has it), sending the
``#token=...`` of the page's address as ``Authorization: Bearer``; it keeps the token in
``sessionStorage`` and strips the fragment from the address (``history.replaceState``).

The entries it shows are built in :mod:`pytest_rollout.view.entries`; its script and style
sheet are the package data files ``viewer.js`` and ``viewer.css`` (:mod:`.assets`). See
docs/viewer.md.

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
* runs with several agents (any event with a ``data.agent``): ``agent-filter`` (a select:
  ``value`` ``""`` for all agents, else the agent's number; ``data-agent`` on each named
  one's option); ``lane-legend`` with one ``lane-name`` button per lane (``data-lane``; a
  click filters by that agent); ``timeline`` has class ``with-lanes``, and each ``event``
  ``data-agent`` (``""``: nobody named), ``data-lane`` and a ``ev-lanes`` cell of ``lane``
  spans (``lane-dot`` in its own lane); a handoff row has ``data-handoff="FROM>TO"`` (lane
  numbers) and spans ``lane-from-r``/``-l``, ``lane-span``, ``lane-to-r``/``-l``. In a
  diff the agent is an ``ev-agent`` span instead. ``served-agent``: the data was served for
  one agent (``?agent=``).
* call_id links: an ``event`` linked to others by a ``call_id`` has class ``has-links``;
  hovering or focusing it gives the others class ``linked``; its expanded payload starts
  with ``links``, ``call-link`` buttons (``data-index``) that scroll to the other event
  and mark it ``target``. The causal graph: ``graph-toggle`` shows or hides
  ``graph-edges``, one ``graph-edge`` per edge (``data-from``, ``data-to``), its text
  ``TO <- FROM (KIND[: "value"])``; hovering it marks the nodes' events ``linked``.
* a run entry's badge says ``complete``, ``cut short`` or ``refused`` when it has no
  status.
* ``body[data-state]`` is ``ready`` once the first view is shown, ``error`` if the data
  could not be read or fetched.

Long timelines are rendered in chunks (500 events, or 200 steps of a diff, at a time; the
next chunk when scrolled to or on "show more"; a diff opens on a window around its first
divergence), and payloads only when expanded: a 10,000-event run opens in well under a
second in headless Chromium.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from .assets import SCRIPT, STYLE, inline_hash, inline_text
from .entries import json_text

__all__ = ["content_security_policy", "page_bytes", "page_data", "render_page"]

_SCRIPT_ESCAPES: Final = (
    (b"&", b"\\u0026"),
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def _script_safe(data: bytes) -> bytes:
    """JSON that cannot end a ``<script>`` element: the characters that could only occur in
    its strings are written as ``\\u`` escapes, which decode to the same data.

    Each character is looked for by its last byte first, which is one ``memchr`` over the
    data: U+2028's three bytes searched for at once take ten times as long in a page full
    of "…" (U+2026, the same first two bytes), and a long run's data is tens of megabytes.
    """
    for raw, escaped in _SCRIPT_ESCAPES:
        if raw[-1:] in data and raw in data:
            data = data.replace(raw, escaped)
    return data


def page_data(
    title: str, entries: Sequence[Mapping[str, Any]], *, agent: str | None = None
) -> bytes:
    """The JSON the page reads: ``{"title": ..., "entries": [...]}``, embedded in the page
    or served at its ``data_url``; with ``"agent"`` when the entries hold that agent's
    events only (:mod:`.agents`). ``<``, ``>``, ``&``, U+2028 and U+2029 are escaped."""
    document: dict[str, Any] = {
        "title": json_text(title),
        "entries": [dict(entry) for entry in entries],
    }
    if agent is not None:
        document["agent"] = json_text(agent)
    return _script_safe(orjson.dumps(document))


def _policy(*, frame_ancestors: bool) -> str:
    """The policy; ``frame-ancestors`` only for a response header (a ``<meta>`` ignores it)."""
    parts = [
        "default-src 'none'",
        f"script-src '{inline_hash(SCRIPT)}'",
        f"style-src '{inline_hash(STYLE)}'",
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
    """The HTML page showing ``entries`` (run and diff entries), as text.

    With ``data_url`` the page embeds no data: its script fetches :func:`page_data` from
    that URL with an ``Authorization: Bearer`` header, the ``#token=...`` of its address.
    """
    return page_bytes(title, entries, data_url=data_url).decode("utf-8")


def page_bytes(
    title: str, entries: Sequence[Mapping[str, Any]], *, data_url: str | None = None
) -> bytes:
    """:func:`render_page` as the UTF-8 bytes of a file. The data, tens of megabytes for a
    long run, is put in as the bytes orjson wrote: never decoded, formatted and encoded
    again."""
    if data_url is None:
        block = b'<script type="application/json" id="rollout-data">'
        data = page_data(title, entries)
    else:
        block = b'<script type="application/json" id="rollout-source">'
        data = _script_safe(orjson.dumps({"data_url": json_text(data_url)}))
    head = _HEAD.format(
        policy=html.escape(_policy(frame_ancestors=False), quote=True),
        title=html.escape(json_text(title), quote=True),
        style=inline_text(STYLE),
    )
    tail = _TAIL.format(script=inline_text(SCRIPT))
    return b"".join((head.encode("utf-8"), block, data, b"</script>", tail.encode("utf-8")))


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

#: The page before its data block, and after it.
_HEAD, _TAIL = _PAGE.split("{data}")
