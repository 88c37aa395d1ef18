"""A sealed replay (docs/replay.md): a connection the policy does not allow is refused before
anything is sent or looked up, and the refusal is kept. The socket layer is stubbed here: no
test sends traffic anywhere but loopback."""

from __future__ import annotations

import re
import socket
from typing import Any

import pytest

from pytest_rollout import RolloutNetworkError
from pytest_rollout.replay.seal import NetworkPolicy, NetworkSeal

#: An address of TEST-NET-3 (RFC 5737), never routed: and never connected to, stubs or not.
FAR = "203.0.113.7"


@pytest.fixture
def attempts(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The connections and lookups that reached the socket layer (stubbed: none is made)."""
    made: list[Any] = []

    def connect(sock: socket.socket, address: Any) -> None:
        made.append(("connect", address))

    def connect_ex(sock: socket.socket, address: Any) -> int:
        made.append(("connect_ex", address))
        return 0

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(("getaddrinfo", host))
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.9", port))]

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return made


def tcp() -> socket.socket:
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM)


def test_loopback_goes_through_and_another_host_is_refused_before_any_attempt(
    attempts: list[Any],
) -> None:
    seal = NetworkSeal(NetworkPolicy.LOOPBACK)
    with seal, tcp() as sock, tcp() as other:
        sock.connect(("127.0.0.1", 8080))
        far = rf"reached {re.escape(FAR)}:443 outside"
        with pytest.raises(RolloutNetworkError, match=far) as refused:
            other.connect((FAR, 443))
        with pytest.raises(RolloutNetworkError, match=r"reached api\.example\.com:443"):
            socket.create_connection(("api.example.com", 443))
    assert attempts == [("connect", ("127.0.0.1", 8080))]
    assert [b.host for b in seal.breaches] == [FAR, "api.example.com"]
    assert refused.value is seal.breaches[0]
    assert "rollout_allow_hosts = 203.0.113.7" in str(refused.value)


def test_a_host_given_as_bytes_is_refused_by_name(attempts: list[Any]) -> None:
    """anyio (under httpx's async client) looks a host up by its IDNA bytes; a name that is
    not IDNA is still refused by name, never with a codec error."""
    seal = NetworkSeal(NetworkPolicy.LOOPBACK, allow=["bücher.example"])
    with seal:
        with pytest.raises(RolloutNetworkError, match=r"reached api\.example\.com:443"):
            socket.getaddrinfo(b"api.example.com", 443)
        with pytest.raises(RolloutNetworkError, match="reached a\ufffdb:443"):
            socket.getaddrinfo(b"a\xffb", 443)
        socket.getaddrinfo("bücher.example".encode("idna"), 443)
    assert attempts == [("getaddrinfo", b"xn--bcher-kva.example")]


def test_sealed_refuses_loopback_too_and_named_hosts_go_through(attempts: list[Any]) -> None:
    told: list[RolloutNetworkError] = []
    seal = NetworkSeal(NetworkPolicy.SEALED, allow=["models.internal"], on_breach=told.append)
    with seal, tcp() as sock:
        with pytest.raises(RolloutNetworkError, match=r"reached 127\.0\.0\.1:8080"):
            sock.connect_ex(("127.0.0.1", 8080))
        # An allowed name, and the address it resolves to.
        found = socket.getaddrinfo("models.internal", 443)
        sock.connect(found[0][4])
    assert attempts == [("getaddrinfo", "models.internal"), ("connect", ("127.0.0.9", 443))]
    assert told == seal.breaches
    assert [str(b.host) for b in told] == ["127.0.0.1"]


def test_open_changes_nothing_and_every_seal_puts_the_socket_layer_back(
    attempts: list[Any],
) -> None:
    before = (socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo)
    with NetworkSeal(NetworkPolicy.OPEN) as seal, tcp() as sock:
        assert (socket.socket.connect, socket.getaddrinfo) == (before[0], before[2])
        sock.connect((FAR, 443))
    with NetworkSeal(NetworkPolicy.LOOPBACK):
        assert socket.socket.connect is not before[0]
    assert (socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo) == before
    assert seal.breaches == []
    assert attempts == [("connect", (FAR, 443))]


def test_a_unix_socket_is_never_the_network(tmp_path: Any) -> None:
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX) as server, socket.socket(socket.AF_UNIX) as client:
        server.bind(path)
        server.listen()
        with NetworkSeal(NetworkPolicy.SEALED):
            client.connect(path)


def test_the_error_survives_pickling() -> None:
    import pickle

    error = RolloutNetworkError("api.example.com", 443, NetworkPolicy.SEALED)
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), str(again)) == (RolloutNetworkError, str(error))
