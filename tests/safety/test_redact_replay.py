"""Redaction is stable under replay (docs/secrets.md).

A replayed agent is handed text that was redacted when it was recorded, and may concatenate
it with more text before it sends it on; the recording saw the same concatenation of the
live text. Redacting the replayed text must write what the recording wrote, or a golden
fails against itself:

    redact(redact(a) + redact(b)) == redact(a + b)

and, with ``b`` empty, redacting twice changes nothing.

What the property cannot promise, and so what the strings are built to avoid. A marker hides
where its secret stood and what it looked like, not where a longer token around it would
have ended, so a secret must lie whole inside ``a`` or ``b`` in ``a + b`` too:

* a secret starts at a word boundary (whitespace before it): most rules only take a token
  that starts one (``xsk-...`` is no key), and ``redact(b)`` cannot know what ``a`` ends with;
* a secret ends at whitespace, except that of a credential pair (and the named AWS secret
  key), whose value runs on to a terminator: text glued after it belongs to it, on record as
  on replay, and the marker takes that text in (the case a replayed agent meets when it
  glues text to a redacted value). Text glued after a fixed-shape secret (an access key id
  of exactly 16 characters, a Basic credential that must decode) can make it another token
  or none, and no marker can be undone;
* so ``a`` ends with whitespace or with such a credential pair, and ``b`` starts with text
  that may be glued to a value (no word that starts a secret of its own, such as
  ``Bearer``: glued to the pair it is part of the pair's value) up to its first whitespace;
  no lone quote is used as a separator, since a quoted value opened in ``a`` and closed in
  ``b`` is one secret split across the two.

In ``hashed`` mode the digest of a secret that took in glued text differs between the two
sides (the replay never saw the whole secret); runs compare a secret by its label alone
(docs/replay.md), so the property is checked on the labels there.
"""

from __future__ import annotations

import re
from typing import Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_redact import (
    ANTHROPIC,
    AWS_ID,
    AWS_SECRET,
    AZURE_KEY,
    BASIC,
    BEARER,
    DRF_TOKEN,
    GITHUB,
    GITLAB,
    GOOGLE,
    GOOGLE_OAUTH,
    HUGGINGFACE,
    JWT,
    OPENAI,
    PEM,
    PYPI,
    SENDGRID,
    SLACK,
    SLACK_HOOK,
    STRIPE,
    TWILIO,
)

from pytest_rollout.safety.redact import BUILTIN_RULES, RedactionMode, Redactor

#: Bounded and derandomized: the same examples on every run, a few seconds in all.
REPLAY: Final = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: A secret of each built-in rule, with the words around it that make it one.
FIXED: Final = {
    "pem-private-key": PEM,
    "jwt": JWT,
    "anthropic-key": ANTHROPIC,
    "openai-key": OPENAI,
    "github-token": GITHUB,
    "slack-token": SLACK,
    "google-api-key": GOOGLE,
    "stripe-key": STRIPE,
    "gitlab-token": GITLAB,
    "huggingface-token": HUGGINGFACE,
    "sendgrid-key": SENDGRID,
    "google-oauth-token": GOOGLE_OAUTH,
    "aws-access-key": AWS_ID,
    "azure-storage-key": f"AccountKey={AZURE_KEY}",
    "slack-webhook": f"https://hooks.slack.com/services/{SLACK_HOOK}",
    "url-password": "postgres://app:s3cr3t-pw@db.internal:5432/app",
    "query-password": "/login?user=bob&pass=hunter2!",
    "bearer": f"Authorization: Bearer {BEARER}",
    "basic-auth": f"Authorization: Basic {BASIC}",
    "token-auth": f"Authorization: Token {DRF_TOKEN}",
    "twilio-key": TWILIO,
    "pypi-token": PYPI,
}
#: Secrets whose value runs on to a terminator: text may be glued after them.
RUNS_ON: Final = {
    "aws-secret-key": f"aws_secret_access_key={AWS_SECRET}",
    "credential-pair": "api_key=XyZ123abc",
    # Their values run on to a ";" or the end of the line, spaces included.
    "connection-password": "Server=db;Pwd=S3cr3t pw",
    "cookie-header": "Cookie: sid=abc123; theme=dark",
}
#: A quoted pair, closed inside its piece.
QUOTED: Final = '"password": "my secret pass"'
SEPARATORS: Final = [
    " ",
    "\n",
    "\t",
    "=",
    ": ",
    "-",
    "_",
    ".",
    "/",
    "@",
    "?",
    "&",
    ",",
    ";",
    "[",
    "]",
]
PLAIN: Final = ["Paris", "abc", "x", "2024", "key", "token", "password", "Bearer", "sk-", "AKIA"]
WHITESPACE: Final = st.sampled_from([" ", "\n"])

