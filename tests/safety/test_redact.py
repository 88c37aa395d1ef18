"""Unit tests for redaction (docs/secrets.md): secrets never reach disk.

Every token below is made up at run time from a fixed seed, so that no string in this file
looks like a real credential to a secret scanner.
"""

from __future__ import annotations

import base64
import hashlib
import json
import pickle
import random
import re
import string
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rollout.errors import RolloutError
from pytest_rollout.format.lines import LineMaker
from pytest_rollout.safety.redact import (
    BUILTIN_RULES,
    SECRET_KEYS,
    RedactionError,
    RedactionMode,
    Redactor,
    Rule,
)

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "_-"
UPPER = string.ascii_uppercase + string.digits
NO_ENV: dict[str, str] = {}
LABELS = {rule.label for rule in BUILTIN_RULES}


def fake(prefix: str, length: int, alphabet: str = ALNUM, *, seed: str = "") -> str:
    """``prefix`` and ``length`` characters that look random and are always the same."""
    rnd = random.Random(f"{prefix}/{length}/{seed}")
    return prefix + "".join(rnd.choice(alphabet) for _ in range(length))


def marker(label: str) -> str:
    return f"[REDACTED:{label}]"


JWT = ".".join([fake("eyJ", 33, B64URL), fake("eyJ", 60, B64URL), fake("", 43, B64URL)])
AWS_ID = fake("AKIA", 16, UPPER)
AWS_SECRET = fake("", 40, ALNUM + "/+")
OPENAI = fake("sk-proj-", 48, B64URL)
OPENAI_LEGACY = fake("sk-", 48)
OPENAI_SERVICE = fake("sk-svcacct-", 40, B64URL)
ANTHROPIC = fake("sk-ant-api03-", 93, B64URL) + "AA"
GITHUB = fake("gh" + "p_", 36)
GITHUB_PAT = fake("github" + "_pat_", 82, ALNUM + "_")
SLACK = "xo" + "xb-" + fake("", 12, string.digits) + "-" + fake("", 24)
GOOGLE = fake("AI" + "za", 35, B64URL)
STRIPE = fake("sk" + "_live_", 24)
PEM_BODY = "\n".join(fake("", 64, ALNUM + "+/", seed=str(i)) for i in range(4))
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
BASIC = base64.b64encode(b"alice:correct-horse-battery").decode()
BEARER = fake("", 32, B64URL, seed="bearer")
GITLAB = fake("gl" + "pat-", 20, B64URL)
HUGGINGFACE = fake("h" + "f_", 34)
SENDGRID = fake("S" + "G.", 22, B64URL) + "." + fake("", 43, B64URL)
GOOGLE_OAUTH = fake("ya" + "29.", 120, B64URL)
SLACK_HOOK = "/".join([fake("T", 10, UPPER), fake("B", 10, UPPER), fake("", 24)])
AZURE_KEY = fake("", 86, ALNUM + "+/") + "=="
HEX = string.digits + "abcdef"
APIM_KEY = fake("", 32, HEX)
DRF_TOKEN = fake("", 40, HEX)
TWILIO = fake("S" + "K", 32, HEX)
TWILIO_ACCOUNT = fake("A" + "C", 32, HEX)
PYPI = fake("pypi-" + "AgEIcHlwaS5vcmc", 120, B64URL)
GIT_SHA = fake("", 40, HEX, seed="sha")

