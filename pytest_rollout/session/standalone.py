"""A golden replayed outside pytest: in a notebook or a script, the same ``rollout`` object a
test gets, with the same verdict.

:func:`replay` does for one run what the plugin does for each test that uses the ``rollout``
fixture: it opens the golden through the store (the folder settled, the receipt checked, a
golden that cannot be replayed refused with the error a test would fail with), builds the
run's setup, recorder and :class:`~pytest_rollout.session.rollout.RolloutSession`, keeps a dry
replay off the network (:mod:`pytest_rollout.replay.seal`) for as long as the ``with`` block
runs, and closes the run when the block ends::

    with pytest_rollout.replay("golden/tests/test_agent/test_refund.jsonl") as rollout:
        llm = rollout.provider()
        tools = rollout.tools(TOOLS)
        with rollout.run(prompt=question) as run:
            run.output = agent(llm, tools, question)
    print(pytest_rollout.verdict_text(rollout.verdict()))

:func:`verdict_text` renders a verdict with the renderer of a failing test's report. Nothing
here imports pytest.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Final, Literal

from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions
from ..diff.divergence import caused_by_divergence
from ..diff.drift import Verdict
from ..diff.report import render_verdict
from ..diff.volatile import BUILTIN, parse_declared
from ..errors import RolloutError, RolloutWarning
from ..format.loader import read_rollout_bytes
from ..format.recorder import Recorder
from ..replay.mode import Mode
from ..replay.seal import NetworkPolicy, NetworkSeal, RolloutNetworkError
from ..safety.redact import RedactionMode, Redactor
from ..safety.sanitize import sanitize
from ..store.golden import GoldenMissingError
from ..store.golden_store import GoldenStore, LoadedGolden
from ..store.replay_receipt import write_replay_receipt
from .replay_evidence import replay_evidence
from .rollout import RolloutSession
from .setup import RunSetup

__all__ = ["StandaloneReplay", "replay", "verdict_text"]

#: Who the golden's fix commands name when the caller did not say which test it belongs to.
_SOME_TEST: Final = "<test>"
#: How :func:`replay` and its keywords are named in its errors.
_CALL: Final = "pytest_rollout.replay()"


def replay(
    golden: str | os.PathLike[str],
    *,
    mode: Literal["dry", "full"] | Mode = "dry",
    ignore: Iterable[str] = (),
    volatile: Iterable[str] = (),
    allow_unconsumed: bool = False,
    redact: str | RedactionMode | Redactor = "redacted",
    network: Literal["loopback", "sealed", "open"] | NetworkPolicy = "loopback",
    allow_hosts: Iterable[str] = (),
    save: str | os.PathLike[str] | None = None,
    test_id: str | None = None,
    unverified: bool = False,
) -> StandaloneReplay:
    """Replay the golden at ``golden`` outside pytest: ``with replay(path) as rollout:``
    gives the ``rollout`` object a test gets, and ``rollout.verdict()`` its verdict once the
    block is over (docs/replay.md, "Replaying outside pytest").

    ``mode``: ``"dry"`` answers the model and the tools from the golden; ``"full"`` lets
    the provider the block wraps run live and answers the tools from the golden.
    ``ignore``: more ``[TYPE:]path`` patterns the comparison leaves out (as the
    ``rollout_ignore`` ini key); ``volatile``: more ``LABEL=REGEX`` values renamed before
    comparing (as ``rollout_volatile``). ``allow_unconsumed``: a run that stops before the
    golden did still matches. ``redact``: the redaction the run is recorded with (a mode
    name, or a :class:`~pytest_rollout.Redactor` with your rules), which should be the one
    the golden was recorded with. ``network`` and ``allow_hosts``: what a dry replay lets
    through (as ``rollout_network`` and ``rollout_allow_hosts``). ``save``: the file the
    run is kept in, with its replay receipt beside it. ``unverified``: a golden whose
    receipt is missing or does not match is replayed as it is (as
    ``--rollout-unverified``), instead of refused. ``test_id``: the test the golden
    belongs to, named in the fix commands of a refused golden (default: the run is named
    after the golden's own test).

    A bad keyword raises :class:`~pytest_rollout.RolloutError` here; the golden is opened
    when the block is entered.
    """
    return StandaloneReplay(
        Path(os.fspath(golden)),
        mode=_mode(mode),
        options=_options(ignore, volatile),
        allow_unconsumed=allow_unconsumed,
        redactor=redact if isinstance(redact, Redactor) else Redactor(redact),
        policy=_policy(network),
        allow_hosts=_hosts(allow_hosts),
        save=None if save is None else Path(os.fspath(save)),
        test_id=test_id,
        unverified=unverified,
    )


def verdict_text(verdict: Verdict, *, verbose: int = 0) -> str:
    """The verdict as a failing test's report tells it (its first line is the headline:
    ``this run left its golden at step 2: ...``, or ``this run matches its golden``);
    ``verbose`` as pytest's ``-v``. Every string taken from a run is sanitized."""
    return "\n".join(render_verdict(verdict, verbose=verbose))


