"""pytest-rollout: golden-run trace diffing for LLM agents."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .analysis.analyzers import AnalyzerOptions as AnalyzerOptions
from .analysis.analyzers import Antipattern as Antipattern
from .analysis.assertions import ToolCallRecord as ToolCallRecord
from .diff.canonical import CanonicalOptions as CanonicalOptions
from .diff.canonical import canonicalize as canonicalize
from .diff.compare import Comparison as Comparison
from .diff.compare import StepStatus as StepStatus
from .diff.compare import compare as compare
from .diff.divergence import ReplayDivergenceError as ReplayDivergenceError
from .diff.score import RunSummary as RunSummary
from .diff.score import Score as Score
from .diff.score import score as score
from .diff.score import summarize as summarize
from .errors import RolloutError as RolloutError
from .errors import RolloutFormatError as RolloutFormatError
from .errors import RolloutWarning as RolloutWarning
from .format.events import Event as Event
from .format.files import SecretInFileError as SecretInFileError
from .format.loader import Limits as Limits
from .format.loader import Rollout as Rollout
from .format.loader import load as load
from .format.loader import loads as loads
from .format.recorder import Recorder as Recorder
from .replay.recorded import RecordedProvider as RecordedProvider
from .replay.turns import ToolCall as ToolCall
from .replay.turns import Turn as Turn
from .safety.audit import AuditError as AuditError
from .safety.receipt import ReceiptError as ReceiptError
from .safety.redact import RedactionError as RedactionError
from .safety.redact import RedactionMode as RedactionMode
from .safety.redact import Redactor as Redactor
from .safety.redact import Rule as Rule
from .safety.sanitize import sanitize as sanitize
from .sdk.clients import MissingPackageError as MissingPackageError
from .sdk.exchange import UnrecordedRequestError as UnrecordedRequestError
from .sdk.pricing import Price as Price
from .sdk.wire import WireFormatError as WireFormatError
from .session import GoldenEditedError as GoldenEditedError
from .session import GoldenMissingError as GoldenMissingError
from .session import RolloutSession as RolloutSession

if TYPE_CHECKING:
    from .plugin.snapshot import RolloutSnapshotExtension as RolloutSnapshotExtension

__version__ = "0.1.0"

__all__ = [
    "AnalyzerOptions",
    "Antipattern",
    "AuditError",
    "CanonicalOptions",
    "Comparison",
    "Event",
    "GoldenEditedError",
    "GoldenMissingError",
    "Limits",
    "MissingPackageError",
    "Price",
    "ReceiptError",
    "RecordedProvider",
    "Recorder",
    "RedactionError",
    "RedactionMode",
    "Redactor",
    "ReplayDivergenceError",
    "Rollout",
    "RolloutError",
    "RolloutFormatError",
    "RolloutSession",
    "RolloutSnapshotExtension",
    "RolloutWarning",
    "Rule",
    "RunSummary",
    "Score",
    "SecretInFileError",
    "StepStatus",
    "ToolCall",
    "ToolCallRecord",
    "Turn",
    "UnrecordedRequestError",
    "WireFormatError",
    "__version__",
    "canonicalize",
    "compare",
    "load",
    "loads",
    "sanitize",
    "score",
    "summarize",
]


def __getattr__(name: str) -> Any:
    # The syrupy extension is imported on first use: importing syrupy costs every run.
    if name == "RolloutSnapshotExtension":
        return import_module(".plugin.snapshot", __name__).RolloutSnapshotExtension
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
