"""Redaction (docs/secrets.md): secrets never reach disk.

Every recorded event payload passes through a :class:`Redactor` before its bytes are
written, and :meth:`Redactor.scan` checks a whole file once more before it is renamed into
place. A secret is found by three layers:

1. **Keys.** The value under a secret-named key (``password``, ``api_key``, ``X-Api-Key``,
   ``Authorization``, ``client_secret``, ...) is hidden whatever it looks like; so is the
   value of a ``[name, value]`` header pair. A name is normalized (ASCII-lowercased, every
   character but ``a-z0-9`` dropped) and is secret when the result is in
   :data:`SECRET_KEYS` or ends with one of a few words (``token``, ``password``,
   ``apikey``, ...), that final word being written unbroken (``pass_word`` is not a
   password; ``input_tokens`` does not end with ``token``).
2. **Environment.** The exact values of environment variables whose name holds a word
   such as ``KEY``, ``TOKEN``, ``SECRET`` or ``PASSWORD`` (values of 8 characters or more
   that are not paths or plain numbers), anywhere in any string.
3. **Patterns.** A table of regular expressions (:data:`BUILTIN_RULES`, plus the user's)
   applied to every string at any depth, dict keys included. A rule with a named group
   ``secret`` hides only that group.

Modes: ``redacted`` writes ``[REDACTED:<label>]``; ``hashed`` writes
``[REDACTED:<label>:sha256:<hex>]`` (the digest of the secret's UTF-8 bytes, so equal secrets
stay equal); ``full`` writes everything verbatim; ``none`` drops every event that held a
secret. Markers are never matched again, so redacting twice changes nothing.

Linear time. Python's ``re`` backtracks, and the patterns run on untrusted text, so every
built-in pattern keeps two rules. It may only *start* at a leading literal (or a small class
of letters, such as the ``k``, ``w`` or ``c`` of a credential's name), so that the engine
skips ahead to it, with the token boundary it needs enforced by a negative lookbehind placed
right after that literal (``sk-(?<![A-Za-z0-9_-]sk-)``) and the letters before it checked by
fixed-width lookbehinds. And every run of characters is possessive (``++``, ``*+``,
``{n,}+``, or an atomic group), so no character is scanned twice by one start, and no run
can reach past the next place where a match could start (a URL's runs stop at ``/``, a key
word's runs at the next letter or digit). Each pattern then does O(n) work on a text of n
characters; the tests run every rule on 200 KB of hostile text. Rules given by the user are
compiled as written: nothing checks that they cannot backtrack.

The fast path. Most payloads hold no secret, so :meth:`Redactor.redact_payload` first asks a
"gate" that can only answer "maybe": one ``bytes.translate`` folds ASCII case and maps a few
anchor bytes (the rarest letter of each word the rules need: ``k`` of ``token``, ``w`` of
``password``, ``y`` of ``eyJ``, ...; a rare byte of each environment value) to NUL, then one
regular expression searches for NUL followed by what may come next. A literal first byte is
what lets the engine skip ahead quickly, which a set of first bytes would not. Only a "maybe"
pays for decoding, walking and re-encoding, and the walk applies the same gate to each
string. The gate is built from the rules' own words and classes, so it says "maybe" whenever
a rule could match; user rules have no known words, so with any of them every payload is
walked.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import orjson

from ..errors import RolloutError

__all__ = [
    "BUILTIN_RULES",
    "SECRET_KEYS",
    "RedactionError",
    "RedactionMode",
    "Redactor",
    "Rule",
]


class RedactionMode(StrEnum):
    """What is written in place of a secret."""

    REDACTED = "redacted"
    HASHED = "hashed"
    FULL = "full"
    NONE = "none"


class RedactionError(RolloutError):
    """A redaction setting was refused: ``subject`` names the rule label, key or mode."""

    __module__ = "pytest_rollout"

    def __init__(self, subject: str, reason: str, kind: str = "rule") -> None:
        self.subject = subject
        self.reason = reason
        self.kind = kind
        super().__init__(f"redaction {kind} {subject!r}: {reason}")

    def __reduce__(self) -> tuple[type[RedactionError], tuple[str, str, str]]:
        return (type(self), (self.subject, self.reason, self.kind))


_LABEL: Final = re.compile(r"[A-Za-z0-9_.:-]+")


@dataclass(frozen=True, slots=True)
class Rule:
    """A named pattern. ``label`` may use letters, digits and ``_ . : -``; ``pattern`` is a
    Python regular expression whose named group ``secret``, if any, is the part hidden."""

    label: str
    pattern: str

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not _LABEL.fullmatch(self.label):
            raise RedactionError(
                str(self.label),
                "a label may use only letters, digits and _ . : - (write e.g. 'acme-token')",
            )
        if not isinstance(self.pattern, str):
            raise RedactionError(self.label, "the pattern must be a str regular expression")
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise RedactionError(
                self.label, f"invalid regular expression {self.pattern!r}: {exc}"
            ) from None


# -- the pattern table ----------------------------------------------------------------

_CTRL: Final = r"\x00-\x1f\x7f"
#: The characters of a URL's user name and password: RFC 3986 userinfo excludes the
#: delimiters ``/ ? # [ ]``; quotes, angle brackets, backslashes and controls end it too.
_USERINFO: Final = rf"[^\s/?#\[\]\"'<>\\{_CTRL}"


def _ci(word: str) -> str:
    """``word`` matched case-insensitively with character classes (so that the engine can
    still skip ahead by the first character)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)


