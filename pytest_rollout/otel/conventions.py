"""The OpenTelemetry GenAI semantic conventions, as this project reads and writes them.

The names (operations, attributes, span events) and the conversion between the
conventions' messages (``{"role", "parts": [...]}`` with ``text``, ``tool_call`` and
``tool_call_response`` parts) and a rollout's messages (``{"role", "content"}``, an
assistant's ``tool_calls``, a tool message's ``tool_call_id``). The previous forms that
instrumentations still emit are read too: the message span events (``gen_ai.user.message``,
``gen_ai.choice``...), the indexed ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``
attributes and the older token and tool attribute names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import orjson

from .otlp import Span, SpanEvent

__all__ = [
    "AGENT",
    "CHAT",
    "HANDOFF",
    "TOOL",
    "input_messages",
    "legacy_tool_attribute",
    "message_to_otel",
    "messages_from_otel",
    "missing_content",
    "operation",
    "output_message",
    "output_to_otel",
    "parse_json_text",
]

# -- operations -------------------------------------------------------------------------
OPERATION: Final = "gen_ai.operation.name"
CHAT: Final = "chat"
TOOL: Final = "execute_tool"
AGENT: Final = "invoke_agent"
#: Control passed from one agent to another. The conventions name no handoff operation
#: yet: this is the name OpenTelemetry's instrumentation of the OpenAI Agents SDK
#: (``opentelemetry-instrumentation-openai-agents-v2``) writes; Sentry's ``handoff`` and
#: the Agents SDK's own span data (``type`` ``handoff``) are read as it.
HANDOFF: Final = "agent_handoff"
_HANDOFFS: Final = frozenset({HANDOFF, "handoff"})
#: Other operations that are a model call (one step).
_MODEL_CALLS: Final = frozenset({CHAT, "text_completion", "generate_content"})

# -- attributes -------------------------------------------------------------------------
REQUEST_MODEL: Final = "gen_ai.request.model"
RESPONSE_MODEL: Final = "gen_ai.response.model"
PROVIDER: Final = "gen_ai.provider.name"
SYSTEM: Final = "gen_ai.system"  # the previous name of gen_ai.provider.name
AGENT_NAME: Final = "gen_ai.agent.name"
AGENT_ID: Final = "gen_ai.agent.id"
CONVERSATION: Final = "gen_ai.conversation.id"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
OLD_INPUT_TOKENS: Final = "gen_ai.usage.prompt_tokens"
OLD_OUTPUT_TOKENS: Final = "gen_ai.usage.completion_tokens"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_RESULT: Final = "gen_ai.tool.call.result"
ERROR_TYPE: Final = "error.type"
#: The request parameters the conventions name (``gen_ai.request.<name>``).
REQUEST_PARAMS: Final = (
    "temperature",
    "max_tokens",
    "top_p",
    "top_k",
    "frequency_penalty",
    "presence_penalty",
    "seed",
    "stop_sequences",
)

#: What older instrumentations name a tool call's arguments and result (pydantic-ai's
#: instrumentation version 2, OpenInference).
_LEGACY_TOOL: Final = {
    TOOL_ARGUMENTS: ("tool_arguments", "input.value"),
    TOOL_RESULT: ("tool_response", "output.value"),
}

# -- span events of the previous conventions --------------------------------------------
EXCEPTION_EVENT: Final = "exception"
_MESSAGE_EVENTS: Final = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT: Final = "gen_ai.choice"
_PROMPT_EVENT: Final = "gen_ai.content.prompt"
_COMPLETION_EVENT: Final = "gen_ai.content.completion"
_INDEXED: Final = re.compile(r"gen_ai\.(prompt|completion)\.(\d+)\.(.+)")


def operation(span: Span) -> str | None:
    """What a span is: ``chat`` (any model call), ``execute_tool``, ``invoke_agent``,
    ``agent_handoff`` or ``None``; from ``gen_ai.operation.name``, else from the older span
    names."""
    op = span.attributes.get(OPERATION)
    if op is not None and not isinstance(op, str):
        return None  # an array or a number: no operation (and not a key of a set)
    if op in _MODEL_CALLS:
        return CHAT
    if op in (TOOL, AGENT):
        return str(op)
    if op in _HANDOFFS:
        return HANDOFF
    if op is None:
        if span.attributes.get("type") == "handoff":
            return HANDOFF
        if span.name in ("running tool", "running tools") and TOOL_NAME in span.attributes:
            return TOOL
        if span.name == "agent run":
            return AGENT
    return None


def legacy_tool_attribute(attributes: Mapping[str, Any], name: str) -> Any:
    """A tool span's arguments or result under the current name or an older one."""
    if name in attributes:
        return attributes[name]
    for old in _LEGACY_TOOL.get(name, ()):
        if old in attributes:
            return attributes[old]
    return None


