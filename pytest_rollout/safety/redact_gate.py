"""The redaction gate (docs/secrets.md): a prefilter that can only say "maybe".

Most payloads hold no secret, so :meth:`~pytest_rollout.safety.redact.Redactor.redact_payload`
first asks the gate, and only a "maybe" pays for decoding, walking and re-encoding; the walk
applies the same gate to each string, and ``scan`` uses it to find the lines worth reading.
The gate is built from the rules' own words and classes, so it says "maybe" whenever a rule
could match; a rule it has no words for (any rule given by the user) turns it off, and then
every payload is walked.

How it stays fast. Python's regular expressions skip ahead quickly only to a *literal* first
character (about 0.4 ns a byte); a pattern that may start with any of several characters is
tried at every byte (about 7 ns a byte). So one ``bytes.translate`` folds ASCII case and maps
a few anchor bytes (the rarest letter of each word the rules need: ``k`` of ``token``, ``w``
of ``password``, ``y`` of ``eyJ``, ...; a rare byte of each environment value) to NUL, and
then one regular expression searches for NUL followed by what may come next, arranged as a
trie on the next byte. Every class and literal of the gate is written over the translated
bytes (their "images"), so the gate matches whenever the rule it stands for could.

A word with no anchor byte at all (``pin``, ``passphrase``, ``sessionid``, ``npm_``) has no
place in the gate: a new anchor for it (``p``: 2.5% of a prose payload's bytes) or a second
search of its own costs every payload a third to a half more (``bench_redact_gate.py``), so
such words are left to the user's extra keys and rules (docs/secrets.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from .redact_rules import BUILTIN_RULES, RUNS_ON, Rule

__all__ = ["Gate", "build_gate"]

_ALNUM: Final = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_ALL: Final = frozenset(range(256))
_B64URL: Final = _ALNUM | frozenset(b"_-")
_B64: Final = _ALNUM | frozenset(b"+/")
_UPPER_OR_DIGIT: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_HEX_LOWER: Final = frozenset(b"0123456789abcdef")
#: A run of blanks, written plainly or JSON-escaped.
_BLANKS: Final = rb"(?:[ \t]|\\t)++"
#: k: token, key, cookie, sk-; c: secret, credential; w: password, pwd; z: authorization;
#: b: bearer, basic, BEGIN, db_pass; g: ghp_, glpat-; J: eyJ; x and X: xoxb-, x-auth;
#: S: SK (Twilio); A: AKIA, AIza, pypi-AgEI; /: ://; f: hf_; G: SG.; 9: ya29.; ? and &:
#: ?pass=. Chosen by measurement: every anchor byte in a payload costs a few tens of
#: nanoseconds (capital X and S are all but absent from ordinary payloads; SK anchored at
#: its K, after every "sk" of "task" or "ask", cost a tenth more). Two anchors share one
#: image, so a word's letters after its anchor should not be anchors themselves (``key``
#: with a ``y`` anchor would look like ``web``, ``bec``, ...).
_ANCHORS: Final = b"kKcCwWzZbBgGJxXSA/f9?&"
#: How common a byte is in ordinary payloads (lower: a better anchor for an env value).
_RARE_FIRST: Final = (
    b"!#$%&*+;<>?@^`|~'()[]{}="
    + bytes(range(0x80, 0x100))
    + b"QXZJVKYWBPGFMUCDHLRSNIOATE"
    + b"qxzjvkywbpgfmu"
    + b"9876543210"
    + b"cdhlrsnioate"
    + b'-_.:/,\\" '
)


def _render(images: Iterable[int]) -> bytes:
    """A regular expression (bytes) matching exactly the bytes ``images``."""
    members = sorted(set(images))
    if len(members) == 1:
        return re.escape(bytes(members))
    if len(members) > 128:
        missing = sorted(_ALL.difference(members))
        if not missing:
            return rb"[\x00-\xff]"
        return b"[^" + b"".join(re.escape(bytes([m])) for m in missing) + b"]"
    return b"[" + b"".join(re.escape(bytes([m])) for m in members) + b"]"


def _forms(byte: int, ci: bool) -> frozenset[int]:
    if ci and chr(byte).isalpha():
        return frozenset({byte, ord(chr(byte).lower()), ord(chr(byte).upper())})
    return frozenset({byte})


class _GateBuilder:
    """Collects the words the gate looks for and compiles them."""

    def __init__(self, anchors: Iterable[int]) -> None:
        table = bytearray(range(256))
        for upper in range(0x41, 0x5B):
            table[upper] = upper + 0x20
        for byte in anchors:
            table[byte] = 0
        self.table = bytes(table)
        self._entries: list[tuple[tuple[frozenset[int], ...], bytes]] = []
        # Words that end at their anchor (eyJ at its J, SK at its K): what is before the
        # anchor is all that tells them apart, so they are tried together, behind one look
        # at the byte before the anchor, instead of one after another at every anchor.
        self._guarded: list[tuple[frozenset[int], bytes]] = []

    def images(self, members: Iterable[int]) -> frozenset[int]:
        return frozenset(self.table[m] for m in members)

    def cls(self, members: Iterable[int]) -> bytes:
        return _render(self.images(members))

    def anchored(self, byte: int, ci: bool = False) -> bool:
        return all(self.table[f] == 0 for f in _forms(byte, ci))

    def word(self, text: bytes, *, ci: bool = False, tail: bytes = b"", at: int = -1) -> None:
        """Look for ``text`` followed by ``tail``, anchored at its byte ``at`` (by default its
        first anchored byte)."""
        if at < 0:
            at = next(i for i, b in enumerate(text) if self.anchored(b, ci))
        if not self.anchored(text[at], ci):
            raise ValueError(f"{text!r} is not anchored at {at}")
        after = tuple(self.images(_forms(b, ci)) for b in text[at + 1 :])
        if at:  # the bytes before the anchor, checked once the rest has matched
            tail = b"(?<=" + b"".join(self.cls(_forms(b, ci)) for b in text) + b")" + tail
        if at and not after:
            self._guarded.append((self.images(_forms(text[at - 1], ci)), tail))
        else:
            self._entries.append((after, tail))

    def run(self) -> bytes:
        """Any run of non-alphanumerics, JSON escapes included."""
        plain = self.cls(_ALL - _ALNUM - set(b':=,"\\'))
        hexa = self.cls(b"0123456789abcdefABCDEF")
        return rb"(?:" + plain + rb"|\\(?:u" + hexa + rb"{4}|" + self.cls(_ALL - {0x75}) + rb"))*+"

    def compile(self) -> re.Pattern[bytes]:
        extra: list[bytes] = []
        if self._guarded:
            before = _render(frozenset().union(*(guard for guard, _ in self._guarded)))
            tails = b"|".join(dict.fromkeys(tail for _, tail in self._guarded))
            extra.append(b"(?<=" + before + b"\x00)(?:" + tails + b")")
        return re.compile(b"\x00" + _trie(self._entries, extra))


def _trie(
    entries: list[tuple[tuple[frozenset[int], ...], bytes]], extra: Iterable[bytes] = ()
) -> bytes:
    """Alternatives grouped by their next byte, so that a candidate enters one at most;
    ``extra`` alternatives last."""
    groups: dict[int, list[tuple[tuple[frozenset[int], ...], bytes]]] = {}
    done: list[bytes] = []
    for atoms, tail in entries:
        if not atoms:
            done.append(tail)
            continue
        for head in sorted(atoms[0]):
            groups.setdefault(head, []).append((atoms[1:], tail))
    parts = [re.escape(bytes([h])) + _trie(sub) for h, sub in groups.items()]
    parts += list(dict.fromkeys(done))
    parts += extra
    if len(parts) == 1:
        return parts[0]
    return b"(?:" + b"|".join(parts) + b")"


# -- the words of each built-in rule ---------------------------------------------------

#: What must follow a rule's word, written over the gate's translated bytes.
_Tail = Callable[[_GateBuilder], bytes]


def _no_tail(g: _GateBuilder) -> bytes:
    return b""


def _then(members: frozenset[int], count: int, *, blanks: bool = False) -> _Tail:
    """A tail of ``count`` bytes of ``members``, after a run of blanks when ``blanks``."""

    def tail(g: _GateBuilder) -> bytes:
        return (_BLANKS if blanks else b"") + g.cls(members) + b"{%d}" % count

    return tail


def _userinfo(g: _GateBuilder) -> bytes:
    """After "://": a user name (no ":"), ":", then the password up to an "@" (or a ":",
    which may be part of it). Both runs stop at a ":", so no start scans past the next one."""
    stop = set(b' \t\n\r\x0b\x0c"\\:')
    return g.cls(_ALL - stop) + b"*+:" + g.cls(_ALL - stop - {0x40}) + b"*+[@:]"


@dataclass(frozen=True, slots=True)
class _Words:
    """What the gate looks for on behalf of one built-in rule: each of ``words`` (in any
    case when ``ci``), anchored at its byte ``at`` (by default its first anchor), followed
    by ``tail``."""

    words: tuple[bytes, ...]
    ci: bool = False
    at: int = -1
    tail: _Tail = _no_tail

    def add_to(self, g: _GateBuilder) -> None:
        tail = self.tail(g)
        for word in self.words:
            g.word(word, ci=self.ci, tail=tail, at=self.at)


_AWS_IDS: Final = (b"AKIA", b"ASIA", b"AGPA", b"AIDA", b"AROA", b"ANPA", b"ANVA", b"AIPA")

#: The words of each built-in rule, by label (a rule found by two kinds of word has both).
_RULE_WORDS: Final[Mapping[str, _Words | tuple[_Words, ...]]] = {
    "pem-private-key": _Words((b"-----BEGIN",)),
    "jwt": _Words((b"eyJ",), at=2, tail=_then(_B64URL, 5)),
    "anthropic-key": _Words((b"sk-",)),
    "openai-key": _Words((b"sk-",)),
    "github-token": _Words((b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_")),
    "slack-token": _Words((b"xoxb-", b"xoxa-", b"xoxp-", b"xoxr-", b"xoxs-", b"xapp-")),
    "google-api-key": _Words((b"AIza",), tail=_then(_B64URL, 35)),
    "stripe-key": _Words((b"sk_live_", b"sk_test_", b"rk_live_", b"rk_test_")),
    "aws-access-key": _Words(_AWS_IDS, tail=_then(_UPPER_OR_DIGIT, 16)),
    # The ":" and "=" forms are the key words' own.
    "gitlab-token": _Words((b"glpat-", b"gldt-", b"glrt-", b"glptt-", b"glft-")),
    "huggingface-token": _Words((b"hf_",), at=1, tail=_then(_ALNUM, 30)),
    "sendgrid-key": _Words((b"SG.",), at=1, tail=_then(_B64URL, 16)),
    "google-oauth-token": _Words((b"ya29.",), at=3, tail=_then(_B64URL, 20)),
    # After a key name (its ":" and "=" forms are the key words'), or an access key id.
    "aws-secret-key": (
        _Words((b"key",), ci=True, tail=_then(_B64, 40, blanks=True)),
        _Words((b"AKIA", b"ASIA"), tail=_then(_UPPER_OR_DIGIT, 16)),
    ),
    "twilio-key": _Words((b"SK",), tail=_then(_HEX_LOWER, 32)),
    "pypi-token": _Words((b"pypi-AgEIcHlwaS5vcmc", b"pypi-AgENdGVzdC5weXBpLm9yZw")),
    "connection-password": _Words(()),  # the key layer's "pwd" and "password" followed by "="
    "cookie-header": _Words(()),  # the key layer's "cookie" followed by ":"
    "azure-storage-key": _Words(()),  # the key layer's "key" followed by "="
    "slack-webhook": _Words((b"hooks.slack.com/",)),
    "url-password": _Words((b"://",), tail=_userinfo),
    "query-password": _Words((b"?pass", b"&pass", b"?pwd", b"&pwd"), ci=True),
    "bearer": _Words((b"bearer",), ci=True),
    "basic-auth": _Words((b"basic",), ci=True, tail=_then(_B64, 8, blanks=True)),
    "token-auth": _Words(()),  # the key layer's "authorization" followed by ":" or "="
    "credential-pair": _Words(()),  # its words are the key layer's
}


def _glued_tail(stops: bytes) -> _Tail:
    """After a marker's label: the rest of the marker, then a byte of text glued to it that
    the redactor hides with the marker (see ``RUNS_ON`` in the rules module): anything but
    ``stops``, a control character, a quote or a backslash (which also starts the escape of
    a newline in the encoded bytes)."""
    ends = frozenset(stops + b"\"'\\") | frozenset(range(0x20)) | {0x7F}

    def tail(g: _GateBuilder) -> bytes:
        label = g.cls(_ALNUM | frozenset(b"_.:-"))
        return label + b"*+\\]" + g.cls(_ALL - ends)

    return tail


_PAIR_STOPS: Final = b" &,;"
#: The marker words of the rules whose markers take in the text glued after them.
_GLUED_WORDS: Final[Mapping[str, _Words]] = {
    "aws-secret-key": _Words((b"aws-secret-key",), tail=_glued_tail(_PAIR_STOPS)),
    "credential-pair": _Words((b"credential-pair",), tail=_glued_tail(_PAIR_STOPS)),
    "connection-password": _Words((b"connection-password",), tail=_glued_tail(b";")),
    "cookie-header": _Words((b"cookie-header",), tail=_glued_tail(b"")),
}
_BUILTIN_BY_LABEL: Final[Mapping[str, Rule]] = {rule.label: rule for rule in BUILTIN_RULES}


def _rule_words(rule: Rule) -> tuple[_Words, ...] | None:
    """The words of ``rule`` if it is a built-in one; ``None`` for a rule the gate cannot
    stand for."""
    if _BUILTIN_BY_LABEL.get(rule.label) != rule:
        return None
    words = _RULE_WORDS.get(rule.label)
    return (words,) if isinstance(words, _Words) else words


def _add_key_words(g: _GateBuilder) -> None:
    """The key layer's words (and so the credential pairs' and the named AWS secret's):
    a word, a run of non-alphanumerics, then what may end a JSON key (``":``), a header
    pair's name (``",``) or a text pair (``:``, ``=``), or a ``,`` or ``:`` inside a key."""
    end = g.run() + rb'(?:[:=,]|"[ \t]*+[:=,])'
    plural = g.cls(b"sS") + b"?"
    g.word(b"token", ci=True, tail=end)
    g.word(b"key", ci=True, tail=end)
    g.word(b"cookie", ci=True, tail=end, at=3)
    g.word(b"password", ci=True, tail=plural + end)
    g.word(b"passwd", ci=True, tail=end)
    g.word(b"pwd", ci=True, tail=end)
    g.word(b"authorization", ci=True, tail=end)
    g.word(b"secret", ci=True, tail=plural + end)
    g.word(b"credential", ci=True, tail=plural + end)
    for sep in (b"", b"_", b"-", b"."):  # the spellings of SEGMENT_KEYS
        g.word(b"db" + sep + b"pass", ci=True, tail=end)
        g.word(b"x" + sep + b"auth", ci=True, tail=end)


def _env_anchor(value: bytes, anchors: set[int]) -> int:
    """The index of the byte to anchor ``value`` at, adding a rare byte when it has none."""
    for index, byte in enumerate(value):
        if byte in anchors:
            return index
    best = min(range(len(value)), key=lambda i: _RARE_FIRST.find(value[i]) % 1000)
    anchors.add(value[best])
    return best


def _extra_key_gate(names: Iterable[bytes]) -> re.Pattern[bytes] | None:
    """Extra keys written with any separators, over the lowercased bytes (each name is
    anchored at its first letter, so extra keys cost a little on the fast path)."""
    run = rb'(?:[^a-z0-9:=,"\\]|\\(?:u[0-9a-f]{4}|[^u]))*+'
    end = run + rb'(?:[:=,]|"[ \t]*+[:=,])'
    words = [run.join(re.escape(bytes([b])) for b in name) + end for name in names]
    return re.compile(b"|".join(words)) if words else None


# -- the gate ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Gate:
    """Says "maybe" for every payload (or file) that might hold a secret: a match of
    ``regex`` in the bytes translated by ``table``, or of ``extra`` (the extra keys) in the
    lowercased bytes."""

    table: bytes
    regex: re.Pattern[bytes]
    extra: re.Pattern[bytes] | None

    def prepare(self, data: bytes) -> tuple[bytes, bytes]:
        """The views of ``data`` that :meth:`next_hit` searches."""
        return data.translate(self.table), data.lower() if self.extra is not None else b""

    def next_hit(self, views: tuple[bytes, bytes], pos: int, known: list[int]) -> int:
        """The first offset at or after ``pos`` where something might start (the length of
        the data when there is none). ``known`` caches each search's last answer, so that
        a file is searched once however many hits it has."""
        translated, lowered = views
        end = len(translated)
        if known[0] < pos:
            found = self.regex.search(translated, pos)
            known[0] = end if found is None else found.start()
        if self.extra is not None and known[1] < pos:
            other = self.extra.search(lowered, pos)
            known[1] = end if other is None else other.start()
        return min(known) if self.extra is not None else known[0]


def build_gate(
    rules: Iterable[Rule], env_forms: Iterable[bytes], extra_names: Iterable[bytes]
) -> Gate | None:
    """The gate for ``rules``, the environment values ``env_forms`` (as they appear in the
    bytes searched) and the normalized extra key names; ``None`` when a rule has no known
    words (every payload is then walked)."""
    rules = tuple(rules)
    found: list[_Words] = []
    for rule in rules:
        known = _rule_words(rule)
        if known is None:
            return None
        found += known
    anchors = set(_ANCHORS)
    anchored = [(form, _env_anchor(form, anchors)) for form in env_forms]
    builder = _GateBuilder(anchors)
    for words in found:
        words.add_to(builder)
    for rule in rules:
        glued = _GLUED_WORDS.get(rule.label) if rule in RUNS_ON else None
        if glued is not None:
            glued.add_to(builder)
    _add_key_words(builder)
    for form, at in anchored:
        builder.word(form, at=at)
    return Gate(builder.table, builder.compile(), _extra_key_gate(extra_names))
