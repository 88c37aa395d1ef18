"""A sealed replay: an outbound connection that does not go through pytest-rollout fails.

A dry replay answers the model and the tools from the golden, so it needs no network. A client
the plugin did not build (an SDK client made by hand, a framework that ignores the client it
was given) would still reach the live service, and the test would pass on live answers: the
worst thing this product can do. :class:`NetworkSeal` closes that door at the socket level,
so every HTTP library is caught: while it is on, a connection to a host the policy does not
allow raises :class:`RolloutNetworkError` before anything is sent (and before the name is
looked up), and the breach is kept, so that a test whose agent swallowed the error still
fails.

The policy (:class:`NetworkPolicy`): ``loopback`` (the default) lets connections to the
machine itself through, for local fakes; ``sealed`` lets nothing through; ``open`` does not
seal. Named hosts (``allow``) go through under every policy. Unix sockets are never
stopped.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Iterable
from enum import StrEnum
from types import TracebackType
from typing import Any, Final

from ..errors import RolloutError
from ..safety.sanitize import sanitize

__all__ = ["NetworkPolicy", "NetworkSeal", "RolloutNetworkError"]

#: The names of the machine itself.
LOCAL_NAMES: Final = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def _host_text(host: bytes) -> str:
    """A host name given as bytes (anyio, under httpx's async client, passes it IDNA-encoded),
    as text; bytes that are not IDNA are shown with their undecodable bytes replaced (the
    IDNA codec refuses every error handler but ``strict``)."""
    try:
        return host.decode("idna")
    except UnicodeError:
        return host.decode("ascii", errors="replace")


class NetworkPolicy(StrEnum):
    """Which outbound connections a dry replay lets through."""

    LOOPBACK = "loopback"
    SEALED = "sealed"
    OPEN = "open"


class RolloutNetworkError(RolloutError):
    """A dry replay reached for the network outside pytest-rollout: the host, and how to
    wire the client that did it."""

    __module__ = "pytest_rollout"

    def __init__(self, host: str, port: int | None, policy: NetworkPolicy) -> None:
        self.host = host
        self.port = port
        self.policy = policy
        where = sanitize(host if port is None else f"{host}:{port}")
        super().__init__(
            f"this dry replay reached {where} outside pytest-rollout "
            f"(rollout_network = {policy.value})\n"
            "A replay answers the model from the golden and never needs the network. Build the "
            "model client\nwith rollout.openai(), rollout.anthropic() or rollout.http_client() "
            "(docs/sdk-agents.md), or let\nthis host through with rollout_allow_hosts = "
            f'{sanitize(host)},\nor replay the test with @pytest.mark.rollout(network="open").'
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.host, self.port, self.policy))


class NetworkSeal:
    """While entered, connections the policy does not allow fail (:mod:`this module
    <pytest_rollout.replay.seal>`). ``breaches`` keeps each refusal, in order;
    ``on_breach`` is told of each as it happens. One seal is on at a time in a process."""

    def __init__(
        self,
        policy: NetworkPolicy = NetworkPolicy.LOOPBACK,
        allow: Iterable[str] = (),
        on_breach: Callable[[RolloutNetworkError], None] | None = None,
    ) -> None:
        self.policy = policy
        self.allowed = {host.strip().lower() for host in allow if host.strip()}
        self.breaches: list[RolloutNetworkError] = []
        self._on_breach = on_breach
        self._addresses: set[str] = set()  # what the allowed names resolved to
        self._lock = threading.Lock()
        self._saved: tuple[Any, Any, Any] | None = None

    # -- the policy ----------------------------------------------------------------------

    def allows(self, host: str) -> bool:
        """Whether a connection to ``host`` (a name or an address) goes through."""
        if self.policy is NetworkPolicy.OPEN:
            return True
        name = host.strip("[]").lower()
        if name in self.allowed or name in self._addresses:
            return True
        if self.policy is NetworkPolicy.SEALED:
            return False
        if name in LOCAL_NAMES:
            return True
        try:
            return ipaddress.ip_address(name.partition("%")[0]).is_loopback
        except ValueError:
            return False  # another name: where it leads is not known here

    def _refuse(self, host: str, port: int | None) -> RolloutNetworkError:
        error = RolloutNetworkError(host, port, self.policy)
        with self._lock:
            self.breaches.append(error)
        if self._on_breach is not None:
            self._on_breach(error)
        return error

    # -- the socket layer ------------------------------------------------------------------

    def __enter__(self) -> NetworkSeal:
        if self.policy is NetworkPolicy.OPEN:
            return self
        connect, connect_ex, getaddrinfo = (
            socket.socket.connect,
            socket.socket.connect_ex,
            socket.getaddrinfo,
        )
        self._saved = (connect, connect_ex, getaddrinfo)
        seal = self

        def guarded_connect(sock: socket.socket, address: Any) -> None:
            seal._check(sock, address)
            connect(sock, address)

        def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
            seal._check(sock, address)
            result: int = connect_ex(sock, address)
            return result

        def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            name = _host_text(host) if isinstance(host, bytes) else host
            if isinstance(name, str) and name and not seal.allows(name):
                port = args[0] if args else kwargs.get("port")
                raise seal._refuse(name, port if isinstance(port, int) else None)
            found = getaddrinfo(host, *args, **kwargs)
            if isinstance(name, str) and name.strip().lower() in seal.allowed:
                seal._addresses.update(str(info[4][0]).lower() for info in found)
            return found

        socket.socket.connect = guarded_connect  # type: ignore[method-assign, assignment]
        socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign, assignment]
        socket.getaddrinfo = guarded_getaddrinfo
        return self

    def _check(self, sock: socket.socket, address: Any) -> None:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return  # a Unix socket, a netlink socket: never the network
        if isinstance(address, tuple) and address and isinstance(address[0], str | bytes):
            host = address[0]
            if isinstance(host, bytes):
                host = _host_text(host)
            port = address[1] if len(address) > 1 and isinstance(address[1], int) else None
            if not self.allows(host):
                raise self._refuse(host, port)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._saved is not None:
            connect, connect_ex, getaddrinfo = self._saved
            socket.socket.connect = connect  # type: ignore[method-assign]
            socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
            socket.getaddrinfo = getaddrinfo
            self._saved = None
