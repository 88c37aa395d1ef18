"""One span's attributes <-> the payload of the rollout events it stands for.

Each ``*_data`` function reads an event's payload from a span (the import direction); each
``*_attributes`` function writes the conventions' attributes for an event (the export
direction). The exporter checks what the import direction reads back from what it wrote,
and carries only what the conventions cannot say (a provider's own message shape, the
run's ``meta``, a recorded cost) in a ``pytest_rollout.*`` attribute, the *carrier*
(:func:`carrier`, :func:`apply_carrier`), so a re-imported export equals its rollout.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from ..sdk.pricing import cost_usd
from . import conventions as c
from .fit import fit_count
from .otlp import STATUS_ERROR, Span

__all__ = [
    "CARRIER_END",
    "CARRIER_START",
    "EVENT_DATA",
    "NEW_INPUT",
    "OPEN",
    "STEP",
    "agent_attributes",
    "apply_carrier",
    "carrier",
    "chat_attributes",
    "completed_attributes",
    "error_of",
    "read_input",
    "request_data",
    "run_started_data",
    "terminal_attributes",
    "terminal_data",
    "tool_attributes",
    "tool_completed_data",
    "tool_started_data",
    "turn_completed_data",
    "turn_started_data",
]

#: The step of the turn a chat or tool span belongs to.
STEP: Final = "pytest_rollout.step"
#: What the conventions could not say of the span's first / last event (JSON text).
CARRIER_START: Final = "pytest_rollout.start"
CARRIER_END: Final = "pytest_rollout.end"
#: A span whose closing event the run never had (a turn that failed, a call left open).
OPEN: Final = "pytest_rollout.open"
#: On a chat span: its ``gen_ai.input.messages`` holds only the messages new since the
#: previous chat span (``rollout export otel --input-messages new``).
NEW_INPUT: Final = "pytest_rollout.new_input"
#: On a span event: the whole payload of a rollout event with no span of its own.
EVENT_DATA: Final = "pytest_rollout.data"
_SKIPPED: Final = "step"
#: What an error's status message may start with as its class (``"ValueError: ..."``).
_CLASS_NAME: Final = re.compile(r"[A-Za-z_][\w.]*")


# -- the carrier ------------------------------------------------------------------------


def carrier(original: Mapping[str, Any], read_back: Mapping[str, Any]) -> str | None:
    """What turns ``read_back`` into ``original`` (JSON text), or ``None`` when equal."""
    changed = {
        k: v
        for k, v in original.items()
        if k != _SKIPPED and (k not in read_back or _json(read_back[k]) != _json(v))
    }
    unset = [k for k in read_back if k not in original and k != _SKIPPED]
    if not changed and not unset:
        return None
    body: dict[str, Any] = {"set": changed}
    if unset:
        body["unset"] = unset
    return orjson.dumps(body).decode()


def apply_carrier(data: dict[str, Any], text: Any) -> dict[str, Any]:
    """``data`` corrected by a carrier (a foreign or malformed one is ignored)."""
    body = c.parse_json_text(text)
    if not isinstance(body, dict):
        return data
    changed = body.get("set")
    if isinstance(changed, dict):
        data.update({k: v for k, v in changed.items() if k != _SKIPPED})
    for key in body.get("unset") or ():
        if isinstance(key, str):
            data.pop(key, None)
    return data


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _text(value: Any) -> str:
    return orjson.dumps(value).decode()


# -- the agent span ---------------------------------------------------------------------


def _tool_names(definitions: Any) -> list[Any]:
    names = []
    for tool in definitions if isinstance(definitions, list) else []:
        if isinstance(tool, Mapping):
            function = tool.get("function")
            source = function if isinstance(function, Mapping) else tool
            names.append(source.get("name"))
    return names


def run_started_data(
    agent: Mapping[str, Any], first_chat: Mapping[str, Any] | None, trace_id: str
) -> dict[str, Any]:
    """``run.started`` from the agent span's attributes (and the first model call's)."""
    chat = first_chat or {}
    data: dict[str, Any] = {
        "run_id": agent.get(c.CONVERSATION) or trace_id,
        "test_id": agent.get(c.AGENT_NAME) or f"otel:{trace_id}",
        "model": agent.get(c.REQUEST_MODEL) or agent.get("model_name") or chat.get(c.REQUEST_MODEL),
        "provider": agent.get(c.PROVIDER)
        or agent.get(c.SYSTEM)
        or chat.get(c.PROVIDER)
        or chat.get(c.SYSTEM),
        "tools": _tool_names(c.parse_json_text(chat.get(c.TOOL_DEFINITIONS))),
        "meta": {"otel": {"trace_id": trace_id}},
    }
    prompt = _user_text(c.messages_from_otel(c.parse_json_text(agent.get(c.INPUT_MESSAGES))))
    if prompt is not None:
        data["prompt"] = prompt
    return data


def _user_text(messages: Sequence[Mapping[str, Any]]) -> str | None:
    for message in messages:
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return None


def agent_attributes(started: Mapping[str, Any]) -> dict[str, Any]:
    """The agent span's attributes for a run's ``run.started``."""
    attrs: dict[str, Any] = {
        c.OPERATION: c.AGENT,
        c.AGENT_NAME: started.get("test_id"),
        c.CONVERSATION: started.get("run_id"),
        c.REQUEST_MODEL: started.get("model"),
        c.PROVIDER: started.get("provider"),
    }
    prompt = started.get("prompt")
    if isinstance(prompt, str):
        attrs[c.INPUT_MESSAGES] = _text([{"role": "user", "parts": [_text_part(prompt)]}])
    return {k: v for k, v in attrs.items() if isinstance(v, str)}


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def terminal_data(
    agent: Span | None, last_content: Any, total_cost: float | None
) -> tuple[str, dict[str, Any]]:
    """The terminal event: ``run.failed`` for an agent span with an error status, else
    ``run.completed`` with the agent's output (or the last model call's)."""
    if agent is not None and agent.status_code == STATUS_ERROR:
        return "run.failed", {"error": error_of(agent)}
    output = last_content
    duration = None
    if agent is not None:
        attrs = agent.attributes
        if c.OUTPUT_MESSAGES in attrs:
            output = c.output_message(c.parse_json_text(attrs[c.OUTPUT_MESSAGES]))[0]
        elif "final_result" in attrs:
            output = c.parse_json_text(attrs["final_result"])
        duration = round((agent.end_ns - agent.start_ns) / 1e6, 3)
    data = {
        "outcome": "completed",
        "output": output,
        "cost_totals": {"total_cost_usd": None if total_cost is None else round(total_cost, 9)},
        "total_duration_ms": duration,
    }
    return "run.completed", data


def terminal_attributes(
    event_type: str, data: Mapping[str, Any]
) -> tuple[dict[str, Any], int, str]:
    """The agent span's closing attributes, status code and message."""
    if event_type == "run.failed":
        error = data.get("error")
        if isinstance(error, Mapping):
            return {c.ERROR_TYPE: str(error.get("class"))}, STATUS_ERROR, str(error.get("message"))
        return {}, STATUS_ERROR, ""
    output = data.get("output")
    if isinstance(output, str):
        message = [{"role": "assistant", "parts": [_text_part(output)], "finish_reason": "stop"}]
        return {c.OUTPUT_MESSAGES: _text(message)}, 0, ""
    return {}, 0, ""


