"""Amazon Bedrock clients whose Converse calls are recorded and replayed: what
``rollout.bedrock()`` builds.

boto3 and botocore send no request through an HTTP client a caller could hand them, but
every request passes botocore's event hooks, and the client is the boto3 (or botocore)
``bedrock-runtime`` client itself, its own request building, signing and response parsing
intact. Three handlers are registered on that one client's event system:

- ``before-send`` sees each signed request (method, URL, body). In dry replay it answers a
  model call from the golden by returning the response itself (botocore then sends nothing
  and parses what it is given, an event stream included); any other request is refused. While
  recording, it starts the call's flight and lets botocore send as usual.
- ``before-parse`` sees the live response before botocore parses it: a JSON body is
  recorded at once; an event stream is wrapped, so that its bytes are recorded as botocore
  reads them, and the turn written when the stream was read to its end (or closed).
- ``response-received`` tells a request that got no response at all (the connection lost).

Only the body of a request is read: its headers (``Authorization``, ``X-Amz-Date``,
``X-Amz-Security-Token``, ...) and the client's credentials never reach the rollout. In dry
replay the client gets placeholder credentials and a region when none are given (nothing
is signed for anyone, nothing is sent), and botocore's retries are off.

boto3 and botocore stay optional: imported when a client is asked for, a missing one is a
:class:`~pytest_rollout.sdk.clients.MissingPackageError` naming what to install.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

from ..errors import RolloutError
from .clients import MissingPackageError
from .exchange import Answer, Exchange, Flight, LiveTurn
from .failures import may_retry
from .flights import TurnPort

__all__ = ["bedrock_client"]

#: The credentials a client gets in dry replay when it is given none: it signs requests that
#: are never sent (and botocore would otherwise look for credentials, on the network too).
REPLAY_ACCESS_KEY: Final = "rollout-replay-no-key"
REPLAY_SECRET_KEY: Final = "rollout-replay-no-secret"
#: The region a replayed client names when neither the test nor the AWS config names one.
REPLAY_REGION: Final = "us-east-1"

_SERVICE: Final = "bedrock-runtime"
_PIP: Final = "pip install boto3"


class _TeeRaw:
    """A live response's raw body (urllib3's), passed on to botocore as it reads it and
    kept for the turn. Everything else is the inner body's."""

    def __init__(self, inner: Any, turn: LiveTurn) -> None:
        self._inner = inner
        self._turn = turn

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        try:
            for chunk in self._inner.stream(*args, **kwargs):
                self._turn.feed(chunk)
                yield chunk
        except Exception:
            self._turn.abandon()  # a body cut short is not a turn
            raise
        self._turn.finish()

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._turn.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _ServedRaw:
    """A recorded body, handed to botocore as a raw body it streams or reads; the turn is
    recorded once it was read to its end, or closed."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self._done = False

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            self._answer.done()

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        yield from self._answer.chunks
        self._finish()

    def read(self, *args: Any, **kwargs: Any) -> bytes:
        self._finish()
        return b"".join(self._answer.chunks)

    def close(self) -> None:
        self._finish()

    def release_conn(self) -> None:
        self._finish()


class _Handlers:
    """The event handlers of one client (see the module doc)."""

    def __init__(self, exchange: Exchange, response_class: type) -> None:
        self.exchange = exchange
        self.response_class = response_class
        self._local = threading.local()  # the flight of the request this thread sends

    def before_send(self, request: Any, **_: Any) -> Any:
        exchange = self.exchange
        self._local.flight = None
        body = request.body
        if body is None:
            body = b""
        elif isinstance(body, str):
            body = body.encode("utf-8")
        elif not isinstance(body, bytes | bytearray):
            body = b""  # a streamed upload: no model call of this API sends one
        path = urlsplit(request.url).path
        call = exchange.model_request(request.method, path, bytes(body))
        if call is None:
            return None
        if exchange.replaying:
            answer = exchange.answer(*call, bytes(body))
            headers = {"content-type": answer.content_type}
            return self.response_class(request.url, answer.status, headers, _ServedRaw(answer))
        self._local.flight = exchange.send(*call, bytes(body), _retry(request))
        return None

    def before_parse(self, response_dict: Any, **_: Any) -> None:
        flight: Flight | None = getattr(self._local, "flight", None)
        if flight is None:
            return
        self._local.flight = None
        status = int(response_dict["status_code"])
        headers = response_dict["headers"]
        turn = flight.response(
            status, str(headers.get("content-type") or ""), None, may_retry(status, None)
        )
        body = response_dict["body"]
        if isinstance(body, bytes | bytearray):
            turn.feed(_with_error_type(status, headers, bytes(body)))
            turn.finish()
        else:
            response_dict["body"] = _TeeRaw(body, turn)

    def response_received(self, exception: Any = None, **_: Any) -> None:
        flight: Flight | None = getattr(self._local, "flight", None)
        if flight is not None and exception is not None:
            self._local.flight = None
            flight.lost()


def _retry(request: Any) -> bool:
    """Whether botocore says ``request`` retries its previous one (``amz-sdk-request:
    attempt=2; max=4``)."""
    value = request.headers.get("amz-sdk-request") or b""
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
    for part in text.split(";"):
        name, _, number = part.strip().partition("=")
        if name == "attempt":
            return number.strip() not in ("", "1")
    return False


def _with_error_type(status: int, headers: Any, body: bytes) -> bytes:
    """An error body with the error's type in it (``"__type"``), where AWS sends it in an
    ``x-amzn-ErrorType`` header only: the golden keeps bodies, not headers, and botocore
    reads the type from either, so the replayed error is of the same class."""
    error_type = headers.get("x-amzn-errortype")
    if status < 300 or not error_type or not body.lstrip().startswith(b"{"):
        return body
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    if not isinstance(value, dict) or "__type" in value or "code" in value:
        return body
    return orjson.dumps({"__type": str(error_type).split(":", 1)[0], **value})


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise MissingPackageError(
            f"rollout.bedrock() needs the boto3 package, which is not installed: {_PIP}"
        ) from None


def _replay_kwargs(kwargs: dict[str, Any], configured_region: Any) -> None:
    """Dry replay: placeholder credentials and region unless given, and no retries (a
    replayed answer never fails for a reason a retry could fix)."""
    config_class = _import("botocore.config").Config
    if kwargs.get("aws_access_key_id") is None and kwargs.get("aws_secret_access_key") is None:
        kwargs["aws_access_key_id"] = REPLAY_ACCESS_KEY
        kwargs["aws_secret_access_key"] = REPLAY_SECRET_KEY
        kwargs.pop("aws_session_token", None)
    if kwargs.get("region_name") is None and not configured_region:
        kwargs["region_name"] = REPLAY_REGION
    config = kwargs.get("config")
    no_retries = config_class(retries={"total_max_attempts": 1})
    if config is None:
        kwargs["config"] = no_retries
    elif getattr(config, "retries", None) is None:
        kwargs["config"] = config.merge(no_retries)


def bedrock_client(session: TurnPort, client_kwargs: dict[str, Any]) -> Any:
    """A ``bedrock-runtime`` client (boto3's when boto3 is installed, else botocore's) built
    with ``client_kwargs``, its Converse and ConverseStream calls recorded (and answered
    from the golden in dry replay)."""
    botocore, awsrequest = _import("botocore.session"), _import("botocore.awsrequest")
    try:
        boto3: Any = importlib.import_module("boto3.session")
    except ImportError:
        boto3 = None  # botocore alone builds the same client
    if "service_name" in client_kwargs:
        raise RolloutError("rollout.bedrock() builds a 'bedrock-runtime' client: drop service_name")
    kwargs = dict(client_kwargs)
    if boto3 is not None:
        maker: Any = boto3.Session()
        configured = maker.region_name
        create = maker.client
    else:
        maker = botocore.get_session()
        configured = maker.get_config_variable("region")
        create = maker.create_client
    if session.replays_every_turn:
        _replay_kwargs(kwargs, configured)
    client = create(_SERVICE, **kwargs)
    handlers = _Handlers(Exchange(session), awsrequest.AWSResponse)
    events = client.meta.events
    service = client.meta.service_model.service_id.hyphenize()
    for event, handler in (
        ("before-send", handlers.before_send),
        ("before-parse", handlers.before_parse),
        ("response-received", handlers.response_received),
    ):
        events.register(f"{event}.{service}", handler, unique_id=f"rollout-{event}")
    return client
