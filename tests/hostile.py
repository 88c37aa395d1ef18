"""Hostile text for the CLI tests, and the check that printed output is terminal-safe."""

from __future__ import annotations

#: Bidi controls and marks: each can reorder what a terminal shows.
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"

#: ANSI and OSC escapes, bidi, CI workflow commands after newlines, CR, line separators, NUL,
#: DEL and a C1 control.
EVIL = (
    "\x1b[31mred\x1b[0m\x1b]0;title\x07" + BIDI + "\n::set-output name=a::b\n##[group]g"
    "\r::error::boom\u2028::notice::x\u2029##vso[task.setvariable variable=x]1\x00\x7f\x9b"
)


def assert_printable(text: str) -> None:
    """``text`` can move no cursor, reorder nothing and drive no CI runner."""
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "\r" not in text
    assert "\x00" not in text
    assert "\x9b" not in text
    assert not any(c in text for c in BIDI + "\u2028\u2029")
    assert "##[" not in text
    assert "##vso[" not in text
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
