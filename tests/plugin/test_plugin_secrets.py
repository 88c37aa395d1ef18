"""Redaction in the plugin (docs/secrets.md): no secret reaches a golden or a captured run.

The agent here reads a service token from the environment into its system prompt and gets
an OpenAI-style key back from a tool. Recording must write neither, in any file; replaying
on a machine with another token must still match (the request's hash is taken on redacted
data); ``redact=`` modes and user rules change what is written; and a secret that only the
final scan sees (in an event type, where redaction never looks) stops the golden's write.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_agent import IN_PROCESS, XDIST, failure_sections, run

SECRET_KEY = "sk-proj-" + "Zq7Lm2Np4Rs6Tu8Vw0Xy1Ab3Cd5Ef7Gh9"
TOKEN = "tok-" + "8c1e4f0b9d2a7e63"
OTHER_TOKEN = "tok-" + "0000ffff1111eeee"

AGENT = f"""
import os

import pytest
from pytest_rollout import ToolCall, Turn

KEY = {SECRET_KEY[:8]!r} + {SECRET_KEY[8:]!r}
USAGE = {{"input_tokens": 12, "output_tokens": 3}}


class LLM:
    model = "model-1"

    def complete(self, messages, tools=None, **params):
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if not results:
            return Turn("looking", [ToolCall("c1", "account", {{"user": "ada"}})], USAGE, 0.0)
        return Turn("Your key is " + results[0], [], USAGE, 0.0)


def account(user):
    return "key of " + user + ": " + KEY


def agent(rollout):
    llm = rollout.provider(LLM())
    tools = rollout.tools({{"account": account}})
    system = "Call the service with " + os.environ["SERVICE_TOKEN"]
    messages = [{{"role": "system", "content": system}}, {{"role": "user", "content": "key?"}}]
    with rollout.run(prompt="key?") as run:
        turn = llm.complete(messages)
        call = turn.tool_calls[0]
        messages.append({{"role": "tool", "content": tools[call.name](**call.arguments)}})
        run.output = llm.complete(messages).content


def test_default(rollout, golden):
    agent(rollout)
    assert rollout == golden


@pytest.mark.rollout(redact="hashed")
def test_hashed(rollout, golden):
    agent(rollout)
    assert rollout == golden


@pytest.mark.rollout(redact="full")
def test_verbatim(rollout, golden):
    agent(rollout)
    assert rollout == golden
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makepyfile(test_secrets=AGENT)
    monkeypatch.setenv("SERVICE_TOKEN", TOKEN)
    monkeypatch.setenv("ROLLOUT_DIR", str(pytester.path / "runs"))
    return pytester


def written_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.suffix in (".jsonl", ".receipt", ".partial")
    }


def test_no_secret_reaches_a_golden_or_a_captured_run(project: pytest.Pytester) -> None:
    result = project.runpytest_inprocess(*IN_PROCESS, "--rollout-record", "-k", "not verbatim")
    result.assert_outcomes(passed=2)
    files = written_files(project.path)
    assert sorted(name.split("/")[0] for name in files) == ["golden"] * 4 + ["runs"] * 2
    for name, data in files.items():
        assert SECRET_KEY.encode() not in data, name
        assert TOKEN.encode() not in data, name
    default = files["golden/test_secrets/test_default.jsonl"]
    assert b"Call the service with [REDACTED:env:SERVICE_TOKEN]" in default
    assert b"key of ada: [REDACTED:openai-key]" in default
    assert b"Your key is key of ada: [REDACTED:openai-key]" in default
    hashed = files["golden/test_secrets/test_hashed.jsonl"]
    assert b"key of ada: [REDACTED:openai-key:sha256:" in hashed