#: (text, redacted text): every built-in rule, with the text around the secret kept.
POSITIVES = [
    (f"token {JWT} expires", "token [REDACTED:jwt] expires"),
    (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:jwt]"),
    (f"key:\n{PEM}\ndone", "key:\n[REDACTED:pem-private-key]\ndone"),
    (
        f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----!",
        "[REDACTED:pem-private-key]!",
    ),
    (
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----",
        "[REDACTED:pem-private-key]",
    ),
    (f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}", "[REDACTED:pem-private-key]"),
    (
        f"cut: -----BEGIN ENCRYPTED PRIVATE KEY-----\n{PEM_BODY[:70]}",
        "cut: [REDACTED:pem-private-key]",
    ),
    (f"id={AWS_ID}, region=eu-west-1", "id=[REDACTED:aws-access-key], region=eu-west-1"),
    (f"({fake('ASIA', 16, UPPER)})", "([REDACTED:aws-access-key])"),
    (
        f"aws_secret_access_key = {AWS_SECRET}\nregion = us-east-1",
        "aws_secret_access_key = [REDACTED:aws-secret-key]\nregion = us-east-1",
    ),
    (f'{{"SecretAccessKey": "{AWS_SECRET}"}}', '{"SecretAccessKey": "[REDACTED:aws-secret-key]"}'),
    (
        f"export AWS_SECRET_ACCESS_KEY {AWS_SECRET}",
        "export AWS_SECRET_ACCESS_KEY [REDACTED:aws-secret-key]",
    ),
    (
        "postgres://app:s3cr3t-pw@db.internal:5432/app",
        "postgres://app:[REDACTED:url-password]@db.internal:5432/app",
    ),
    ("mysql://root:hunter2@localhost/test", "mysql://root:[REDACTED:url-password]@localhost/test"),
    (
        "mongodb+srv://me@corp.example:p@ss:w0rd@cluster0.example.net/db",
        "mongodb+srv://me@corp.example:[REDACTED:url-password]@cluster0.example.net/db",
    ),
    ("redis://:topsecret@cache:6379/0", "redis://:[REDACTED:url-password]@cache:6379/0"),
    ("amqp://guest:guest123@mq//", "amqp://guest:[REDACTED:url-password]@mq//"),
    (
        "see https://bot:tok3n@example.com/path?x=1 now",
        "see https://bot:[REDACTED:url-password]@example.com/path?x=1 now",
    ),
    (f"OPENAI_API_KEY={OPENAI}", "OPENAI_API_KEY=[REDACTED:openai-key]"),
    (f"key {OPENAI_LEGACY}.", "key [REDACTED:openai-key]."),
    (f"'{OPENAI_SERVICE}'", "'[REDACTED:openai-key]'"),
    (f"x-api-key: {ANTHROPIC}", "x-api-key: [REDACTED:anthropic-key]"),
    (
        f"git clone https://{GITHUB}@github.com/o/r",
        "git clone https://[REDACTED:github-token]@github.com/o/r",
    ),
    (f"token={GITHUB_PAT}&x", "token=[REDACTED:github-token]&x"),
    (f"slack {SLACK} ok", "slack [REDACTED:slack-token] ok"),
    (f"maps?key={GOOGLE}", "maps?key=[REDACTED:google-api-key]"),
    (f"stripe {STRIPE}", "stripe [REDACTED:stripe-key]"),
    (f"test {fake('sk' + '_test_', 24)}", "test [REDACTED:stripe-key]"),
    (f"restricted {fake('rk' + '_live_', 24)}", "restricted [REDACTED:stripe-key]"),
    (
        "GET /v1/items?api_key=XyZ123abc&page=2",
        "GET /v1/items?api_key=[REDACTED:credential-pair]&page=2",
    ),
    ("apikey=abc123def, next", "apikey=[REDACTED:credential-pair], next"),
    ("SECRET_KEY = 'django-insecure-abc'", "SECRET_KEY = '[REDACTED:credential-pair]'"),
    ("access_token: ya29.a0AfH6SMB", "access_token: [REDACTED:credential-pair]"),
    ("Auth_Token=abc;path=/", "Auth_Token=[REDACTED:credential-pair];path=/"),
    ("client_secret=GOCSPX-abc123", "client_secret=[REDACTED:credential-pair]"),
    (
        '{"password": "my secret pass", "user": "bob"}',
        '{"password": "[REDACTED:credential-pair]", "user": "bob"}',
    ),
    ("PASSWORD: hunter2\nuser: bob", "PASSWORD: [REDACTED:credential-pair]\nuser: bob"),
    (f"Authorization: Bearer {BEARER}", "Authorization: Bearer [REDACTED:bearer]"),
    (
        f"curl -H 'authorization: bearer {BEARER}'",
        "curl -H 'authorization: bearer [REDACTED:bearer]'",
    ),
    (f"Authorization: Basic {BASIC}", "Authorization: Basic [REDACTED:basic-auth]"),
    (
        "DefaultEndpointsProtocol=https;AccountName=acme;"
        f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
        "DefaultEndpointsProtocol=https;AccountName=acme;"
        "AccountKey=[REDACTED:azure-storage-key];EndpointSuffix=core.windows.net",
    ),
    (
        f"Endpoint=sb://bus.example.net/;SharedAccessKeyName=root;SharedAccessKey={AZURE_KEY[:43]}=",
        "Endpoint=sb://bus.example.net/;SharedAccessKeyName=root;"
        "SharedAccessKey=[REDACTED:azure-storage-key]",
    ),
    (
        f"Ocp-Apim-Subscription-Key: {APIM_KEY}\r\nHost: api.example.net",
        "Ocp-Apim-Subscription-Key: [REDACTED:credential-pair]\r\nHost: api.example.net",
    ),
    (
        f"curl -H 'Authorization: Token {DRF_TOKEN}' https://api.example.net",
        "curl -H 'Authorization: Token [REDACTED:token-auth]' https://api.example.net",
    ),
    (
        "GET /login?user=bob&pass=hunter2!&next=/",
        "GET /login?user=bob&pass=[REDACTED:query-password]&next=/",
    ),
    ("https://x.example/?pwd=s3cr3t#top", "https://x.example/?pwd=[REDACTED:query-password]#top"),
    ("/api?Password=Tr0ub4dor&x=1", "/api?Password=[REDACTED:query-password]&x=1"),
    (f"gitlab {GITLAB}.", "gitlab [REDACTED:gitlab-token]."),
    (f"HF token {HUGGINGFACE} set", "HF token [REDACTED:huggingface-token] set"),
    (f"sendgrid: {SENDGRID}", "sendgrid: [REDACTED:sendgrid-key]"),
    (f"oauth {GOOGLE_OAUTH} ok", "oauth [REDACTED:google-oauth-token] ok"),
    (
        f"POST https://hooks.slack.com/services/{SLACK_HOOK} done",
        "POST https://hooks.slack.com/services/[REDACTED:slack-webhook] done",
    ),
    (
        f"twilio {TWILIO}, account {TWILIO_ACCOUNT}",
        f"twilio [REDACTED:twilio-key], account {TWILIO_ACCOUNT}",
    ),
    (f"twine upload -p {PYPI} dist/*", "twine upload -p [REDACTED:pypi-token] dist/*"),
    (
        "Driver={ODBC Driver 18};Server=db;Uid=sa;Pwd=S3cr3t pw!;Encrypt=yes",
        "Driver={ODBC Driver 18};Server=db;Uid=sa;Pwd=[REDACTED:connection-password];Encrypt=yes",
    ),
    (
        "Server=db;User ID=sa;Password={a;b}}c d};Database=x",
        "Server=db;User ID=sa;Password=[REDACTED:connection-password];Database=x",
    ),
    ('conn("Server=db; PWD = hunter2")', 'conn("Server=db; PWD = [REDACTED:connection-password]")'),
    (
        "Cookie: sessionid=abc123; csrftoken=xyz\r\nHost: a.example",
        "Cookie: [REDACTED:cookie-header]\r\nHost: a.example",
    ),
    (
        "set-cookie: id=a3fWa; Expires=Thu, 21 Oct 2021 07:28:00 GMT; HttpOnly",
        "set-cookie: [REDACTED:cookie-header]",
    ),
    (
        f"User,Access key ID,Secret access key\nbob,{AWS_ID},{AWS_SECRET}\n",
        "User,Access key ID,Secret access key\nbob,[REDACTED:aws-access-key],"
        "[REDACTED:aws-secret-key]\n",
    ),
    (
        f"AWS Access Key ID [None]: {AWS_ID}\nAWS Secret Access Key [None]: {AWS_SECRET}\n",
        "AWS Access Key ID [None]: [REDACTED:aws-access-key]\n"
        "AWS Secret Access Key [None]: [REDACTED:aws-secret-key]\n",
    ),
    (f"{AWS_ID} at commit {GIT_SHA}", f"[REDACTED:aws-access-key] at commit {GIT_SHA}"),
]

#: Ordinary text that no rule may touch.
NEGATIVES = [
    "The weather in Paris is partly cloudy, around 21 degrees.",
    "Use a Bearer token in the header; bearer authentication is described in RFC 6750.",
    "A basic understanding of the task-force report and risk-assessment is enough.",
    "sk-learn is the usual short name; ask-me-anything-about-this-long-slug-text",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "uuid 123e4567-e89b-12d3-a456-426614174000 and AKIA alone",
    "https://example.com:8080/path?q=1&lang=en and http://user@host.example/x",
    "mailto:bob@example.com, ftp://ftp.example.com/pub/file.tar.gz",
    "data:image/png;base64," + fake("iVBORw0KGgo", 400, ALNUM + "+/") + "==",
    "a 40 character value " + AWS_SECRET + " with no name before it",
    "[REDACTED:jwt] [REDACTED:api-key] [REDACTED:password:sha256:" + "0" * 64 + "]",
    "password rules: at least 12 characters",
    "The token budget was exceeded; max_tokens=1024 and input_tokens: 120.",
    "password=null, token: true, secret=None",
    "eyJhbGciOiJIUzI1NiJ9 alone is not a token",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "tests/test_auth.py::TestToken::test_refresh[Secret::new]",
    # Near misses of each rule below.
    "AccountName=acme;AccountKey=;EndpointSuffix=core.windows.net and AccountKey=short",
    "the Ocp-Apim-Subscription-Key header goes on every request",
    "Authorization: Token required for every endpoint; the Token authentication scheme",
    "https://x.example/?passenger=3&passage=north&compass=12345678 and ?pass=&x=1",
    "glpat- is GitLab's prefix; glpat-short and the glpatterns module",
    "hf_hub_download and hf_transfer_enabled_for_all_of_the_models_here are functions",
    "SG.short.name and SG.a.b are not keys",
    "ya29. starts a Google token; ya29.tooshort",
    "see https://hooks.slack.com/services/ and https://api.slack.com/messaging/webhooks",
    f"account {TWILIO_ACCOUNT} and SK{(HEX * 2)[:31]} and SKU-{HEX * 2}",
    "pypi-simple and pypi-AgEIcHlwaS5vcmc alone",
    "PWD=/work/main and OLDPWD=/tmp; Password is required",
    "cookie: chocolate chip; the Set-Cookie header sets one",
    f"commit {GIT_SHA} and the tree {GIT_SHA[::-1]}",
]

