"""``rollout serve``'s run: the recording endpoint (:mod:`pytest_rollout.sdk.endpoint`) in a
session of its own, outside pytest, for a suite in another language.

:class:`EndpointRun` is a ``with`` block around one run of the golden ``FILE``:

- **replay** (the default): the golden is opened and the dry replay sealed as
  :func:`pytest_rollout.replay` does it (the session of :mod:`pytest_rollout.session.standalone`);
  the endpoint answers from it; when the block ends, the run is compared with the golden.
- **record**: the endpoint forwards to the services (or ``upstream``); when the block ends the
  run becomes the golden ``FILE``, with its receipt, as ``--rollout-record`` writes a test's
  (unchanged bytes when the run compares equal to the golden there).

An agent in another process runs its own tools: the calls its turns announce are never
recorded as tool calls here, so a golden of this kind is replayed without refusing them (the
process will run them again, as it did when recording).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final

from ..diff.canonical import DEFAULT_OPTIONS
from ..errors import RolloutError
from ..format.recorder import Recorder
from ..replay.mode import Mode
from ..replay.seal import NetworkPolicy
from ..safety.redact import RedactionMode, Redactor
from ..safety.sanitize import sanitize
from ..sdk.endpoint import Endpoint
from ..store.golden import GoldenMissingError
from ..store.golden_store import GoldenStore, LoadedGolden
from .rollout import RolloutSession
from .setup import RunSetup
from .standalone import StandaloneReplay, verdict_text

__all__ = ["EndpointRun", "RunResult"]

#: The test id a golden recorded by ``rollout serve`` names in its ``run.started``.
SERVE_TEST_ID: Final = "rollout serve"


@dataclass(frozen=True, slots=True)
class RunResult:
    """What the run came to: whether it matched (or was recorded) and what to print."""

    ok: bool
    text: str


class _EndpointReplay(StandaloneReplay):
    """The standalone replay, with the calls of the other process's tools let through."""

    def _open(self) -> LoadedGolden:
        store = GoldenStore(self.golden.parent, fail_unrecorded=False)
        golden = store.open(self.golden, self.mode, test_id=SERVE_TEST_ID, redactor=self.redactor)
        error = golden.error
        if isinstance(error, GoldenMissingError):
            hint = "Record it first: rollout serve --golden FILE --record"
            raise GoldenMissingError(error.path, hint)
        if error is not None:
            raise error
        return golden


class EndpointRun:
    """One run of ``golden`` behind an endpoint: ``with EndpointRun(...) as endpoint:``
    serves, and :attr:`result` says how it went once the block is over."""

    def __init__(
        self,
        golden: Path,
        *,
        record: bool,
        upstream: str | None = None,
        port: int = 0,
        redact: RedactionMode = RedactionMode.REDACTED,
    ) -> None:
        self.golden = golden
        self.record = record
        self.upstream = upstream
        self.port = port
        self.redactor = Redactor(redact)
        self.result: RunResult | None = None
        self._replay: StandaloneReplay | None = None
        self._session: RolloutSession | None = None
        self._endpoint: Endpoint | None = None

    def __enter__(self) -> Endpoint:
        if self.record:
            setup = RunSetup(test_id=SERVE_TEST_ID, mode=Mode.RECORD, golden_path=self.golden)
            session = RolloutSession(setup, Recorder(redactor=self.redactor))
        else:
            if self.upstream is not None:
                raise RolloutError(
                    "--upstream is where a recording goes: a replay answers from the golden "
                    "and never forwards (add --record to record)"
                )
            self._replay = _EndpointReplay(
                self.golden,
                mode=Mode.DRY,
                options=DEFAULT_OPTIONS,
                allow_unconsumed=False,
                redactor=self.redactor,
                policy=NetworkPolicy.LOOPBACK,
                allow_hosts=(),
                save=None,
                test_id=None,
            )
            session = self._replay.__enter__()
        self._session = session
        try:
            self._endpoint = session.endpoint(self.upstream, port=self.port)
        except BaseException:
            self._close(None, None, None)
            raise
        return self._endpoint

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self._close(kind, error, traceback)
        if error is None or isinstance(error, KeyboardInterrupt):
            self.result = self._recorded() if self.record else self._compared()
            return True
        return False

    def _close(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        session = self._session
        assert session is not None
        session.stop_endpoints()
        if self._replay is not None:
            self._replay.__exit__(kind, error, traceback)
        else:
            session.close()

    def _recorded(self) -> RunResult:
        """Make the run the golden (with its receipt); what was written."""
        session = self._session
        assert session is not None
        engine = session.engine
        shown = sanitize(str(self.golden))
        if not engine.used:
            return RunResult(False, f"no model request reached the endpoint: {shown} not written")
        self.golden.parent.mkdir(parents=True, exist_ok=True)
        store = GoldenStore(self.golden.parent)
        kept = store.keep(self.golden, session.recorder.getvalue(), self.redactor)
        steps = session.steps
        return RunResult(
            True, f"recorded {steps} turn{'' if steps == 1 else 's'} into {shown} ({kept.value})"
        )

    def _compared(self) -> RunResult:
        """The run against the golden, as a failing test's report tells it."""
        session = self._session
        assert session is not None
        if not session.engine.used:
            shown = sanitize(str(self.golden))
            return RunResult(False, f"no model request reached the endpoint: {shown} not replayed")
        verdict = session.verdict()
        return RunResult(verdict.matched, verdict_text(verdict))