def test_a_replay_with_another_token_in_the_environment_still_matches(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest_inprocess(*IN_PROCESS, "--rollout-record").assert_outcomes(passed=3)
    monkeypatch.setenv("SERVICE_TOKEN", OTHER_TOKEN)
    result = run(project, ())
    # Redacted and hashed, the goldens match; verbatim, the golden holds the first token, and
    # this machine's prompt differs.
    result.assert_outcomes(passed=2, failed=1)
    assert list(failure_sections(result)) == ["test_verbatim"]
    result.stdout.fnmatch_lines(["*prompt_mismatch*"])


def test_verbatim_mode_writes_the_secret_when_asked_to(project: pytest.Pytester) -> None:
    project.runpytest_inprocess(*IN_PROCESS, "--rollout-record", "-k", "verbatim")
    data = (project.path / "golden/test_secrets/test_verbatim.jsonl").read_bytes()
    assert SECRET_KEY.encode() in data
    assert TOKEN.encode() in data


def test_mode_none_drops_the_events_that_hold_a_secret(project: pytest.Pytester) -> None:
    result = project.runpytest_inprocess(
        *IN_PROCESS, "--rollout-record", "--rollout-redact=none", "-k", "default"
    )
    result.assert_outcomes(passed=1)
    data = (project.path / "golden/test_secrets/test_default.jsonl").read_bytes()
    assert SECRET_KEY.encode() not in data
    assert TOKEN.encode() not in data
    assert b"REDACTED" in data  # only in the terminal event, which is always kept
    assert b"[REDACTED:env:SERVICE_TOKEN]" not in data  # its request was dropped too
    assert b'"type":"recorder.drop_detected"' in data
    assert b'"type":"llm.turn.started"' not in data  # both requests held the token


def test_user_rules_from_ini_and_hooks(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        """
        [pytest]
        rollout_redact_patterns =
            employee=EMP-[0-9]{6}+
        rollout_redact_keys =
            x-internal
        """
    )
    pytester.makeconftest(
        """
        def pytest_rollout_redact_patterns(config):
            return [("ticket", r"TICKET-[0-9]++")]
        """
    )
    pytester.makepyfile(
        test_user="""
        import pytest

        @pytest.mark.rollout(model_calls=False)
        def test_user(rollout, golden):
            with rollout.run(prompt="EMP-123456 and TICKET-77") as run:
                rollout.emit("hook.note", headers={"X-Internal": "opaque"})
                run.output = "done"
            assert rollout == golden
        """
    )
    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record")
    result.assert_outcomes(passed=1)
    data = (pytester.path / "golden/test_user/test_user.jsonl").read_bytes()
    assert b"[REDACTED:employee] and [REDACTED:ticket]" in data
    assert b"opaque" not in data


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("no-equals-sign", "rollout_redact_patterns: write each rule as LABEL=REGEX, got*"),
        (
            "bad=(unclosed",
            "rollout_redact_patterns: redaction rule 'bad': invalid regular expression*",
        ),
    ],
)
def test_a_bad_user_rule_stops_the_session(
    pytester: pytest.Pytester, line: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\nrollout_redact_patterns =\n    {line}\n")
    pytester.makepyfile(test_x="def test_x(): pass")
    result = pytester.runpytest_inprocess(*IN_PROCESS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_a_secret_only_the_final_scan_sees_stops_the_golden(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_leak=f"""
        import pytest

        @pytest.mark.rollout(model_calls=False)
        def test_leak(rollout, golden):
            with rollout.run(prompt="hi") as run:
                rollout.emit("note." + {SECRET_KEY[:8]!r} + {SECRET_KEY[8:]!r})
                run.output = "done"
        """
    )
    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*SecretInFileError: refusing to write *test_leak.jsonl: its bytes hold a secret "
            "(openai-key) that redaction did not replace.*"
        ]
    )
    assert SECRET_KEY not in result.stdout.str()
    assert not (pytester.path / "golden").exists() or not list(
        (pytester.path / "golden").rglob("*.jsonl")
    )


@XDIST
def test_a_captured_run_holding_a_secret_is_dropped_without_failing_the_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: tuple[str, ...]
) -> None:
    monkeypatch.setenv("ROLLOUT_DIR", str(pytester.path / "runs"))
    pytester.makepyfile(
        test_live=f"""
        import pytest

        @pytest.mark.rollout(replay=False)
        def test_live(rollout):
            with rollout.run(prompt="hi") as run:
                rollout.emit("note." + {SECRET_KEY[:8]!r} + {SECRET_KEY[8:]!r})
                run.output = "done"
        """
    )
    result = run(pytester, xdist)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["test_live.py::test_live: its run was not saved: the file held a secret (openai-key)"]
    )
    assert SECRET_KEY not in result.stdout.str()
    assert not [p for p in (pytester.path / "runs").rglob("*") if p.is_file()]


def test_the_readme_signature_rule_works_from_an_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        """
        [pytest]
        rollout_redact_patterns =
            url-signature=[?&](?:X-Amz-Signature|X-Goog-Signature|sig)=(?P<secret>[^&#\\s"]++)
        """
    )
    pytester.makepyfile(
        test_url="""
        import pytest

        @pytest.mark.rollout(model_calls=False)
        def test_url(rollout, golden):
            url = "https://a.blob.core.windows.net/c/b?sv=2022&sig=abc%2Bdef%3D&se=2026"
            with rollout.run(prompt=url) as run:
                run.output = "done"
            assert rollout == golden
        """
    )
    pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record").assert_outcomes(passed=1)
    data = (pytester.path / "golden/test_url/test_url.jsonl").read_bytes()
    assert b"?sv=2022&sig=[REDACTED:url-signature]&se=2026" in data


#: A parametrize id that holds an Anthropic key (built when the test file runs, so that the
#: literal key is in no file of the project).
SECRET_ID_TEST = """
import pytest

KEY = "sk-" + "ant-" + "api03-" + "Q7" * 24


@pytest.mark.parametrize("key", [KEY, "plain"])
@pytest.mark.rollout(model_calls=False)
def test_key(rollout, golden, key):
    with rollout.run(prompt="hello") as run:
        run.output = "done"
    assert rollout == golden
"""
ID_SECRET = "sk-" + "ant-" + "api03-" + "Q7" * 24


def test_a_secret_in_a_test_id_reaches_no_file_name_receipt_or_report(
    pytester: pytest.Pytester,
) -> None:
    """Golden names are made with the redactor's name redaction, like the content."""
    pytester.makepyfile(test_secret_ids=SECRET_ID_TEST)
    result = pytester.runpytest_inprocess(
        *IN_PROCESS, "--rollout-record", "--rollout-report=report.html"
    )
    result.assert_outcomes(passed=2)
    names = sorted(p.name for p in (pytester.path / "golden/test_secret_ids").iterdir())
    assert names[2:] == ["test_key[plain].jsonl", "test_key[plain].jsonl.receipt"]
    assert names[0].startswith("test_key[REDACTED-anthropic-key-")
    assert names[0].endswith("].jsonl")
    written = [
        p
        for p in pytester.path.rglob("*")
        if p.is_file() and ".pytest_cache/v" not in p.as_posix()  # pytest's own node ids
    ]
    for path in written:
        assert ID_SECRET not in path.as_posix(), path
        assert ID_SECRET.encode() not in path.read_bytes(), path
    # The same name on the next run: the golden is found, and the test compares against it.
    pytester.runpytest_inprocess(*IN_PROCESS).assert_outcomes(passed=2)