class StandaloneReplay:
    """The ``with`` block of :func:`replay`: entering it opens the golden and gives the run's
    :class:`~pytest_rollout.session.rollout.RolloutSession`; leaving it closes the run.

    When the block ends:

    - a connection the sealed dry replay refused is raised (the first one), even when the
      agent caught it: a replay must not pass on live answers;
    - an exception that a replay divergence caused is not raised again: the run is over,
      and its verdict tells the divergence (``rollout.verdict()``). Any other exception
      goes on as usual;
    - a saved run that could not be written, and (in full mode) tools that ran outside
      ``rollout.tools``, are said as a :class:`~pytest_rollout.RolloutWarning`.
    """

    def __init__(
        self,
        golden: Path,
        *,
        mode: Mode,
        options: CanonicalOptions,
        allow_unconsumed: bool,
        redactor: Redactor,
        policy: NetworkPolicy,
        allow_hosts: tuple[str, ...],
        save: Path | None,
        test_id: str | None,
        unverified: bool = False,
    ) -> None:
        self.golden = golden
        self.mode = mode
        self.options = options
        self.allow_unconsumed = allow_unconsumed
        self.redactor = redactor
        self.policy = policy
        self.allow_hosts = allow_hosts
        self.save = save
        self.test_id = test_id
        self.unverified = unverified
        #: The run, once the block was entered.
        self.session: RolloutSession | None = None
        self._seal: NetworkSeal | None = None

    def __enter__(self) -> RolloutSession:
        if self.session is not None:
            raise RolloutError(
                f"{_CALL} runs its block once: call it again for another run of the golden"
            )
        golden = self._open()
        started = golden.require().events[0].data.get("test_id")
        recorded_as = started if isinstance(started, str) else self.golden.stem
        setup = RunSetup(
            test_id=self.test_id or recorded_as,
            mode=self.mode,
            golden_path=self.golden,
            options=self.options,
            allow_unconsumed=self.allow_unconsumed,
            run_display=None if self.save is None else str(self.save),
        )
        recorder = Recorder(self.save, redactor=self.redactor)
        session = self.session = RolloutSession(setup, recorder, golden)
        if self.mode is Mode.DRY and self.policy is not NetworkPolicy.OPEN:
            seal = NetworkSeal(
                self.policy, self.allow_hosts, on_breach=session.network_breaches.append
            )
            self._seal = seal.__enter__()
        return session

    def _open(self) -> LoadedGolden:
        """The golden as the store opens it for a test, or the error a test fails with."""
        store = GoldenStore(self.golden.parent, unverified=self.unverified)
        test = self.test_id or _SOME_TEST
        golden = store.open(self.golden, self.mode, test_id=test, redactor=self.redactor)
        error = golden.error
        if isinstance(error, GoldenMissingError):
            hint = (
                "Record it with pytest --rollout-record, by the test it belongs to, or name "
                "the golden of a recorded test"
            )
            raise GoldenMissingError(error.path, hint)
        if error is not None:
            raise error
        return golden

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        session = self.session
        assert session is not None  # entered: __exit__ is only called after __enter__
        if self._seal is not None:
            self._seal.__exit__(kind, error, traceback)
            self._seal = None
        session.close()
        if self._say_unsaved(session.recorder):
            self._leave_receipt(session)
        if self.mode is Mode.FULL and session.engine.used:
            unrecorded = session.unrecorded_tools()
            if unrecorded is not None:
                warnings.warn(RolloutWarning(unrecorded), stacklevel=2)
        breaches = session.network_breaches
        if breaches and not any(error is breach for breach in breaches):
            raise breaches[0]
        # A divergence the agent let through ends the run and is in its verdict; anything
        # else (a Ctrl-C while one was handled included) goes on.
        if not isinstance(error, Exception) or isinstance(error, RolloutNetworkError):
            return False
        return caused_by_divergence(error)

    def _leave_receipt(self, session: RolloutSession) -> None:
        """Write the saved run's replay receipt (docs/replay.md, what a replay leaves); a
        failure is a warning, never the block's error."""
        assert self.save is not None
        golden = session.engine.golden
        try:
            evidence = replay_evidence(session.engine)
            if evidence is None or golden is None:
                return
            write_replay_receipt(
                self.save,
                read_rollout_bytes(self.save),
                evidence.record,
                replay_of=golden.receipt_digest,
                redaction_mode=self.redactor.mode.value,
                rules_sha256=self.redactor.rules_digest,
            )
        except (OSError, RolloutError) as exc:
            text = f"the replay receipt of {sanitize(str(self.save))} was not written: {exc}"
            warnings.warn(RolloutWarning(text), stacklevel=3)

    def _say_unsaved(self, recorder: Recorder) -> bool:
        """Say when the run asked to be saved was not, or not whole; whether it was saved."""
        if self.save is None:
            return False
        stats = recorder.stats
        shown = sanitize(str(self.save))
        problem = None
        if stats.leaked is not None:
            problem = f"the file held a secret ({stats.leaked})"
        elif stats.refused is not None:
            problem = sanitize(stats.refused)
        elif stats.write_errors:
            problem = "writing it failed (a full disk or a lost folder?)"
        if problem is not None:
            warnings.warn(
                RolloutWarning(f"the run was not saved to {shown}: {problem}"), stacklevel=3
            )
            return False
        if stats.cut_from_file:
            text = f"{shown} was cut: {stats.cut_from_file} line(s) left out"
            warnings.warn(RolloutWarning(text), stacklevel=3)
        return True