USAGE = {
    "usage": {
        "input_tokens": 120,
        "output_tokens": 40,
        "cache_read_input_tokens": 0,
        "total_tokens": 160,
        "max_tokens": 1024,
        "num_tokens": 3,
        "token_count": 7,
    },
    "tokenizer": "cl100k_base",
    "keys": ["a", "b"],
    "key_id": "k1",
    "password_hint": "your pet's name",
    "stop_reason": "end_turn",
}


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(environ=NO_ENV)


@pytest.fixture(scope="module")
def one_redactor() -> Redactor:
    """One redactor for every example of a property, as a session keeps one for every event
    it records (building one compiles its gates: milliseconds, most of a small example)."""
    return Redactor(environ=NO_ENV)


# -- the pattern table --------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), POSITIVES)
def test_each_rule_hides_the_secret_and_keeps_the_text_around_it(
    redactor: Redactor, text: str, expected: str
) -> None:
    assert redactor.redact(text) == expected
    assert redactor.contains_secret(text)


def test_every_builtin_rule_has_a_positive_example() -> None:
    found = {label for _, out in POSITIVES for label in re.findall(r"\[REDACTED:([^\]]+)\]", out)}
    assert found == LABELS


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_text_is_left_alone(redactor: Redactor, text: str) -> None:
    assert redactor.redact(text) is text
    assert not redactor.contains_secret(text)
    assert redactor.scan(orjson.dumps({"content": text})) is None


def test_anthropic_keys_are_not_taken_for_openai_keys(redactor: Redactor) -> None:
    assert redactor.redact(ANTHROPIC) == marker("anthropic-key")
    openai_only = Redactor(rules=[r for r in BUILTIN_RULES if r.label == "openai-key"], environ={})
    assert openai_only.redact(ANTHROPIC) is ANTHROPIC


def test_a_jwt_inside_a_bearer_header_is_labelled_as_a_jwt(redactor: Redactor) -> None:
    assert redactor.redact(f"Bearer {JWT}") == "Bearer [REDACTED:jwt]"


def test_basic_auth_needs_a_user_and_password_inside(redactor: Redactor) -> None:
    not_a_pair = base64.b64encode(b"just-some-bytes!").decode()
    assert redactor.redact(f"Basic {not_a_pair}") == f"Basic {not_a_pair}"


def test_several_secrets_in_one_string(redactor: Redactor) -> None:
    text = f"a={AWS_ID} b={GITHUB} c=postgres://u:pw12345@h/db"
    assert redactor.redact(text) == (
        "a=[REDACTED:aws-access-key] b=[REDACTED:github-token] c=postgres://u:[REDACTED:url-password]@h/db"
    )


def test_secrets_in_dict_keys_are_hidden_too(redactor: Redactor) -> None:
    assert redactor.redact({GITHUB: 1, "plain": GITHUB}) == {
        marker("github-token"): 1,
        "plain": marker("github-token"),
    }


# -- the key layer ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("password", "password"),
        ("PASSWORD", "password"),
        ("db_password", "password"),
        ("passwd", "password"),
        ("api_key", "api-key"),
        ("apiKey", "api-key"),
        ("API_KEY", "api-key"),
        ("X-Api-Key", "api-key"),
        ("x_api_key", "api-key"),
        ("Authorization", "authorization"),
        ("Proxy-Authorization", "authorization"),
        ("Cookie", "cookie"),
        ("Set-Cookie", "cookie"),
        ("secret", "secret"),
        ("client_secret", "secret"),
        ("clientSecret", "secret"),
        ("secret_key", "secret"),
        ("aws_secret_access_key", "secret"),
        ("SecretAccessKey", "secret"),
        ("token", "token"),
        ("access_token", "token"),
        ("refreshToken", "token"),
        ("id_token", "token"),
        ("X-Amz-Security-Token", "token"),
        ("private_key", "private-key"),
        ("credentials", "credentials"),
        ("token_", "token"),
        ("Ocp-Apim-Subscription-Key", "subscription-key"),
        ("subscription_key", "subscription-key"),
        ("pwd", "password"),
        ("DB_PWD", "password"),
        ("signing_key", "secret"),
        ("webhookSigningKey", "secret"),
        ("db_pass", "password"),
        ("DB_PASS", "password"),
        ("dbpass", "password"),
        ("dbPass", "password"),
        ("x-auth", "authorization"),
        ("HTTP_X_AUTH", "authorization"),
        ("X-Auth-Token", "token"),
        ("x-auth-key", "api-key"),
    ],
)
def test_secret_named_keys(redactor: Redactor, key: str, label: str) -> None:
    assert redactor.redact({key: "value-1", "other": "value-2"}) == {
        key: marker(label),
        "other": "value-2",
    }


@pytest.mark.parametrize(
    "key",
    [
        "input_tokens",
        "output_tokens",
        "max_tokens",
        "total_tokens",
        "cache_read_input_tokens",
        "tokenizer",
        "token_count",
        "num_tokens",
        "keys",
        "key_id",
        "key",
        "monkey",
        "password_hint",
        "pass_word",
        "tok_en",
        "secretary",
        "dbpassport",
        "mydbpass",
        "oauth",
        "x_author",
    ],
)
def test_ordinary_keys_are_left_alone(redactor: Redactor, key: str) -> None:
    data = {key: "value-1"}
    assert redactor.redact(data) is data


@pytest.mark.parametrize("key", ["pin", "user_pin", "passphrase", "session_id", "sessionId"])
def test_names_without_an_anchor_letter_are_the_users_to_add(key: str) -> None:
    """Not built in: none of their letters is an anchor of the gate, and a search for them
    would cost every payload a third more (docs/secrets.md). An extra key adds one."""
    data = {key: "value-1"}
    assert Redactor(environ=NO_ENV).redact(data) is data
    extra = Redactor(extra_keys=[key], environ=NO_ENV)
    assert extra.redact(data) != data
    assert not extra.gate_passes(orjson.dumps(data))


def test_every_secret_key_name_is_recognized(redactor: Redactor) -> None:
    data = dict.fromkeys(sorted(SECRET_KEYS), "v")
    assert all(v.startswith("[REDACTED:") for v in redactor.redact(data).values())


def test_usage_and_other_ordinary_payloads_are_returned_as_is(redactor: Redactor) -> None:
    assert redactor.redact(USAGE) is USAGE
    payload = orjson.dumps(USAGE)
    assert redactor.redact_payload(payload) is payload


def test_values_under_a_secret_key(redactor: Redactor) -> None:
    data = {
        "password": 1234,
        "token": 3.5,
        "secret": True,
        "api_key": None,
        "cookie": "",
        "credentials": {"user": "bob", "pin": 42, "tags": ["a", False], "n": None},
        "authorization": ["Bearer x", "Basic y"],
    }
    assert redactor.redact(data) == {
        "password": marker("password"),
        "token": marker("token"),
        "secret": True,
        "api_key": None,
        "cookie": "",
        "credentials": {
            "user": marker("credentials"),
            "pin": marker("credentials"),
            "tags": [marker("credentials"), False],
            "n": None,
        },
        "authorization": [marker("authorization"), marker("authorization")],
    }