#: What a replayed agent may glue to a value: no word that starts a secret of its own.
GLUE: Final = ["xyz", "2024", "==", ")", ".", "/more+text", "[REDACTED:jwt]", "-", "]"]

plain = st.sampled_from([*SEPARATORS, *PLAIN])
fixed = st.builds(lambda s, e: f" {s}{e}", st.sampled_from([*FIXED.values(), QUOTED]), WHITESPACE)
runs_on = st.builds(lambda s: f" {s}", st.sampled_from(list(RUNS_ON.values())))
pieces = st.lists(st.one_of(plain, fixed, runs_on), max_size=6).map("".join)
glue = st.lists(st.sampled_from(GLUE), max_size=3).map("".join)
#: ``a`` ends with whitespace or with a credential pair ...
heads = st.one_of(
    st.builds(str.__add__, pieces, WHITESPACE), st.builds(str.__add__, pieces, runs_on)
)
#: ... and ``b`` starts with what may be glued to it, then whitespace: no secret spans both.
tails = st.builds(lambda g, w, p: g + w + p, glue, WHITESPACE, pieces) | glue

REDACTED: Final = Redactor(environ={})
HASHED: Final = Redactor(RedactionMode.HASHED, environ={})

_DIGEST: Final = re.compile(r":sha256:[0-9a-f]{64}\]")


def labels_only(text: str) -> str:
    return _DIGEST.sub("]", text)


def test_the_strings_hold_a_secret_of_every_builtin_rule() -> None:
    assert {*FIXED, *RUNS_ON} == {rule.label for rule in BUILTIN_RULES}
    redactor = Redactor(environ={})
    for label, text in {**FIXED, **RUNS_ON}.items():
        assert f"[REDACTED:{label}]" in redactor.redact(text), label


@REPLAY
@given(heads, tails)
def test_redacting_replayed_text_writes_what_the_recording_wrote(a: str, b: str) -> None:
    redact = REDACTED.redact
    assert redact(redact(a) + redact(b)) == redact(a + b)


@REPLAY
@given(heads, tails)
def test_in_hashed_mode_the_labels_agree(a: str, b: str) -> None:
    redact = HASHED.redact
    assert labels_only(redact(redact(a) + redact(b))) == labels_only(redact(a + b))


@REPLAY
@given(st.builds(str.__add__, heads, tails), st.sampled_from([REDACTED, HASHED]))
def test_redacting_twice_changes_nothing(text: str, redactor: Redactor) -> None:
    once = redactor.redact(text)
    assert redactor.redact(once) == once
    assert not redactor.contains_secret(once)


@pytest.mark.parametrize("glued", ["xyz", "==", ")", "[REDACTED:jwt]", "/more+text"])
@pytest.mark.parametrize("label", list(RUNS_ON))
def test_text_glued_to_a_replayed_pair_is_hidden_as_on_record(label: str, glued: str) -> None:
    """The case replay met: an AWS secret key followed by text was a credential pair on
    record and the AWS secret key on replay."""
    secret = RUNS_ON[label]
    recorded = REDACTED.redact(secret + glued)
    assert recorded.endswith(f"[REDACTED:{label}]")
    assert REDACTED.redact(REDACTED.redact(secret) + glued) == recorded
