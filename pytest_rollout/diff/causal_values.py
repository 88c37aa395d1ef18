"""Reading the values of a run for its causal graph (:mod:`~pytest_rollout.diff.causal_graph`):
the leaves and words of a tool output or of a call's arguments, the forms a tool result
takes in a request (its digests), and the tool results a request's messages hold, whatever
the API's shape. Tolerant: what does not read is skipped, nothing raises.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

import orjson

__all__ = [
    "MAX_JSON_CHARS",
    "MAX_VALUE_CHARS",
    "MIN_SHARED_CHARS",
    "json_text",
    "leaves",
    "result_keys",
    "tool_results",
    "words",
]

#: The fewest characters a shared value has as text to make a ``data_flow`` edge.
MIN_SHARED_CHARS: Final = 6
#: The most characters of a value: a longer leaf is searched for by its words only.
MAX_VALUE_CHARS: Final = 256
#: The longest string read as JSON (a tool output or result serialized as text).
MAX_JSON_CHARS: Final = 65_536
#: How deep values are walked; the most messages, or parts of one, looked at in a request.
_MAX_DEPTH: Final = 32
_MAX_PARTS: Final = 10_000
_MAX_INT_BITS: Final = 850  # about MAX_VALUE_CHARS decimal digits

_WORD: Final = re.compile(r"\w[\w@#$%&+/:=?.~-]*")
_WORD_END: Final = ".:?=&/-"
_CONTAINERS: Final = (dict, list)
_JSON_OPENERS: Final = ("{", "[", " ", "\n", "\t", "\r")
#: The keys under which the APIs wrap a tool result (MCP, Gemini, Bedrock, blocks).
_WRAPPERS: Final = ("content", "output", "result", "json", "text", "structuredContent")


def _items(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def json_text(text: str) -> Any:
    """What ``text`` holds when it is a JSON object or array (``None`` otherwise)."""
    if len(text) > MAX_JSON_CHARS or text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        return orjson.loads(text)
    except (orjson.JSONDecodeError, UnicodeEncodeError):
        return None


def _number_text(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value) if value.bit_length() <= _MAX_INT_BITS else None
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return None


def leaves(value: Any, budget: list[int]) -> Iterator[str]:
    """The string and number leaves of ``value`` as trimmed text (the leaves of a string
    holding JSON too), while ``budget`` (leaves, characters) lasts."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.extend
    while stack and budget[0] > 0 and budget[1] > 0:
        item, depth = pop()
        kind = type(item)  # the JSON types first: an ABC's isinstance() is slow
        if kind is str or (kind not in _CONTAINERS and isinstance(item, str)):
            budget[0] -= 1
            budget[1] -= len(item)
            # a long text is no value, only words: it is not copied to be trimmed
            text = item.strip() if len(item) <= 2 * MAX_VALUE_CHARS else item
            if not text:
                continue
            yield text
            if text[0] in _JSON_OPENERS and depth < _MAX_DEPTH:
                parsed = json_text(text)
                if parsed is not None:
                    stack.append((parsed, depth + 1))
        elif depth >= _MAX_DEPTH:
            continue
        elif kind is dict or isinstance(item, Mapping):
            inner = depth + 1
            push([(v, inner) for v in reversed(list(item.values()))])
        elif kind is list or isinstance(item, list | tuple):
            inner = depth + 1
            push([(v, inner) for v in reversed(item)])
        else:
            number = _number_text(item)
            if number is not None:
                budget[0] -= 1
                yield number


def words(text: str) -> Iterator[str]:
    """The words of ``text`` from :data:`MIN_SHARED_CHARS` to :data:`MAX_VALUE_CHARS` long:
    runs of letters, digits and ``_@#$%&+/:=?.~-`` that begin with a letter or digit, less
    the ``.:?=&/-`` they end with."""
    for match in _WORD.finditer(text):
        word = match.group().rstrip(_WORD_END)
        if MIN_SHARED_CHARS <= len(word) <= MAX_VALUE_CHARS:
            yield word


