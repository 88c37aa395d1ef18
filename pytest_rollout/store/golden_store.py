"""A session's goldens: each one opened for the test that replays it, and a recorded run
kept as a test's new golden.

:class:`GoldenStore` owns a golden's whole life apart from where it lives
(:mod:`~pytest_rollout.store.golden`):

- :meth:`GoldenStore.open`, before a test replays its golden: the folder is settled (a
  write that a crash interrupted is finished or undone), the golden is read and checked
  against its receipt, an edited golden is refused (or, with ``accept_edits``, sealed
  anew), and in dry replay a golden whose tool calls were never recorded is refused (or
  warned about). What comes out is one :class:`LoadedGolden`: the run, or the error that
  says why there is none; the test fails with that error when it asks for the golden.
- :meth:`GoldenStore.keep`, after a test recorded a run: the golden and its receipt are
  written as one unit, only when the run changed, and never over a golden that a test
  names by its path (one the user keeps, such as an imported incident).

Nothing here imports pytest; the plugin maps each test onto these two calls.
"""

from __future__ import annotations

import dataclasses
import shlex
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

from ..diff.canonical import DEFAULT_OPTIONS, CanonicalOptions
from ..diff.integrity import unrecorded_calls, unrecorded_text
from ..errors import RolloutError, RolloutWarning
from ..format.loader import Rollout, read_rollout_bytes
from ..format.pair import Reference
from ..replay.mode import Mode
from ..safety.redact import RedactionMode, Redactor
from .golden import (
    GoldenEditedError,
    GoldenMissingError,
    UnrecordedToolsError,
    WriteResult,
    recover_pair,
    write_golden_and_receipt,
)
from .receipt import ReceiptStatus, make_receipt, verify, write_receipt

__all__ = ["GoldenStore", "Kept", "LoadedGolden"]


@dataclass(frozen=True, slots=True)
class LoadedGolden:
    """A test's golden as its replay and its verdict use it: the run, or why there is none.

    ``shown`` is its path as the user reads it in a report; ``reference`` is the golden's
    run, read so that the test's run can be read like it at the verdict
    (:class:`~pytest_rollout.format.pair.Reference`). ``resealed``: it had been edited since
    it was recorded, and was accepted and sealed anew (``accept_edits``). ``unverified``: it
    does not match its receipt (or has none) and is replayed as it is (``unverified``).
    ``sha256`` is the digest of the bytes replayed, and ``receipt_digest`` the
    ``body_sha256`` of the receipt that vouches for them (``None``: none does).
    """

    path: Path
    shown: str
    reference: Reference | None = None
    error: RolloutError | None = None
    resealed: bool = False
    unverified: bool = False
    sha256: str | None = None
    receipt_digest: str | None = None

    @classmethod
    def of(cls, rollout: Rollout, path: str | Path = "golden.jsonl") -> LoadedGolden:
        """A golden already in hand (a test of the library, a file loaded by the caller)."""
        return cls(Path(path), str(path), Reference(rollout))

    @property
    def rollout(self) -> Rollout | None:
        """The golden's run (``None``: there is none, see :attr:`error`)."""
        return None if self.reference is None else self.reference.rollout

    @property
    def loaded(self) -> bool:
        return self.reference is not None

    def require(self) -> Rollout:
        """The golden's run, or the error that says why there is none, raised."""
        __tracebackhide__ = True  # a usage error: the traceback ends in the test
        if self.reference is not None:
            return self.reference.rollout
        assert self.error is not None  # the store makes one or the other
        raise self.error


class Kept(StrEnum):
    """What :meth:`GoldenStore.keep` did with a recorded run."""

    CREATED = WriteResult.CREATED.value
    UPDATED = WriteResult.UPDATED.value
    UNCHANGED = WriteResult.UNCHANGED.value
    #: A golden the test names by its path (outside the golden folder): never rewritten.
    NAMED = "named by path, left as is"