def error_of(span: Span) -> dict[str, Any]:
    """A failed span's ``{class, message}``: its exception event, else ``error.type`` and
    the status message (``"ValueError: no station"`` is split)."""
    for event in span.events:
        if event.name == c.EXCEPTION_EVENT:
            attrs = event.attributes
            return {
                "class": str(attrs.get("exception.type", "Exception")),
                "message": str(attrs.get("exception.message", "")),
            }
    message = span.status_message
    name = span.attributes.get(c.ERROR_TYPE)
    prefix, colon, rest = message.partition(": ")
    if name is None and colon and _CLASS_NAME.fullmatch(prefix):
        name, message = prefix, rest
    return {"class": str(name or "Exception"), "message": message}


# -- chat spans -------------------------------------------------------------------------


def turn_started_data(span: Span, previous: list[Any]) -> tuple[dict[str, Any], list[Any] | None]:
    """``llm.turn.started`` (without its step) and the request's whole message list
    (``None``, and no ``messages``, when the span carries no input: content not captured).

    ``previous`` is the previous request's whole message list; a span that shows only its
    new messages (:data:`NEW_INPUT`) extends it in place and returns it."""
    full, fresh = read_input(span.attributes, c.input_messages(span), previous)
    return request_data(span.attributes, fresh), full


def read_input(
    attrs: Mapping[str, Any], shown: list[Any] | None, previous: list[Any]
) -> tuple[list[Any] | None, list[Any] | None]:
    """A request's whole message list and its new messages, from the messages its chat span
    shows: all of them (the new ones follow the previous request's), or with
    :data:`NEW_INPUT` only the new ones, which then extend ``previous`` in place (so a long
    conversation costs time linear in its messages)."""
    if shown is None:
        return None, None
    if attrs.get(NEW_INPUT) is True:
        previous.extend(shown)
        return previous, shown
    return shown, _new_messages(previous, shown)


def request_data(attrs: Mapping[str, Any], fresh: list[Any] | None) -> dict[str, Any]:
    """What a chat span's attributes say of its request, given its new messages (read from
    the span, or known by who wrote it; ``None``: not captured)."""
    tools = c.parse_json_text(attrs.get(c.TOOL_DEFINITIONS))
    params = {
        name: attrs[f"gen_ai.request.{name}"]
        for name in c.REQUEST_PARAMS
        if f"gen_ai.request.{name}" in attrs
    }
    return {"messages": fresh, "tools": tools if tools is not None else [], "params": params}


def _new_messages(previous: Sequence[Any], current: list[Any]) -> list[Any]:
    if len(current) >= len(previous) and current[: len(previous)] == list(previous):
        return current[len(previous) :]
    return current


