"""Fork (docs/cli.md): rebuild the conversation up to step N of a rollout, to resume it live.

The conversation is rebuilt from the events, not from whatever message shapes the agent
used: the opening request (system and user messages of step 1), then for each step up to N
the assistant's turn and the results of the tool calls it asked for, and any user message a
later request added. Rollouts can be untrusted, so the defaults are conservative: the system
prompt is left out, tool calls are stripped from assistant messages and tool results are left
out. Each comes back with an explicit option; tool calls without their results (or results
without their calls) are refused as incoherent.

A fork is also a run of its own: :func:`fork_prefix` gives the events it starts from (the run
up to and including step N, without the run's end) and :func:`forked_from` the record of
where it came from that its ``run.started`` carries (docs/file-format.md, a forked run).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import orjson

from ..errors import RolloutError
from ..format.events import (
    LLM_TURN_COMPLETED,
    LLM_TURN_STARTED,
    RUN_COMPLETED,
    RUN_FAILED,
    TERMINAL_TYPES,
    TOOL_CALL_COMPLETED,
    Event,
)
from ..format.jsonable import json_copy

__all__ = [
    "FORKED_FROM",
    "ForkError",
    "ForkFormat",
    "ForkResult",
    "fork",
    "fork_prefix",
    "forked_from",
    "original_run_id",
]

#: The key of ``run.started``'s data that names the run a forked run was forked from.
FORKED_FROM: Final = "forked_from"
_SHA256_HEX: Final = re.compile(r"[0-9a-f]{64}")


class ForkError(RolloutError):
    """A fork was asked for that cannot be built (a step outside the run, a bad option)."""

    __module__ = "pytest_rollout"


class ForkFormat(StrEnum):
    NEUTRAL = "neutral"
    OPENAI = "openai"
    RESPONSES = "responses"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"


@dataclass(frozen=True, slots=True)
class ForkResult:
    """The rebuilt conversation and where it came from.

    ``messages`` are in the requested format (for ``responses``, the request's ``input``
    items; for ``gemini``, its ``contents``); ``system`` is the system prompt for the
    Anthropic and Gemini shapes (where it is a request parameter, not a message) when it was
    included.
    """

    format: ForkFormat
    from_step: int
    original_steps: int
    original_outcome: str
    messages: list[dict[str, Any]]
    system: str | None = None

    @property
    def restored(self) -> int:
        """How many messages were restored."""
        return len(self.messages) + (1 if self.system is not None else 0)

    def to_json_obj(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": self.format.value,
            "from_step": self.from_step,
            "original_steps": self.original_steps,
            "original_outcome": self.original_outcome,
            "restored": self.restored,
            "messages": self.messages,
        }
        if self.system is not None:
            data["system"] = self.system
        return data


def _outcome(events: Sequence[Event]) -> str:
    last = events[-1] if events else None
    if last is not None and last.type == RUN_COMPLETED:
        return str(last.data.get("outcome") or "completed")
    if last is not None and last.type == RUN_FAILED:
        return "failed"
    return "incomplete"


def _list(value: Any) -> list[Any]:
    """``value`` if it is a list, else no items. The loader's schema already holds a loaded
    rollout's messages and tool calls to lists (or a placeholder string, or null)."""
    return value if isinstance(value, list) else []


def _neutral(events: Sequence[Event], step: int) -> list[dict[str, Any]]:
    """The conversation up to and including ``step``, every part included."""
    messages: list[dict[str, Any]] = []
    for event in events:
        opening = event.type == LLM_TURN_STARTED and event.step == 1
        if event.step > step and not opening:  # the opening request belongs to step 0 too
            break
        if event.type == LLM_TURN_STARTED:
            messages.extend(_asked(event.data.get("messages"), opening=opening))
        elif event.type == LLM_TURN_COMPLETED:
            calls = [
                {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments") or {}}
                for c in _list(event.data.get("tool_calls"))
                if isinstance(c, Mapping)
            ]
            messages.append(
                {"role": "assistant", "content": event.data.get("content"), "tool_calls": calls}
            )
        elif event.type == TOOL_CALL_COMPLETED:
            result = event.data.get("error") if "error" in event.data else event.data.get("output")
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": event.data.get("call_id"),
                    "name": event.data.get("name"),
                    "content": result,
                }
            )
            if "error" in event.data:
                messages[-1]["is_error"] = True
    return messages