class GoldenStore:
    """The goldens under ``golden_dir`` and those that tests name by path.

    ``accept_edits``: a golden that no longer matches its receipt is replayed and sealed
    anew, instead of refused. ``unverified``: it is replayed as it is, unsealed, and every
    report of its replay says so. ``fail_unrecorded``: a dry replay of a golden with unrecorded
    tool calls is refused (else a :class:`~pytest_rollout.errors.RolloutWarning` is
    issued and the tools run live). ``show`` renders a path for a message.
    """

    def __init__(
        self,
        golden_dir: Path,
        *,
        accept_edits: bool = False,
        unverified: bool = False,
        fail_unrecorded: bool = True,
        show: Callable[[Path], str] = str,
    ) -> None:
        if accept_edits and unverified:
            raise ValueError("a golden is either sealed anew (accept_edits) or left unverified")
        self.golden_dir = golden_dir
        self.accept_edits = accept_edits
        self.unverified = unverified
        self.fail_unrecorded = fail_unrecorded
        self.show = show

    def owns(self, path: Path) -> bool:
        """Whether ``path`` lies in the golden folder (else a test names it by path)."""
        return path.is_relative_to(self.golden_dir)

    # -- before a replay ---------------------------------------------------------------

    def open(
        self,
        path: Path,
        mode: Mode,
        *,
        test_id: str,
        redactor: Redactor,
        fail_unrecorded: bool | None = None,
    ) -> LoadedGolden:
        """The golden at ``path`` for the test ``test_id`` to replay in ``mode`` (dry or
        full). Never raises: a golden that cannot be replayed comes back with its error.
        ``fail_unrecorded`` is this test's own policy for unrecorded tool calls (``None``:
        the store's)."""
        if not mode.replays_tools:
            raise ValueError(f"a golden is replayed in dry or full mode, not {mode.value}")
        shown = self.show(path)
        if self.owns(path):
            recover_pair(self.golden_dir, path)  # a write a crash interrupted: finish or undo
        if not path.exists():
            hint = f"Record it with: pytest --rollout-record {shlex.quote(test_id)}"
            return LoadedGolden(path, shown, error=GoldenMissingError(shown, hint))
        try:
            golden = self._verified(path, shown, test_id, redactor)
            if mode is Mode.DRY:
                fail = self.fail_unrecorded if fail_unrecorded is None else fail_unrecorded
                self._refuse_unrecorded(golden, test_id, fail)
        except RolloutError as exc:
            return LoadedGolden(path, shown, error=exc)
        return golden

    def _verified(self, path: Path, shown: str, test_id: str, redactor: Redactor) -> LoadedGolden:
        """The golden, once its receipt vouches for its bytes (docs/secrets.md)."""
        data = read_rollout_bytes(path)
        check = verify(path, data)
        edited = check.status is not ReceiptStatus.OK
        if edited and not (self.accept_edits or self.unverified):
            raise GoldenEditedError(dataclasses.replace(check, golden=shown).message(test_id))
        reference = Reference.loads(data, path=str(path))  # a refused golden: never sealed
        receipt = check.receipt
        if edited and self.unverified:
            receipt = None
        elif edited:
            receipt = make_receipt(
                data, redaction_mode=redactor.mode.value, rules_sha256=redactor.rules_digest
            )
            write_receipt(path, receipt)
        return LoadedGolden(
            path,
            shown,
            reference,
            resealed=edited and self.accept_edits,
            unverified=edited and self.unverified,
            sha256=check.actual_sha256,
            receipt_digest=None if receipt is None else receipt.digest(path.name),
        )

    def _refuse_unrecorded(self, golden: LoadedGolden, test_id: str, fail: bool) -> None:
        """A golden whose tool calls were not recorded: a dry replay would run those tools
        live, so it is refused (``fail``) or warned about."""
        calls = unrecorded_calls(golden.require().events)
        if not calls:
            return
        text = f"{golden.shown}: {unrecorded_text(calls)}"
        if not fail:
            warnings.warn(RolloutWarning(text), stacklevel=2)
            return
        raise UnrecordedToolsError(
            f"{text}\nThis dry replay would run them live, so it stops here. Wrap them, then "
            f"re-record: pytest --rollout-record {shlex.quote(test_id)} (or set "
            f'rollout_unrecorded_tools = warn, or @pytest.mark.rollout(unrecorded_tools="warn") '
            f"on this test, to let them run live)"
        )

    # -- after a recording ---------------------------------------------------------------

    def keep(
        self,
        path: Path,
        run: bytes,
        redactor: Redactor,
        options: CanonicalOptions = DEFAULT_OPTIONS,
    ) -> Kept:
        """Make ``run`` (a whole recorded rollout) the golden at ``path``, with its receipt,
        as one unit: unchanged when the golden there compares equal to it, and never for a
        golden named by path. Raises :class:`~pytest_rollout.errors.RolloutError` when the
        run cannot be kept (the loader refuses it, a secret is left in its bytes)."""
        if not self.owns(path):
            return Kept.NAMED
        result = write_golden_and_receipt(
            self.golden_dir,
            path,
            run,
            options,
            redaction_mode=redactor.mode.value,
            rules_sha256=redactor.rules_digest,
            scan=None if redactor.mode is RedactionMode.FULL else redactor.scan,
        )
        return _KEPT[result]


_KEPT: Final = {
    WriteResult.CREATED: Kept.CREATED,
    WriteResult.UPDATED: Kept.UPDATED,
    WriteResult.UNCHANGED: Kept.UNCHANGED,
}
