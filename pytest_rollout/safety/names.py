"""Secrets in names (docs/secrets.md): a secret in a test id never becomes part of a path.

A golden's file name, the run saved beside it, its receipt's ``file`` field and the HTML
report are derived from the test id, and a parametrize id can hold anything the test was
given, an API key included. :meth:`~pytest_rollout.safety.redact.Redactor.redact_name`
applies the content rules to such a name and writes each secret as a token that is safe in
a file name: ``REDACTED-<label>-<digest>``, e.g. ``REDACTED-anthropic-key-1a2b3c4d``.

The digest keeps two ids that differ only by their secret apart, and is the same on every
run: it is the first 8 hex digits of PBKDF2-HMAC-SHA256 of the secret, a deliberately slow
hash, so that testing guesses against it costs more than a plain digest would. A name
without a secret is returned unchanged, so every existing golden keeps its name.

:func:`redact_test_id` applies a redaction part by part (each directory and file, each class
and function, then the parametrize id), so that a secret never spans two parts and a class
named ``TestToken`` is not taken for a ``token:`` pair.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Final

from .redact_text import MARKER_OPEN, TextRedactor

__all__ = ["NAME_TOKEN", "name_marker", "redact_name", "redact_test_id"]

#: How the digest of a secret in a name is computed.
_SALT: Final = b"pytest-rollout/name/1"
_ROUNDS: Final = 20_000
_DIGITS: Final = 8  # as written in the two patterns below
#: What a secret becomes in a name; its label's ":" (``env:TOKEN``) becomes "-".
NAME_TOKEN: Final = re.compile(r"REDACTED(?:-[A-Za-z0-9_.]++){1,8}?-[0-9a-f]{8}")
#: The marker :func:`name_marker` writes, turned into a token once the text is redacted.
_NAME_MARKER: Final = re.compile(r"\[REDACTED:([A-Za-z0-9_.:-]+?):name:([0-9a-f]{8})\]")


def _digest(secret: str) -> str:
    raw = hashlib.pbkdf2_hmac(
        "sha256", secret.encode("utf-8", "surrogatepass"), _SALT, _ROUNDS, dklen=_DIGITS // 2
    )
    return raw.hex()


def name_marker(label: str, secret: str) -> str:
    """The marker written for ``secret`` while a name is redacted (a marker, so that the
    passes of :class:`~pytest_rollout.safety.redact_text.TextRedactor` never match it)."""
    return f"[REDACTED:{label}:name:{_digest(secret)}]"


def _token(match: re.Match[str]) -> str:
    label, digest = match.group(1, 2)
    return f"REDACTED-{label.replace(':', '-')}-{digest}"


def redact_name(text: str, strings: TextRedactor) -> str:
    """``text`` with every secret ``strings`` finds written as a name token (``text`` itself
    when there is none). Tokens already in ``text`` are left as they are, so redacting a
    name twice changes nothing."""
    pieces: list[str] = []
    last = 0
    for match in NAME_TOKEN.finditer(text):
        pieces.append(_redact_piece(text[last : match.start()], strings))
        pieces.append(match.group())
        last = match.end()
    pieces.append(_redact_piece(text[last:], strings))
    joined = "".join(pieces)
    return text if joined == text else joined


def _redact_piece(piece: str, strings: TextRedactor) -> str:
    hidden = strings.redact(piece) if piece else piece
    if hidden is piece or MARKER_OPEN not in hidden:
        return hidden
    return _NAME_MARKER.sub(_token, hidden)


def redact_test_id(nodeid: str, redact: Callable[[str], str]) -> str:
    """A pytest node id with ``redact`` applied to each of its parts: the directories and
    file of its path, the class and function names after ``::``, and the parametrize id
    between the first ``[`` and the final ``]``."""
    file_part, sep, rest = nodeid.partition("::")
    path = "/".join(redact(part) for part in file_part.split("/"))
    if not sep:
        return path
    names, bracket, params = rest.partition("[")
    inner = "::".join(redact(name) for name in names.split("::"))
    if bracket:
        body, close = (params[:-1], "]") if params.endswith("]") else (params, "")
        params = redact(body) + close
    return f"{path}{sep}{inner}{bracket}{params}"
