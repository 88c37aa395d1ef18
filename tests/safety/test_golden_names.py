"""Secrets in names (docs/secrets.md): a secret in a test id never reaches a file name.

A golden's file name comes from its test id; a parametrize id can hold an API key. The
secret becomes its label and a short digest, the same on every run and different for
another secret; a name without a secret is the name it always was.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rollout.format.recorder import Recorder
from pytest_rollout.safety.names import NAME_TOKEN
from pytest_rollout.safety.redact import RedactionMode, Redactor
from pytest_rollout.store.golden import golden_path, module_dir, write_golden_and_receipt
from pytest_rollout.store.receipt import receipt_path

ROOT = Path(__file__).resolve().parents[2]
ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "_-"


def fake(prefix: str, length: int, alphabet: str = ALNUM, seed: str = "") -> str:
    """A made-up credential (built at run time, so that no scanner flags this file)."""
    rnd = random.Random(f"{prefix}/{length}/{seed}")
    return prefix + "".join(rnd.choice(alphabet) for _ in range(length))


ANTHROPIC = fake("sk-ant-" + "api03-", 90, B64URL)
AWS_ID = fake("AK" + "IA", 16, string.ascii_uppercase + string.digits)
JWT = ".".join([fake("ey" + "J", 30, B64URL), fake("ey" + "J", 40, B64URL), fake("", 43, B64URL)])
BEARER = fake("", 32, B64URL, seed="bearer")
TWILIO = fake("S" + "K", 32, "0123456789abcdef")
PYPI = fake("pypi-" + "AgEIcHlwaS5vcmc", 80, B64URL)
AWS_SECRET = fake("", 40, ALNUM + "/+")

#: (a parametrize id holding a secret, the secret, the label its token names)
SECRET_IDS = [
    (ANTHROPIC, ANTHROPIC, "anthropic-key"),
    (f"{AWS_ID}-eu-west-1", AWS_ID, "aws-access-key"),
    (JWT, JWT, "jwt"),
    (f"Bearer {BEARER}", BEARER, "bearer"),
    (f"api_key={BEARER}", BEARER, "credential-pair"),
    (f"twilio {TWILIO}", TWILIO, "twilio-key"),
    (PYPI, PYPI, "pypi-token"),
    (f"Server=db;Pwd={BEARER}", BEARER, "connection-password"),
    (f"Cookie: sid={BEARER}", BEARER, "cookie-header"),
    (f"aws_secret_access_key={AWS_SECRET}", AWS_SECRET, "aws-secret-key"),
]


def test_an_access_key_pair_in_an_id_becomes_two_tokens(redact_name: Redactor) -> None:
    path = golden_path(
        Path("g"), f"t.py::test_x[{AWS_ID},{AWS_SECRET}]", redact_name=redact_name.redact_name
    )
    assert AWS_ID not in str(path)
    assert AWS_SECRET not in str(path)
    tokens = NAME_TOKEN.findall(path.name)
    assert [t.rsplit("-", 1)[0] for t in tokens] == [
        "REDACTED-aws-access-key",
        "REDACTED-aws-secret-key",
    ]


@pytest.fixture
def redact_name() -> Redactor:
    return Redactor(environ={})


@pytest.mark.parametrize(("param", "secret", "label"), SECRET_IDS)
def test_a_secret_in_a_parametrize_id_becomes_its_label_and_a_digest(
    redact_name: Redactor, param: str, secret: str, label: str
) -> None:
    path = golden_path(
        Path("golden"), f"tests/test_a.py::test_x[{param}]", redact_name=redact_name.redact_name
    )
    assert secret not in str(path)
    assert path.parent == Path("golden/tests/test_a")
    tokens = NAME_TOKEN.findall(path.name)
    assert len(tokens) == 1
    assert tokens[0].startswith(f"REDACTED-{label}-")
    # Stable: another redactor, another run, the same name.
    again = golden_path(
        Path("golden"),
        f"tests/test_a.py::test_x[{param}]",
        redact_name=Redactor(environ={}).redact_name,
    )
    assert again == path


def test_the_token_is_exactly_label_and_eight_hex_digits(redact_name: Redactor) -> None:
    path = golden_path(Path("g"), f"t.py::test_x[{ANTHROPIC}]", redact_name=redact_name.redact_name)
    name = path.name.removesuffix(".jsonl")
    assert name[: len("test_x[REDACTED-anthropic-key-")] == "test_x[REDACTED-anthropic-key-"
    digest = name[len("test_x[REDACTED-anthropic-key-") : -1]
    assert len(digest) == 8
    assert set(digest) <= set("0123456789abcdef")
    assert name.endswith("]")


def test_two_secrets_give_two_names(redact_name: Redactor) -> None:
    other = fake("sk-ant-" + "api03-", 90, B64URL, seed="other")
    paths = {
        golden_path(Path("g"), f"t.py::test_x[{key}]", redact_name=redact_name.redact_name)
        for key in (ANTHROPIC, other)
    }
    assert len(paths) == 2


def test_an_environment_secret_in_an_id_is_hidden_too() -> None:
    redactor = Redactor(environ={"PGPASSWORD": "c0rrect-horse-42"})
    path = golden_path(
        Path("g"), "t.py::test_db[c0rrect-horse-42]", redact_name=redactor.redact_name
    )
    assert "c0rrect" not in str(path)
    assert path.name.startswith("test_db[REDACTED-env-PGPASSWORD-")


@pytest.mark.parametrize("value", ['pa"ss\\word99', "clé-secrète-9"])
def test_an_environment_secret_escaped_in_an_id_is_hidden_too(value: str) -> None:
    """pytest writes a non-ASCII parameter escaped (``\\xe9``), and a backslash doubled."""
    escaped = value.encode("unicode_escape").decode("ascii")
    redactor = Redactor(environ={"DB_PASSWORD": value})
    path = golden_path(Path("g"), f"t.py::test_db[{escaped}]", redact_name=redactor.redact_name)
    assert escaped not in str(path)
    assert path.name.startswith("test_db[REDACTED-env-DB_PASSWORD-")


def test_names_are_redacted_in_every_mode() -> None:
    names = {
        golden_path(
            Path("g"),
            f"t.py::test_x[{ANTHROPIC}]",
            redact_name=Redactor(mode, environ={}).redact_name,
        )
        for mode in RedactionMode
    }
    assert len(names) == 1
    assert ANTHROPIC not in str(names.pop())


def test_the_name_made_safe_is_that_of_the_redacted_id(redact_name: Redactor) -> None:
    """An id with characters a file name cannot hold gets a digest of the whole id: it is
    taken of the redacted id, never of the secret."""
    raw = f"t.py::test_x[a b/{ANTHROPIC}]"
    redacted = golden_path(Path("g"), raw, redact_name=redact_name.redact_name)
    assert redacted == golden_path(Path("g"), redact_name.redact_test_id(raw))


def test_a_golden_name_from_the_marker_is_redacted_too(redact_name: Redactor) -> None:
    path = golden_path(
        Path("g"), "t.py::test_x", f"case-{AWS_ID}", redact_name=redact_name.redact_name
    )
    assert AWS_ID not in str(path)


def test_the_receipt_names_the_redacted_file(tmp_path: Path, redact_name: Redactor) -> None:
    root = tmp_path / "golden"
    path = golden_path(root, f"t.py::test_x[{ANTHROPIC}]", redact_name=redact_name.redact_name)
    rec = Recorder()
    rec.emit("run.started", {})
    rec.emit("run.completed", {"outcome": "completed"})
    write_golden_and_receipt(root, path, rec.getvalue(), redaction_mode="redacted", rules_sha256="")
    receipt = orjson.loads(receipt_path(path).read_bytes())
    assert receipt["file"] == path.name
    assert ANTHROPIC not in receipt_path(path).read_text()
    assert all(ANTHROPIC not in p.name for p in tmp_path.rglob("*"))


@pytest.mark.parametrize(
    "nodeid",
    [
        "tests/test_auth.py::TestToken::test_refresh",
        "tests/test_auth.py::TestSecret::test_x[Secret::new]",
        "tests/test_password.py::test_reset[short]",
        "tests/test_a.py::test_weather[paris-fahrenheit]",
        "tests/test_a.py::test_tokens[max_tokens=1024]",
        "tests/test_a.py::test_x[REDACTED-anthropic-key-1a2b3c4d]",
    ],
)
def test_names_without_a_secret_do_not_change(redact_name: Redactor, nodeid: str) -> None:
    root = Path("golden")
    assert golden_path(root, nodeid, redact_name=redact_name.redact_name) == golden_path(
        root, nodeid
    )
    assert redact_name.redact_test_id(nodeid) == nodeid
    assert module_dir(root, nodeid, redact_name=redact_name.redact_name) == module_dir(root, nodeid)


def _committed_goldens() -> list[tuple[Path, Path]]:
    """(golden folder, golden) of every golden committed in this repository."""
    found = []
    for root in (ROOT / "golden", ROOT / "examples" / "weather" / "golden"):
        found += [(root, path) for path in sorted(root.rglob("*.jsonl"))]
    return found


@pytest.mark.parametrize(
    ("root", "path"), _committed_goldens(), ids=lambda p: p.name if isinstance(p, Path) else ""
)
def test_the_committed_goldens_keep_their_names(root: Path, path: Path) -> None:
    relative = path.relative_to(root)
    nodeid = f"{relative.parent.as_posix()}.py::{relative.name.removesuffix('.jsonl')}"
    assert golden_path(root, nodeid, redact_name=Redactor().redact_name) == path


def test_a_test_id_keeps_its_shape_when_redacted(redact_name: Redactor) -> None:
    shown = redact_name.redact_test_id(f"tests/a.py::TestX::test_y[api_key={BEARER}]")
    assert shown.startswith("tests/a.py::TestX::test_y[api_key=REDACTED-credential-pair-")
    assert shown.endswith("]")
    assert BEARER not in shown


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["Bearer ", BEARER, ANTHROPIC, AWS_ID, JWT, "api_key=", "-", " ", "[", "]", "x", "::"]
        ),
        max_size=6,
    ).map("".join)
)
def test_redacting_a_name_twice_changes_nothing(text: str) -> None:
    redactor = Redactor(environ={})
    once = redactor.redact_name(text)
    assert redactor.redact_name(once) == once
    assert redactor.redact_test_id(once) == redactor.redact_test_id(redactor.redact_test_id(once))