def parse_json_text(value: Any) -> Any:
    """A value that may be JSON text: parsed when it is, kept as it is otherwise."""
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


# -- conventions' messages -> rollout messages ------------------------------------------


def _call(part: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": part.get("id"),
        "name": part.get("name"),
        "arguments": parse_json_text(part.get("arguments")),
    }


def _sorted_parts(parts: list[Any]) -> tuple[list[str], list[Any], list[Any], list[Any]]:
    """A message's parts by kind: texts, other parts, tool calls, tool results."""
    texts: list[str] = []
    others: list[Any] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and "content" not in part:
            continue  # content not captured: said by missing_content, never made up
        if kind == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif kind == "tool_call":
            calls.append(_call(part))
        elif kind == "tool_call_response":
            response = part.get("response", part.get("result"))
            results.append({"role": "tool", "tool_call_id": part.get("id"), "content": response})
        else:
            others.append(part)
    return texts, others, calls, results


def _from_otel_message(message: Any) -> list[dict[str, Any]]:
    """One conventions message as rollout messages (tool results become tool messages)."""
    if not isinstance(message, Mapping):
        return [{"role": "user", "content": message}]
    parts = message.get("parts")
    if not isinstance(parts, list):
        return [dict(message)]
    texts, others, calls, results = _sorted_parts(parts)
    found: list[dict[str, Any]] = []
    if texts or others or calls or not results:
        content: Any = "".join(texts) if texts and not others else None
        if others:
            content = [{"type": "text", "content": t} for t in texts] + others
        entry: dict[str, Any] = {"role": message.get("role", "user"), "content": content}
        if calls:
            entry["tool_calls"] = calls
        found.append(entry)
    found.extend(results)
    return found


def messages_from_otel(messages: Any) -> list[dict[str, Any]]:
    """The conventions' message list as rollout messages."""
    found: list[dict[str, Any]] = []
    for message in messages if isinstance(messages, list) else []:
        found.extend(_from_otel_message(message))
    return found


def output_message(messages: Any) -> tuple[Any, list[dict[str, Any]]]:
    """A turn's ``(content, tool_calls)`` from ``gen_ai.output.messages``."""
    contents: list[Any] = []
    calls: list[dict[str, Any]] = []
    for message in messages_from_otel(messages):
        if message.get("role") != "assistant":
            continue
        if message.get("content") is not None:
            contents.append(message["content"])
        calls.extend(message.get("tool_calls", ()))
    content: Any = None
    if len(contents) == 1:
        content = contents[0]
    elif contents and all(isinstance(c, str) for c in contents):
        content = "".join(contents)
    elif contents:
        content = contents
    return content, calls


def missing_content(messages: Any) -> bool:
    """Whether the conventions' messages were recorded without their content (an
    instrumentation with content capture off keeps the parts' types only)."""
    for message in parse_json_text(messages) if isinstance(messages, str | list) else []:
        parts = message.get("parts") if isinstance(message, Mapping) else None
        for part in parts if isinstance(parts, list) else []:
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind == "text" and "content" not in part:
                return True
            if kind == "tool_call" and "arguments" not in part:
                return True
    return False


# -- rollout messages -> conventions' messages ------------------------------------------


def _to_otel_message(message: Any) -> dict[str, Any] | None:
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        return None
    role = message["role"]
    content = message.get("content")
    if role == "tool":
        part = {
            "type": "tool_call_response",
            "id": message.get("tool_call_id"),
            "response": content,
        }
        return {"role": "tool", "parts": [part]}
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        parts.append({"type": "text", "content": content})
    elif content is not None:
        return None
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        return None  # a free-form field the loader accepts: not the conventions' shape
    for call in calls or ():
        if not isinstance(call, Mapping):
            return None
        arguments = call.get("arguments")
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": call.get("name"),
                "arguments": arguments,
            }
        )
    return {"role": role, "parts": parts}


def message_to_otel(message: Any) -> dict[str, Any] | None:
    """A rollout message as the conventions' message, or ``None`` when it has a shape that
    would not read back as it is (a provider's own message shape).

    Each conventions message reads back as exactly one rollout message, so a list converts
    message by message: a conversation that grows is converted once per message."""
    converted = _to_otel_message(message)
    if converted is None or _from_otel_message(converted) != [message]:
        return None
    return converted


def output_to_otel(content: Any, tool_calls: Any) -> list[dict[str, Any]] | None:
    """A turn's content and tool calls as ``gen_ai.output.messages``, or ``None`` when they
    would not read back as they are."""
    if content is not None and not isinstance(content, str):
        return None
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    converted = _to_otel_message(message)
    if converted is None:
        return None
    converted["finish_reason"] = "tool_call" if tool_calls else "stop"
    if output_message([converted]) != (content, list(tool_calls or [])):
        return None
    return [converted]


