"""What a provider returns: a turn of the model, with the tool calls it asked for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..format.jsonable import json_copy

__all__ = ["ToolCall", "Turn", "coerce_turn"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call a turn asks for: ``arguments`` is an object, never a JSON string."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_obj(cls, obj: ToolCall | Mapping[str, Any]) -> ToolCall:
        if isinstance(obj, ToolCall):
            return obj
        if not isinstance(obj, Mapping):
            raise TypeError(f"a tool call must be a ToolCall or a dict, got {type(obj).__name__}")
        arguments = obj.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise TypeError(f"tool call arguments must be an object, got {arguments!r}")
        return cls(str(obj.get("id", "")), str(obj["name"]), dict(arguments))

    def to_json_obj(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class Turn:
    """One model turn: content, the tool calls it asks for, usage and cost.

    ``tool_calls`` accepts ToolCall objects or dicts of the same fields. ``usage`` is
    ``{"input_tokens": N, "output_tokens": N}`` when the provider reports it.
    """

    content: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    usage: Mapping[str, int] | None = None
    cost_usd: float | None = None
    model: str | None = None

    def __post_init__(self) -> None:
        calls = tuple(ToolCall.from_obj(c) for c in self.tool_calls or ())
        object.__setattr__(self, "tool_calls", calls)
        if self.usage is not None:
            object.__setattr__(self, "usage", dict(self.usage))

    def to_event_data(self) -> dict[str, Any]:
        """The payload of this turn's ``llm.turn.completed`` event (without timings)."""
        return {
            "content": self.content,
            "tool_calls": [c.to_json_obj() for c in self.tool_calls],
            "usage": self.usage,
            "cost_usd": self.cost_usd,
            "model_version": self.model,
        }

    @classmethod
    def from_event_data(cls, data: Mapping[str, Any]) -> Turn:
        """Rebuild a turn from a recorded ``llm.turn.completed`` payload, sharing nothing
        with it: the agent may change the arguments it is given."""
        return cls(
            content=data.get("content"),
            tool_calls=[ToolCall.from_obj(c) for c in json_copy(data.get("tool_calls") or ())],
            usage=data.get("usage"),
            cost_usd=data.get("cost_usd"),
            model=data.get("model_version"),
        )


_TURN_FIELDS = frozenset({"content", "tool_calls", "usage", "cost_usd", "model"})


def coerce_turn(value: Any) -> Turn:
    """Accept what a live provider returned: a Turn, or a dict of the same fields."""
    if isinstance(value, Turn):
        return value
    if isinstance(value, Mapping):
        unknown = set(value) - _TURN_FIELDS
        if unknown:
            raise TypeError(
                f"a provider returned a dict with unknown turn fields {sorted(unknown)}; "
                f"expected some of {sorted(_TURN_FIELDS)}"
            )
        return Turn(**value)
    raise TypeError(
        f"a provider must return a pytest_rollout.Turn or a dict, got {type(value).__name__}"
    )