def test_header_pair_lists(redactor: Redactor) -> None:
    headers = [["Authorization", "Bearer x"], ("X-Api-Key", "k1"), ["Accept", "text/html"]]
    assert redactor.redact({"headers": headers}) == {
        "headers": [
            ["Authorization", marker("authorization")],
            ("X-Api-Key", marker("api-key")),
            ["Accept", "text/html"],
        ]
    }


def test_nested_secret_keys_anywhere(redactor: Redactor) -> None:
    data = {"a": [{"b": {"Client-Secret": "s1"}}, ({"token": "t1"},)]}
    assert redactor.redact(data) == {
        "a": [{"b": {"Client-Secret": marker("secret")}}, ({"token": marker("token")},)]
    }


def test_the_label_is_never_the_raw_key(redactor: Redactor) -> None:
    out = redactor.redact({"MY_WEIRD_Secret": "x"})
    assert out == {"MY_WEIRD_Secret": marker("secret")}


# -- the environment layer --------------------------------------------------------------


ENV = {
    "OPENAI_API_KEY": "pk-value-0123456789",
    "DB_PASSWORD": 'pa"ss\\word99',
    "SHORT_TOKEN": "abc",
    "SOME_KEY_PATH": "/etc/keys/id.pem",
    "PIN_SECRET": "12345678",
    "HOME": "/root",
    "EDITOR": "vim-with-a-long-name",
    "OUTER_TOKEN": "prefix-pk-value-0123456789-suffix",
    "GITHUB_PAT": "pat-value-abcdef",
    "API_SECRET": "clé-secrète-9",
}


def test_environment_values_are_hidden_with_the_variable_name() -> None:
    redactor = Redactor(environ=ENV)
    assert redactor.redact('use pk-value-0123456789 and pa"ss\\word99 now') == (
        "use [REDACTED:env:OPENAI_API_KEY] and [REDACTED:env:DB_PASSWORD] now"
    )
    assert redactor.redact("pat-value-abcdef") == "[REDACTED:env:GITHUB_PAT]"


def test_a_value_containing_another_is_hidden_whole() -> None:
    redactor = Redactor(environ=ENV)
    assert redactor.redact("x prefix-pk-value-0123456789-suffix y") == (
        "x [REDACTED:env:OUTER_TOKEN] y"
    )


@pytest.mark.parametrize("value", ["abc", "/etc/keys/id.pem", "12345678", "vim-with-a-long-name"])
def test_short_path_digit_and_unnamed_values_are_ignored(value: str) -> None:
    redactor = Redactor(environ=ENV)
    assert redactor.redact(f"a {value} b") == f"a {value} b"


@pytest.mark.parametrize(
    "name",
    [
        "PGPASSWORD",
        "MYSQL_PWD",
        "HF_TOKEN",
        "APIKEY",
        "VAULT_AUTH",
        "SECRETS",
        "DB_PASS",
        "MyToken",
    ],
)
def test_environment_names_are_matched_on_their_parts(name: str) -> None:
    redactor = Redactor(environ={name: "c0rrect-horse-42"})
    assert redactor.redact("pw c0rrect-horse-42.") == f"pw [REDACTED:env:{name}]."


@pytest.mark.parametrize(
    "name",
    [
        # Known variables that hold no secret, though their names hold one of the parts.
        "PWD",
        "OLDPWD",
        "GIT_AUTHOR_NAME",
        "XAUTHORITY",
        "KEYBOARD_LAYOUT",
        "TOKENIZERS_PARALLELISM",
        # Names of settings: an address, a file, a mode.
        "NEXTAUTH_URL",
        "AUTH0_DOMAIN",
        "SSH_KEY_PATH",
        "API_TOKEN_FILE",
        "AUTH_MODE",
        # Short words count only whole: a passport, a path, a pattern.
        "PASSPORT_OFFICE",
        "PYTHONPATH",
        "PATTERN",
    ],
)
def test_known_non_secret_environment_names_are_left_alone(name: str) -> None:
    redactor = Redactor(environ={name: "c0rrect-horse-42"})
    assert redactor.redact("pw c0rrect-horse-42.") == "pw c0rrect-horse-42."


def test_an_allowed_word_does_not_hide_a_secret_part_beside_it() -> None:
    environ = {"GIT_AUTHOR_TOKEN": "c0rrect-horse-42", "HTTP_AUTHORIZATION": "battery-staple-7"}
    assert Redactor(environ=environ).redact("c0rrect-horse-42 battery-staple-7") == (
        "[REDACTED:env:GIT_AUTHOR_TOKEN] [REDACTED:env:HTTP_AUTHORIZATION]"
    )


def test_the_environment_layer_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ROLLOUT_TEST_TOKEN", "zz-env-value-42")
    assert Redactor().redact("zz-env-value-42") == "[REDACTED:env:PYTEST_ROLLOUT_TEST_TOKEN]"
    assert Redactor(environ={}).redact("zz-env-value-42") == "zz-env-value-42"


@pytest.mark.parametrize("value", ['pa"ss\\word99', "clé-secrète-9"])
@pytest.mark.parametrize(
    "write",
    [
        lambda args: orjson.dumps(args).decode(),
        json.dumps,  # ensure_ascii: \\u00e9
        lambda args: json.dumps(args)[:-2],  # a streamed chunk: not JSON on its own
        lambda args: json.dumps(json.dumps(args)),  # arguments quoted again
    ],
    ids=["orjson", "ascii", "chunk", "twice"],
)
def test_escaped_forms_of_an_environment_value_are_hidden(
    value: str, write: Callable[[Any], str]
) -> None:
    """An OpenAI tool call's ``arguments`` are JSON text inside JSON: a value with a quote, a
    backslash or a non-ASCII letter is written there escaped."""
    redactor = Redactor(environ=ENV)
    call = {"function": {"name": "login", "arguments": write({"user": "bob", "pw": value})}}
    payload = orjson.dumps({"tool_calls": [call]})
    out = redactor.redact_payload(payload)
    assert out is not None
    assert b"[REDACTED:env:" in out
    for form in (value, json.dumps(value)[1:-1], orjson.dumps(value).decode()[1:-1]):
        assert form.encode() not in out
        assert orjson.dumps(form)[1:-1] not in out
    assert not redactor.gate_passes(payload)
    assert redactor.scan(payload) is not None
    assert redactor.scan(out) is None
    assert redactor.redact_payload(out) == out


def test_scan_finds_the_json_escaped_form_of_an_environment_value() -> None:
    redactor = Redactor(environ=ENV)
    line = orjson.dumps({"content": 'it is pa"ss\\word99'})
    assert b'pa\\"ss\\\\word99' in line
    assert redactor.scan(line) == "env:DB_PASSWORD"
    assert redactor.scan(b'not json: pa\\"ss\\\\word99\n') == "env:DB_PASSWORD"
    assert redactor.scan(b'raw text pa"ss\\word99') == "env:DB_PASSWORD"


# -- modes ------------------------------------------------------------------------------


