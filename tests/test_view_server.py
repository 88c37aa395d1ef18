"""``rollout view --serve``: 127.0.0.1 only, a token on the data, no bodies, no logs."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from pytest_rollout.view.entries import run_entry
from pytest_rollout.view.page import content_security_policy, page_data
from pytest_rollout.view.server import DATA_PATH, TOKEN_HEADER, ViewServer

GOLDEN = Path(__file__).resolve().parent.parent / "examples" / "weather" / "golden"


@pytest.fixture
def server() -> Iterator[ViewServer]:
    path = next(GOLDEN.rglob("*.jsonl"))
    running = ViewServer("a title", [run_entry(str(path))])
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


def test_the_shell_holds_no_data_and_every_response_is_locked_down(server: ViewServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/")
    response = connection.getresponse()
    body = response.read()
    assert response.status == 200
    assert response.getheader("Content-Security-Policy") == content_security_policy()
    assert response.getheader("X-Content-Type-Options") == "nosniff"
    assert response.getheader("X-Frame-Options") == "DENY"
    assert response.getheader("Referrer-Policy") == "no-referrer"
    assert response.getheader("Cache-Control") == "no-store"
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
