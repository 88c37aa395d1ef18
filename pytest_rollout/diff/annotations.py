"""GitHub Actions annotations of diverged tests (docs/ci.md).

A line ``::error file=F,line=N,title=T::MESSAGE`` in a job's log becomes an annotation on line
N of file F in the pull request's diff. Every value is sanitized first (one line, no escape,
no workflow command of its own) and then escaped as the Actions toolkit escapes it: ``%``,
CR and LF in the message, and ``:`` and ``,`` too in a property, so that recorded text can
neither end the command early nor smuggle ``%0A`` newlines into it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ..safety.sanitize import excerpt
from .finding import Finding

__all__ = ["MAX_ANNOTATIONS", "annotation_lines", "warning_line"]

#: Annotations printed by one session; past it, one line says how many more there were
#: (GitHub shows at most 10 error annotations a step, 50 a job).
MAX_ANNOTATIONS: Final = 50


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _command(level: str, message: str, *, title: str, path: str | None, line: int | None) -> str:
    props = []
    if path is not None:
        props.append(f"file={_property(excerpt(path, 400))}")
        if line is not None:
            props.append(f"line={line}")
    props.append(f"title={_property(excerpt(title, 200))}")
    return f"::{level} {','.join(props)}::{message}"


def _message(finding: Finding) -> str:
    parts = [finding.detail or finding.headline]
    if finding.first_change is not None:
        parts.append(f"first change: {finding.first_change}")
    if finding.fork is not None:
        parts.append(f"fork from the {finding.fork_from or 'last good step'}: {finding.fork}")
    return "%0A".join(_data(excerpt(part, 400)) for part in parts)


def annotation_lines(findings: Sequence[Finding], warnings: Sequence[str] = ()) -> list[str]:
    """An ``::error`` line a finding and a ``::warning`` line a warning, at most
    :data:`MAX_ANNOTATIONS` in all, then one line saying how many were left out."""
    lines = [
        _command("error", _message(f), title=f"{f.test_id}: {f.headline}", path=f.path, line=f.line)
        for f in findings
    ]
    lines += [warning_line(text) for text in warnings]
    if len(lines) > MAX_ANNOTATIONS:
        left = len(lines) - MAX_ANNOTATIONS
        lines = lines[:MAX_ANNOTATIONS]
        lines.append(
            f"pytest-rollout: {left} more annotation(s) not shown (at most {MAX_ANNOTATIONS})"
        )
    return lines


def warning_line(text: str) -> str:
    """A ``::warning`` annotation with no file: ``text`` is a summary line of the session."""
    return _command(
        "warning", _data(excerpt(text, 400)), title="pytest-rollout", path=None, line=None
    )