def test_hashed_mode_writes_a_stable_digest_of_the_secret() -> None:
    hashed = Redactor(RedactionMode.HASHED, environ=NO_ENV)
    digest = hashlib.sha256(GITHUB.encode()).hexdigest()
    assert hashed.redact(f"x {GITHUB} y") == f"x [REDACTED:github-token:sha256:{digest}] y"
    assert Redactor("hashed", environ=NO_ENV).redact(GITHUB) == hashed.redact(GITHUB)
    other = hashed.redact(fake("gh" + "p_", 36, seed="other"))
    assert other != hashed.redact(GITHUB)
    assert re.fullmatch(r"\[REDACTED:github-token:sha256:[0-9a-f]{64}\]", other)


def test_hashed_mode_hashes_only_the_secret_part() -> None:
    hashed = Redactor(RedactionMode.HASHED, environ=NO_ENV)
    digest = hashlib.sha256(b"hunter2").hexdigest()
    assert hashed.redact("mysql://root:hunter2@db/x") == (
        f"mysql://root:[REDACTED:url-password:sha256:{digest}]@db/x"
    )
    assert hashed.redact({"password": 1234}) == {
        "password": f"[REDACTED:password:sha256:{hashlib.sha256(b'1234').hexdigest()}]"
    }


def test_full_mode_writes_everything_verbatim() -> None:
    full = Redactor(RedactionMode.FULL, environ=NO_ENV)
    data = {"password": "x", "content": GITHUB}
    payload = orjson.dumps(data)
    assert full.redact(data) is data
    assert full.redact_payload(payload) is payload
    assert full.contains_secret(data)
    assert full.scan(payload) == "password"


def test_none_mode_drops_an_event_holding_a_secret() -> None:
    none = Redactor("none", environ=NO_ENV)
    clean = orjson.dumps({"content": "hello"})
    assert none.redact_payload(clean) is clean
    assert none.redact_payload(orjson.dumps({"content": GITHUB})) is None
    assert none.redact_payload(orjson.dumps({"password": "x"})) is None
    assert none.redact({"password": "x"}) == {"password": marker("password")}


def test_mode_names() -> None:
    assert [m.value for m in RedactionMode] == ["redacted", "hashed", "full", "none"]
    assert Redactor("hashed", environ=NO_ENV).mode is RedactionMode.HASHED


# -- stability, identity, payloads ------------------------------------------------------


@pytest.mark.parametrize("mode", [RedactionMode.REDACTED, RedactionMode.HASHED])
def test_redacting_twice_changes_nothing(mode: RedactionMode) -> None:
    redactor = Redactor(mode, environ=ENV)
    data: Any = {
        "texts": [text for text, _ in POSITIVES],
        "password": "p",
        "headers": [["Authorization", "Bearer x"]],
        "env": "pk-value-0123456789",
    }
    once = redactor.redact(data)
    assert redactor.redact(once) == once
    assert not redactor.contains_secret(once)
    assert redactor.scan(orjson.dumps(once)) is None


def test_the_same_secret_always_gives_the_same_text() -> None:
    a = Redactor(environ=NO_ENV).redact([f"x {GITHUB}", {"k": GITHUB}])
    b = Redactor(environ=NO_ENV).redact([f"x {GITHUB}", {"k": GITHUB}])
    assert a == b == ["x [REDACTED:github-token]", {"k": "[REDACTED:github-token]"}]


def test_redact_returns_the_same_object_when_nothing_is_found(redactor: Redactor) -> None:
    values: list[Any] = [
        "plain",
        ["a", 1, 2.5, None, True],
        ("a", "b"),
        {"a": {"b": [1, {"c": "d"}]}},
        {},
        [],
        42,
        None,
        b"bytes",
    ]
    for value in values:
        assert redactor.redact(value) is value


def test_redact_copies_only_what_changed(redactor: Redactor) -> None:
    inner = {"untouched": [1, 2]}
    data = {"a": inner, "b": ("x", GITHUB)}
    out = redactor.redact(data)
    assert out == {"a": inner, "b": ("x", marker("github-token"))}
    assert out["a"] is inner
    assert data["b"] == ("x", GITHUB)


def test_redact_payload_returns_the_identical_bytes_object_when_clean(redactor: Redactor) -> None:
    payload = orjson.dumps(
        {"step": 3, "call_id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}
    )
    assert redactor.redact_payload(payload) is payload
    # Something that only looks suspicious goes the slow way and still comes back as is.
    suspicious = orjson.dumps({"to": "bob@example.com", "note": "token: none"})
    assert redactor.redact_payload(suspicious) is suspicious


def test_redact_payload_re_encodes_in_the_same_key_order(redactor: Redactor) -> None:
    data = {"z": 1, "password": "pw", "a": [f"x {GITHUB}"], "m": {"y": 1.5, "b": None}}
    out = redactor.redact_payload(orjson.dumps(data))
    assert out == (
        b'{"z":1,"password":"[REDACTED:password]","a":["x [REDACTED:github-token]"],'
        b'"m":{"y":1.5,"b":null}}'
    )


# -- user rules and keys ----------------------------------------------------------------


def test_extra_rules_with_and_without_a_secret_group() -> None:
    redactor = Redactor(
        extra_rules=[
            Rule("acme-token", r"acme_[a-z0-9]{8}"),
            Rule("order-pin", r"pin (?P<secret>\d{4})\b"),
        ],
        environ=NO_ENV,
    )
    assert redactor.redact("t=acme_1a2b3c4d pin 1234 x") == (
        "t=[REDACTED:acme-token] pin [REDACTED:order-pin] x"
    )
    payload = orjson.dumps({"content": "pin 9876"})
    assert redactor.redact_payload(payload) == b'{"content":"pin [REDACTED:order-pin]"}'
    assert redactor.scan(payload) == "order-pin"


def test_rules_replace_the_table() -> None:
    redactor = Redactor(rules=[], environ=NO_ENV)
    assert redactor.redact(GITHUB) is GITHUB
    assert redactor.redact({"password": "x"}) == {"password": marker("password")}


def test_extra_keys_match_in_any_spelling() -> None:
    redactor = Redactor(extra_keys=["session_id", "X-Internal-Auth"], environ=NO_ENV)
    data = {"sessionId": "s1", "SESSION-ID": "s2", "x_internal_auth": "a1", "session": "ok"}
    assert redactor.redact(data) == {
        "sessionId": marker("sessionid"),
        "SESSION-ID": marker("sessionid"),
        "x_internal_auth": marker("xinternalauth"),
        "session": "ok",
    }
    payload = orjson.dumps({"meta": {"Session_Id": "s3"}})
    assert redactor.redact_payload(payload) == b'{"meta":{"Session_Id":"[REDACTED:sessionid]"}}'
    assert redactor.scan(payload) == "sessionid"


def test_an_extra_key_ending_in_a_known_word_keeps_the_known_label() -> None:
    redactor = Redactor(extra_keys=["vault_pass_word"], environ=NO_ENV)
    assert redactor.redact({"vault_pass_word": "x"}) == {"vault_pass_word": marker("password")}


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (
            lambda: Rule("broken", "(unclosed"),
            "redaction rule 'broken': invalid regular expression",
        ),
        (lambda: Rule("has space", "x"), "redaction rule 'has space': a label may use only"),
        (lambda: Rule("", "x"), "redaction rule '': a label may use only"),
        (lambda: Redactor("loud", environ=NO_ENV), "redaction mode 'loud': unknown; use one of"),
        (lambda: Redactor(extra_keys=["--"], environ=NO_ENV), "redaction key '--': a key needs"),
    ],
)
def test_bad_settings_are_refused_with_a_clear_message(make: Any, fragment: str) -> None:
    with pytest.raises(RedactionError, match=re.escape(fragment)) as caught:
        make()
    assert isinstance(caught.value, RolloutError)


