"""``rollout view --serve``: 127.0.0.1 only, a token on the data, no foreign origin, no
bodies, no logs; one agent's data on request."""

from __future__ import annotations

import http.client
import os
import select
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from agent_runs import EVIL_AGENT, write_agent_run

from pytest_rollout.view.descriptor import HEALTH_PATH
from pytest_rollout.view.entries import diff_entry, run_entry
from pytest_rollout.view.page import content_security_policy, page_data
from pytest_rollout.view.server import DATA_PATH, REQUEST_TIMEOUT, TOKEN_HEADER, ViewServer

pytestmark = pytest.mark.slow  # a server on loopback

GOLDEN = Path(__file__).resolve().parents[2] / "examples" / "weather" / "golden"


# One server per module: each test sends its own requests, and no request changes it.
@pytest.fixture(scope="module")
def server() -> Iterator[ViewServer]:
    yield from _serving()


@pytest.fixture(scope="module")
def impatient() -> Iterator[ViewServer]:
    """A server that closes a silent connection after 0.2 s."""
    yield from _serving(timeout=0.2)


def _serving(timeout: float = REQUEST_TIMEOUT) -> Iterator[ViewServer]:
    path = next(GOLDEN.rglob("*.jsonl"))
    running = ViewServer("a title", [run_entry(str(path))], timeout=timeout)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running
    running.shutdown()
    thread.join(timeout=5)


def _request(
    server: ViewServer,
    path: str,
    *,
    method: str = "GET",
    host: str | None = None,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.putrequest(method, path, skip_host=True)
    connection.putheader("Host", host or f"127.0.0.1:{server.port}")
    for name, value in (headers or {}).items():
        connection.putheader(name, value)
    if body is not None:
        connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body)
    response = connection.getresponse()
    response.read()
    return response


def _data(server: ViewServer, token: str) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", DATA_PATH, headers={TOKEN_HEADER: token})
    return connection.getresponse()


def test_it_listens_on_loopback_and_puts_the_token_in_the_fragment(server: ViewServer) -> None:
    assert server._server.server_address[0] == "127.0.0.1"
    assert server.url == f"http://127.0.0.1:{server.port}/#token={server.token}"
    assert len(server.token) >= 40


def _locked_down() -> dict[str, str]:
    """The headers every response carries, whatever its status."""
    return {
        "content-security-policy": content_security_policy(),
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store",
        "cross-origin-resource-policy": "same-origin",
    }


