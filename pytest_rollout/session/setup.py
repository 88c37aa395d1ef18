"""What decides how one test's run is recorded, replayed and compared: its
:class:`RunSetup`, built once per test (by the plugin from its flags, ini keys, marker and
hooks, or by hand) and read by the engine."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.analyzer_options import AnalyzerOptions
from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions
from ..replay.mode import Mode
from ..sdk.pricing import PRICES, Price

__all__ = ["RunSetup"]


def _new_run_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class RunSetup:
    """How one test's run is recorded, replayed and compared.

    ``test_id`` names the run in its ``run.started``; ``mode`` says what runs live;
    ``golden_path`` is where the test's golden lives (what ``rollout == golden`` names);
    ``options`` are the canonical form's (what the comparison ignores); ``allow_unconsumed``
    lets a run stop before the golden did; ``error_types`` are the event types the score
    counts as errors besides the built-in families; ``run_display`` is where the run is
    saved, as a report shows it; ``rebuild`` turns a recorded typed result back into its
    type when the built-in rebuild cannot (``pytest_rollout_rebuild_result``);
    ``expects_model`` says whether a recorded run that made no model call is a mistake.
    """

    test_id: str = "test"
    mode: Mode = Mode.RECORD
    golden_path: Path | None = None
    options: CanonicalOptions = DEFAULT_OPTIONS
    allow_unconsumed: bool = False
    error_types: tuple[str, ...] = ()
    run_id: str = field(default_factory=_new_run_id)
    run_display: str | None = None
    prices: Mapping[str, Price] = field(default_factory=lambda: PRICES)
    analyzers: AnalyzerOptions = field(default_factory=AnalyzerOptions)
    rebuild: Callable[[str, Any], Any] | None = None
    #: Whether a recorded run must make a model call (``False``: the agent answers without
    #: one on purpose, ``@pytest.mark.rollout(model_calls=False)``).
    expects_model: bool = True
