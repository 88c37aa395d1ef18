"""Make untrusted text safe to print in a terminal or a CI log.

Rollouts can come from anywhere, so every string taken from one is passed through
:func:`sanitize` before it is printed. The result is a single line of visible characters:

* control characters (C0, C1, DEL, ESC and so every ANSI escape sequence), Unicode format
  characters (bidi overrides, zero-width joiners), line and paragraph separators,
  surrogates and unassigned code points are shown as ``\\xNN`` / ``\\uNNNN`` escapes;
* CI workflow commands are defused: ``::`` at the start of the text (GitHub Actions),
  ``##[`` or ``##vso[`` (Azure Pipelines) and ``##teamcity[`` (TeamCity) anywhere get one
  character escaped, so no CI runner takes the text as a command.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from typing import Final

__all__ = ["MARKER_ROOM", "cut_marker", "excerpt", "sanitize", "terminal_json"]

#: How much longer than its limit a text :func:`excerpt` shows whole may be: the room its
#: marker would take.
MARKER_ROOM: Final = len("… (+99 chars)")
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNSAFE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_WORKFLOW_PREFIX: Final = re.compile(r"^(\s*)::")
#: Azure Pipelines' ``##[``, ``##vso[`` and TeamCity's ``##teamcity[`` service messages.
_HASH_COMMAND: Final = re.compile(r"##(?=\[|vso\[|teamcity\[)", re.IGNORECASE)


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _is_unsafe(char: str) -> bool:
    return unicodedata.category(char) in _UNSAFE_CATEGORIES


def sanitize(text: str) -> str:
    """Return ``text`` as one line that cannot move the cursor, reorder text or drive CI."""
    # Every unsafe character is one that str.isprintable() refuses (it also refuses the
    # spaces other than " ", which are safe and kept): printable text, in any script, has
    # nothing to escape.
    if not text.isprintable():
        text = "".join(_escape(c) if _is_unsafe(c) else c for c in text)
    if "::" in text:
        text = _WORKFLOW_PREFIX.sub(r"\1\\x3a:", text, count=1)
    if "##" in text:
        text = _HASH_COMMAND.sub(r"#\\x23", text)
    return text


@lru_cache(maxsize=2048)
def cut_marker(cut: int) -> str:
    """``… (+N chars)``: what :func:`excerpt` puts after a text it cut ``cut`` characters
    from. Made once for each length (a long run cuts many values by the same lengths)."""
    return f"… (+{cut} chars)"


def excerpt(text: str, limit: int = 80) -> str:
    """Sanitize ``text`` and cap it at about ``limit`` characters, saying how much was cut.

    A text only a little over the limit is shown whole: the "… (+N chars)" marker would take
    about as much room as it saves.
    """
    if len(text) > limit + MARKER_ROOM:
        return sanitize(text[:limit]) + cut_marker(len(text) - limit)
    return sanitize(text)


def terminal_json(value: object) -> str:
    """``value`` as indented JSON that is safe to print: every non-ASCII character is a
    ``\\u`` escape (so no bidi, separator or control character reaches the terminal) and
    ``##[`` (or ``##vso[``, ``##teamcity[``) is written with ``#\\u0023``. It decodes to the
    same data.

    The standard library's encoder is used because only it can escape to pure ASCII.
    """
    text = json.dumps(value, ensure_ascii=True, indent=2, allow_nan=False)
    return _HASH_COMMAND.sub(r"#\\u0023", text) if "##" in text else text