#: A Gemini content with no text part (the function responses the results already give).
_NO_TEXT: Final = object()


def _content_of(message: Mapping[str, Any]) -> Any:
    """A message's content; for a Gemini content (``parts``, no ``content``), the text of
    its parts, or :data:`_NO_TEXT` when it has none."""
    parts = message.get("parts")
    if "content" in message or not isinstance(parts, list):
        return message.get("content")
    texts = [p["text"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
    return "".join(texts) if texts else _NO_TEXT


def _asked(sent: Any, *, opening: bool) -> list[dict[str, Any]]:
    """The user messages a request added (and, opening the run, its system prompt)."""
    found: list[dict[str, Any]] = []
    for message in _list(sent):
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        if role == "user" or (opening and role == "system"):
            content = _content_of(message)
            if content is not _NO_TEXT:
                found.append({"role": role, "content": content})
    return found


def _select(
    messages: list[dict[str, Any]], *, system: bool, tool_calls: bool, tool_results: bool
) -> list[dict[str, Any]]:
    kept: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if (role == "system" and not system) or (role == "tool" and not tool_results):
            continue
        if role == "assistant" and not tool_calls:
            if not message["content"]:
                continue  # a turn that only called tools says nothing once they are stripped
            kept.append({"role": "assistant", "content": message["content"], "tool_calls": []})
            continue
        kept.append(message)
    return kept


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _openai(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": m["content"]}
            if m["tool_calls"]:
                item["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": _as_text(c["arguments"])},
                    }
                    for c in m["tool_calls"]
                ]
            out.append(item)
        elif m["role"] == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": m["tool_call_id"],
                    "content": _as_text(m["content"]),
                }
            )
        else:
            out.append({"role": m["role"], "content": _as_text(m["content"])})
    return out


def _responses(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI Responses API input items: a message item per system, user or assistant
    text, a ``function_call`` item per tool call and a ``function_call_output`` item per
    result, joined by ``call_id``."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m["role"]
        if role == "assistant":
            if m["content"]:
                out.append(
                    {"type": "message", "role": "assistant", "content": _as_text(m["content"])}
                )
            out.extend(
                {
                    "type": "function_call",
                    "call_id": c["id"],
                    "name": c["name"],
                    "arguments": _as_text(c["arguments"]),
                }
                for c in m["tool_calls"]
            )
        elif role == "tool":
            output = _as_text(m["content"])
            out.append(
                {"type": "function_call_output", "call_id": m["tool_call_id"], "output": output}
            )
        else:
            out.append({"type": "message", "role": role, "content": _as_text(m["content"])})
    return out


def _anthropic(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    system: str | None = None
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        # The Messages API wants user and assistant turns to alternate: merge neighbours.
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        role = m["role"]
        if role == "system":
            system = _as_text(m["content"])
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            if m["content"]:
                blocks.append({"type": "text", "text": _as_text(m["content"])})
            blocks.extend(
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]}
                for c in m["tool_calls"]
            )
            add("assistant", blocks)
        elif role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m["tool_call_id"],
                "content": _as_text(m["content"]),
            }
            if m.get("is_error"):
                block["is_error"] = True
            add("user", [block])
        else:
            add("user", [{"type": "text", "text": _as_text(m["content"])}])
    return system, out