def test_redaction_errors_survive_pickling() -> None:
    error = RedactionError("acme", "invalid regular expression")
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error)
    assert copy.subject == "acme"


# -- the rules digest -------------------------------------------------------------------


def test_rules_digest_is_stable_and_ignores_the_environment() -> None:
    digest = Redactor(environ=NO_ENV).rules_digest
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert Redactor(environ=ENV).rules_digest == digest
    assert Redactor(environ={"OTHER_TOKEN": "something-else-1"}).rules_digest == digest


def test_rules_digest_changes_with_the_configuration() -> None:
    digests = {
        Redactor(environ=NO_ENV).rules_digest,
        Redactor("hashed", environ=NO_ENV).rules_digest,
        Redactor("none", environ=NO_ENV).rules_digest,
        Redactor(extra_rules=[Rule("x", "x{9}")], environ=NO_ENV).rules_digest,
        Redactor(rules=BUILTIN_RULES[1:], environ=NO_ENV).rules_digest,
        Redactor(extra_keys=["internal_session"], environ=NO_ENV).rules_digest,
    }
    assert len(digests) == 6


def test_rules_digest_does_not_depend_on_rule_order() -> None:
    reordered = Redactor(rules=tuple(reversed(BUILTIN_RULES)), environ=NO_ENV)
    assert reordered.rules_digest == Redactor(environ=NO_ENV).rules_digest


# -- scan -------------------------------------------------------------------------------


def jsonl(*contents: Any) -> bytes:
    lines = [
        orjson.dumps(
            {"ts": "2025-01-01T00:00:00.000000Z", "seq": i, "type": "tool.result", "data": c}
        )
        for i, c in enumerate(contents)
    ]
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize(("text", "expected"), POSITIVES)
def test_scan_finds_each_rule_in_jsonl_bytes(redactor: Redactor, text: str, expected: str) -> None:
    labels = re.findall(r"\[REDACTED:([^\]:]+)", expected)
    assert labels
    data = jsonl({"content": "hello"}, {"content": text, "n": 1})
    assert redactor.scan(data) in labels


def test_scan_reads_pem_keys_written_with_escaped_newlines(redactor: Redactor) -> None:
    data = jsonl({"key": "none"}, {"content": PEM})
    assert b"-----\\n" in data
    assert redactor.scan(data) == "pem-private-key"


def test_scan_never_returns_the_secret(redactor: Redactor) -> None:
    for text, _ in POSITIVES:
        found = redactor.scan(jsonl({"content": text}))
        assert found is not None
        assert found in LABELS


def test_scan_of_clean_and_of_redacted_files(redactor: Redactor) -> None:
    assert redactor.scan(jsonl(USAGE, *({"content": t} for t in NEGATIVES))) is None
    dirty = [{"content": text} for text, _ in POSITIVES] + [{"password": "x"}, {"token": 5}]
    for mode in (RedactionMode.REDACTED, RedactionMode.HASHED):
        done = Redactor(mode, environ=NO_ENV).redact(dirty)
        assert redactor.scan(jsonl(*done)) is None
    assert redactor.scan(b"") is None
    assert redactor.scan(b"\n\n") is None


def test_scan_finds_a_secret_named_key(redactor: Redactor) -> None:
    assert redactor.scan(jsonl({"note": "x"}, {"headers": {"X-Api-Key": "k1"}})) == "api-key"
    assert redactor.scan(jsonl({"password": 1234})) == "password"
    assert redactor.scan(jsonl({"headers": [["Cookie", "a=b"]]})) == "cookie"
    assert redactor.scan(jsonl({"password": ""})) is None
    assert redactor.scan(jsonl({"password": marker("password")})) is None
    assert redactor.scan(jsonl({"token": None, "secret": False})) is None


def test_scan_reads_lines_that_are_not_json(redactor: Redactor) -> None:
    pretty = b'{\n  "user": "bob",\n  "Cookie": "session=abc123"\n}\n'
    assert redactor.scan(pretty) == "cookie"
    assert redactor.scan(b'{\n  "password": "hunter2"\n}') == "credential-pair"
    assert redactor.scan(b'{\n  "password": "[REDACTED:password]",\n  "n": 1\n}') is None
    assert redactor.scan(b'truncated {"content": "' + GITHUB.encode()) == "github-token"
    assert redactor.scan(b"plain text file\nwith nothing\n") is None


def test_scan_accepts_any_bytes_like(redactor: Redactor) -> None:
    data = jsonl({"content": GITHUB})
    assert redactor.scan(bytearray(data)) == "github-token"
    assert redactor.scan(memoryview(data)) == "github-token"


def test_scan_reports_the_first_secret(redactor: Redactor) -> None:
    data = jsonl({"content": "fine"}, {"content": AWS_ID}, {"content": GITHUB})
    assert redactor.scan(data) == "aws-access-key"


# -- properties -------------------------------------------------------------------------

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FILLER = st.text(alphabet=string.ascii_letters + string.digits + " .,;:!?()'-\n\t", max_size=40)


def _secret(alphabet: str, size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=size, max_size=size)


def _with_mixed(alphabet: str, size: int) -> st.SearchStrategy[str]:
    """Random text with at least one capital and one digit (as generated keys have)."""
    return _secret(alphabet, size - 2).map(lambda s: "Q7" + s)