def _digest(value: Any) -> bytes | None:
    if isinstance(value, str):
        data = value.strip().encode("utf-8", "surrogatepass")
    else:
        try:
            data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except (TypeError, ValueError):
            return None
    return hashlib.blake2b(data, digest_size=16).digest()


def _forms(value: Any, depth: int = 0) -> Iterator[Any]:
    """``value`` and what it holds once the APIs' wrappings are taken off: the JSON in a
    string, the joined ``text`` of a block list, the one item of a list, the value under a
    wrapping key (MCP's ``content``, Gemini's ``output``, Bedrock's ``json``...)."""
    yield value
    if depth >= 4:
        return
    if isinstance(value, str):
        parsed = json_text(value)
        if parsed is not None:
            yield from _forms(parsed, depth + 1)
    elif isinstance(value, list | tuple):
        texts = [b.get("text") for b in value[:64] if isinstance(b, Mapping)]
        strings = [t for t in texts if isinstance(t, str)]
        if value and len(strings) == len(value):
            yield "\n".join(strings)
        if len(value) == 1:
            yield from _forms(value[0], depth + 1)
    elif isinstance(value, Mapping):
        for key in _WRAPPERS:
            if key in value:
                yield from _forms(value[key], depth + 1)


def _empty(value: Any) -> bool:
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, list | tuple | Mapping):
        return not value
    return value is None


def result_keys(value: Any) -> set[bytes]:
    """The digests of the forms of a tool output or of a result in a request, by which the
    two are matched. An empty form (``None``, blank text, ``[]``, ``{}``) matches nothing."""
    found = set()
    for form in _forms(value):
        if _empty(form):
            continue
        digest = _digest(form)
        if digest is not None:
            found.add(digest)
    return found


def _message_result(message: Mapping[str, Any]) -> tuple[Any, Any, Any] | None:
    """The tool result a message is, as (call id, tool name, content), if it is one."""
    role, kind = message.get("role"), message.get("type")
    if "tool_call_id" in message:  # OpenAI Chat, LangChain
        return message.get("tool_call_id"), message.get("name"), message.get("content")
    if kind == "function_call_output":  # OpenAI Responses
        return message.get("call_id"), None, message.get("output")
    if role in ("tool", "function") or kind == "tool":
        return None, message.get("name") or message.get("tool_name"), message.get("content")
    return None


def _part_result(part: Any) -> tuple[Any, Any, Any] | None:
    """The tool result a content block or part is, if it is one."""
    if not isinstance(part, Mapping):
        return None
    if part.get("type") == "tool_result":  # Anthropic
        return part.get("tool_use_id"), None, part.get("content")
    for key in ("toolResult", "functionResponse", "function_response"):  # Bedrock, Gemini
        inner = part.get(key)
        if isinstance(inner, Mapping):
            if key == "toolResult":
                return inner.get("toolUseId"), None, inner.get("content")
            return inner.get("id"), inner.get("name"), inner.get("response")
    return None


def tool_results(messages: Any) -> Iterator[tuple[Any, Any, Any]]:
    """The tool results in a request's messages, as (call id, tool name, content): result
    messages (OpenAI Chat ``tool_call_id``, Responses ``function_call_output``, a ``tool``
    or ``function`` role), and result blocks or parts in a message's ``content`` (Anthropic
    ``tool_result``, Bedrock ``toolResult``) or ``parts`` (Gemini ``functionResponse``)."""
    if not isinstance(messages, list | tuple):
        return
    for message in messages[:_MAX_PARTS]:
        if not isinstance(message, Mapping):
            continue
        found = _message_result(message)
        if found is not None:
            yield found
        for key in ("content", "parts"):
            for part in _items(message.get(key))[:_MAX_PARTS]:
                found = _part_result(part)
                if found is not None:
                    yield found