def chat_attributes(
    started: Mapping[str, Any] | None, model: Any, input_messages: str | None
) -> dict[str, Any]:
    """A chat span's attributes for a turn's ``llm.turn.started``, given its whole input
    as the conventions' JSON text (``None``: it has no such form)."""
    attrs: dict[str, Any] = {c.OPERATION: c.CHAT}
    if isinstance(model, str):
        attrs[c.REQUEST_MODEL] = model
    if started is None:
        return attrs
    if input_messages is not None:
        attrs[c.INPUT_MESSAGES] = input_messages
    tools = started.get("tools")
    if tools:
        attrs[c.TOOL_DEFINITIONS] = _text(tools)
    params = started.get("params")
    if isinstance(params, Mapping):
        for name in c.REQUEST_PARAMS:
            value = params.get(name)
            if isinstance(value, str | int | float) or (
                isinstance(value, list) and all(isinstance(v, str) for v in value)
            ):
                attrs[f"gen_ai.request.{name}"] = value
    return attrs


def turn_completed_data(span: Span, model: Any) -> tuple[dict[str, Any], bool]:
    """``llm.turn.completed`` (without its step), and whether the output was captured."""
    attrs = span.attributes
    found = c.output(span)
    content, calls = found if found is not None else (None, [])
    usage: dict[str, Any] | None = None
    tokens_in = attrs.get(c.INPUT_TOKENS, attrs.get(c.OLD_INPUT_TOKENS))
    tokens_out = attrs.get(c.OUTPUT_TOKENS, attrs.get(c.OLD_OUTPUT_TOKENS))
    if tokens_in is not None or tokens_out is not None:
        usage = {"input_tokens": tokens_in, "output_tokens": tokens_out}
    version = attrs.get(c.RESPONSE_MODEL)
    priced = version or attrs.get(c.REQUEST_MODEL) or model
    # Priced on the counts that fit the schema: the importer leaves the others out.
    counted = {k: n for k, v in (usage or {}).items() if (n := fit_count(v)) is not None}
    data = {
        "content": content,
        "tool_calls": calls,
        "usage": usage,
        "cost_usd": cost_usd(priced if isinstance(priced, str) else None, counted),
        "model_version": version,
        "latency_ms": round((span.end_ns - span.start_ns) / 1e6, 3),
    }
    return data, found is not None


def completed_attributes(completed: Mapping[str, Any]) -> dict[str, Any]:
    """A chat span's closing attributes for a turn's ``llm.turn.completed``."""
    attrs: dict[str, Any] = {}
    calls = completed.get("tool_calls")
    converted = c.output_to_otel(completed.get("content"), calls if isinstance(calls, list) else [])
    if converted is not None:
        attrs[c.OUTPUT_MESSAGES] = _text(converted)
        attrs[c.FINISH_REASONS] = [converted[0]["finish_reason"]]
    usage = completed.get("usage")
    if isinstance(usage, Mapping):
        for key, name in (("input_tokens", c.INPUT_TOKENS), ("output_tokens", c.OUTPUT_TOKENS)):
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                attrs[name] = value
    version = completed.get("model_version")
    if isinstance(version, str):
        attrs[c.RESPONSE_MODEL] = version
    return attrs


# -- tool spans -------------------------------------------------------------------------


def tool_started_data(span: Span) -> dict[str, Any]:
    """``tool.call.started`` (without its step)."""
    attrs = span.attributes
    return {
        "call_id": attrs.get(c.TOOL_CALL_ID),
        "name": attrs.get(c.TOOL_NAME),
        "arguments": c.parse_json_text(c.legacy_tool_attribute(attrs, c.TOOL_ARGUMENTS)),
    }


def tool_completed_data(span: Span) -> tuple[dict[str, Any], bool]:
    """``tool.call.completed`` (without its step), and whether its result was captured."""
    attrs = span.attributes
    data: dict[str, Any] = {"call_id": attrs.get(c.TOOL_CALL_ID), "name": attrs.get(c.TOOL_NAME)}
    data["duration_ms"] = round((span.end_ns - span.start_ns) / 1e6, 3)
    if span.status_code == STATUS_ERROR:
        data["error"] = error_of(span)
        return data, True
    result = c.legacy_tool_attribute(attrs, c.TOOL_RESULT)
    data["output"] = c.parse_json_text(result)
    return data, result is not None


def tool_attributes(
    started: Mapping[str, Any], completed: Mapping[str, Any] | None
) -> tuple[dict[str, Any], int, str]:
    """A tool span's attributes, status code and status message."""
    attrs: dict[str, Any] = {c.OPERATION: c.TOOL}
    for key, name in (("call_id", c.TOOL_CALL_ID), ("name", c.TOOL_NAME)):
        if isinstance(started.get(key), str):
            attrs[name] = started[key]
    attrs[c.TOOL_ARGUMENTS] = _text(started.get("arguments"))
    if completed is None:
        return attrs, 0, ""
    error = completed.get("error")
    if isinstance(error, Mapping):
        attrs[c.ERROR_TYPE] = str(error.get("class"))
        return attrs, STATUS_ERROR, str(error.get("message"))
    attrs[c.TOOL_RESULT] = _text(completed.get("output"))
    return attrs, 0, ""