#: (text holding the secret, the secret itself).
SECRETS: st.SearchStrategy[tuple[str, str]] = st.one_of(
    st.tuples(_secret(B64URL, 30), _secret(B64URL, 50), _secret(B64URL, 43)).map(
        lambda p: (f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}",) * 2
    ),
    st.tuples(
        st.sampled_from(["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA "]),
        _secret(ALNUM + "+/", 64),
        st.booleans(),
    ).map(
        lambda p: (
            (
                f"-----BEGIN {p[0]}PRIVATE KEY-----\n{p[1]}\n"
                + (f"-----END {p[0]}PRIVATE KEY-----" if p[2] else ""),
            )
            * 2
        )
    ),
    st.tuples(st.sampled_from(["AKIA", "ASIA", "AROA", "AIDA"]), _secret(UPPER, 16)).map(
        lambda p: (p[0] + p[1],) * 2
    ),
    _with_mixed(ALNUM + "/+", 40).map(lambda s: (f"aws_secret_access_key={s}", s)),
    st.tuples(
        st.sampled_from(["postgres", "mysql", "mongodb+srv", "redis", "amqp", "https"]),
        _with_mixed(ALNUM + "!$%*+.-@", 16),
    ).map(lambda p: (f"{p[0]}://user:{p[1]}@db.example.com:5432/x", p[1])),
    st.tuples(st.sampled_from(["sk-", "sk-proj-", "sk-svcacct-"]), _with_mixed(B64URL, 40)).map(
        lambda p: (p[0] + p[1],) * 2
    ),
    _secret(B64URL, 60).map(lambda s: (f"sk-ant-api03-{s}",) * 2),
    st.tuples(st.sampled_from(["ghp_", "gho_", "ghs_", "github_pat_"]), _secret(ALNUM, 36)).map(
        lambda p: (p[0] + p[1],) * 2
    ),
    st.tuples(st.sampled_from(["xoxb-", "xoxp-", "xapp-"]), _secret(ALNUM + "-", 30)).map(
        lambda p: (p[0] + p[1],) * 2
    ),
    _secret(B64URL, 35).map(lambda s: ("AIza" + s,) * 2),
    st.tuples(st.sampled_from(["sk_live_", "sk_test_", "rk_live_"]), _secret(ALNUM, 24)).map(
        lambda p: (p[0] + p[1],) * 2
    ),
    st.tuples(
        st.sampled_from(
            ["api_key", "apikey", "secret_key", "access_token", "client_secret", "password"]
        ),
        st.sampled_from(["=", ": ", " = ", '": "', "='"]),
        _with_mixed(ALNUM + "!$%*+./@-", 20),
    ).map(lambda p: (f"{p[0]}{p[1]}{p[2]}", p[2])),
    _with_mixed(B64URL + ".~+/", 32).map(lambda s: (f"Authorization: Bearer {s}", s)),
    _secret(ALNUM, 12)
    .map(lambda s: (f"Basic {base64.b64encode(f'u{s}:p{s}'.encode()).decode()}",) * 2)
    .map(lambda p: (p[0], p[0].split(" ", 1)[1])),
    st.tuples(st.sampled_from(["glpat-", "gldt-", "glrt-"]), _secret(B64URL, 20)).map(
        lambda p: (p[0] + p[1],) * 2
    ),
    _with_mixed(ALNUM, 34).map(lambda s: ("hf_" + s,) * 2),
    st.tuples(_secret(B64URL, 22), _secret(B64URL, 43)).map(lambda p: (f"SG.{p[0]}.{p[1]}",) * 2),
    _secret(B64URL, 60).map(lambda s: ("ya29." + s,) * 2),
    st.tuples(_secret(UPPER, 8), _secret(UPPER, 8), _with_mixed(ALNUM, 24)).map(
        lambda p: (f"https://hooks.slack.com/services/T{p[0]}/B{p[1]}/{p[2]}", p[2])
    ),
    st.tuples(
        st.sampled_from(["AccountKey", "SharedAccessKey"]), _with_mixed(ALNUM + "+/", 44)
    ).map(lambda p: (f"Protocol=https;{p[0]}={p[1]}==;Suffix=net", p[1])),
    _secret(HEX, 30).map(lambda s: (f"Ocp-Apim-Subscription-Key: f7{s}", "f7" + s)),
    _secret(HEX, 38).map(lambda s: (f"Authorization: Token e9{s}", "e9" + s)),
    st.tuples(
        st.sampled_from(["?pass=", "&pass=", "?pwd=", "&password=", "?passphrase="]),
        _with_mixed(ALNUM + "!$%*+.-@", 12),
    ).map(lambda p: (f"https://h.example/p{p[0]}{p[1]}&next=1", p[1])),
    _secret(HEX, 32).map(lambda s: ("SK" + s,) * 2),
    _secret(B64URL, 60).map(lambda s: ("pypi-AgEIcHlwaS5vcmc" + s,) * 2),
    st.tuples(
        st.sampled_from(["Pwd", "PWD", "Password", "password"]), _with_mixed(ALNUM + " !@", 14)
    )
    .map(lambda p: (f"Server=db;Uid=sa;{p[0]}={p[1]};Encrypt=yes", p[1].strip()))
    .filter(lambda p: len(p[1]) > 10),
    st.tuples(st.sampled_from(["Cookie", "Set-Cookie"]), _with_mixed(ALNUM, 20)).map(
        lambda p: (f"{p[0]}: sid={p[1]}; theme=dark", p[1])
    ),
    st.tuples(st.sampled_from([",", " ", "\n", ", ", "\t"]), _with_mixed(ALNUM + "/+", 40)).map(
        lambda p: (f"{AWS_ID}{p[0]}{p[1]}", p[1])
    ),
)


def embed(draw: st.DrawFn, text: str) -> Any:
    """``text`` at a random place in random text, in a random structure."""
    where = draw(st.integers(0, 5))
    line = f"{draw(FILLER)} {text} {draw(FILLER)}"
    if where == 0:
        return line
    if where == 1:
        return {"content": line, "usage": {"input_tokens": 3}}
    if where == 2:
        return [draw(FILLER), {"args": {"q": line}}]
    if where == 3:
        return {"steps": [{"text": draw(FILLER)}, {"text": line}]}
    if where == 4:
        return {line: 1}
    return {"messages": [{"role": "tool", "content": [{"type": "text", "text": line}]}]}


@st.composite
def documents(draw: st.DrawFn) -> tuple[Any, str]:
    text, secret = draw(SECRETS)
    return embed(draw, text), secret


@PROPERTY
@given(documents())
def test_no_generated_secret_survives_redaction(
    one_redactor: Redactor, case: tuple[Any, str]
) -> None:
    document, secret = case
    redactor = one_redactor
    out = orjson.dumps(redactor.redact(document))
    assert secret.encode() not in out
    assert orjson.dumps(secret)[1:-1] not in out
    assert redactor.scan(out) is None
    payload = orjson.dumps(document if isinstance(document, dict) else {"d": document})
    redacted = redactor.redact_payload(payload)
    assert redacted is not None
    assert secret.encode() not in redacted
    assert orjson.dumps(secret)[1:-1] not in redacted
    assert redactor.scan(payload) is not None


KEY_WORDS = st.sampled_from(
    [
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apiKey",
        "private_key",
        "credentials",
        "authorization",
        "cookie",
        "client_secret",
        "access_token",
        "secret_access_key",
        "tokens",
        "key",
        "keys",
        "tokenizer",
        "input_tokens",
        "passwords",
        "secrets",
        "subscription_key",
        "Ocp-Apim-Subscription-Key",
        "pwd",
        "signing_key",
        "db_pass",
        "dbpass",
        "dbPass",
        "x-auth",
        "X-Auth-Token",
        "x-auth-key",
        "x_author",
        "dbpassport",
    ]
)


def _kebab(text: str) -> str:
    return text.replace("_", "-")


SPELLINGS: st.SearchStrategy[Callable[[str], str]] = st.sampled_from(
    [str.lower, str.upper, str.title, _kebab]
)


@st.composite
def keyed_payloads(draw: st.DrawFn) -> bytes:
    word = draw(SPELLINGS)(draw(KEY_WORDS))
    key = draw(st.sampled_from(["", "x_", "X-", "my ", "db."])) + word
    key += draw(st.sampled_from(["", "_", " ", "\n", "__", '"']))
    value = draw(st.one_of(FILLER, st.integers(-(2**63), 2**63 - 1), st.none(), st.booleans()))
    shape = draw(st.integers(0, 2))
    if shape == 0:
        data: Any = {key: value}
    elif shape == 1:
        data = {"headers": [[key, str(value)]]}
    else:
        data = {
            "content": f"{draw(FILLER)} {key}{draw(st.sampled_from(['=', ': ', ' = ']))}{value}"
        }
    return orjson.dumps(data)


@PROPERTY
@given(keyed_payloads())
def test_the_fast_path_never_skips_what_the_walk_would_hide(
    one_redactor: Redactor, payload: bytes
) -> None:
    redactor = one_redactor
    data = orjson.loads(payload)
    walked = redactor.redact(data)
    expected = payload if walked == data else orjson.dumps(walked)
    assert redactor.redact_payload(payload) == expected
    assert (redactor.scan(payload) is None) == (walked == data)


