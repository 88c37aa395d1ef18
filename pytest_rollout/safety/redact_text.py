"""The string layer of redaction (docs/secrets.md): rules and environment values applied to
one string, and the markers that take a secret's place.

:class:`TextRedactor` compiles the environment values and the rules into steps, each one
regular expression with the label of what it finds, and applies them in order. A marker
(``[REDACTED:<label>]``, or ``[REDACTED:<label>:sha256:<hex>]`` in ``hashed`` mode) is never
matched again, so redacting twice changes nothing; and since a marker ends in "]", a token
boundary, what stood glued to a secret can be one itself once the secret is replaced, so
passes repeat until nothing changes.

Stable under replay. A replayed agent is handed redacted text and may glue more text to it;
redacting the result must write what the recording wrote. The secret of a rule in
:data:`~pytest_rollout.safety.redact_rules.RUNS_ON` (a credential pair's value) runs on to a
terminator, so whatever is glued right after its marker was part of that secret when the
text was whole: it is hidden with the marker (:func:`_glued`).
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Final

import orjson

from .redact_gate import Gate
from .redact_rules import RUNS_ON, SPAN_CHECKS, Rule, SpanCheck

__all__ = ["MARKER", "MARKER_OPEN", "TextRedactor", "env_forms", "is_marker", "json_escaped"]

#: A redaction marker, as written by any mode.
MARKER: Final = re.compile(r"\[REDACTED:[A-Za-z0-9_.:-]++\]")
#: How every marker starts (a cheap test before :data:`MARKER` is tried).
MARKER_OPEN: Final = "[REDACTED:"
#: How many times a string is passed through the rules at most (each replacement can make
#: a boundary that lets another rule match; in practice two passes are the most needed).
_MAX_PASSES: Final = 8


def is_marker(text: str) -> bool:
    """Whether ``text`` is one whole redaction marker."""
    return text.startswith(MARKER_OPEN) and MARKER.fullmatch(text) is not None


def json_escaped(value: str) -> str:
    """``value`` as it appears inside an orjson-encoded string."""
    return orjson.dumps(value).decode("utf-8")[1:-1]


def _ascii_escaped(value: str) -> str:
    """``value`` inside a JSON string written with ``\\u`` escapes (four hex digits each)
    for all but ASCII (``json.dumps``' default, ``ensure_ascii=True``)."""
    escaped = json_escaped(value)
    return "".join(c if c < "\x80" else _u_escape(c) for c in escaped)


def _u_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a surrogate pair, as JSON writes a character beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def env_forms(value: str) -> list[str]:
    """The ways an environment value is written in a string: as it is, JSON-escaped (a ``"``
    as ``\\"``, a ``\\`` as ``\\\\``) and ``\\u``-escaped (as ``json.dumps`` writes
    non-ASCII), once or twice (JSON text inside a JSON string, such as a tool call's
    ``arguments``, quoted again), and as Python's ``unicode_escape`` writes it (pytest's test
    ids). A value with none of those characters has one form."""
    forms = [value]
    try:
        escaped = (json_escaped(value), _ascii_escaped(value))
    except TypeError:  # a lone surrogate (an undecodable byte): no JSON text holds it
        return forms
    for form in escaped:
        for again in (form, json_escaped(form)):
            if again not in forms:
                forms.append(again)
    # As pytest writes it in a test id (``\\xe9``), and Python's repr of bytes.
    python = value.encode("unicode_escape").decode("ascii")
    if python not in forms:
        forms.append(python)
    return forms


def _glued(tails: Mapping[str, str]) -> tuple[re.Pattern[str], ...]:
    """For each character class of a value that runs on (the ``tails`` of labels), the
    markers of its labels (group ``label``) with the text glued after them (group
    ``tail``)."""
    by_tail: dict[str, list[str]] = {}
    for label, tail in sorted(tails.items()):
        by_tail.setdefault(tail, []).append(label)
    return tuple(
        re.compile(
            rf"\[REDACTED:(?P<label>{'|'.join(re.escape(n) for n in names)})"
            rf"(?::[A-Za-z0-9_.:-]*+)?\](?P<tail>{tail}++)"
        )
        for tail, names in by_tail.items()
    )


def _whole(match: re.Match[str]) -> tuple[int, int] | None:
    return match.span()


def _group(match: re.Match[str]) -> tuple[int, int] | None:
    span = match.span("secret")
    return None if span[0] < 0 else span


def _drop_tail(match: re.Match[str]) -> str:
    return match.group()[: match.start("tail") - match.start()]


class _Step:
    """One regular expression and the label of what it finds."""

    __slots__ = ("labels", "regex", "span")

    def __init__(
        self, regex: re.Pattern[str], labels: str | Mapping[str, str], span: SpanCheck
    ) -> None:
        self.regex = regex
        self.labels = labels
        self.span = span

    def label(self, match: re.Match[str]) -> str:
        labels = self.labels
        return labels if isinstance(labels, str) else labels[match.group()]

    def hits(self, text: str) -> Iterable[tuple[int, int, str]]:
        """(start, end, label) of each secret, left to right, never overlapping."""
        search = self.regex.search
        span = self.span
        pos = 0
        while (match := search(text, pos)) is not None:
            found = span(match)
            if found is not None and found[0] < found[1]:
                yield found[0], found[1], self.label(match)
            pos = match.end() if match.end() > match.start() else match.start() + 1


def _pieces(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (is a marker, piece) so that markers are left alone."""
    pieces: list[tuple[bool, str]] = []
    last = 0
    for match in MARKER.finditer(text):
        if match.start() > last:
            pieces.append((False, text[last : match.start()]))
        pieces.append((True, match.group()))
        last = match.end()
    if last < len(text):
        pieces.append((False, text[last:]))
    return pieces


def _alternation(values: Mapping[str, str]) -> re.Pattern[str]:
    """Any of ``values``, the longest first, so a value containing another wins."""
    ordered = sorted(values, key=lambda v: (-len(v), v))
    return re.compile("|".join(re.escape(v) for v in ordered))


def _compile_steps(
    rules: Iterable[Rule], secrets: list[tuple[str, str]]
) -> tuple[tuple[_Step, ...], tuple[_Step, ...]]:
    """The steps applied to strings, and those applied to raw text (where an environment
    value may also appear JSON-escaped once more): the environment values first, in each of
    their forms, then the rules in order."""
    steps: list[_Step] = []
    raw_steps: list[_Step] = []
    if secrets:
        forms = {form: label for value, label in secrets for form in env_forms(value)}
        steps.append(_Step(_alternation(forms), forms, _whole))
        escaped = {**{json_escaped(v): lab for v, lab in forms.items()}, **forms}
        raw_steps.append(_Step(_alternation(escaped), escaped, _whole))
    for rule in rules:
        regex = re.compile(rule.pattern)
        span = SPAN_CHECKS.get(rule) or (_group if "secret" in regex.groupindex else _whole)
        steps.append(_Step(regex, rule.label, span))
    raw_steps += steps[1:] if secrets else steps
    return tuple(steps), tuple(raw_steps)


class TextRedactor:
    """Finds and hides the secrets of one string: the environment values ``secrets``
    ((value, label) pairs, longest first), then each of ``rules`` in order.

    ``gate`` (the payload gate, or ``None``) rules strings out before any rule runs;
    ``hashed`` writes the digest of each secret into its marker.
    """

    __slots__ = ("_custom", "_escapes", "_gate", "_glued", "_hashed", "_raw_steps", "_steps")

    def __init__(
        self,
        rules: Iterable[Rule],
        secrets: list[tuple[str, str]],
        gate: Gate | None,
        *,
        hashed: bool,
    ) -> None:
        rules = tuple(rules)
        self._steps, self._raw_steps = _compile_steps(rules, secrets)
        self._glued = _glued({rule.label: RUNS_ON[rule] for rule in rules if rule in RUNS_ON})
        self._gate = gate
        # An escaped form of an environment value holds a backslash, and the gate has no
        # words for those forms: a string with a backslash is then always read.
        self._escapes = any(len(env_forms(value)) > 1 for value, _ in secrets)
        self._hashed = hashed
        self._custom: Callable[[str, str], str] | None = None

    def with_marker(self, marker: Callable[[str, str], str]) -> TextRedactor:
        """A redactor finding the same secrets that writes ``marker(label, secret)`` in
        their place; what it returns must be a marker (:data:`MARKER`)."""
        other = copy.copy(self)
        other._custom = marker
        return other

    def marker(self, label: str, secret: str) -> str:
        """What is written in place of ``secret``."""
        if self._custom is not None:
            return self._custom(label, secret)
        if self._hashed:
            digest = hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
            return f"[REDACTED:{label}:sha256:{digest}]"
        return f"[REDACTED:{label}]"

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by its marker (``text`` itself when none)."""
        if self._clean(text):
            return text
        result = text
        for _ in range(_MAX_PASSES):
            before = result
            result = self._pass(result)
            if result == before:
                break
        if self._glued and MARKER_OPEN in result:
            for glued in self._glued:
                result = glued.sub(_drop_tail, result)
        return result

    def first_label(self, text: str) -> str | None:
        """The label of the first secret :meth:`redact` would hide, or ``None``."""
        if self._clean(text):
            return None
        return self._label(text, self._steps) or self._glued_label(text)

    def raw_label(self, text: str) -> str | None:
        """The label of the first secret in raw text, where an environment value may also
        be written JSON-escaped (no gate: the caller has searched already)."""
        return self._label(text, self._raw_steps) or self._glued_label(text)

    def _glued_label(self, text: str) -> str | None:
        """The label of the first marker :meth:`redact` would hide glued text with."""
        if MARKER_OPEN not in text:
            return None
        for glued in self._glued:
            found = glued.search(text)
            if found is not None:
                return found.group("label")
        return None

    def _clean(self, text: str) -> bool:
        """Whether the gate rules out any secret in ``text`` (seen as in a payload)."""
        gate = self._gate
        if gate is None or (self._escapes and "\\" in text):
            return False
        try:
            encoded = orjson.dumps(text)
        except TypeError:  # a lone surrogate: let the rules decide
            return False
        return gate.regex.search(encoded.translate(gate.table)) is None

    def _pass(self, text: str) -> str:
        result = text
        # The text cut at its markers, kept from step to step until a step changes it: a
        # text full of markers (hostile input) is cut once, not once a step.
        pieces: list[tuple[bool, str]] | None = None
        plain: list[str] = []
        for step in self._steps:
            if MARKER_OPEN not in result:
                result = self._sub(step, result)
                continue
            if pieces is None:
                pieces = _pieces(result)
                plain = [piece for marker, piece in pieces if not marker]
            # Most steps find nothing: one search of each piece, without a call of Python
            # code a piece, says so.
            if not any(map(step.regex.search, plain)):
                continue
            parts = [p if marker else self._sub(step, p) for marker, p in pieces]
            if any(part is not piece[1] for part, piece in zip(parts, pieces, strict=True)):
                result = "".join(parts)
                pieces = None
        return result

    def _sub(self, step: _Step, text: str) -> str:
        out: list[str] = []
        last = 0
        for start, end, label in step.hits(text):
            out.append(text[last:start])
            out.append(self.marker(label, text[start:end]))
            last = end
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    @staticmethod
    def _label(text: str, steps: tuple[_Step, ...]) -> str | None:
        pieces = _pieces(text) if MARKER_OPEN in text else [(False, text)]
        for step in steps:
            for marker, piece in pieces:
                if not marker:
                    for _, _, label in step.hits(piece):
                        return label
        return None
