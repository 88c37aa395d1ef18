"""The rule tables of redaction (docs/secrets.md): what counts as a secret, and its label.

Three tables, one per layer of :class:`~pytest_rollout.safety.redact.Redactor`:

- **Patterns.** :data:`BUILTIN_RULES`, the regular expressions applied to every string, with
  the checks some of them need beyond the expression (:data:`SPAN_CHECKS`).
- **Keys.** :data:`SECRET_KEYS` and :data:`KEY_SUFFIXES`: the names whose value is hidden
  whatever it looks like, read through :func:`normalize_key`.
- **Environment.** The words that make an environment variable's value a secret
  (:func:`env_secrets`).

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

The gate (:mod:`pytest_rollout.safety.redact_gate`) knows the words of each built-in rule:
a rule added here needs its words there too, or every payload is walked (and a rule added
to :data:`RUNS_ON`, the words of its marker).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from ..errors import RolloutError

__all__ = [
    "BUILTIN_RULES",
    "KEY_SUFFIXES",
    "RUNS_ON",
    "SECRET_KEYS",
    "SEGMENT_KEYS",
    "SPAN_CHECKS",
    "RedactionError",
    "Rule",
    "SpanCheck",
    "builtin_key_label",
    "env_name_is_secret",
    "env_secrets",
    "normalize_key",
    "suffix_label",
]


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
#: One character of a bare credential value: it runs to whitespace, a quote, & , ; or a
#: backslash.
_PAIR_VALUE: Final = rf"[^\s\"'&,;\\{_CTRL}]"
#: "secret key" and "secret access key", the words joined or split by "_", "-" or ".", as
#: fixed-width lookbehinds (a name ending so, e.g. aws_secret_access_key or SecretAccessKey).
_SECRET_KEY_NAMES: Final = "|".join(
    f"(?<=(?i:secret{middle}key))"
    for middle in ("", "[_.-]", "access", "access[_.-]", "[_.-]access", "[_.-]access[_.-]")
)
#: A bare AWS secret access key: forty characters of base64 that are not all hex (a git SHA
#: is), standing alone as a token.
_AWS_SECRET_TOKEN: Final = (
    r"(?<![A-Za-z0-9/+=])(?=[0-9a-fA-F]{0,39}+[g-zG-Z/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
)
#: What may stand between an access key id and its secret: up to 32 runs of separators and
#: of other tokens (the rows of a credentials CSV, ``aws configure``'s prompts).
_AWS_GAP: Final = rf"(?:[^A-Za-z0-9/+=]++|(?!{_AWS_SECRET_TOKEN})[A-Za-z0-9/+=]++){{0,32}}+"
_AWS_SECRET: Final = Rule(
    "aws-secret-key",
    # Forty characters of base64 are a secret only after a name that says so, or after an
    # access key id (AKIA..., ASIA...) in the same string. The named form starts at the "k"
    # of "key" (a class with the id's "A", so the engine skips ahead to either).
    rf"(?:[Kk](?i:ey)(?:{_SECRET_KEY_NAMES})"
    r"(?:[\"']?[ \t]*+(?>=>|[:=])[ \t]*+[\"']?|[ \t]++)"
    r"|A(?<![A-Za-z0-9]A)(?:KIA|SIA)[A-Z0-9]{16}(?![A-Z0-9])"
    + _AWS_GAP
    + rf"(?={_AWS_SECRET_TOKEN}))"
    # Its value runs on to where a credential pair's bare value ends, as a pair's would:
    # otherwise forty characters followed by more are this rule's secret alone and a pair's
    # with the text after them, and a replayed agent that glues text to the marker sees one
    # label where the recording wrote the other.
    r"(?P<secret>[A-Za-z0-9/+]{40}" + _PAIR_VALUE + r"*+)",
)
_GITLAB: Final = Rule(
    "gitlab-token",
    # Personal, deploy, runner, pipeline-trigger and feed tokens; newer ones carry dotted parts.
    r"gl(?<![A-Za-z0-9_-]gl)(?:pat|dt|rt|ptt|ft)-[A-Za-z0-9_-]{20,}+(?:\.[A-Za-z0-9_-]++)*+",
)
_HUGGINGFACE: Final = Rule(
    "huggingface-token",
    # At least one capital or digit, so that a long snake_case name is left alone.
    r"hf_(?<![A-Za-z0-9_-]hf_)(?=[a-z]*+[A-Z0-9])[A-Za-z0-9]{30,}+",
)
_SENDGRID: Final = Rule(
    "sendgrid-key", r"SG\.(?<![A-Za-z0-9_-]SG\.)[A-Za-z0-9_-]{16,}+\.[A-Za-z0-9_-]{16,}+"
)
_GOOGLE_OAUTH: Final = Rule(
    "google-oauth-token", r"ya29\.(?<![A-Za-z0-9_-]ya29\.)[A-Za-z0-9_-]{20,}+"
)
_SLACK_WEBHOOK: Final = Rule(
    "slack-webhook",
    # The path of a webhook URL is its credential: team, bot or workflow, then the secret.
    r"hooks(?<![A-Za-z0-9_.-]hooks)\.slack\.com/(?:services|workflows|triggers)/"
    r"(?P<secret>T[A-Za-z0-9]++/[A-Za-z0-9_/-]++)",
)
_AZURE_STORAGE: Final = Rule(
    "azure-storage-key",
    # AccountKey= (storage) and SharedAccessKey= (Service Bus, Event Hubs) in a connection
    # string; the value is base64. Entered at the "k" of "key", like the other key names.
    r"[Kk](?i:ey)(?:(?<=(?i:accountkey))|(?<=(?i:sharedaccesskey)))[ \t]*+=[ \t]*+"
    r"(?P<secret>[A-Za-z0-9+/]{20,}+={0,2}+)",
)
_TWILIO: Final = Rule(
    "twilio-key",
    # An API key's SID (its secret is 32 characters of nothing in particular: found only
    # under a secret name). An account SID (AC...) is an identifier, left alone.
    r"SK(?<![A-Za-z0-9_-]SK)[0-9a-f]{32}(?![A-Za-z0-9_-])",
)
_PYPI: Final = Rule(
    "pypi-token",
    # A macaroon whose first bytes name pypi.org (or test.pypi.org), base64url-encoded.
    r"pypi-(?<![A-Za-z0-9_-]pypi-)(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{16,}+",
)
#: Where a connection string's value ends: at a ";", the end of the line, a quote or a
#: backslash (spaces are part of it, as ODBC has them).
_CONNECTION_VALUE: Final = rf"[^;\r\n\"'\\{_CTRL}]"
_CONNECTION_PASSWORD: Final = Rule(
    "connection-password",
    # Pwd= or Password= after a ";", an attribute of an ODBC or ADO.NET connection string;
    # the value runs to the next ";" (one in braces, "}}" escaping a brace, is part of it).
    # Entered at the "w", as the key words are; a PWD= elsewhere is the shell's directory.
    r"[Ww](?:(?:(?<=;[Pp][Ww])|(?<=;[ \t][Pp][Ww]))[Dd]"
    r"|(?:(?<=;[Pp][Aa][Ss][Ss][Ww])|(?<=;[ \t][Pp][Aa][Ss][Ss][Ww]))(?i:ord))"
    r"[ \t]*+=[ \t]*+(?!\[REDACTED:)"
    rf"(?P<secret>(?:\{{(?:[^}}{_CTRL}]|\}}\}})*+\}}?+)?+{_CONNECTION_VALUE}*+)",
)
#: Where a cookie header's value ends: at the end of the line, a quote or a backslash.
_HEADER_VALUE: Final = rf"[^\r\n\"'\\{_CTRL}]"
_COOKIE_HEADER: Final = Rule(
    "cookie-header",
    # "Cookie: name=value; ..." and "Set-Cookie: name=value; attributes": every value of the
    # line, the header's name kept. Entered at the "k"; a cookie without "name=" is prose.
    r"[Kk](?<![A-Za-z0-9_](?i:coo)[Kk])(?<=(?i:cook))(?i:ie)[ \t]*+:[ \t]*+"
    rf"(?P<secret>[^\s=;,\"'\\{_CTRL}]++={_HEADER_VALUE}*+)",
)
_QUERY_PASSWORD: Final = Rule(
    "query-password",
    # ?pass=, &pwd=, &password=, ?passphrase= in a URL's query string.
    r"[?&](?:(?i:pass)(?:(?i:word|wd|phrase))?+|(?i:pwd))="
    rf"(?P<secret>[^&#\s\"'<>\\{_CTRL}]++)",
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
_TOKEN_AUTH: Final = Rule(
    "token-auth",
    # "Authorization: Token <credential>" (Django REST framework and others); the credential
    # holds a digit, so "Authorization: Token required" is prose.
    rf"{_ci('authorization')}[\"']?[ \t]*+(?>=>|[:=])[ \t]*+[\"']?{_ci('token')}[ \t]++"
    r"(?P<secret>(?=[A-Za-z._~+/-]*+[0-9])[A-Za-z0-9._~+/-]{8,}+=*+)",
)
_KEY_NAMES: Final = "|".join(
    f"(?<=(?i:{word}{sep}key))"
    for word in ("api", "private", "secret", "secretaccess", "secret[_.-]access", "subscription")
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
    # runs to its closing quote, a bare one to whitespace, a quote, & , or ;. A "::" is a
    # scope (a test id's TestToken::test_refresh), not a pair.
    _PAIR_WORD + r"[\"']?[ \t]*+(?>=>|[:=])(?!:)[ \t]*+[\"']?"
    r"(?!\[REDACTED:)(?!(?i:null|true|false|none)(?![A-Za-z0-9_]))"
    rf"(?P<secret>(?<=\")[^\"{_CTRL}]++(?=\")|(?<=')[^'{_CTRL}]++(?=')"
    rf"|{_PAIR_VALUE}++)",
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
    _GITLAB,
    _HUGGINGFACE,
    _SENDGRID,
    _GOOGLE_OAUTH,
    _TWILIO,
    _PYPI,
    _AWS_SECRET,
    _AWS_ACCESS,
    _AZURE_STORAGE,
    _SLACK_WEBHOOK,
    _URL_PASSWORD,
    _QUERY_PASSWORD,
    _CONNECTION_PASSWORD,
    _COOKIE_HEADER,
    _BEARER,
    _BASIC,
    _TOKEN_AUTH,
    _CREDENTIAL_PAIR,
)


#: The rules whose secret runs on to the end of a value, each with one character of such a
#: value (a credential pair's bare value ends at whitespace, a quote, & , or ;, a connection
#: string's password at a ; or the end of the line, a cookie header at the end of the line).
#: A fresh redaction leaves one of their markers followed only by such an end, so text found
#: glued right after the marker (a replayed agent that concatenates a redacted value with
#: more text) was part of the same secret when the run was recorded: the engine hides it
#: with the marker, and a recording and its replay write the same text. Their markers have
#: words in the gate too.
RUNS_ON: Final[Mapping[Rule, str]] = {
    _AWS_SECRET: _PAIR_VALUE,
    _CREDENTIAL_PAIR: _PAIR_VALUE,
    _CONNECTION_PASSWORD: _CONNECTION_VALUE,
    _COOKIE_HEADER: _HEADER_VALUE,
}


#: Where the secret of a match is: its (start, end), or ``None`` when the match is no secret.
SpanCheck = Callable[[re.Match[str]], tuple[int, int] | None]


def _url_password_span(match: re.Match[str]) -> tuple[int, int] | None:
    """A URL's password is the group's part before its last "@" (a raw "@" in a password
    is common)."""
    start, end = match.span("secret")
    at = match.string.rfind("@", start, end)
    return (start, at) if at > start else None


def _basic_span(match: re.Match[str]) -> tuple[int, int] | None:
    """A Basic credential is one only when it decodes to printable "user:password"."""
    credential = match.group("secret")
    if len(credential) % 4:
        return None
    try:
        text = base64.b64decode(credential, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return match.span("secret") if ":" in text and text.isprintable() else None


#: Built-in checks beyond the regular expression, keyed by rule.
SPAN_CHECKS: Final[Mapping[Rule, SpanCheck]] = {
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
        "pwd",
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
        "signingkey",
        "subscriptionkey",
        "credential",
        "credentials",
        "xamzsecuritytoken",
        "dbpass",
        "xauth",
        "xauthkey",
    }
)

#: (normalized suffix, final word written unbroken, label), longest suffixes first. Every
#: name of SECRET_KEYS ends with one of these suffixes.
KEY_SUFFIXES: Final = (
    (b"subscriptionkey", b"key", "subscription-key"),
    (b"secretaccesskey", b"key", "secret"),
    (b"authorization", b"authorization", "authorization"),
    (b"credentials", b"credentials", "credentials"),
    (b"credential", b"credential", "credentials"),
    (b"signingkey", b"key", "secret"),
    (b"privatekey", b"key", "private-key"),
    (b"passwords", b"passwords", "password"),
    (b"secretkey", b"key", "secret"),
    (b"xauthkey", b"key", "api-key"),
    (b"password", b"password", "password"),
    (b"secrets", b"secrets", "secret"),
    (b"passwd", b"passwd", "password"),
    (b"secret", b"secret", "secret"),
    (b"cookie", b"cookie", "cookie"),
    (b"apikey", b"key", "api-key"),
    (b"token", b"token", "token"),
    (b"pwd", b"pwd", "password"),
)
_NOT_ALNUM: Final = bytes(b for b in range(256) if not (0x30 <= b <= 0x39 or 0x61 <= b <= 0x7A))


def normalize_key(key: str) -> tuple[bytes, bytes]:
    """``key`` ASCII-lowercased: every other character dropped, and only trailing ones
    dropped (a non-ASCII character separates words, as punctuation does)."""
    lowered = key.encode("ascii", "replace").lower()
    return lowered.translate(None, _NOT_ALNUM), lowered.rstrip(_NOT_ALNUM)


#: Where a word of a key starts: its start, after a character that is no letter or digit,
#: or at a capital after a small letter or digit (``userPin``).
_WORD_START: Final = r"(?:\A|(?<=[^A-Za-z0-9])|(?<=[a-z0-9])(?=[A-Z]))"
#: Short names that are a secret only as the last words of a key, in the key's own spelling
#: (``db_pass``, ``DB_PASS``, ``dbpass``, ``dbPass``; ``x-auth``, ``X_Auth``, ``xauth``),
#: never inside a word (``dbpassport``, ``mydbpass``, ``oauth``, ``x_author``). The gate
#: looks for these spellings (the ``b`` and ``x`` are anchors).
SEGMENT_KEYS: Final = tuple(
    (re.compile(_WORD_START + pattern + r"[^A-Za-z0-9]*+\Z"), label)
    for pattern, label in (
        (r"(?:[Dd]b|DB)[-_.]?+(?:[Pp]ass|PASS)", "password"),
        (r"[Xx][-_.]?+(?:[Aa]uth|AUTH)", "authorization"),
    )
)


def builtin_key_label(key: str) -> str | None:
    """The label of a key the built-in table names a secret, or ``None``."""
    name, stripped = normalize_key(key)
    for suffix, word, label in KEY_SUFFIXES:
        if name.endswith(suffix) and stripped.endswith(word):
            return label
    for regex, label in SEGMENT_KEYS:
        if regex.search(key) is not None:
            return label
    return None


def suffix_label(name: bytes) -> str | None:
    """The label of the built-in suffix that normalized ``name`` ends with, if any (how an
    extra key given by the user is labelled)."""
    return next((label for suffix, _, label in KEY_SUFFIXES if name.endswith(suffix)), None)


# -- the environment layer ------------------------------------------------------------

#: Parts of a variable's name that make its value a secret, found anywhere in the name
#: (``PGPASSWORD``, ``MYSQL_PWD``, ``HF_TOKEN``, ``OPENAI_API_KEY``, ``VAULT_AUTH``).
_ENV_PARTS: Final = ("PASSWORD", "PASSWD", "PWD", "TOKEN", "SECRET", "KEY", "CREDENTIAL", "AUTH")
#: Short words that make a value a secret only as a whole ``_``-separated word of the name
#: (inside a word they are ordinary: ``PASSPORT``, ``PATH``).
_ENV_WORDS: Final = frozenset({"PASS", "DSN", "PAT"})
#: What is taken out of a name before the parts are looked for: known variables whose value
#: is no secret although their name holds one of the parts. ``PWD`` and ``OLDPWD`` are
#: working directories, ``XAUTHORITY`` the path of the X cookie file (not the cookie),
#: ``AUTHOR`` the ``GIT_AUTHOR_*`` name, e-mail and date (``AUTHORIZATION`` stays a secret),
#: ``KEYBOARD``, ``KEYMAP``, ``KEYTABLE`` a keyboard layout, ``TOKENIZERS`` the switches of
#: Hugging Face's tokenizers (``TOKENIZERS_PARALLELISM``).
_ENV_NOT_SECRET: Final = re.compile(
    r"^(?:OLD)?PWD$|XAUTHORITY|AUTHOR(?!IZ)|KEYBOARD|KEYMAP|KEYTABLE|TOKENIZERS"
)
#: The last word of a name that holds settings, not a secret (``NEXTAUTH_URL``,
#: ``AUTH0_DOMAIN``, ``SSH_KEY_PATH``, ``API_TOKEN_FILE``, ``AUTH_MODE``): each occurrence of
#: such a value in a run would be hidden, and with it every URL or word that repeats it. A
#: password inside a URL is found by the patterns all the same.
_ENV_SETTING_WORDS: Final = frozenset(
    {"URL", "URI", "HOST", "DOMAIN", "ENDPOINT", "REGION", "PATH", "FILE", "DIR", "MODE", "TYPE"}
)
_ENV_MIN_LENGTH: Final = 8


def env_name_is_secret(name: str) -> bool:
    """Whether the value of the environment variable ``name`` is treated as a secret."""
    upper = _ENV_NOT_SECRET.sub("_", name.upper())
    words = upper.split("_")
    if len(words) > 1 and words[-1] in _ENV_SETTING_WORDS:
        return False
    if any(part in upper for part in _ENV_PARTS):
        return True
    return not _ENV_WORDS.isdisjoint(words)


def env_secrets(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(value, label) of every secret-looking variable, longest value first. Values shorter
    than 8 characters, absolute paths and plain numbers are left out: they would hide
    ordinary text (the working directory in every path, a port number)."""
    found: dict[str, str] = {}
    for name in sorted(environ):
        value = environ[name]
        if not isinstance(value, str) or len(value) < _ENV_MIN_LENGTH:
            continue
        if value.startswith("/") or value.isdigit():
            continue
        if env_name_is_secret(name):
            found.setdefault(value, "env:" + re.sub(r"[^A-Za-z0-9_.:-]", "_", name))
    return sorted(found.items(), key=lambda item: (-len(item[0]), item[0]))
