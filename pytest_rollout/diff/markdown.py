"""The session's diverged tests in Markdown: GitHub's job summary, or a report a reviewer or
a bot can paste (docs/ci.md).

Every cell is recorded text made safe twice: sanitized (one line, no escape or workflow
command) and then written with each character Markdown or HTML would read as markup
escaped by a backslash, so a value can neither break the table nor become a link, an
image or a tag. The whole is bounded in bytes (a job summary takes at most 1 MiB a step):
past the bound, rows are left out and a line says how many.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from ..safety.sanitize import excerpt
from .finding import Finding
from .text import format_cost_change

__all__ = ["MAX_MARKDOWN_BYTES", "markdown_pair", "markdown_report"]

#: The most bytes the Markdown takes (GitHub refuses a step's summary over 1 MiB, and
#: other steps' tools may write theirs to the same file).
MAX_MARKDOWN_BYTES: Final = 512 * 1024
#: ASCII characters that Markdown or HTML may read as markup: each gets a backslash.
_MARKUP: Final = re.compile(r"([\\`*_{}\[\]<>()#+\-!|~&])")
_FORKS_HEADING: Final = "Fork each conversation from its last good step or event:"
_HEADER: Final = (
    "| Test | Step | Kind | Attributed to | First change | Score | Cost change |\n"
    "| --- | ---: | --- | --- | --- | --- | ---: |\n"
)


def _cell(text: str | None, limit: int = 160) -> str:
    if not text:
        return ""
    return _MARKUP.sub(r"\\\1", excerpt(text, limit))


def _code(text: str) -> str:
    """A command as inline code: sanitized, and fenced by more backticks than it holds."""
    safe = excerpt(text, 400)
    fence = "`" * (max((len(m) for m in re.findall(r"`+", safe)), default=0) + 1)
    return f"{fence} {safe} {fence}"


def _cost(delta: float | None) -> str:
    if delta is None:
        return ""
    return format_cost_change(delta)


def _row(finding: Finding) -> str:
    test = f"{_cell(finding.test_id, 200)}<br>{_cell(f'{finding.path}:{finding.line}')}"
    cells = [
        test,
        "" if finding.step is None else str(finding.step),
        _cell(finding.kind),
        _cell(finding.attributed_to),
        _cell(finding.first_change or finding.detail),
        _cell(finding.score),
        _cost(finding.cost_delta),
    ]
    return "| " + " | ".join(cells) + " |\n"


def markdown_report(
    counts: Sequence[str],
    findings: Sequence[Finding],
    warnings: Sequence[str] = (),
    *,
    page: str | None = None,
    limit: int = MAX_MARKDOWN_BYTES,
) -> str:
    """The session in Markdown: its counts, a table of the diverged tests with the command
    that forks each, the warnings and the HTML report's path; at most ``limit`` bytes."""
    head = "## pytest-rollout\n\n" + "".join(f"{_cell(line, 400)}  \n" for line in counts)
    if not findings:
        head += "\nNo agent test left its golden.\n"
    tail = ""
    if warnings:
        tail += "\n### Warnings\n\n" + "".join(f"- {_cell(w, 400)}\n" for w in warnings)
    if page is not None:
        tail += f"\nHTML report: {_code(page)}\n"
    room = limit - len(head.encode()) - len(tail.encode()) - 200  # the "more" line
    rows: list[str] = []
    forks: list[str] = []
    used = len(_HEADER)
    for finding in findings:
        row = _row(finding)
        fork = ""
        if finding.fork is not None:
            where = _cell(_fork_from(finding))
            fork = f"- {_cell(finding.test_id, 200)}, {where}: {_code(finding.fork)}\n"
        used += len(row.encode()) + len(fork.encode())
        if used > room:
            break
        rows.append(row)
        forks.append(fork)
    shown = len(rows)
    table = ""
    if findings:
        table = f"\n{len(findings)} test(s) left their golden:\n\n" + _HEADER + "".join(rows)
        if shown < len(findings):
            table += f"\n{len(findings) - shown} more diverged test(s) not shown (size limit).\n"
        if any(forks):
            table += f"\n{_FORKS_HEADING}\n\n" + "".join(forks)
    return head + table + tail


def markdown_pair(a: str, b: str, headline: str, finding: Finding | None) -> str:
    """``rollout diff --format markdown``: run B against run A, for a review comment."""
    text = f"## rollout diff\n\nA: {_code(a)}  \nB: {_code(b)}\n\n{_cell(headline, 400)}\n"
    if finding is None:
        return text
    rows = [
        ("Step", "" if finding.step is None else str(finding.step)),
        ("Kind", _cell(finding.kind)),
        ("Attributed to", _cell(finding.attributed_to)),
        ("Divergence", _cell(finding.detail, 400)),
        ("First change", _cell(finding.first_change, 400)),
        ("Score", _cell(finding.score)),
        ("Cost change", _cost(finding.cost_delta)),
    ]
    text += "\n| | |\n| --- | --- |\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
    if finding.fork is not None:
        text += f"\nFork from the {_cell(_fork_from(finding))}: {_code(finding.fork)}\n"
    return text


def _fork_from(finding: Finding) -> str:
    """Where the finding's fork command forks (a finding from before it said so: a step)."""
    return finding.fork_from or "last good step"