# -- the keywords, checked ------------------------------------------------------------------


def _mode(mode: str | Mode) -> Mode:
    try:
        found = Mode(mode)
    except ValueError:
        found = None
    if found is None or not found.replays_tools:
        raise RolloutError(f'{_CALL} replays in mode "dry" or "full", got mode={mode!r}')
    return found


def _policy(network: str | NetworkPolicy) -> NetworkPolicy:
    try:
        return NetworkPolicy(network)
    except ValueError:
        choices = ", ".join(f'"{p.value}"' for p in NetworkPolicy)
        raise RolloutError(f"{_CALL} takes network= {choices}, got {network!r}") from None


def _hosts(hosts: Iterable[str]) -> tuple[str, ...]:
    found = (hosts,) if isinstance(hosts, str) else tuple(hosts)
    if not all(isinstance(host, str) for host in found):
        raise RolloutError(f"{_CALL} takes allow_hosts= as host names, got {hosts!r}")
    return found


def _options(ignore: Iterable[str], volatile: Iterable[str]) -> CanonicalOptions:
    """The default canonical options, with ``ignore``'s paths left out and ``volatile``'s
    patterns renamed besides the built-in kinds (what the ini keys add for a test)."""
    paths = _texts("ignore", ignore)
    try:
        declared = [parse_declared(t, f"{_CALL} volatile=") for t in _texts("volatile", volatile)]
    except ValueError as exc:
        raise RolloutError(str(exc)) from None
    try:
        return DEFAULT_OPTIONS.extended(
            ignore_paths=paths,
            volatile=BUILTIN.with_declared(declared) if declared else None,
        )
    except ValueError as exc:
        raise RolloutError(f"{_CALL} ignore=: {exc}") from None


def _texts(keyword: str, value: Iterable[str]) -> tuple[str, ...]:
    found = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(text, str) for text in found):
        raise RolloutError(f"{_CALL} takes {keyword}= as a list of strings, got {value!r}")
    return found
