"""Where to fork a run that left its reference: the one decision behind every fork command a
report prints (the failure report, ``rollout diff``, the CI annotations and Markdown, the
viewer).

The fork keeps as much of the conversation as the two runs share. That is the step before
the first divergent one, unless the divergent step's model turn itself matched (its
``llm.turn.started`` and ``llm.turn.completed`` are the same in both runs) and only a later
event of the step differed, such as a tool call the agent made with other arguments, or a
tool's result: then the last good event is that turn, and the fork is taken at its step.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..format.events import LLM_TURN_COMPLETED, LLM_TURN_STARTED
from ..safety.sanitize import sanitize
from .compare import Comparison, StepStatus

__all__ = ["ForkPoint", "fork_command", "fork_point"]


@dataclass(frozen=True, slots=True)
class ForkPoint:
    """The step to fork at; ``keeps_turn``: the step diverged after its model turn, which
    the fork keeps."""

    step: int
    keeps_turn: bool = False

    @property
    def label(self) -> str:
        """``last good step (2)``, or ``last good event (step 3's model turn)``."""
        if self.keeps_turn:
            return f"last good event (step {self.step}'s model turn)"
        return f"last good step ({self.step})"

    @property
    def line(self) -> str:
        """The report's line above the command."""
        return f"Fork the conversation from the {self.label}:"

    def command(self, golden_path: str) -> str:
        """The command that forks ``golden_path`` here."""
        return fork_command(golden_path, self.step)


def fork_point(comparison: Comparison) -> ForkPoint | None:
    """Where to fork the reference run of ``comparison``: ``None`` when the runs match, or
    when they part at step 0 already (there is nothing good to keep)."""
    first = comparison.first
    if first is None:
        return None
    if first.status is StepStatus.DIVERGED:
        agreed = {event.type for event in first.a_events[: first.index]}
        if LLM_TURN_STARTED in agreed and LLM_TURN_COMPLETED in agreed:
            return ForkPoint(first.step, keeps_turn=True)
    good = comparison.last_identical_step
    return None if good is None else ForkPoint(good)


def fork_command(golden_path: str, step: int) -> str:
    """The command that forks the conversation of ``golden_path`` at ``step`` (kept)."""
    return f"rollout fork {shlex.quote(sanitize(golden_path))} --step {step}"
