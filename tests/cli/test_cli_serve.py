"""``rollout serve``: the recording endpoint on its own, driven as a suite in another language
would drive it: start it, read the base URL from its first line, run the agent against it,
interrupt it, read the verdict."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from endpoint_agents import (
    ANSWER,
    FIRST_ANSWER,
    FOLLOW_UP,
    QUESTION,
    SECOND_ANSWER,
    agent_command,
    run_agent,
)
from fake_models import OPENAI_CHAT, FakeModel, Say
from fake_service import FakeService

from pytest_rollout.cli import main

pytestmark = pytest.mark.slow  # each test starts the command, a service and agents

REAL_KEY = "sk-serve-test-0123456789abcdefghijklmnopqr"


@dataclass
class Served:
    """What a ``rollout serve`` said and did."""

    first_line: str
    agent: subprocess.CompletedProcess[str]
    status: int
    stdout: str
    stderr: str


def serve(folder: Path, *args: str, signum: int = signal.SIGINT, **agent_env: str) -> Served:
    """Start ``rollout serve ARGS``, run the Python agent against it, then stop it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_rollout", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OPENAI_API_KEY": REAL_KEY, "PYTHONIOENCODING": "utf-8"},
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().rstrip("\n")
        base_url, _, _ = first.partition(" ")
        env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "anything"}
        agent = run_agent(agent_command("python", folder), env, **agent_env)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return Served(first, agent, process.returncode, stdout, stderr)


def _model() -> FakeModel:
    answers = {QUESTION: Say(FIRST_ANSWER), FOLLOW_UP: Say(SECOND_ANSWER)}
    return FakeModel(OPENAI_CHAT, answers=answers)


def test_serve_records_rerecords_the_same_bytes_and_replays_offline(tmp_path: Path) -> None:
    golden = tmp_path / "golden" / "node_suite.jsonl"
    with FakeService(_model()) as service:
        first = serve(tmp_path, "--golden", str(golden), "--record", "--upstream", service.url)
        written = golden.read_bytes()
        again = serve(
            tmp_path,
            "--golden",
            str(golden),
            "--record",
            "--upstream",
            service.url,
            signum=signal.SIGTERM,
        )
        hits = service.hits
    # The first line: the OpenAI base URL on 127.0.0.1, behind the token printed after it.
    base_url, token = first.first_line.split(" ")
    assert base_url.startswith("http://127.0.0.1:")
    assert base_url.endswith(f"/{token}/v1")
    assert first.agent.stdout.strip() == ANSWER, first.agent.stderr
    assert (first.status, first.stderr) == (0, "")
    assert first.stdout.endswith(f"recorded 2 turns into {golden} (created)\n")
    assert again.status == 0
    assert again.stdout.endswith(f"recorded 2 turns into {golden} (unchanged)\n")
    assert golden.read_bytes() == written
    assert golden.with_name("node_suite.jsonl.receipt").exists()
    assert REAL_KEY.encode() not in written
    assert hits == 4
    replayed = serve(tmp_path, "--golden", str(golden))
    assert replayed.agent.stdout.strip() == ANSWER, replayed.agent.stderr
    assert replayed.status == 0, replayed.stderr
    assert replayed.stdout.endswith("this run matches its golden\n")


def test_serve_prints_the_verdict_of_a_run_that_left_its_golden(tmp_path: Path) -> None:
    golden = tmp_path / "golden" / "suite.jsonl"
    with FakeService(_model()) as service:
        serve(tmp_path, "--golden", str(golden), "--record", "--upstream", service.url)
    replayed = serve(tmp_path, "--golden", str(golden), AGENT_EXTRA="1")
    assert replayed.agent.returncode == 3
    assert "rollout_unrecorded_turn" in replayed.agent.stderr
    assert replayed.status == 1
    assert "this run left its golden at step 3" in replayed.stdout
    assert "unrecorded_turn" in replayed.stdout


def _main(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(["serve", *argv], out=out), out.getvalue()


def test_serve_without_a_golden_to_replay_says_how_to_record_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "golden" / "none.jsonl"
    status, out = _main("--golden", str(missing))
    assert (status, out) == (2, "")
    error = capsys.readouterr().err
    assert error.startswith("rollout: error: ")
    assert "rollout serve --golden FILE --record" in error


def test_serve_refuses_an_upstream_when_replaying(capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = _main("--golden", "g.jsonl", "--upstream", "http://127.0.0.1:9")
    assert status == 2
    assert capsys.readouterr().err == (
        "rollout: error: --upstream is where a recording goes: a replay answers from the "
        "golden and never forwards (add --record to record)\n"
    )