def test_the_shell_holds_no_data_and_every_response_is_locked_down(server: ViewServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/")
    response = connection.getresponse()
    body = response.read()
    assert response.status == 200
    headers = {name.lower(): value for name, value in response.getheaders()}
    assert _locked_down().items() <= headers.items()
    assert b"What is the weather" not in body  # the rollout's content is only in the data


def test_the_data_needs_the_token(server: ViewServer) -> None:
    assert _request(server, DATA_PATH).status == 403
    assert _data(server, "not-the-token").status == 403
    response = _data(server, server.token)
    assert response.status == 200
    data = response.read()
    assert orjson.loads(data)["title"] == orjson.loads(page_data("a title", []))["title"]


def test_another_host_is_refused(server: ViewServer) -> None:
    assert _request(server, "/", host="evil.example:80").status == 421
    assert _request(server, "/", host=f"127.0.0.1.evil.example:{server.port}").status == 421
    assert _request(server, "/", host=f"localhost:{server.port}").status == 200


def test_bodies_and_other_methods_are_refused(server: ViewServer) -> None:
    assert _request(server, "/", method="POST", body=b"x=1").status == 405
    assert _request(server, "/", body=b"hello").status == 413
    assert _request(server, "/", method="PUT").status == 405
    assert _request(server, "/nothing").status == 404


def test_nothing_is_logged(server: ViewServer, capfd: pytest.CaptureFixture[str]) -> None:
    _data(server, server.token).read()
    _request(server, "/")
    _request(server, DATA_PATH)
    captured = capfd.readouterr()
    assert server.token not in captured.out + captured.err
    assert captured.err == ""


# -- errors and slow clients: raw bytes on a socket --------------------------------------------


def _raw(server: ViewServer, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` as is and read the answer up to the server's close.

    Each request is exactly what the server reads before it answers, so no unread byte makes
    the close a reset that would lose the answer.
    """
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as client:
        client.sendall(request)
        received = b""
        while chunk := client.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


_LONG = 65537  # one byte more than a request or header line may hold


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        pytest.param(b"NONSENSE\r\n", 400, id="one-word-request-line"),
        pytest.param(b"GET / HTTP/1.0 extra\r\n", 400, id="four-word-request-line"),
        pytest.param(b"GET / FTP/1.0\r\n", 400, id="bad-version"),
        pytest.param(b"POST /\r\n", 400, id="http-0.9-not-get"),
        pytest.param(b"GET / HTTP/2.0\r\n", 505, id="http-2"),
        pytest.param(b"BREW / HTTP/1.0\r\n\r\n", 501, id="unknown-method"),
        pytest.param(b"TRACE / HTTP/1.0\r\n\r\n", 501, id="trace"),
        pytest.param(b"POST / HTTP/1.0\r\n\r\n", 405, id="post"),
        pytest.param(b"OPTIONS * HTTP/1.0\r\n\r\n", 405, id="options"),
        pytest.param(b"GET /\r\n\r\n", 421, id="http-0.9-get"),
        pytest.param(b"GET / HTTP/1.0\r\n\r\n", 421, id="no-host"),
        pytest.param(b"GET /" + b"a" * (_LONG - 5), 414, id="uri-too-long"),
        pytest.param(
            b"GET / HTTP/1.0\r\n" + b"X-Big: " + b"a" * (_LONG - 7), 431, id="header-too-long"
        ),
        pytest.param(
            b"GET / HTTP/1.0\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(101)),
            431,
            id="too-many-headers",
        ),
    ],
)
def test_every_error_response_is_locked_down_too(
    server: ViewServer, request_bytes: bytes, status: int
) -> None:
    got, headers, body = _raw(server, request_bytes)
    assert got == status
    assert _locked_down().items() <= headers.items()
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["content-length"] == str(len(body))
    if status == 405:
        assert headers["allow"] == "GET, HEAD"


def test_an_error_does_not_echo_the_request(server: ViewServer) -> None:
    _, _, body = _raw(server, b"<script>alert(1)</script> / HTTP/1.0\r\n\r\n")
    assert body == b"501 Not Implemented\n"


def _closed_by_server(client: socket.socket) -> bool:
    """Whether the server closed the connection without answering."""
    try:
        return client.recv(1) == b""
    except ConnectionResetError:  # closed while a byte of ours was on its way
        return True


def test_an_idle_connection_is_closed(impatient: ViewServer) -> None:
    with socket.create_connection(("127.0.0.1", impatient.port), timeout=10) as client:
        assert client.recv(1) == b""  # closed by the server, nothing sent


def test_a_request_that_stops_halfway_is_closed(impatient: ViewServer) -> None:
    with socket.create_connection(("127.0.0.1", impatient.port), timeout=10) as client:
        client.sendall(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n")
        assert client.recv(1) == b""


def test_a_request_that_trickles_in_is_closed(impatient: ViewServer) -> None:
    # A byte every 50 ms never leaves the connection silent for 0.2 s: the request as a
    # whole is out of time long before its 200 bytes are all sent.
    request = b"GET / HTTP/1.0\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", impatient.port), timeout=10) as client:
        sent = 0
        while sent < len(request):
            client.sendall(request[sent : sent + 1])
            sent += 1
            if select.select([client], [], [], 0.05)[0]:
                break
        assert _closed_by_server(client)
    assert sent < len(request)


def test_a_timely_request_is_still_answered(impatient: ViewServer) -> None:
    assert _request(impatient, "/").status == 200


def test_the_default_idle_timeout_is_a_few_seconds() -> None:
    assert 1 <= REQUEST_TIMEOUT <= 30


# -- the token as a Bearer, foreign origins, one agent's data, health, fresh data ---------


def test_the_data_accepts_the_token_as_a_bearer(server: ViewServer) -> None:
    bearer = {"Authorization": f"Bearer {server.token}"}
    assert _request(server, DATA_PATH, headers=bearer).status == 200
    assert _request(server, DATA_PATH, headers={"Authorization": "Bearer wrong"}).status == 403
    assert _request(server, DATA_PATH, headers={"Authorization": server.token}).status == 403
    basic = {"Authorization": f"Basic {server.token}"}
    assert _request(server, DATA_PATH, headers=basic).status == 403


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://127.0.0.1:1", "https://127.0.0.1"]
)
def test_a_foreign_origin_is_refused(server: ViewServer, origin: str) -> None:
    bearer = {"Authorization": f"Bearer {server.token}"}
    response = _request(server, DATA_PATH, headers={**bearer, "Origin": origin})
    assert response.status == 403
    assert _request(server, "/", headers={"Origin": origin}).status == 403


def test_its_own_origin_is_answered(server: ViewServer) -> None:
    bearer = {"Authorization": f"Bearer {server.token}"}
    for own in (f"http://127.0.0.1:{server.port}", f"http://localhost:{server.port}"):
        assert _request(server, DATA_PATH, headers={**bearer, "Origin": own}).status == 200


def test_health_names_the_process_to_the_token_only(server: ViewServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", HEALTH_PATH, headers={"Authorization": f"Bearer {server.token}"})
    response = connection.getresponse()
    assert response.status == 200
    assert orjson.loads(response.read()) == {"service": "rollout-view", "pid": os.getpid()}
    assert _request(server, HEALTH_PATH).status == 403


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ViewServer]:
    """A server of a run with several agents, and of that run against another."""
    folder = tmp_path_factory.mktemp("agents")
    run = write_agent_run(folder / "multi.jsonl")
    other = write_agent_run(folder / "other.jsonl", evil="closer")
    entries = [run_entry(str(run)), diff_entry(str(run), str(other), name="diff")]
    running = ViewServer("agents", entries)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running
    running.shutdown()
    thread.join(timeout=5)


def _agent_data(server: ViewServer, query: str) -> dict[str, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    headers = {"Authorization": f"Bearer {server.token}"}
    connection.request("GET", f"{DATA_PATH}{query}", headers=headers)
    response = connection.getresponse()
    assert response.status == 200
    return dict(orjson.loads(response.read()))


def _seqs(run: dict[str, Any]) -> list[int]:
    return [row[0] for row in run["events"]]


def test_the_data_of_one_agent(agents: ViewServer) -> None:
    whole = _agent_data(agents, "")
    assert "agent" not in whole
    assert len(whole["entries"][0]["events"]) == 14
    billing = _agent_data(agents, "?agent=billing")
    assert billing["agent"] == "billing"
    run = billing["entries"][0]
    # Its events, the handoffs to and from it, the run's start and end.
    assert _seqs(run) == [0, 5, 6, 7, 8, 9, 10, 13]
    assert run["agent"] == "billing"
    assert run["totals"] == whole["entries"][0]["totals"]  # about the whole run
    evil = _agent_data(agents, "?agent=" + quote(EVIL_AGENT))
    assert evil["agent"] == EVIL_AGENT
    assert _seqs(evil["entries"][0]) == [0, 10, 11, 13]
    assert _seqs(_agent_data(agents, "?agent=nobody")["entries"][0]) == [0, 13]
    assert _agent_data(agents, "?agent=")["entries"] == whole["entries"]


def test_the_diff_of_one_agent_is_renumbered(agents: ViewServer) -> None:
    diff = _agent_data(agents, "?agent=billing")["entries"][1]
    for side in ("golden", "run"):
        assert _seqs(diff[side]) == [0, 5, 6, 7, 8, 9, 10, 13]
    comparison = diff["comparison"]
    shown = [(s["step"], s["golden"], s["run"]) for s in comparison["steps"]]
    assert shown == [(0, [0], [0]), (2, [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]), (3, [6, 7], [6, 7])]
    first = comparison["first"]
    assert first["step"] == 3
    # The first divergence is the handoff to the third agent: kept, and renumbered.
    assert diff["golden"]["events"][first["golden_event"]][2] == "handoff"
    assert diff["run"]["events"][first["run_event"]][4]["to"] == "closer"


def test_the_data_follows_a_reload(tmp_path: Path) -> None:
    path = next(GOLDEN.rglob("*.jsonl"))
    fresh: list[tuple[str, list[dict[str, Any]]]] = []
    running = ViewServer(
        "old", [run_entry(str(path))], reload=lambda: fresh.pop() if fresh else None
    )
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    try:
        assert orjson.loads(_data(running, running.token).read())["title"] == "old"
        fresh.append(("new", []))
        assert orjson.loads(_data(running, running.token).read()) == {"title": "new", "entries": []}
        assert orjson.loads(_data(running, running.token).read())["title"] == "new"
    finally:
        running.shutdown()
        thread.join(timeout=5)
