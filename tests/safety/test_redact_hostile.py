"""Redaction against hostile input (docs/secrets.md): linear time, and no way around the gate.

Timing assertions are kept out of unit tests: the adversarial inputs run in a subprocess that a
watchdog ends when one input takes more than :data:`BUDGET` seconds (a linear pattern takes a
few milliseconds on each; one that backtracks, minutes), so the test fails at once, naming the
input, instead of after a blow-up. The fuzz tests build text from fragments of every rule
(words, separators, prefixes, markers, escapes) and check the promises that tie the layers
together, the gate's with the last look's among them (with environment values that JSON
escapes, and extra keys).
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rollout.format.lines import LineMaker
from pytest_rollout.safety.redact import RedactionMode, Redactor

ROOT = Path(__file__).resolve().parents[2]

#: Each unit is repeated to 50 KB; the script redacts every input and scans its bytes (as
#: a JSON line and as raw text). At that size a pattern that backtracks quadratically takes
#: minutes (billions of steps), while the linear ones take a few seconds in all.
ADVERSARIAL = r"""
import faulthandler, sys, time
import orjson
from pytest_rollout.safety.redact import Redactor

N = 50_000
UNITS = [
    "eyJ", "eyJa.", "eyJaaaaa.", "sk-", "sk-ant-", "sk-aaaaaaaaaaaaaaaaaaaaaaaa ", "a://", "a://b:",
    "a://b:c@", "-----BEGIN PRIVATE KEY-----", "-----BEGIN AAAA ", "----E", "api_key=", 'api_key="',
    "api_key='", "password: ", "token=", "secret_key=x ", "Bearer ", "Bearer Bearer",
    "Bearer Aaaaaaaa ", "Basic ", "Basic abcdefgh===", "AKIA", "AKIAAAAAAAAAAAAAAAAA", "ASIA",
    "AIza",
    "xoxb-", "ghp_", "github_pat_", "sk_live_", "aB3", "A", "7", "_", "-", ":", "=", "\\", '"\\"',
    "aws_secret_access_key=", "[REDACTED:x]", "[REDACTED:", 'key": ', '\\"token\\": \\"',
    "token,", "k", "key", "apikey", "secret_access_key ", "secretkey:", "passw", "sec", "c",
    "credentials=", "sk-eyJ://a:b@Bearer api_key=AKIA-----BEGIN xoxb-ghp_ ",
    "glpat-", "glpat-aaaaaaaaaaaaaaaaaaaa.", "hf_", "hf_a", "SG.", "SG.aaaaaaaaaaaaaaaa.", "ya29.",
    "hooks.slack.com/services/", "hooks.slack.com/services/T1/", "AccountKey=", "AccountKey= ",
    "SharedAccessKey=a", "Authorization: Token ", "Authorization: Token a", "?pass=", "&pwd=a",
    "?password", "Ocp-Apim-Subscription-Key: ", "subscription_key=",
    "[REDACTED:credential-pair]", "[REDACTED:credential-pair]x", "[REDACTED:aws-secret-key:",
    "credential-pair]", "aws-secret-key]a",
    "SK0", "pypi-AgEIcHlwaS5vcmc", ";Pwd=", ";Pwd={", ";Pwd={}}", "; password=a ",
    "Cookie: a=", "Set-Cookie: a=b; ", "AKIA0123456789ABCDEF ",
    "AKIA0123456789ABCDEF a,", "[REDACTED:cookie-header]x ", "[REDACTED:connection-password] ",
]
HEADS = ["eyJ", "sk-", "a://b:", "-----BEGIN PRIVATE KEY-----", 'password="', "Bearer ", "Basic ",
         "AIza", "xoxb-", "ghp_", "sk_live_", "aws_secret_access_key", "token", "glpat-", "hf_",
         "SG.", "ya29.", "hooks.slack.com/services/T", "AccountKey=", "Authorization: Token ",
         "?pass=", "Ocp-Apim-Subscription-Key: ", "[REDACTED:credential-pair]",
         "[REDACTED:aws-secret-key:sha256:", "pypi-AgEIcHlwaS5vcmc", ";Pwd=", ";Pwd={",
         "Cookie: a=", "AKIA0123456789ABCDEF ", "[REDACTED:cookie-header]"]
