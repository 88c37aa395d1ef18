"""OpenTelemetry GenAI traces in and out (docs/otel.md).

:mod:`.otlp` reads and writes OTLP/JSON trace files, :mod:`.conventions` holds the GenAI
semantic conventions' names and message shapes, :mod:`.openinference` reads OpenInference
spans as GenAI ones, :mod:`.mapping` turns one span's attributes into an event's payload and
back, :mod:`.agents` says which agent each span speaks for and reads handoffs, :mod:`.fit`
makes an imported payload fit the loader's schema, :mod:`.importer` makes a rollout of a
trace and :mod:`.exporter` a trace of a rollout. No OpenTelemetry package is needed: the
files are plain JSON.
"""

from __future__ import annotations

from .exporter import export_run, export_runs
from .importer import ImportedRun, import_otel, import_spans, write_rollout
from .otlp import DEFAULT_TRACE_LIMITS, Span, SpanEvent, TraceLimits, read_spans, spans_from_bytes

__all__ = [
    "DEFAULT_TRACE_LIMITS",
    "ImportedRun",
    "Span",
    "SpanEvent",
    "TraceLimits",
    "export_run",
    "export_runs",
    "import_otel",
    "import_spans",
    "read_spans",
    "spans_from_bytes",
    "write_rollout",
]
