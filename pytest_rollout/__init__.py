"""pytest-rollout: golden-run trace diffing for LLM agents.

The public names are listed in ``__all__``. Each is imported on first use (PEP 562), so
that loading the pytest plugin, which every test run does, does not import the whole
library; ``from pytest_rollout import X`` works as usual, and type checkers see the
imports below.

One name is also the name of a subpackage: ``replay``, the function that replays a golden
outside pytest, and ``pytest_rollout/replay/``, the package of replay's modules. Importing a
subpackage binds its name on the package, which would hide the function, so the package's
module object keeps ``replay`` as a property of its own (:class:`_Package`).
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from .errors import RolloutError as RolloutError
from .errors import RolloutFormatError as RolloutFormatError
from .errors import RolloutWarning as RolloutWarning

if TYPE_CHECKING:
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
    from .format.events import Event as Event
    from .format.files import SecretInFileError as SecretInFileError
    from .format.files import UnsafePathError as UnsafePathError
    from .format.loader import Limits as Limits
    from .format.loader import Rollout as Rollout
    from .format.loader import load as load
    from .format.loader import loads as loads
    from .format.recorder import Recorder as Recorder
    from .plugin.snapshot import RolloutSnapshotExtension as RolloutSnapshotExtension
    from .replay.recorded import RecordedProvider as RecordedProvider
    from .replay.seal import RolloutNetworkError as RolloutNetworkError
    from .replay.turn import ToolCall as ToolCall
    from .replay.turn import Turn as Turn
    from .safety.redact import RedactionError as RedactionError
    from .safety.redact import RedactionMode as RedactionMode
    from .safety.redact import Redactor as Redactor
    from .safety.redact import Rule as Rule
    from .safety.sanitize import sanitize as sanitize
    from .sdk.clients import MissingPackageError as MissingPackageError
    from .sdk.exchange import UnrecordedRequestError as UnrecordedRequestError
    from .sdk.pricing import Price as Price
    from .sdk.wire import WireFormatError as WireFormatError
    from .session import RolloutSession as RolloutSession
    from .session.standalone import replay as replay
    from .session.standalone import verdict_text as verdict_text
    from .store.audit import AuditError as AuditError
    from .store.golden import GoldenEditedError as GoldenEditedError
    from .store.golden import GoldenMissingError as GoldenMissingError
    from .store.golden import UnrecordedToolsError as UnrecordedToolsError
    from .store.receipt import ReceiptError as ReceiptError

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
    "RolloutNetworkError",
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
    "UnrecordedToolsError",
    "UnsafePathError",
    "WireFormatError",
    "__version__",
    "canonicalize",
    "compare",
    "load",
    "loads",
    "replay",
    "sanitize",
    "score",
    "summarize",
    "verdict_text",
]

#: Where each lazily imported public name lives.
_LAZY: Final = {
    "AnalyzerOptions": ".analysis.analyzers",
    "Antipattern": ".analysis.analyzers",
    "AuditError": ".store.audit",
    "CanonicalOptions": ".diff.canonical",
    "Comparison": ".diff.compare",
    "Event": ".format.events",
    "GoldenEditedError": ".store.golden",
    "GoldenMissingError": ".store.golden",
    "Limits": ".format.loader",
    "MissingPackageError": ".sdk.clients",
    "Price": ".sdk.pricing",
    "ReceiptError": ".store.receipt",
    "RecordedProvider": ".replay.recorded",
    "Recorder": ".format.recorder",
    "RedactionError": ".safety.redact",
    "RedactionMode": ".safety.redact",
    "Redactor": ".safety.redact",
    "ReplayDivergenceError": ".diff.divergence",
    "Rollout": ".format.loader",
    "RolloutSession": ".session",
    "RolloutSnapshotExtension": ".plugin.snapshot",
    "Rule": ".safety.redact",
    "RunSummary": ".diff.score",
    "Score": ".diff.score",
    "SecretInFileError": ".format.files",
    "StepStatus": ".diff.compare",
    "ToolCall": ".replay.turn",
    "ToolCallRecord": ".analysis.assertions",
    "Turn": ".replay.turn",
    "UnrecordedRequestError": ".sdk.exchange",
    "RolloutNetworkError": ".replay.seal",
    "UnrecordedToolsError": ".store.golden",
    "UnsafePathError": ".format.files",
    "WireFormatError": ".sdk.wire",
    "canonicalize": ".diff.canonical",
    "compare": ".diff.compare",
    "load": ".format.loader",
    "loads": ".format.loader",
    "sanitize": ".safety.sanitize",
    "score": ".diff.score",
    "summarize": ".diff.score",
    "verdict_text": ".session.standalone",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Not cached here: the module's own entry in sys.modules is the one truth, also when a
    # test harness (pytester in process) drops and re-imports modules between runs.
    return getattr(import_module(module, __name__), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _ReplayEntry:
    """``pytest_rollout.replay``: call it to replay a golden outside pytest
    (:func:`pytest_rollout.session.standalone.replay`, docs/replay.md); its attributes are
    those of the package ``pytest_rollout.replay``, so a dotted path through it (what
    ``monkeypatch.setattr`` and ``unittest.mock.patch`` resolve) still reaches its modules."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return import_module(".session.standalone", __name__).replay(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(import_module(".replay", __name__), name)

    @property
    def __signature__(self) -> Any:  # what help() and a notebook show of the call
        from inspect import signature  # noqa: PLC0415  (only help() pays for it)

        return signature(import_module(".session.standalone", __name__).replay)

    def __repr__(self) -> str:
        return "<function pytest_rollout.replay>"


_REPLAY: Final = _ReplayEntry()


class _Package(ModuleType):
    """The package's module object: ``replay`` stays the function when the subpackage of the
    same name is imported (the import system's binding of it is let go: the subpackage is in
    ``sys.modules`` all the same)."""

    @property
    def replay(self) -> Any:
        return _REPLAY

    @replay.setter
    def replay(self, value: Any) -> None:
        pass


sys.modules[__name__].__class__ = _Package
