"""``--rollout-otel=FILE``: every rollout test's run as one OpenTelemetry GenAI trace, written
at the end of the session as OTLP/JSON lines (docs/otel.md).

A plugin object registered only when the flag is given. The core hands it each finished
test's events; under pytest-xdist each worker hands its traces to the controller through
``workeroutput`` (the channel the tally uses) and only the controller writes the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import pytest

from ..format.events import Event
from ..format.files import atomic_write
from ..otel.exporter import export_runs
from .tally import Tally

__all__ = ["OtelPlugin"]

#: The key of a worker's traces in ``workeroutput``.
WORKER_KEY: Final = "rollout_otel"


class OtelPlugin:
    """Collects one trace per test and writes them all to ``path`` at session end."""

    name: Final = "rollout-otel"

    def __init__(self, config: pytest.Config, path: Path, tally: Tally) -> None:
        self.config = config
        self.path = path
        self.tally = tally
        self.traces: dict[str, str] = {}  # node id -> its OTLP/JSON line
        self.written: Path | None = None

    def add(self, nodeid: str, events: Sequence[Event]) -> None:
        """Keep the trace of a finished test's run (a failure is reported, never raised)."""
        if not events:
            return
        try:
            self.traces[nodeid] = export_runs([events]).decode("utf-8")
        except Exception as exc:  # exporting must never break the user's test
            self.tally.problems.append(f"{nodeid}: its trace was not exported: {exc}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKER_KEY] = self.traces
            return
        data = "".join(self.traces[nodeid] for nodeid in sorted(self.traces)).encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, data)
        except OSError as exc:
            self.tally.problems.append(f"the trace file was not written: {exc}")
        else:
            self.written = self.path

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        traces = getattr(node, "workeroutput", {}).get(WORKER_KEY)
        if isinstance(traces, dict):
            self.traces.update({str(k): str(v) for k, v in traces.items()})