def _gemini(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """Gemini ``contents``: ``user`` and ``model`` turns of parts, a ``functionCall`` part
    per tool call and a ``functionResponse`` part per result (``{"output": ...}``, or
    ``{"error": ...}`` for a tool that raised); the system instruction apart."""
    system: str | None = None
    out: list[dict[str, Any]] = []

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:  # Gemini wants the roles to alternate
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": role, "parts": parts})

    for m in messages:
        role = m["role"]
        if role == "system":
            system = _as_text(m["content"])
        elif role == "assistant":
            parts: list[dict[str, Any]] = []
            if m["content"]:
                parts.append({"text": _as_text(m["content"])})
            parts.extend(
                {"functionCall": {"id": c["id"], "name": c["name"], "args": c["arguments"]}}
                for c in m["tool_calls"]
            )
            add("model", parts)
        elif role == "tool":
            key = "error" if m.get("is_error") else "output"
            response = {"id": m["tool_call_id"], "name": m["name"], "response": {key: m["content"]}}
            add("user", [{"functionResponse": response}])
        else:
            add("user", [{"text": _as_text(m["content"])}])
    return system, out


def fork(
    events: Sequence[Event],
    step: int,
    *,
    format: ForkFormat | str = ForkFormat.NEUTRAL,
    include_system: bool = False,
    include_tool_calls: bool = False,
    include_tool_results: bool = False,
) -> ForkResult:
    """Rebuild the conversation of a run up to and including ``step``.

    Step 0 gives the opening request; step N adds the assistant turns of steps 1..N and,
    when asked for, the tool calls they made and their results.
    """
    shape = ForkFormat(format)
    original_steps = _checked_step(events, step)
    if include_tool_calls != include_tool_results:
        raise ForkError(
            "tool calls and their results go together: keeping tool calls without their "
            "results (or results without their calls) would give the model a broken "
            "conversation; pass both --include-tool-calls and --include-tool-results, or "
            "neither"
        )
    messages = _select(
        _neutral(events, step),
        system=include_system,
        tool_calls=include_tool_calls,
        tool_results=include_tool_results,
    )
    system: str | None = None
    if shape is ForkFormat.OPENAI:
        messages = _openai(messages)
    elif shape is ForkFormat.RESPONSES:
        messages = _responses(messages)
    elif shape is ForkFormat.ANTHROPIC:
        system, messages = _anthropic(messages)
    elif shape is ForkFormat.GEMINI:
        system, messages = _gemini(messages)
    else:
        for m in messages:
            if m["role"] == "assistant" and not m["tool_calls"]:
                del m["tool_calls"]
    # A copy: the caller may go on with the conversation in place, and must not change the
    # run's events (a test's golden, forked inside the test) doing so.
    return ForkResult(shape, step, original_steps, _outcome(events), json_copy(messages), system)


def _checked_step(events: Sequence[Event], step: int) -> int:
    """The run's step count, once ``step`` is known to be one of its steps."""
    original_steps = events[-1].step if events else 0
    if step < 0:
        raise ForkError(f"cannot fork at step {step}: steps start at 0")
    if step > original_steps:
        raise ForkError(
            f"cannot fork at step {step}: the run has {original_steps} step(s) (0 to "
            f"{original_steps})"
        )
    return original_steps


def fork_prefix(events: Sequence[Event], step: int) -> tuple[Event, ...]:
    """The events a fork at ``step`` starts from: the run's events up to and including
    ``step``, without its terminal event (the fork ends, or goes on, in its own way).

    Steps never go back, so they are a prefix of the run. Raises :class:`ForkError` for a
    step outside the run.
    """
    _checked_step(events, step)
    kept = 0
    for event in events:
        if event.step > step or event.type in TERMINAL_TYPES:
            break
        kept += 1
    return tuple(events[:kept])


def original_run_id(events: Sequence[Event]) -> str | None:
    """The run id a run's ``run.started`` names, or ``None`` (no id, or not a string)."""
    run_id = events[0].data.get("run_id") if events else None
    return run_id if isinstance(run_id, str) else None


def forked_from(run_id: str | None, golden_sha256: str, step: int) -> dict[str, Any]:
    """The ``forked_from`` object of a run forked at ``step`` from the run ``run_id`` (its
    ``run.started``'s id, or ``None``) whose file's bytes have the sha256 ``golden_sha256``
    (64 lowercase hex digits): ``{"run_id", "golden": "sha256:<hex>", "step"}``."""
    if not _SHA256_HEX.fullmatch(golden_sha256):
        raise ValueError(f"not a sha256 hex digest: {golden_sha256!r}")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"not a step: {step!r}")
    return {"run_id": run_id, "golden": f"sha256:{golden_sha256}", "step": step}
