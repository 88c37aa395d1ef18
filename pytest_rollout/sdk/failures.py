"""Error responses an agent gets from a model API, as failed turns.

When an SDK gives up on a request (its own retries spent, or the service said not to retry)
it raises the error to the agent, which may handle it: back off, shorten its prompt, switch
models. Such a response is recorded as ``llm.turn.failed`` with the error the SDK raises and
the response itself::

    {"error": {"class": "BadRequestError", "message": "Error code: 400 - ..."},
     "response": {"status": 400, "content_type": "application/json", "body": {...}}}

``body`` is the parsed JSON of a JSON response, else its text. Dry replay answers the request
with the same status, content type and body, so the SDK raises the same exception and the
agent's recovery path runs again. This module holds the two directions, and the SDKs' rule
for which error statuses they retry.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Final

import orjson

from .wire_api import media_type

__all__ = ["failed_data", "failed_response", "may_retry"]

#: The exception class the OpenAI and Anthropic SDKs raise for an HTTP status.
_CLASSES: Final = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    413: "RequestTooLargeError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
    529: "OverloadedError",
}

#: Statuses the SDKs retry unless the response says not to (``x-should-retry: false``).
_RETRIED: Final = frozenset({408, 409, 429})


def may_retry(status: int, should_retry: str | None) -> bool:
    """Whether the SDKs may retry an error response (their own rule, minus the retry count
    and the ``retry-after`` cap): an ``x-should-retry`` header decides, else 408, 409, 429
    and 5xx are retried."""
    if should_retry in ("true", "false"):
        return should_retry == "true"
    return status in _RETRIED or status >= 500


def _class_of(status: int, provider: str) -> str:
    found = _CLASSES.get(status)
    if found is None or (
        found in ("RequestTooLargeError", "OverloadedError") and provider != "anthropic"
    ):
        return "InternalServerError" if status >= 500 else "APIStatusError"
    return found


def _message(status: int, body: Any) -> str:
    """The SDKs' message: ``Error code: 400 - <the body's error message>``."""
    text = f"Error code: {status}"
    error = body.get("error", body) if isinstance(body, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else None
    if isinstance(message, str) and message:
        text += f" - {message}"
    return text


def failed_data(provider: str, status: int, content_type: str, body: bytes) -> dict[str, Any]:
    """The data of the ``llm.turn.failed`` of an error response."""
    value: Any = body.decode("utf-8", errors="replace")
    media = media_type(content_type)
    if media == "application/json" or media.endswith("+json"):
        with contextlib.suppress(orjson.JSONDecodeError):
            value = orjson.loads(body)
    return {
        "error": {"class": _class_of(status, provider), "message": _message(status, value)},
        "response": {"status": status, "content_type": content_type, "body": value},
    }


def failed_response(data: Mapping[str, Any]) -> tuple[int, str, bytes] | None:
    """``(status, content_type, body)`` of a recorded failed turn, or ``None`` when it holds
    no response (a provider call that raised)."""
    response = data.get("response")
    if not isinstance(response, Mapping):
        return None
    status, content_type = response.get("status"), response.get("content_type")
    if not isinstance(status, int) or not 400 <= status <= 599:
        return None
    content_type = content_type if isinstance(content_type, str) else "application/json"
    body = response.get("body")
    raw = body.encode("utf-8") if isinstance(body, str) else orjson.dumps(body)
    return status, content_type, raw