# -- the previous forms -----------------------------------------------------------------


def _event_message(event: SpanEvent, role: str) -> dict[str, Any]:
    attrs = event.attributes
    message: dict[str, Any] = {"role": role, "content": parse_json_text(attrs.get("content"))}
    calls = parse_json_text(attrs.get("tool_calls"))
    if isinstance(calls, list) and calls:
        message["tool_calls"] = [_legacy_call(c) for c in calls]
    if role == "tool":
        message["tool_call_id"] = attrs.get("id")
    return message


def _legacy_call(call: Any) -> dict[str, Any]:
    """An OpenAI-shaped call (``{id, function: {name, arguments}}``) or a flat one."""
    if not isinstance(call, Mapping):
        return {"id": None, "name": None, "arguments": call}
    function = call.get("function")
    source = function if isinstance(function, Mapping) else call
    return {
        "id": call.get("id"),
        "name": source.get("name"),
        "arguments": parse_json_text(source.get("arguments")),
    }


def input_messages(span: Span) -> list[dict[str, Any]] | None:
    """A model call's input as rollout messages, from whichever form the span has
    (``None`` when the span carries no input at all: content was not captured)."""
    attrs = span.attributes
    if INPUT_MESSAGES in attrs:
        found = messages_from_otel(parse_json_text(attrs[INPUT_MESSAGES]))
        system = parse_json_text(attrs.get(SYSTEM_INSTRUCTIONS))
        if isinstance(system, list) and system:
            texts = [p.get("content") for p in system if isinstance(p, Mapping)]
            found.insert(0, {"role": "system", "content": "".join(str(t) for t in texts)})
        return found
    from_events = [
        _event_message(e, _MESSAGE_EVENTS[e.name]) for e in span.events if e.name in _MESSAGE_EVENTS
    ]
    if from_events:
        return from_events
    for event in span.events:
        if event.name == _PROMPT_EVENT:
            prompt = parse_json_text(event.attributes.get("gen_ai.prompt"))
            if isinstance(prompt, list):
                return [dict(m) for m in prompt if isinstance(m, Mapping)]
    return _indexed(attrs, "prompt")


def output(span: Span) -> tuple[Any, list[dict[str, Any]]] | None:
    """A model call's ``(content, tool_calls)``, or ``None`` when not captured."""
    attrs = span.attributes
    if OUTPUT_MESSAGES in attrs:
        return output_message(parse_json_text(attrs[OUTPUT_MESSAGES]))
    choices = [e for e in span.events if e.name == CHOICE_EVENT]
    if choices:
        message = parse_json_text(choices[0].attributes.get("message")) or {}
        if not isinstance(message, Mapping):
            message = {"content": message}
        event = SpanEvent(CHOICE_EVENT, 0, {k: v for k, v in message.items() if k != "role"})
        found = _event_message(event, "assistant")
        return found.get("content"), list(found.get("tool_calls", []))
    for event in span.events:
        if event.name == _COMPLETION_EVENT:
            completion = parse_json_text(event.attributes.get("gen_ai.completion"))
            if isinstance(completion, list) and completion:
                return _assistant(completion[0])
    indexed = _indexed(attrs, "completion")
    if indexed:
        return _assistant(indexed[0])
    return None


def _assistant(message: Any) -> tuple[Any, list[dict[str, Any]]]:
    if not isinstance(message, Mapping):
        return message, []
    calls = message.get("tool_calls") or []
    return message.get("content"), [_legacy_call(c) for c in calls]


def _indexed(attrs: Mapping[str, Any], kind: str) -> list[dict[str, Any]] | None:
    """OpenLLMetry's ``gen_ai.prompt.N.role`` / ``.content`` / ``.tool_calls.M.name``..."""
    messages: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        match = _INDEXED.fullmatch(key)
        if match is None or match.group(1) != kind:
            continue
        message = messages.setdefault(int(match.group(2)), {})
        field_path = match.group(3).split(".")
        if field_path[0] == "tool_calls" and len(field_path) == 3 and field_path[1].isdigit():
            calls = message.setdefault("tool_calls", {})
            calls.setdefault(int(field_path[1]), {})[field_path[2]] = value
        elif len(field_path) == 1:
            message[field_path[0]] = value
    if not messages:
        return None
    found: list[dict[str, Any]] = []
    for index in sorted(messages):
        message = messages[index]
        calls = message.pop("tool_calls", None)
        if calls:
            message["tool_calls"] = [_legacy_call(calls[i]) for i in sorted(calls)]
        found.append(message)
    return found
