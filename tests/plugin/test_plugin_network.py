"""A dry replay is sealed (docs/replay.md): a client the plugin did not build cannot reach a
service and pass. The service here is a local one, on 127.0.0.1, as every test's traffic is."""

from __future__ import annotations

import pytest
from plugin_agent import failure_sections, record, run

#: An agent whose model is wired through the plugin, and which also calls a service with a
#: client of its own (as a framework that ignores the client it is given does), swallowing
#: whatever that call raises.
UNWIRED_TEST = """
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pytest_rollout import Turn


class Service(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        with open("hits.txt", "a", encoding="utf-8") as hits:
            hits.write("hit\\n")
        body = b'{"temp": 21}'
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def port():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Service)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


class Model:
    def complete(self, messages, tools=None, **params):
        return Turn("It is 21 C.", [])


def test_weather(rollout, golden, port):
    llm = rollout.provider(Model())
    with rollout.run(prompt="weather?") as run:
        turn = llm.complete([{"role": "user", "content": "weather?"}])
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/weather", timeout=5).read()
        except Exception:
            pass  # the agent carries on without it
        run.output = turn.content
    assert rollout == golden
"""


def hits(pytester: pytest.Pytester) -> int:
    found = pytester.path / "hits.txt"
    return found.read_text(encoding="utf-8").count("hit") if found.exists() else 0


def test_a_sealed_replay_refuses_an_unwired_client_even_when_the_agent_swallows_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_unwired=UNWIRED_TEST)
    record(pytester).assert_outcomes(passed=1)  # recording is live: the service is called
    assert hits(pytester) == 1

    result = run(pytester, (), "-o", "rollout_network=sealed")

    result.assert_outcomes(failed=1)
    assert hits(pytester) == 1  # nothing reached the service
    report = failure_sections(result)["test_weather"]
    headline = next(line for line in report if line.startswith("this dry replay reached "))
    assert headline.startswith("this dry replay reached 127.0.0.1:")
    assert headline.endswith(" outside pytest-rollout (rollout_network = sealed)")
    assert "this host through with rollout_allow_hosts = 127.0.0.1," in report
    result.stdout.fnmatch_lines(["FAILED test_unwired.py::test_weather - this dry replay reached*"])


def test_loopback_is_let_through_by_default_and_a_named_host_under_sealed(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_unwired=UNWIRED_TEST)
    record(pytester).assert_outcomes(passed=1)

    run(pytester, ()).assert_outcomes(passed=1)  # rollout_network = loopback
    allowed = ("-o", "rollout_network=sealed", "-o", "rollout_allow_hosts=127.0.0.1")
    run(pytester, (), *allowed).assert_outcomes(passed=1)
    assert hits(pytester) == 3


def test_a_bad_network_policy_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_unwired=UNWIRED_TEST)
    result = run(pytester, (), "-o", "rollout_network=closed")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*rollout_network must be one of loopback, sealed, open, got 'closed'*"]
    )