_PEM: Final = Rule(
    "pem-private-key",
    # The header names any kind of private key; the body runs to the END line or, when
    # the block is cut short, to the end of the text.
    r"-----BEGIN (?:(?!PRIVATE KEY)[A-Z0-9]++ )*+PRIVATE KEY(?: BLOCK)?-----"
    r"[^-]*+(?:-(?!----END)[^-]*+)*+(?:-----END[ A-Z0-9]*+-*+)?+",
)
_JWT: Final = Rule(
    "jwt",
    r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]{5,}+(?:\.[A-Za-z0-9_-]++)*+",
)
_ANTHROPIC: Final = Rule("anthropic-key", r"sk-(?<![A-Za-z0-9_-]sk-)ant-[A-Za-z0-9_-]{20,}+")
_OPENAI: Final = Rule(
    "openai-key",
    # Not sk-ant- (Anthropic's); at least one capital or digit, so a lowercase slug such as
    # sk-some-long-css-class-name is left alone.
    r"sk-(?<![A-Za-z0-9_-]sk-)(?!ant-)(?=[a-z_-]*+[A-Z0-9])[A-Za-z0-9_-]{20,}+",
)
_GITHUB: Final = Rule(
    "github-token",
    r"g(?<![A-Za-z0-9_-]g)(?:h[pousr]_[A-Za-z0-9]{30,}+|ithub_pat_[A-Za-z0-9_]{30,}+)",
)
_SLACK: Final = Rule("slack-token", r"x(?<![A-Za-z0-9_-]x)(?:ox[baprs]|app)-[A-Za-z0-9-]{10,}+")
_GOOGLE: Final = Rule("google-api-key", r"AIza(?<![A-Za-z0-9_-]AIza)[A-Za-z0-9_-]{35,}+")
_STRIPE: Final = Rule(
    "stripe-key", r"[rs]k_(?<![A-Za-z0-9_-][rs]k_)(?:live|test)_[A-Za-z0-9]{10,}+"
)
_AWS_ACCESS: Final = Rule(
    "aws-access-key",
    r"A(?<![A-Za-z0-9]A)(?:KIA|SIA|GPA|IDA|ROA|NPA|NVA|IPA)[A-Z0-9]{16}(?![A-Z0-9])",
)
#: "secret key" and "secret access key", the words joined or split by "_", "-" or ".", as
#: fixed-width lookbehinds (a name ending so, e.g. aws_secret_access_key or SecretAccessKey).
_SECRET_KEY_NAMES: Final = "|".join(
    f"(?<=(?i:secret{middle}key))"
    for middle in ("", "[_.-]", "access", "access[_.-]", "[_.-]access", "[_.-]access[_.-]")
)
_AWS_SECRET: Final = Rule(
    "aws-secret-key",
    # Forty characters of base64 are a secret only after a name that says so. The pattern
    # starts at the "k" of "key" (a class, so the engine skips ahead to it).
    rf"[Kk](?i:ey)(?:{_SECRET_KEY_NAMES})"
    r"(?:[\"']?[ \t]*+(?>=>|[:=])[ \t]*+[\"']?|[ \t]++)"
    r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
)
_URL_PASSWORD: Final = Rule(
    "url-password",
    # scheme://user:password@host. The group runs to the end of the authority; the
    # password is its part before the last "@" (a raw "@" in a password is common).
    rf"://(?<=[A-Za-z0-9.+-]://)[^\s:/?#\[\]\"'<>\\{_CTRL}]*+:(?P<secret>{_USERINFO}]++)",
)
_BEARER: Final = Rule(
    "bearer",
    # A lone word ("Bearer token", "bearer authentication") is prose, not a token.
    rf"{_ci('bearer')}(?<![A-Za-z0-9_-]{_ci('bearer')})[ \t]++"
    r"(?P<secret>(?![A-Za-z][a-z]*+(?![A-Za-z0-9._~+/=-]))[A-Za-z0-9._~+/-]{8,}+=*+)",
)
_BASIC: Final = Rule(
    "basic-auth",
    # Kept only when the credential decodes to printable "user:password".
    rf"{_ci('basic')}(?<![A-Za-z0-9_-]{_ci('basic')})[ \t]++"
    r"(?P<secret>[A-Za-z0-9+/]{8,}+={0,2}+)(?![A-Za-z0-9+/=])",
)
_KEY_NAMES: Final = "|".join(
    f"(?<=(?i:{word}{sep}key))"
    for word in ("api", "private", "secret", "secretaccess", "secret[_.-]access")
    for sep in ("", "[_.-]")
)
#: The names of a credential pair, ending the name (token, access_token, api_key, api-key,
#: private_key, secret_key, secret_access_key, password(s), passwd, secret(s),
#: credential(s)). Each is entered at its k, w or c, one class the engine can skip ahead to;
#: fixed-width lookbehinds check the letters before.
_PAIR_WORD: Final = (
    r"[KkWwCc](?:(?<=(?i:tok))(?i:en)|(?i:ey)(?:" + _KEY_NAMES + r")"
    r"|(?<=(?i:passw))(?i:ords?|d)|(?<=(?i:sec))(?i:rets?)|(?<=[Cc])(?i:redentials?))"
)
_CREDENTIAL_PAIR: Final = Rule(
    "credential-pair",
    # api_key=..., "password": "...", access_token: ..., ?client_secret=...&; a quoted value
    # runs to its closing quote, a bare one to whitespace, a quote, & , or ;.
    _PAIR_WORD + r"[\"']?[ \t]*+(?>=>|[:=])[ \t]*+[\"']?"
    r"(?!\[REDACTED:)(?!(?i:null|true|false|none)(?![A-Za-z0-9_]))"
    rf"(?P<secret>(?<=\")[^\"{_CTRL}]++(?=\")|(?<=')[^'{_CTRL}]++(?=')"
    rf"|[^\s\"'&,;\\{_CTRL}]++)",
)

