"""The page's data model: one entry per run shown, or per golden and run compared.

Entries are plain dicts, since they are what the page reads as JSON (see docs/viewer.md):
:func:`run_entry` describes one run (``kind`` ``"run"``), :func:`diff_entry` a golden and a
run compared (``kind`` ``"diff"``). Both load with the strict loader and never raise for a
bad, missing or special file: a refused file becomes an entry with a ``notice`` saying why.
Every string they hold is shown by the page as text, never as markup.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import orjson

from ..diff.score import RunSummary, summarize
from ..diff.text import is_absent
from ..diff.timeline import cut_short_line, event_detail
from ..errors import RolloutError
from ..format.events import Event
from ..format.loader import Rollout, load, loads
from ..safety.sanitize import excerpt, sanitize

if TYPE_CHECKING:
    # Only a comparison loads the comparison's machinery: `rollout view` of one run does not.
    from ..diff.compare import Comparison, FieldChange, FirstDivergence
    from ..diff.drift import DriftReport

__all__ = ["diff_entry", "json_text", "run_entry"]

#: Field-level changes listed for the first divergence, and the length of each value shown.
CHANGES_LIMIT: Final = 50
VALUE_LIMIT: Final = 2000


def json_text(value: str) -> str:
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


def _load(
    path: str, data: bytes | None, *, tolerant: bool = False
) -> tuple[Rollout | None, str | None]:
    """The rollout, or the one-line reason it was refused (``file:line: reason``).

    ``tolerant``: a run cut short (a crash's partial file) is loaded as far as it got, with
    a notice saying so.
    """
    try:
        if data is None:
            rollout = load(path, tolerant=tolerant)
        else:
            rollout = loads(data, path=path, tolerant=tolerant)
    except RolloutError as exc:  # RolloutFormatError says file:line: reason itself
        return None, sanitize(str(exc))
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL byte
        return None, sanitize(f"{path}: cannot read: {exc}")
    if rollout.cut_short_after is not None:
        return rollout, cut_short_line(rollout.cut_short_after)
    return rollout, None


def _count(value: int) -> int | float:
    """A total for the page: JSON numbers past 2**53 are not exact in the browser anyway,
    and orjson writes no integer past 64 bits, so a larger sum goes as a float."""
    return value if value <= _EXACT else float(value)


_EXACT: Final = 2**53


def _totals(summary: RunSummary) -> dict[str, Any]:
    return {
        "first_step": summary.first_step,
        "steps": summary.steps,
        "turns": summary.turns,
        "tool_calls": {
            "total": sum(summary.tool_calls.values()),
            "by_name": [[name, count] for name, count in summary.tool_calls.most_common()],
        },
        "errors": summary.errors,
        "input_tokens": _count(summary.input_tokens),
        "output_tokens": _count(summary.output_tokens),
        "cache_read_tokens": _count(summary.cache_read_tokens),
        "cache_write_tokens": _count(summary.cache_write_tokens),
        "tokens_per_second": _speed(summary.tokens_per_second),
        "timed_turns": summary.timed_turns,
        "unreported_turns": summary.unreported_turns,
        "cost_usd": summary.cost_usd,
        "outcome": summary.outcome,
    }


def _speed(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _row(event: Event) -> list[Any]:
    """``[seq, step, type, description, data]``: the description as ``rollout show`` has it
    (without the type; a timed turn with its output speed)."""
    return [event.seq, event.step, event.type, event_detail(event), event.data]


def _state(rollout: Rollout | None) -> str:
    """``"complete"``, ``"cut short"`` (a crash's partial file, loaded as far as it got) or
    ``"refused"``."""
    if rollout is None:
        return "refused"
    return "complete" if rollout.cut_short_after is None else "cut short"


def _run_entry(
    path: str, rollout: Rollout | None, notice: str | None, name: str | None, status: str | None
) -> dict[str, Any]:
    if name is None:
        name = os.path.basename(path) or path
    shown = json_text(name)
    events = rollout.events if rollout is not None else ()
    return {
        "kind": "run",
        "id": _entry_id("run", shown, json_text(path)),
        "name": shown,
        "path": json_text(path),
        "status": None if status is None else json_text(status),
        "state": _state(rollout),
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
    """A run for the page, loaded with the loader (from ``data`` when given), tolerant of a
    run cut short: that one is shown as far as it got, its ``notice`` saying "cut short
    after event N".

    The dict: ``kind`` ``"run"``, ``id`` (stable: a digest of name and path), ``name``
    (default: the file name), ``path``, ``status`` (e.g. ``"passed"``, ``"failed"``,
    ``"recorded"`` or ``None``), ``state`` (``"complete"``, ``"cut short"`` or
    ``"refused"``), ``notice`` (``None``, or why the file was refused:
    ``file:line: reason``), ``totals`` and ``events``.

    ``totals`` is ``None`` when refused, else: ``first_step`` and ``steps`` (the first and
    last step), ``turns``, ``tool_calls`` ``{"total", "by_name": [[name, count], ...]}``,
    ``errors``, ``input_tokens``, ``output_tokens``, ``cache_read_tokens`` and
    ``cache_write_tokens`` (parts of the input), ``tokens_per_second`` (output tokens over
    the latency of the ``timed_turns`` that report both, or ``None``), ``unreported_turns``
    (the turns that report no token counts, left out of the token totals), ``cost_usd`` and
    ``outcome``. ``events`` has one ``[seq, step, type, description, data]`` row per event
    (none when refused). Never raises for a bad, missing or special file.
    """
    rollout, notice = _load(path, data, tolerant=True)
    return _run_entry(path, rollout, notice, name, status)


def _value_text(value: Any) -> str:
    if is_absent(value):
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


def _aligned_steps(
    comparison: Comparison, golden: Sequence[Event], run: Sequence[Event]
) -> list[dict[str, Any]]:
    """Each step of either run with its status and the indices of its events on each side."""
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
    return steps


def _status_counts(steps: Sequence[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(("identical", "diverged", "only_in_a", "only_in_b"), 0)
    for row in steps:
        status: str = row["status"]
        counts[status] = counts.get(status, 0) + 1
    return counts


def _first_divergence(
    first: FirstDivergence, golden: Sequence[Event], run: Sequence[Event]
) -> dict[str, Any]:
    """Where the runs first part, with the events involved as indices into each run."""
    golden_index = {event.seq: i for i, event in enumerate(golden)}
    run_index = {event.seq: i for i, event in enumerate(run)}
    return {
        "step": first.step,
        "status": first.status.value,
        "index": first.index,
        "golden_event": None if first.a_event is None else golden_index.get(first.a_event.seq),
        "run_event": None if first.b_event is None else run_index.get(first.b_event.seq),
        "changes": [_change(c) for c in first.changes[:CHANGES_LIMIT]],
        "more_changes": max(0, len(first.changes) - CHANGES_LIMIT),
    }


def _comparison(
    comparison: Comparison, golden: Sequence[Event], run: Sequence[Event]
) -> dict[str, Any]:
    """The step alignment of the two runs (event indices per step) and the first divergence."""
    steps = _aligned_steps(comparison, golden, run)
    first = comparison.first
    return {
        "identical": comparison.identical,
        "counts": _status_counts(steps),
        "last_identical_step": comparison.last_identical_step,
        "steps": steps,
        "first": None if first is None else _first_divergence(first, golden, run),
    }


def _headline(report: DriftReport) -> dict[str, Any] | None:
    divergences = report.leading
    if not divergences:
        return None
    headline = divergences[0]
    return {
        "step": headline.step,
        "kind": headline.kind.value,
        "attribution": headline.attribution,
        "detail": excerpt(headline.detail, 400),
    }


def _fork_hint(golden_path: str, comparison: Comparison) -> dict[str, Any] | None:
    from ..diff.fork_point import fork_point  # noqa: PLC0415  (loaded with the comparison)

    point = fork_point(comparison)
    if point is None:
        return None
    return {"step": point.step, "text": point.line, "command": point.command(golden_path)}


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
    :func:`~pytest_rollout.diff.report.render_verdict` makes (golden as "golden", the run as
    "this run"). Never raises for a bad, missing or special file.
    """
    golden_rollout, golden_notice = _load(golden_path, golden)
    run_rollout, run_notice = _load(run_path, run)
    golden_entry = _run_entry(golden_path, golden_rollout, golden_notice, None, "golden")
    run_side = _run_entry(run_path, run_rollout, run_notice, None, status)
    notices = [n for n in (golden_notice, run_notice) if n is not None]
    entry: dict[str, Any] = {
        "kind": "diff",
        "id": _entry_id("diff", json_text(name), json_text(golden_path), json_text(run_path)),
        "name": json_text(name),
        "status": json_text(status),
        "notice": "\n".join(notices) or None,
        "golden": golden_entry,
        "run": run_side,
        "comparison": None,
        "headline": None,
        "score": None,
        "fork": None,
        "report": None,
    }
    lines = None if report_lines is None else [json_text(line) for line in report_lines]
    if golden_rollout is None or run_rollout is None:
        entry["report"] = lines if lines is not None else ["The runs cannot be compared:", *notices]
        return entry
    # Only a comparison loads the comparison's machinery: `rollout view` of one run does not.
    from ..diff.drift import Verdict, drift_report  # noqa: PLC0415
    from ..diff.report import render_verdict, score_sentence  # noqa: PLC0415

    report = drift_report(golden_rollout.events, run_rollout.events)
    verdict = Verdict(golden_path, run_path, report)
    entry["comparison"] = _comparison(report.comparison, golden_rollout.events, run_rollout.events)
    entry["headline"] = _headline(report)
    entry["score"] = score_sentence(verdict)
    entry["fork"] = _fork_hint(golden_path, report.comparison)
    entry["report"] = lines if lines is not None else render_verdict(verdict)
    return entry
