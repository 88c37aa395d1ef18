"""Unit tests for printing untrusted text safely (docs/secrets.md)."""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rollout.safety.sanitize import MARKER_ROOM, cut_marker, excerpt, sanitize

UNSAFE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def assert_safe(text: str) -> None:
    """What every sanitized string must satisfy."""
    assert not any(unicodedata.category(c) in UNSAFE_CATEGORIES for c in text), ascii(text)
    assert "\x1b" not in text
    assert "\n" not in text
    assert "\r" not in text
    assert not text.lstrip().startswith("::"), ascii(text)
    assert "##[" not in text
    assert "##vso[" not in text.lower()
    assert "##teamcity[" not in text.lower()


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("\x1b]8;;http://evil\x07link\x1b]8;;\x07", "\\x1b]8;;http://evil\\x07link\\x1b]8;;\\x07"),
        ("a\x00b", "a\\x00b"),
        ("bell\x07", "bell\\x07"),
        ("back\x08space", "back\\x08space"),
        ("del\x7f", "del\\x7f"),
        ("c1\x85nel", "c1\\x85nel"),
        ("csi\x9b31m", "csi\\x9b31m"),
        ("line\nbreak", "line\\nbreak"),
        ("carriage\rreturn", "carriage\\rreturn"),
        ("tab\there", "tab\\there"),
        ("evil\u202etxt.exe", "evil\\u202etxt.exe"),
        ("\u202a\u202b\u202c\u202d", "\\u202a\\u202b\\u202c\\u202d"),
        ("\u2066x\u2067y\u2068z\u2069", "\\u2066x\\u2067y\\u2068z\\u2069"),
        ("\u200e\u200f\u061c", "\\u200e\\u200f\\u061c"),
        ("zero\u200bwidth\u200c\u200d\ufeff", "zero\\u200bwidth\\u200c\\u200d\\ufeff"),
        ("line\u2028sep\u2029para", "line\\u2028sep\\u2029para"),
        ("lone\ud800surrogate\udfff", "lone\\ud800surrogate\\udfff"),
        ("private\ue000", "private\\ue000"),
        ("\U000e0041tag", "\\U000e0041tag"),
    ],
)
def test_unsafe_characters_are_escaped_visibly(raw: str, shown: str) -> None:
    assert sanitize(raw) == shown
    assert_safe(sanitize(raw))


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("::set-output name=x::y", "\\x3a:set-output name=x::y"),
        ("::error::boom", "\\x3a:error::boom"),
        ("::", "\\x3a:"),
        ("  ::warning file=a::b", "  \\x3a:warning file=a::b"),
        ("\u00a0::notice::x", "\u00a0\\x3a:notice::x"),
        ("\t::error::x", "\\t::error::x"),
        ("\n::error::x", "\\n::error::x"),
        ("a::b", "a::b"),
        ("std::vector<int>", "std::vector<int>"),
        ("x ::error:: y", "x ::error:: y"),
    ],
)
def test_github_workflow_commands_are_defused(raw: str, shown: str) -> None:
    assert sanitize(raw) == shown
    assert_safe(sanitize(raw))


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("##[group]Title", "#\\x23[group]Title"),
        ("text ##[error]boom ##[section]x", "text #\\x23[error]boom #\\x23[section]x"),
        ("###[x", "##\\x23[x"),
        ("##vso[task.setvariable variable=x]y", "#\\x23vso[task.setvariable variable=x]y"),
        ("log ##VSO[task.complete result=Failed]", "log #\\x23VSO[task.complete result=Failed]"),
        (
            "##teamcity[buildStatus status='SUCCESS']",
            "#\\x23teamcity[buildStatus status='SUCCESS']",
        ),
        ("## heading", "## heading"),
        ("#[not a command", "#[not a command"),
    ],
)
def test_azure_commands_are_defused(raw: str, shown: str) -> None:
    assert sanitize(raw) == shown
    assert_safe(sanitize(raw))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain text, with punctuation: (a) [b] {c} #1 ## ok",
        'JSON {"city": "Rome", "days": [1, 2]}',
        "café naïve Ærø",
        "中文 日本語 한국어",
        "emoji 😀 🚀",
        "Ελληνικά and кириллица",
        "em dash — and ellipsis …",
        "non-breaking\u00a0space",
    ],
)
def test_printable_text_is_unchanged(text: str) -> None:
    assert sanitize(text) == text


def test_excerpt_caps_and_says_how_much_was_cut() -> None:
    assert excerpt("a" * 100) == "a" * 80 + "… (+20 chars)"
    assert excerpt("abcdefghijklmnopqrstuvwxyz", 3) == "abc… (+23 chars)"
    # Cutting less than the marker itself would take saves nothing: shown whole.
    assert excerpt("abcdef", 3) == "abcdef"
    assert excerpt("a" * 93) == "a" * 93
    assert excerpt("a" * 94) == "a" * 80 + "… (+14 chars)"
    assert excerpt("a" * 80) == "a" * 80
    assert excerpt("short") == "short"
    assert excerpt("") == ""


def test_excerpt_sanitizes() -> None:
    assert excerpt("::error::\x1b[2J" + "x" * 100, 12) == "\\x3a:error::\\x1b[2… (+101 chars)"
    assert excerpt("\u202e") == "\\u202e"


@settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.text(max_size=8),
            st.sampled_from(
                ["::", "##[", "##vso[", "##teamcity[", "\x1b[", "\u202e", " ", "\n", "#", ":", "["]
            ),
        ),
        max_size=12,
    ).map("".join)
)
def test_sanitize_always_gives_one_safe_line(text: str) -> None:
    result = sanitize(text)
    assert_safe(result)
    assert_safe(excerpt(text, 10))
    # Sanitizing is stable: safe text is left alone.
    assert sanitize(result) == result


def test_no_unsafe_character_is_printable() -> None:
    # sanitize() leaves text that str.isprintable() accepts as it is, in any script: that
    # is right only while every character it must escape is one isprintable() refuses.
    printable_unsafe = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if chr(code).isprintable() and unicodedata.category(chr(code)) in UNSAFE_CATEGORIES
    ]
    assert printable_unsafe == []


def _old_sanitize(text: str) -> str:
    """sanitize() as it was, with every non-ASCII text taken character by character."""

    def escaped(char: str) -> str:
        code = ord(char)
        named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char)
        if named is not None:
            return named
        if code <= 0xFF:
            return f"\\x{code:02x}"
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"

    if not (text.isascii() and text.isprintable()):
        text = "".join(
            escaped(c) if unicodedata.category(c) in UNSAFE_CATEGORIES else c for c in text
        )
    text = re.sub(r"^(\s*)::", r"\1\\x3a:", text, count=1)
    return re.sub(r"##(?=\[|vso\[)", r"#\\x23", text, flags=re.IGNORECASE)


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=8),
            st.sampled_from(["::", "##[", "\x1b[", "\u202e", "\u00a0", "…", "é", "\u2028", "#"]),
        ),
        max_size=12,
    ).map("".join),
    st.integers(1, 40),
)
def test_sanitize_and_excerpt_say_what_they_said(text: str, limit: int) -> None:
    assert sanitize(text) == _old_sanitize(text)
    if len(text) > limit + len("… (+99 chars)"):
        shown = f"{_old_sanitize(text[:limit])}… (+{len(text) - limit} chars)"
    else:
        shown = _old_sanitize(text)
    assert excerpt(text, limit) == shown


def test_the_cut_marker() -> None:
    assert cut_marker(5) == "… (+5 chars)"
    assert cut_marker(12345) == "… (+12345 chars)"
    assert len(cut_marker(99)) == MARKER_ROOM