#: The built-in rules, applied in this order (the specific ones before the generic ones).
BUILTIN_RULES: Final[tuple[Rule, ...]] = (
    _PEM,
    _JWT,
    _ANTHROPIC,
    _OPENAI,
    _GITHUB,
    _SLACK,
    _GOOGLE,
    _STRIPE,
    _AWS_ACCESS,
    _AWS_SECRET,
    _URL_PASSWORD,
    _BEARER,
    _BASIC,
    _CREDENTIAL_PAIR,
)


def _url_password_span(match: re.Match[str]) -> tuple[int, int] | None:
    start, end = match.span("secret")
    at = match.string.rfind("@", start, end)
    return (start, at) if at > start else None


def _basic_span(match: re.Match[str]) -> tuple[int, int] | None:
    credential = match.group("secret")
    if len(credential) % 4:
        return None
    try:
        text = base64.b64decode(credential, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return match.span("secret") if ":" in text and text.isprintable() else None


#: Built-in checks beyond the regular expression.
_SPANS: Final[dict[Rule, Callable[[re.Match[str]], tuple[int, int] | None]]] = {
    _URL_PASSWORD: _url_password_span,
    _BASIC: _basic_span,
}


# -- the key layer --------------------------------------------------------------------

#: Normalized names of keys whose values are always secret.
SECRET_KEYS: Final = frozenset(
    {
        "authorization",
        "proxyauthorization",
        "apikey",
        "xapikey",
        "password",
        "passwords",
        "passwd",
        "secret",
        "secrets",
        "clientsecret",
        "token",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "authtoken",
        "sessiontoken",
        "cookie",
        "setcookie",
        "privatekey",
        "secretkey",
        "secretaccesskey",
        "credential",
        "credentials",
        "xamzsecuritytoken",
    }
)

#: (normalized suffix, final word written unbroken, label), longest suffixes first. Every
#: name of SECRET_KEYS ends with one of these suffixes.
_KEY_SUFFIXES: Final = (
    (b"secretaccesskey", b"key", "secret"),
    (b"authorization", b"authorization", "authorization"),
    (b"credentials", b"credentials", "credentials"),
    (b"credential", b"credential", "credentials"),
    (b"privatekey", b"key", "private-key"),
    (b"passwords", b"passwords", "password"),
    (b"secretkey", b"key", "secret"),
    (b"password", b"password", "password"),
    (b"secrets", b"secrets", "secret"),
    (b"passwd", b"passwd", "password"),
    (b"secret", b"secret", "secret"),
    (b"cookie", b"cookie", "cookie"),
    (b"apikey", b"key", "api-key"),
    (b"token", b"token", "token"),
)
_NOT_ALNUM: Final = bytes(b for b in range(256) if not (0x30 <= b <= 0x39 or 0x61 <= b <= 0x7A))


def _normalize(key: str) -> tuple[bytes, bytes]:
    """``key`` ASCII-lowercased: every other character dropped, and only trailing ones
    dropped (a non-ASCII character separates words, as punctuation does)."""
    lowered = key.encode("ascii", "replace").lower()
    return lowered.translate(None, _NOT_ALNUM), lowered.rstrip(_NOT_ALNUM)


def _builtin_key_label(key: str) -> str | None:
    name, stripped = _normalize(key)
    for suffix, word, label in _KEY_SUFFIXES:
        if name.endswith(suffix) and stripped.endswith(word):
            return label
    return None


# -- the environment layer ------------------------------------------------------------

_ENV_WORDS: Final = frozenset(
    {
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "CREDENTIAL",
        "CREDENTIALS",
        "APIKEY",
        "DSN",
        "PAT",
    }
)
_ENV_MIN_LENGTH: Final = 8


def _env_secrets(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(value, label) of every secret-looking variable, longest value first."""
    found: dict[str, str] = {}
    for name in sorted(environ):
        value = environ[name]
        if not isinstance(value, str) or not _ENV_WORDS.intersection(name.upper().split("_")):
            continue
        if len(value) < _ENV_MIN_LENGTH or value.startswith("/") or value.isdigit():
            continue
        found.setdefault(value, "env:" + re.sub(r"[^A-Za-z0-9_.:-]", "_", name))
    return sorted(found.items(), key=lambda item: (-len(item[0]), item[0]))


def _json_escaped(value: str) -> str:
    """``value`` as it appears inside an orjson-encoded string."""
    return orjson.dumps(value).decode("utf-8")[1:-1]


# -- the gate: a prefilter that can only say "maybe" ---------------------------------
#
# Python's regular expressions skip ahead fast only to a *literal* first character (about
# 0.4 ns a byte); a pattern that may start with any of several characters is tried at every
# byte (about 7 ns a byte). So the gate first maps a few anchor bytes (a rare letter of every
# word it looks for) to NUL with one bytes.translate, which also folds ASCII case, and then
# searches for NUL followed by the continuations, arranged as a trie on their next byte. Every
# class and literal of the gate is written over the translated bytes (its "images"), so the
# gate matches whenever the rule it stands for could.

_ALNUM: Final = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_ALL: Final = frozenset(range(256))
#: k: token, key, cookie, sk-; c: secret, credential; w: password; z: authorization;
#: b: bearer, basic, BEGIN; g: ghp_; J: eyJ; x: xoxb-; A: AKIA, AIza; /: ://. Chosen by
#: measurement: every anchor byte in a payload costs a few tens of nanoseconds. Two
#: anchors share one image, so a word's letters after its anchor should not be anchors
#: themselves (``key`` with a ``y`` anchor would look like ``web``, ``bec``, ...).
_ANCHORS: Final = b"kKcCwWzZbBgJxA/"
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
        self._entries.append((after, tail))

    def run(self) -> bytes:
        """Any run of non-alphanumerics, JSON escapes included."""
        plain = self.cls(_ALL - _ALNUM - set(b':=,"\\'))
        hexa = self.cls(b"0123456789abcdefABCDEF")
        return rb"(?:" + plain + rb"|\\(?:u" + hexa + rb"{4}|" + self.cls(_ALL - {0x75}) + rb"))*+"

    def compile(self) -> re.Pattern[bytes]:
        return re.compile(b"\x00" + _trie(self._entries))


def _trie(entries: list[tuple[tuple[frozenset[int], ...], bytes]]) -> bytes:
    """Alternatives grouped by their next byte, so that a candidate enters one at most."""
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
    if len(parts) == 1:
        return parts[0]
    return b"(?:" + b"|".join(parts) + b")"


def _add_rule_words(g: _GateBuilder, rule: Rule) -> bool:
    """Add what ``rule`` needs to the gate; ``False`` for a rule the gate cannot stand for."""
    b64url = g.cls(_ALNUM | set(b"_-"))
    b64 = g.cls(_ALNUM | set(b"+/"))
    blank = rb"(?:[ \t]|\\t)++"
    if rule == _PEM:
        g.word(b"-----BEGIN")
    elif rule == _JWT:
        g.word(b"eyJ", at=2, tail=b64url + b"{5}")
    elif rule in (_ANTHROPIC, _OPENAI):
        g.word(b"sk-")
    elif rule == _GITHUB:
        for prefix in (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"):
            g.word(prefix)
    elif rule == _SLACK:
        for prefix in (b"xoxb-", b"xoxa-", b"xoxp-", b"xoxr-", b"xoxs-", b"xapp-"):
            g.word(prefix)
    elif rule == _GOOGLE:
        g.word(b"AIza", tail=b64url + b"{35}")
    elif rule == _STRIPE:
        for prefix in (b"sk_live_", b"sk_test_", b"rk_live_", b"rk_test_"):
            g.word(prefix)
    elif rule == _AWS_ACCESS:
        upper = g.cls(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        for prefix in (b"AKIA", b"ASIA", b"AGPA", b"AIDA", b"AROA", b"ANPA", b"ANVA", b"AIPA"):
            g.word(prefix, tail=upper + b"{16}")
    elif rule == _AWS_SECRET:  # the ":" and "=" forms are the key words' own
        g.word(b"key", ci=True, tail=blank + b64 + b"{40}")
    elif rule == _URL_PASSWORD:
        # "://", a user name (no ":"), ":", then the password up to an "@" (or a ":", which
        # may be part of it). Both runs stop at a ":", so no start scans past the next one.
        stop = set(b' \t\n\r\x0b\x0c"\\:')
        g.word(b"://", tail=g.cls(_ALL - stop) + b"*+:" + g.cls(_ALL - stop - {0x40}) + b"*+[@:]")
    elif rule == _BEARER:
        g.word(b"bearer", ci=True)
    elif rule == _BASIC:
        g.word(b"basic", ci=True, tail=blank + b64 + b"{8}")
    elif rule != _CREDENTIAL_PAIR:  # its words are the key layer's
        return False
    return True


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
    g.word(b"authorization", ci=True, tail=end)
    g.word(b"secret", ci=True, tail=plural + end)
    g.word(b"credential", ci=True, tail=plural + end)


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


@dataclass(frozen=True, slots=True)
class _Gate:
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


# -- the engine -----------------------------------------------------------------------

_MARKER: Final = re.compile(r"\[REDACTED:[A-Za-z0-9_.:-]++\]")
_MARKER_OPEN: Final = "[REDACTED:"
#: The JSON scalars other than strings (checked first: they are most of what a walk meets).
_LEAVES: Final = frozenset({int, float, bool})


#: How many times a string is passed through the rules at most (each replacement can make
#: a boundary that lets another rule match; in practice two passes are the most needed).
_MAX_PASSES: Final = 8


def _is_marker(text: str) -> bool:
    return text.startswith(_MARKER_OPEN) and _MARKER.fullmatch(text) is not None


def _whole(match: re.Match[str]) -> tuple[int, int] | None:
    return match.span()


def _group(match: re.Match[str]) -> tuple[int, int] | None:
    span = match.span("secret")
    return None if span[0] < 0 else span


class _Step:
    """One regular expression and the label of what it finds."""

    __slots__ = ("labels", "regex", "span")

    def __init__(
        self,
        regex: re.Pattern[str],
        labels: str | Mapping[str, str],
        span: Callable[[re.Match[str]], tuple[int, int] | None],
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
    for match in _MARKER.finditer(text):
        if match.start() > last:
            pieces.append((False, text[last : match.start()]))
        pieces.append((True, match.group()))
        last = match.end()
    if last < len(text):
        pieces.append((False, text[last:]))
    return pieces


class Redactor:
    """Hides secrets in event payloads; see the module documentation for what is found.

    ``environ`` is read once (``None``: :data:`os.environ`; ``{}`` turns the layer off).
    ``rules`` replaces the built-in table; ``extra_rules`` and ``extra_keys`` add to it.
    """

    __slots__ = (
        "_extra_keys",
        "_extra_search",
        "_gate",
        "_key_cache",
        "_raw_steps",
        "_scan_gate",
        "_search",
        "_steps",
        "_table",
        "_verbatim",
        "mode",
        "rules_digest",
    )

    def __init__(
        self,
        mode: RedactionMode | str = RedactionMode.REDACTED,
        *,
        rules: Iterable[Rule] = BUILTIN_RULES,
        extra_rules: Iterable[Rule] = (),
        extra_keys: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> None:
        try:
            self.mode = RedactionMode(mode)
        except ValueError:
            choices = ", ".join(m.value for m in RedactionMode)
            raise RedactionError(str(mode), f"unknown; use one of {choices}", "mode") from None
        all_rules = (*rules, *extra_rules)
        for rule in all_rules:
            if not isinstance(rule, Rule):
                raise RedactionError(repr(rule), "not a Rule(label, pattern)")
        self._extra_keys: dict[bytes, str] = {}
        for key in extra_keys:
            name = _normalize(key)[0] if isinstance(key, str) else b""
            if not name:
                raise RedactionError(str(key), "a key needs at least one letter or digit", "key")
            label = next((lab for suf, _, lab in _KEY_SUFFIXES if name.endswith(suf)), None)
            self._extra_keys[name] = label or name.decode()
        self._key_cache: dict[str, tuple[str, str | None, str | None]] = {}
        self.rules_digest = self._digest(all_rules)

        secrets = _env_secrets(os.environ if environ is None else environ)
        steps: list[_Step] = []
        raw_steps: list[_Step] = []
        if secrets:
            plain = dict(secrets)
            steps.append(_Step(_alternation(plain), plain, _whole))
            # scan() falls back to raw text, where a value may be JSON-escaped.
            escaped = {**{_json_escaped(v): lab for v, lab in secrets}, **plain}
            raw_steps.append(_Step(_alternation(escaped), escaped, _whole))
        for rule in all_rules:
            regex = re.compile(rule.pattern)
            span = _SPANS.get(rule) or (_group if "secret" in regex.groupindex else _whole)
            steps.append(_Step(regex, rule.label, span))
        raw_steps += steps[1:] if secrets else steps
        self._steps = tuple(steps)
        self._raw_steps = tuple(raw_steps)

        # The gates: None when a rule has no known anchor (every payload is then walked).
        names = list(self._extra_keys)
        json_forms = [_json_escaped(v).encode("utf-8") for v, _ in secrets]
        raw_forms = [v.encode("utf-8", "surrogatepass") for v, _ in secrets]
        self._gate = _build_gate(all_rules, json_forms, names)
        self._scan_gate = _build_gate(all_rules, [*json_forms, *raw_forms], names)
        # The fast path, unpacked: it runs for every recorded event.
        self._verbatim = self.mode is RedactionMode.FULL
        self._table = self._gate.table if self._gate is not None else b""
        self._search = self._gate.regex.search if self._gate is not None else None
        self._extra_search = (
            self._gate.extra.search
            if self._gate is not None and self._gate.extra is not None
            else None
        )

    def _digest(self, rules: tuple[Rule, ...]) -> str:
        """What decides the output, minus the environment (so goldens recorded on any
        machine carry the same digest)."""
        keys = sorted(SECRET_KEYS | {k.decode() for k in self._extra_keys})
        document = {
            "format": "pytest-rollout/redact/1",
            "mode": self.mode.value,
            "rules": sorted([r.label, r.pattern] for r in rules),
            "keys": keys,
            "key_suffixes": sorted(s.decode() for s, _, _ in _KEY_SUFFIXES),
        }
        return hashlib.sha256(orjson.dumps(document, option=orjson.OPT_SORT_KEYS)).hexdigest()

    def __repr__(self) -> str:
        return f"Redactor(mode={self.mode.value!r}, rules_digest={self.rules_digest[:12]!r})"

    # -- public API ---------------------------------------------------------------------

    def redact(self, value: Any) -> Any:
        """A copy of JSON-like ``value`` with every secret replaced, or ``value`` itself
        when there is none (or in ``full`` mode). ``none`` mode redacts like ``redacted``;
        :meth:`redact_payload` is the one that drops."""
        if self.mode is RedactionMode.FULL:
            return value
        return self._walk(value)

    def redact_payload(self, payload: bytes) -> bytes | None:
        """Redact orjson-encoded ``payload``: the same bytes object when no secret is in
        it, re-encoded bytes (key order kept) when one was hidden, ``None`` in ``none``
        mode when one was found. Raises :class:`orjson.JSONDecodeError` on bytes that
        are not JSON."""
        if self._verbatim:
            return payload
        search = self._search
        if search is not None and search(payload.translate(self._table)) is None:
            extra = self._extra_search
            if extra is None or extra(payload.lower()) is None:
                return payload
        data = orjson.loads(payload)
        redacted = self._walk(data)
        if redacted is data:
            return payload
        if self.mode is RedactionMode.NONE:
            return None
        return orjson.dumps(redacted)

    def contains_secret(self, value: Any) -> bool:
        """Whether ``value`` holds anything :meth:`redact` would hide (in any mode)."""
        return self._first(value) is not None

    def scan(self, data: bytes | bytearray | memoryview) -> str | None:
        """The label of the first secret in the raw bytes of a file (JSON lines, or any
        text), or ``None``. The secret itself is never returned."""
        if not isinstance(data, bytes):
            data = bytes(data)
        gate = self._scan_gate
        size = len(data)
        views = gate.prepare(data) if gate is not None else (b"", b"")
        known = [-1, -1]
        pos = 0
        while pos < size:
            hit = pos if gate is None else gate.next_hit(views, pos, known)
            if hit >= size:
                return None
            start = data.rfind(b"\n", 0, hit) + 1
            end = data.find(b"\n", hit)
            if end < 0:
                end = size
            label = self._line_label(data[start:end])
            if label is not None:
                return label
            pos = end + 1
        return None

    # -- strings --------------------------------------------------------------------------

    def _marker(self, label: str, secret: str) -> str:
        if self.mode is RedactionMode.HASHED:
            digest = hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
            return f"[REDACTED:{label}:sha256:{digest}]"
        return f"[REDACTED:{label}]"

    def _clean(self, text: str) -> bool:
        """Whether the gate rules out any secret in ``text`` (seen as in a payload)."""
        gate = self._gate
        if gate is None:
            return False
        try:
            encoded = orjson.dumps(text)
        except TypeError:  # a lone surrogate: let the rules decide
            return False
        return gate.regex.search(encoded.translate(gate.table)) is None

    def _text(self, text: str) -> str:
        if self._clean(text):
            return text
        # A marker ends in "]", a token boundary: what stood glued to a secret can be one
        # itself once the secret is replaced, so passes repeat until nothing changes.
        result = text
        for _ in range(_MAX_PASSES):
            before = result
            result = self._pass(result)
            if result == before:
                break
        return result

    def _pass(self, text: str) -> str:
        result = text
        for step in self._steps:
            if _MARKER_OPEN in result:
                pieces = _pieces(result)
                parts = [p if marker else self._sub(step, p) for marker, p in pieces]
                if any(part is not piece[1] for part, piece in zip(parts, pieces, strict=True)):
                    result = "".join(parts)
            else:
                result = self._sub(step, result)
        return result

    def _sub(self, step: _Step, text: str) -> str:
        out: list[str] = []
        last = 0
        for start, end, label in step.hits(text):
            out.append(text[last:start])
            out.append(self._marker(label, text[start:end]))
            last = end
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def _text_label(self, text: str, steps: tuple[_Step, ...] | None = None) -> str | None:
        if steps is None:
            if self._clean(text):
                return None
            steps = self._steps
        pieces = _pieces(text) if _MARKER_OPEN in text else [(False, text)]
        for step in steps:
            for marker, piece in pieces:
                if not marker:
                    for _, _, label in step.hits(piece):
                        return label
        return None

    # -- keys -----------------------------------------------------------------------------

    def _key(self, key: str) -> tuple[str, str | None, str | None]:
        """The key with its own secrets hidden, the label of its value if secret, and the
        label of the first secret in the key itself. The key names a secret before or after
        its own secrets are hidden (so that redacting twice changes nothing)."""
        cached = self._key_cache.get(key)
        if cached is None:
            hidden = self._text(key)
            label = self._key_label(key)
            if label is None and hidden is not key:
                label = self._key_label(hidden)
            inner = self._text_label(key) if hidden is not key else None
            cached = (hidden, label, inner)
            if len(self._key_cache) < 4096:
                self._key_cache[key] = cached
        return cached

    def _key_label(self, key: str) -> str | None:
        """The label of a secret-named key. A redaction marker in it names nothing: it
        counts as one letter, which is also how the gate sees it (its "[" ends a word, its
        "R" starts another)."""
        if _MARKER_OPEN in key:
            key = _MARKER.sub("x", key)
        return self._extra_keys.get(_normalize(key)[0]) or _builtin_key_label(key)

    # -- walking --------------------------------------------------------------------------

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if value is None or type(value) in _LEAVES:
            return value
        if isinstance(value, (dict, Mapping)):
            out: dict[Any, Any] | None = None
            for index, (key, item) in enumerate(value.items()):
                new_key, label, _ = self._key(key) if isinstance(key, str) else (key, None, None)
                new_item = self._walk(item) if label is None else self._hide(item, label)
                if out is None:
                    if new_key is key and new_item is item:
                        continue
                    out = dict(list(value.items())[:index])
                out[new_key] = new_item
            return value if out is None else out
        if isinstance(value, list | tuple):
            pair = self._pair_label(value)
            new: list[Any] | None = None
            for index, item in enumerate(value):
                new_item = self._hide(item, pair) if pair and index else self._walk(item)
                if new_item is not item:
                    if new is None:
                        new = list(value)
                    new[index] = new_item
            if new is None:
                return value
            return new if isinstance(value, list) else tuple(new)
        return value

    def _pair_label(self, value: list[Any] | tuple[Any, ...]) -> str | None:
        """The label of a ``[name, value]`` header pair with a secret name."""
        if len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], str):
            return self._key(value[0])[1]
        return None

    def _hide(self, value: Any, label: str) -> Any:
        """``value`` under a secret key: every non-empty string and every number hidden."""
        if isinstance(value, str):
            return self._marker(label, value) if value and not _is_marker(value) else value
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int | float):
            return self._marker(label, str(value))
        if isinstance(value, (dict, Mapping)):
            hidden: dict[Any, Any] = {}
            changed = False
            for key, item in value.items():
                new_key = self._key(key)[0] if isinstance(key, str) else key
                new_item = self._hide(item, label)
                changed = changed or new_key is not key or new_item is not item
                hidden[new_key] = new_item
            return hidden if changed else value
        if isinstance(value, list | tuple):
            items = [self._hide(v, label) for v in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return items if isinstance(value, list) else tuple(items)
        return value

    def _first(self, value: Any) -> str | None:
        """The label of the first secret in ``value`` (what :meth:`_walk` would hide)."""
        if isinstance(value, str):
            return self._text_label(value)
        if value is None or type(value) in _LEAVES:
            return None
        if isinstance(value, (dict, Mapping)):
            for key, item in value.items():
                if isinstance(key, str):
                    _, label, found = self._key(key)
                    if found is not None:
                        return found
                    if label is not None:
                        if self._hidden_label(item, label) is not None:
                            return label
                        continue
                found = self._first(item)
                if found is not None:
                    return found
            return None
        if isinstance(value, list | tuple):
            pair = self._pair_label(value)
            if pair is not None and self._hidden_label(value[1], pair) is not None:
                return pair
            for item in value:
                found = self._first(item)
                if found is not None:
                    return found
        return None

    def _hidden_label(self, value: Any, label: str) -> str | None:
        """``label`` if :meth:`_hide` would change ``value``, else the label of a secret in
        one of its keys, else ``None``."""
        if isinstance(value, str):
            return label if value and not _is_marker(value) else None
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, int | float):
            return label
        if isinstance(value, (dict, Mapping)):
            for key, item in value.items():
                found = self._key(key)[2] if isinstance(key, str) else None
                if found is None and self._hidden_label(item, label) is not None:
                    found = label
                if found is not None:
                    return found
            return None
        if isinstance(value, list | tuple):
            for item in value:
                if self._hidden_label(item, label) is not None:
                    return label
        return None

    # -- scanning raw bytes ---------------------------------------------------------------

    def _line_label(self, line: bytes) -> str | None:
        stripped = line.strip()
        if not stripped:
            return None
        try:
            document = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return self._raw_label(stripped)
        try:
            return self._first(document)
        except RecursionError:
            return self._raw_label(stripped)

    def _raw_label(self, line: bytes) -> str | None:
        """A line that is not JSON: the patterns over its text, and ``"key": "value"``
        pairs read with a small tokenizer."""
        text = line.decode("utf-8", "replace")
        found = self._text_label(text, self._raw_steps)
        if found is not None:
            return found
        for match in _RAW_PAIR.finditer(text):
            key, value, number = match.group(1, 2, 3)
            if value is None and number is None:
                continue
            label = self._key(_json_string(key))[1]
            if label is None:
                continue
            if number is not None:
                return label
            if value and not _is_marker(_json_string(value)):
                return label
        return None


#: A JSON string, with the value after it when it is a key or a pair's name. An opening
#: quote is never right after a backslash, so every start is scanned once.
_RAW_PAIR: Final = re.compile(
    r'(?<!\\)"((?:[^"\\\n]|\\.)*+)"'
    r'(?:[ \t]*+[:,][ \t]*+(?:"((?:[^"\\\n]|\\.)*+)"|(-?[0-9])))?'
)


def _json_string(body: str) -> str:
    try:
        decoded = orjson.loads(f'"{body}"')
    except orjson.JSONDecodeError:
        return body
    return decoded if isinstance(decoded, str) else body


def _build_gate(
    rules: Iterable[Rule], env_forms: list[bytes], extra_names: list[bytes]
) -> _Gate | None:
    anchors = set(_ANCHORS)
    anchored = [(form, _env_anchor(form, anchors)) for form in env_forms]
    builder = _GateBuilder(anchors)
    for rule in rules:
        if not _add_rule_words(builder, rule):
            return None
    _add_key_words(builder)
    for form, at in anchored:
        builder.word(form, at=at)
    return _Gate(builder.table, builder.compile(), _extra_key_gate(extra_names))


def _alternation(values: Mapping[str, str]) -> re.Pattern[str]:
    """Any of ``values``, the longest first, so a value containing another wins."""
    ordered = sorted(values, key=lambda v: (-len(v), v))
    return re.compile("|".join(re.escape(v) for v in ordered))
