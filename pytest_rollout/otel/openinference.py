"""OpenInference spans read as GenAI spans.

OpenInference (Arize Phoenix's conventions, written by ``openinference-instrumentation-*``,
among them the bridge from the OpenAI Agents SDK's tracing to OpenTelemetry) says what a
span is with ``openinference.span.kind`` (``LLM``, ``TOOL``, ``AGENT``...) and flattens
messages into indexed attributes (``llm.input_messages.0.message.role``,
``llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments``...).
:func:`as_genai` rewrites such a span's attributes into the GenAI conventions' names
(``gen_ai.operation.name``, ``gen_ai.input.messages`` with ``parts``...), so the rest of the
importer reads one vocabulary. Nothing is added that the span does not hold: a span whose
messages were not captured gets no messages attribute. An agent span's ``agent.name`` is
``gen_ai.agent.name``, and a handoff (a ``TOOL`` span named ``handoff to X``) becomes an
``agent_handoff`` span with ``gen_ai.handoff.from_agent`` / ``to_agent`` (:mod:`.agents`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Final

import orjson

from . import conventions as c
from .agents import FROM_AGENT, TO_AGENT
from .otlp import Span

__all__ = ["KIND", "as_genai"]

KIND: Final = "openinference.span.kind"
_OPERATIONS: Final = {"LLM": c.CHAT, "TOOL": c.TOOL, "AGENT": c.AGENT}
_MESSAGE: Final = re.compile(r"llm\.(input|output)_messages\.(\d+)\.message\.(.+)")
_CALL: Final = re.compile(r"tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)")
_CONTENT: Final = re.compile(r"contents\.(\d+)\.message_content\.(type|text)")
_TOOL_SCHEMA: Final = re.compile(r"llm\.tools\.(\d+)\.tool\.json_schema")
_HANDOFF_TO: Final = "handoff to "
#: OpenInference attribute -> the GenAI attribute it becomes.
_RENAMED: Final = {
    "llm.model_name": c.REQUEST_MODEL,
    "llm.provider": c.PROVIDER,
    "llm.system": c.SYSTEM,
    "llm.token_count.prompt": c.INPUT_TOKENS,
    "llm.token_count.completion": c.OUTPUT_TOKENS,
    "tool.name": c.TOOL_NAME,
    "tool_call.id": c.TOOL_CALL_ID,
    "agent.name": c.AGENT_NAME,
}


def as_genai(span: Span) -> Span:
    """``span`` with its OpenInference attributes also under the GenAI names (a span that
    is not an OpenInference one, or already says its GenAI operation, is returned as is)."""
    attrs = span.attributes
    kind = attrs.get(KIND)
    if not isinstance(kind, str) or c.OPERATION in attrs:
        return span
    found: dict[str, Any] = {}
    operation = _OPERATIONS.get(kind.upper())
    if operation == c.TOOL and "tool.name" not in attrs:
        operation = None  # no tool ran: a handoff, or nothing this project reads
        found.update(_handoff(span))
    if operation is not None:
        found[c.OPERATION] = operation
    for old, new in _RENAMED.items():
        if old in attrs:
            found[new] = attrs[old]
    found.update(_messages(attrs))
    tools = _tool_definitions(attrs)
    if tools:
        found[c.TOOL_DEFINITIONS] = _text(tools)
    if not found:
        return span
    return dataclasses.replace(span, attributes={**found, **attrs})


def _handoff(span: Span) -> dict[str, Any]:
    """The GenAI form of OpenInference's handoff (the bridge from the Agents SDK writes a
    ``TOOL`` span named ``handoff to <agent>``, the agent it left as ``input.value`` and the
    one it went to as ``output.value``), or nothing for another nameless tool span."""
    if span.name != "handoff" and not span.name.startswith(_HANDOFF_TO):
        return {}
    attrs = span.attributes
    target = attrs.get("output.value")
    if target is None and span.name.startswith(_HANDOFF_TO):
        target = span.name[len(_HANDOFF_TO) :]
    found: dict[str, Any] = {c.OPERATION: c.HANDOFF}
    for key, value in ((FROM_AGENT, attrs.get("input.value")), (TO_AGENT, target)):
        if value is not None:
            found[key] = value
    return found


def _text(value: Any) -> str:
    return orjson.dumps(value).decode()


def _tool_definitions(attrs: Mapping[str, Any]) -> list[Any]:
    found: dict[int, Any] = {}
    for key, value in attrs.items():
        match = _TOOL_SCHEMA.fullmatch(key)
        if match is not None:
            found[int(match.group(1))] = c.parse_json_text(value)
    return [found[i] for i in sorted(found)]


def _messages(attrs: Mapping[str, Any]) -> dict[str, str]:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages`` from the indexed attributes."""
    sides: dict[str, dict[int, dict[str, Any]]] = {"input": {}, "output": {}}
    for key, value in attrs.items():
        match = _MESSAGE.fullmatch(key)
        if match is not None:
            message = sides[match.group(1)].setdefault(int(match.group(2)), {})
            _put(message, match.group(3), value)
    found: dict[str, str] = {}
    for side, name in (("input", c.INPUT_MESSAGES), ("output", c.OUTPUT_MESSAGES)):
        messages = sides[side]
        if messages:
            found[name] = _text([_as_parts(messages[i]) for i in sorted(messages)])
    return found


def _put(message: dict[str, Any], path: str, value: Any) -> None:
    """One indexed field into a message under construction."""
    call = _CALL.fullmatch(path)
    if call is not None:
        calls = message.setdefault("tool_calls", {})
        calls.setdefault(int(call.group(1)), {})[call.group(2)] = value
        return
    content = _CONTENT.fullmatch(path)
    if content is not None:
        contents = message.setdefault("contents", {})
        contents.setdefault(int(content.group(1)), {})[content.group(2)] = value
        return
    if path in ("role", "content", "tool_call_id", "name"):
        message[path] = value


def _as_parts(message: Mapping[str, Any]) -> dict[str, Any]:
    """One OpenInference message as a conventions message (``role`` and ``parts``)."""
    role = message.get("role", "user")
    if role == "tool":
        part = {
            "type": "tool_call_response",
            "id": message.get("tool_call_id"),
            "response": message.get("content"),
        }
        return {"role": "tool", "parts": [part]}
    parts: list[dict[str, Any]] = []
    contents = message.get("contents") or {}
    if isinstance(message.get("content"), str):
        parts.append({"type": "text", "content": message["content"]})
    else:
        for index in sorted(contents):
            item = contents[index]
            if item.get("type", "text") == "text" and isinstance(item.get("text"), str):
                parts.append({"type": "text", "content": item["text"]})
    calls = message.get("tool_calls") or {}
    for index in sorted(calls):
        call = calls[index]
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": call.get("function.name"),
                "arguments": c.parse_json_text(call.get("function.arguments", "{}")),
            }
        )
    return {"role": role, "parts": parts}