# -- the gate and the recorder's last look ----------------------------------------------
#
# A recorder writing a file does not look again at the bytes of a payload the gate passed
# (docs/secrets.md): what follows holds the gate and the last look (``scan``) to agreeing.


def recorded_line(payload: bytes) -> bytes:
    """``payload`` in the line a recorder makes of it (a clean type, its step spliced in)."""
    pieces: list[bytes] = []
    LineMaker().add(pieces, 1_790_000_000_000_000_000, "tool.call.completed", payload, 7, 3, True)
    return b"".join(pieces)


def assert_the_gate_and_the_last_look_agree(redactor: Redactor, payload: bytes) -> None:
    """When the gate passes ``payload``, the redaction leaves it as it is and the last look
    finds nothing in it, alone or in its line."""
    if redactor.gate_passes(payload):
        assert redactor.redact_payload(payload) is payload
        assert redactor.scan(payload) is None
        assert redactor.scan(recorded_line(payload)) is None


@pytest.mark.parametrize(("text", "expected"), POSITIVES)
def test_the_gate_never_passes_a_secret_of_any_builtin_rule(
    one_redactor: Redactor, text: str, expected: str
) -> None:
    for data in ({"content": text}, {"messages": [{"role": "tool", "content": [text]}]}):
        payload = orjson.dumps(data)
        assert not one_redactor.gate_passes(payload)
        assert one_redactor.scan(recorded_line(payload)) is not None


@PROPERTY
@given(documents())
def test_the_gate_never_passes_a_planted_secret(
    one_redactor: Redactor, case: tuple[Any, str]
) -> None:
    document, _ = case
    payload = orjson.dumps(document if isinstance(document, dict) else {"d": document})
    assert not one_redactor.gate_passes(payload)
    assert one_redactor.scan(recorded_line(payload)) is not None


@PROPERTY
@given(st.one_of(keyed_payloads(), documents().map(lambda case: orjson.dumps({"d": case[0]}))))
def test_what_the_gate_passes_the_last_look_passes(one_redactor: Redactor, payload: bytes) -> None:
    assert_the_gate_and_the_last_look_agree(one_redactor, payload)


@PROPERTY
@given(st.dictionaries(FILLER, st.one_of(FILLER, st.integers(-(2**63), 2**63 - 1), st.none())))
def test_what_the_gate_passes_in_ordinary_text_the_last_look_passes(
    one_redactor: Redactor, data: dict[str, Any]
) -> None:
    assert_the_gate_and_the_last_look_agree(one_redactor, orjson.dumps(data))


def test_the_gate_passes_ordinary_payloads(one_redactor: Redactor) -> None:
    """The properties above do not hold by the gate passing nothing."""
    for data in (
        USAGE,
        {"call_id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"content": "The weather in Paris is cloudy; would you like the forecast?"},
        {"name": "search_web", "arguments": {"query": "what does bec. mean"}},
    ):
        payload = orjson.dumps(data)
        assert one_redactor.gate_passes(payload)
        assert_the_gate_and_the_last_look_agree(one_redactor, payload)


def test_a_gate_that_is_off_passes_nothing() -> None:
    redactor = Redactor(environ=NO_ENV, extra_rules=[Rule("acme", r"acme-[0-9]{6}")])
    assert not redactor.gate_passes(orjson.dumps({"content": "nothing to see"}))


def test_ordinary_payloads_are_never_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    redactor = Redactor(environ=ENV)
    payloads = [
        orjson.dumps(USAGE),
        orjson.dumps(
            {"step": 3, "call_id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}
        ),
        orjson.dumps(
            {
                "step": 2,
                "model": "gpt-4o-mini",
                "content": "The weather in Paris is cloudy; would you like the forecast?",
                "usage": {"input_tokens": 120, "output_tokens": 40, "cache_read_input_tokens": 0},
                "stop_reason": "end_turn",
                "tool_calls": [],
            }
        ),
        orjson.dumps({"url": "https://docs.example.com:8443/api/v2?lang=en", "status": 200}),
        # Words whose letters share the gate's anchor image with "key" ("web", "bec"): they
        # once sent a third of a realistic run down the slow path.
        orjson.dumps({"name": "search_web", "arguments": {"query": "what does bec. mean"}}),
        orjson.dumps({"tools": ["search_web", "fetch_page"], "note": "Quebec, cobweb"}),
    ]

    def refuse(_: bytes) -> Any:
        raise AssertionError("the fast path decoded an ordinary payload")

    monkeypatch.setattr(orjson, "loads", refuse)
    for payload in payloads:
        assert redactor.redact_payload(payload) is payload


def test_a_secret_glued_to_another_is_redacted_in_one_go() -> None:
    """Replacing the first secret leaves a boundary before the second; redaction must not
    need a second call to find it (it is idempotent)."""
    redactor = Redactor()
    once = redactor.redact({"note": "AKIAABCDEFGHIJKLMNOPxoxb-tokentoken"})
    assert once == {"note": "[REDACTED:aws-access-key][REDACTED:slack-token]"}
    assert redactor.redact(once) == once


# -- secrets inside encoded strings --------------------------------------------------------


def _body(value: object) -> str:
    """``value`` as a JSON text, the way an HTTP body comes back from a tool."""
    return json.dumps(value)


@pytest.mark.parametrize(
    ("encoded", "label"),
    [
        # A response body a tool returned as text: the secret sits under its key.
        (_body({"user": "bob", "password": "Hunter2-plain"}), None),
        # The same body encoded twice.
        (_body(_body({"user": "bob", "password": "Hunter2-plain"})), None),
        # A key whose dashes are \\u escapes, and slashes escaped: the patterns see it decoded.
        (_body({"note": ANTHROPIC}).replace("-", "\\u002d"), "anthropic-key"),
        (_body({"token": {"value": ANTHROPIC, "url": "https://a/b"}}).replace("/", "\\/"), None),
    ],
    ids=["body", "twice", "unicode-escapes", "escaped-slashes"],
)
def test_a_secret_inside_an_encoded_string_is_hidden(
    redactor: Redactor, encoded: str, label: str | None
) -> None:
    output = {"status": 200, "body": encoded}
    redacted = redactor.redact(output)
    text = json.dumps(redacted)
    assert "Hunter2-plain" not in text
    assert ANTHROPIC[20:40] not in text
    assert redactor.contains_secret(output)
    if label is not None:
        assert f"[REDACTED:{label}]" in text
    # Redacting again changes nothing: record and replay agree, a golden matches itself.
    assert redactor.redact(redacted) == redacted
    assert redactor.scan(orjson.dumps(redacted)) is None
    assert redactor.scan(orjson.dumps(output)) is not None
    # The recorder's path, where a gate first looks at the encoded bytes.
    payload = redactor.redact_payload(orjson.dumps(output))
    assert payload is not None
    assert orjson.loads(payload) == redacted


def test_text_that_only_looks_encoded_is_left_alone(redactor: Redactor) -> None:
    for text in ('{"city": "Paris"}', "[1, 2]", '"quoted"', "{not json", "[REDACTED:x]"):
        assert redactor.redact(text) is text
