"""pytest-rollout: golden-run trace diffing for LLM agents."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .analyzers import AnalyzerOptions as AnalyzerOptions
from .analyzers import Antipattern as Antipattern
from .assertions import ToolCallRecord as ToolCallRecord
from .audit import AuditError as AuditError
from .canonical import CanonicalOptions as CanonicalOptions
from .canonical import canonicalize as canonicalize
from .compare import Comparison as Comparison
from .compare import StepStatus as StepStatus
from .compare import compare as compare
from .divergence import ReplayDivergenceError as ReplayDivergenceError
from .errors import RolloutError as RolloutError
from .errors import RolloutFormatError as RolloutFormatError
from .errors import RolloutWarning as RolloutWarning
from .events import Event as Event
from .exchange import UnrecordedRequestError as UnrecordedRequestError
from .files import SecretInFileError as SecretInFileError
from .loader import Limits as Limits
from .loader import Rollout as Rollout
from .loader import load as load
from .loader import loads as loads
from .pricing import Price as Price
from .receipt import ReceiptError as ReceiptError
from .recorder import Recorder as Recorder
from .redact import RedactionError as RedactionError
from .redact import RedactionMode as RedactionMode
from .redact import Redactor as Redactor
from .redact import Rule as Rule
from .replay import RecordedProvider as RecordedProvider
from .sanitize import sanitize as sanitize
from .score import RunSummary as RunSummary
from .score import Score as Score
from .score import score as score
from .score import summarize as summarize
from .sdk import MissingPackageError as MissingPackageError
from .session import GoldenEditedError as GoldenEditedError
from .session import GoldenMissingError as GoldenMissingError
from .session import RolloutSession as RolloutSession
from .turns import ToolCall as ToolCall
from .turns import Turn as Turn
from .wire import WireFormatError as WireFormatError

if TYPE_CHECKING:
    from .snapshot import RolloutSnapshotExtension as RolloutSnapshotExtension

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
        return import_module(".snapshot", __name__).RolloutSnapshotExtension
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