inputs = [(unit * (N // len(unit) + 1))[:N] for unit in UNITS]
inputs += [head + "a" * N for head in HEADS] + [head + " " * N for head in HEADS]
redactor = Redactor(environ={"X_TOKEN": "abcdefgh12", "Y_SECRET": "abcdefgh12345"})
budget = float(sys.argv[1])
worst = (0.0, "")
start = time.perf_counter()
for text in inputs:
    # A watchdog thread ends the process if this input is not done in time: a regular
    # expression that backtracks never gives the interpreter back to a signal handler.
    print(f"input {text[:40]!r}", file=sys.stderr, flush=True)
    faulthandler.dump_traceback_later(budget, exit=True)
    began = time.perf_counter()
    redactor.redact(text)
    redactor.redact({text[:5000]: text})
    redactor.scan(orjson.dumps({"content": text}) + b"\n" + text.encode())
    faulthandler.cancel_dump_traceback_later()
    worst = max(worst, (time.perf_counter() - began, text[:20]))
took = time.perf_counter() - start
print(f"{len(inputs)} inputs in {took:.1f}s, slowest {worst[1]!r}: {worst[0]:.2f}s")
"""


#: The most one adversarial input may take: far above what the linear patterns need (a few
#: milliseconds each, tens on a loaded machine), far below what backtracking takes (minutes).
BUDGET = 10


def test_every_pattern_runs_in_linear_time_on_hostile_input() -> None:
    done = subprocess.run(
        [sys.executable, "-c", ADVERSARIAL, str(BUDGET)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,  # a backstop only: the watchdog ends a slow input after BUDGET seconds
        check=False,
    )
    # On failure the last "input" line of stderr names the input that was too slow.
    assert done.returncode == 0, done.stderr[-2000:]
    assert "inputs in" in done.stdout


def test_an_input_over_budget_ends_the_check_at_once_naming_it() -> None:
    # The watchdog itself: with a budget no input can meet, the first one ends the process.
    done = subprocess.run(
        [sys.executable, "-c", ADVERSARIAL, "0.000001"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode != 0
    assert done.stderr.startswith("input 'eyJeyJeyJ")
    assert "Timeout" in done.stderr


FRAGMENTS = [
    "token", "Token", "TOKEN", "tokens", "key", "Key", "api", "API", "_", "-", ".", " ", "  ", ":",
    "=", "=>", '"', "'", "\\", "\n", "\t", ",", ";", "&", "@", "/", "//", "://", "?", "#", "[", "]",
    "{", "}", "password", "passwd", "Pass", "secret", "Secret", "secrets", "credential",
    "credentials", "authorization", "Authorization", "cookie", "Set-", "private", "access", "aws",
    "AWS_", "SECRET_ACCESS_KEY", "bearer", "Bearer ", "Basic ", "basic ", "dXNlcjpwYXNz",
    "ZGVtbzpkZW1vMTIz", "eyJ", "eyJhbGciOiJI", "abcdefghij", "ABCDEFGHIJKLMNOP", "0123456789",
    "sk-", "sk-ant-", "proj-", "ghp_", "github_pat_", "xoxb-", "xapp-", "AIza", "sk_live_",
    "rk_test_", "AKIA", "ASIA", "-----BEGIN ", "PRIVATE KEY-----", "RSA ", "-----END ",
    "[REDACTED:", "[REDACTED:x]", "[REDACTED:api-key]", "postgres", "https", "user", "host", "null",
    "true", "é", "\u00a0", "\u2028", "Q7", "wJalrXUtnFEMI/K7MDENG", "bPxRfiCYEXAMPLEKEY", "hunter2",
    "x", "y1", "tok3n-value-xyz", 'p"w\\12345678', "glpat-", "hf_", "Q7hRt5", "SG.", "ya29.",
    "hooks.slack.com/services/", "T0AB12CD/", "AccountKey=", "SharedAccessKey=", "Token ",
    "?pass=", "&pwd=", "Ocp-Apim-Subscription-", "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3",
    "[REDACTED:credential-pair]", "[REDACTED:aws-secret-key]", "credential-pair]",
    ":sha256:", "aws-secret-key",
    "SK", "0123456789abcdef", "pypi-", "AgEIcHlwaS5vcmc", ";", "Pwd", "PWD", "Password",
    "{", "}}", "Cookie: ", "Set-Cookie:", "sid=", "user_", "db", "DB_", "Db", "pass", "Pass",
    "PASS", "x-", "X-", "x_", "auth", "Auth", "AUTH", "port", "[REDACTED:cookie-header]",
    "[REDACTED:connection-password]",
    "cookie-header]", "AKIAQ7ABCDEFGHIJ2345", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "cl\\u00e9-secr\\u00e8te-9", "clé-secrète-9", 'p\\"w\\\\12345678', "cl\\u00e9",
]  # fmt: skip
TEXT = st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join)
LEAF = st.one_of(
    TEXT,
    st.integers(-5, 5),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
)
TREE = st.recursive(
    LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)
DOCUMENTS = st.dictionaries(TEXT, TREE, max_size=4)
ENV = {
    "MY_TOKEN": "tok3n-value-xyz",
    "DB_PASSWORD": 'p"w\\12345678',
    "API_SECRET": "clé-secrète-9",  # written escaped too: cl\u00e9-secr\u00e8te-9
}
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_promises(redactor: Redactor, data: dict[str, Any]) -> None:
    once = redactor.redact(data)
    # Idempotent, and nothing is left for contains_secret or scan to find.
    assert redactor.redact(once) == once
    assert not redactor.contains_secret(once)
    assert redactor.scan(orjson.dumps(once)) is None
    # contains_secret and scan agree with redact.
    assert redactor.contains_secret(data) == (once != data)
    payload = orjson.dumps(data)
    assert (redactor.scan(payload) is None) == (once == data)
    # The fast path never lets through what the walk would hide.
    expected = payload if once == data else orjson.dumps(once)
    assert redactor.redact_payload(payload) == expected
    # What the gate passes, the last look passes too, alone or in the line a recorder makes
    # of it: a recorder writing a file does not look at such a payload's bytes again.
    if redactor.gate_passes(payload):
        assert once == data
        assert redactor.scan(payload) is None
        assert redactor.scan(recorded_line(payload)) is None


def recorded_line(payload: bytes) -> bytes:
    """``payload`` in the line a recorder makes of it (a clean type, its step spliced in)."""
    pieces: list[bytes] = []
    LineMaker().add(pieces, 1_790_000_000_000_000_000, "tool.call.completed", payload, 7, 3, True)
    return b"".join(pieces)


@functools.cache
def redactor(mode: RedactionMode = RedactionMode.REDACTED, *extra_keys: str) -> Redactor:
    """One redactor per setting for every example, as a session keeps one for every event
    it records (building one compiles its gates: milliseconds, most of an example)."""
    return Redactor(mode, environ=ENV, extra_keys=extra_keys)


@FUZZ
@given(DOCUMENTS, st.sampled_from([RedactionMode.REDACTED, RedactionMode.HASHED]))
def test_fragments_of_every_rule(data: dict[str, Any], mode: RedactionMode) -> None:
    check_promises(redactor(mode), data)


@FUZZ
@given(DOCUMENTS)
def test_fragments_with_extra_keys(data: dict[str, Any]) -> None:
    check_promises(redactor(RedactionMode.REDACTED, "api", "pass_key", "user"), data)
