"""The golden's life in the library (``GoldenStore``), without pytest: opened for a replay
(settled, verified, resealed or refused) and kept after a recording (written with its
receipt as one unit, or left as it is)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from pytest_rollout import RolloutWarning
from pytest_rollout.format.files import SecretInFileError
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.replay.mode import Mode
from pytest_rollout.safety.redact import RedactionMode, Redactor
from pytest_rollout.store.golden import (
    GoldenEditedError,
    GoldenMissingError,
    UnrecordedToolsError,
)
from pytest_rollout.store.golden_store import GoldenStore, Kept
from pytest_rollout.store.receipt import ReceiptStatus, make_receipt, receipt_path, verify

TEST_ID = "tests/test_agent.py::test_weather"
REDACTOR = Redactor(environ={})


def run_bytes(answer: str = "Sunny.", *, call_tool: bool = True) -> bytes:
    """A run that asks for one tool call, recorded (or, ``call_tool=False``, never made)."""
    recorder = Recorder()
    recorder.emit("run.started", {"model": "m"})
    recorder.emit("llm.turn.started", {"messages": [{"role": "user", "content": "Weather?"}]})
    call = {"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}
    recorder.emit("llm.turn.completed", {"content": None, "tool_calls": [call]})
    if call_tool:
        recorder.emit("tool.call.started", {"call_id": "c1", "name": "get_weather", **call})
        recorder.emit("tool.call.completed", {"call_id": "c1", "name": "get_weather", "output": 1})
    recorder.emit("llm.turn.started", {"messages": []})
    recorder.emit("llm.turn.completed", {"content": answer, "tool_calls": []})
    recorder.emit("run.completed", {"outcome": "completed", "output": answer})
    return recorder.getvalue()


@pytest.fixture
def store(tmp_path: Path) -> GoldenStore:
    return GoldenStore(tmp_path / "golden", show=lambda p: p.name)


def kept(store: GoldenStore, data: bytes, name: str = "test_weather.jsonl") -> Path:
    path = store.golden_dir / "test_agent" / name
    assert store.keep(path, data, REDACTOR) is Kept.CREATED
    return path


def test_a_kept_run_opens_as_its_golden(store: GoldenStore) -> None:
    path = kept(store, run_bytes())
    golden = store.open(path, Mode.DRY, test_id=TEST_ID, redactor=REDACTOR)
    assert golden.error is None
    assert golden.require().events[-1].data["output"] == "Sunny."
    assert (golden.path, golden.shown, golden.resealed) == (path, "test_weather.jsonl", False)


def test_keeping_the_same_run_again_changes_nothing_and_another_updates(
    store: GoldenStore,
) -> None:
    path = kept(store, run_bytes())
    before = path.read_bytes(), receipt_path(path).read_bytes()
    assert store.keep(path, run_bytes(), REDACTOR) is Kept.UNCHANGED
    assert (path.read_bytes(), receipt_path(path).read_bytes()) == before
    assert store.keep(path, run_bytes("Rainy."), REDACTOR) is Kept.UPDATED
    assert verify(path).status is ReceiptStatus.OK


def test_a_missing_golden_opens_as_the_error_naming_the_record_command(
    store: GoldenStore,
) -> None:
    golden = store.open(
        store.golden_dir / "none.jsonl", Mode.DRY, test_id=TEST_ID, redactor=REDACTOR
    )
    with pytest.raises(GoldenMissingError) as caught:
        golden.require()
    assert str(caught.value) == (
        "no golden file for this test: none.jsonl does not exist. "
        f"Record it with: pytest --rollout-record {TEST_ID}"
    )


def test_an_edited_golden_is_refused_and_never_sealed(store: GoldenStore) -> None:
    path = kept(store, run_bytes())
    path.write_bytes(path.read_bytes().replace(b"Sunny.", b"Snowy."))
    receipt = receipt_path(path).read_bytes()
    golden = store.open(path, Mode.FULL, test_id=TEST_ID, redactor=REDACTOR)
    with pytest.raises(GoldenEditedError, match="does not match its receipt"):
        golden.require()
    assert receipt_path(path).read_bytes() == receipt


def test_an_accepted_edit_is_replayed_and_sealed_anew(tmp_path: Path) -> None:
    store = GoldenStore(tmp_path / "golden", accept_edits=True)
    path = kept(store, run_bytes())
    path.write_bytes(path.read_bytes().replace(b"Sunny.", b"Snowy."))
    golden = store.open(path, Mode.DRY, test_id=TEST_ID, redactor=REDACTOR)
    assert golden.resealed
    assert golden.require().events[-1].data["output"] == "Snowy."
    assert verify(path).status is ReceiptStatus.OK
    again = store.open(path, Mode.DRY, test_id=TEST_ID, redactor=REDACTOR)
    assert not again.resealed


def test_unrecorded_tool_calls_are_refused_in_dry_replay_only(store: GoldenStore) -> None:
    path = kept(store, run_bytes(call_tool=False))
    dry = store.open(path, Mode.DRY, test_id=TEST_ID, redactor=REDACTOR)
    with pytest.raises(UnrecordedToolsError, match="would run them live, so it stops here"):
        dry.require()
    full = store.open(path, Mode.FULL, test_id=TEST_ID, redactor=REDACTOR)
    assert full.error is None  # full replay answers tools from the golden: none runs live


def test_unrecorded_tool_calls_only_warn_when_told_to(tmp_path: Path) -> None:
    store = GoldenStore(tmp_path / "golden", fail_unrecorded=False)
    path = kept(store, run_bytes(call_tool=False))
    with pytest.warns(RolloutWarning, match="get_weather"):
        golden = store.open(path, Mode.DRY, test_id=TEST_ID, redactor=REDACTOR)
    assert golden.error is None


def test_a_write_interrupted_after_its_commit_point_is_finished_before_the_read(
    store: GoldenStore,
) -> None:
    path = kept(store, run_bytes())
    new = run_bytes("Rainy.")
    # The state a crash leaves between the receipt's rename and the golden's: the new
    # receipt in place, the new golden still in its (stale, unlocked) pending file.
    seal = make_receipt(new, redaction_mode="redacted", rules_sha256=REDACTOR.rules_digest)
    receipt_path(path).write_bytes(seal.to_bytes(path.name))
    (path.parent / f".{path.name}.0123abcd.tmp").write_bytes(new)
    golden = store.open(path, Mode.DRY, test_id=TEST_ID, redactor=REDACTOR)
    assert golden.require().events[-1].data["output"] == "Rainy."
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, f"{path.name}.receipt"]


def test_a_golden_named_by_path_is_read_but_never_written(
    store: GoldenStore, tmp_path: Path
) -> None:
    incident = tmp_path / "incidents" / "ticket-1.jsonl"
    incident.parent.mkdir()
    recorded = run_bytes()
    incident.write_bytes(recorded)
    incident_receipt = make_receipt(
        recorded, redaction_mode="redacted", rules_sha256=REDACTOR.rules_digest
    )
    receipt_path(incident).write_bytes(incident_receipt.to_bytes(incident.name))
    assert not store.owns(incident)
    golden = store.open(incident, Mode.DRY, test_id=TEST_ID, redactor=REDACTOR)
    assert golden.error is None
    assert store.keep(incident, run_bytes("Rainy."), REDACTOR) is Kept.NAMED
    assert incident.read_bytes() == recorded


def test_a_run_holding_a_secret_is_not_kept(store: GoldenStore) -> None:
    secret = "sk-proj-" + "Q" * 40
    path = store.golden_dir / "test_agent" / "test_weather.jsonl"
    with pytest.raises(SecretInFileError):
        store.keep(path, run_bytes(f"your key is {secret}"), REDACTOR)
    assert not path.exists()
    verbatim = Redactor(RedactionMode.FULL, environ={})
    assert store.keep(path, run_bytes(f"your key is {secret}"), verbatim) is Kept.CREATED


def test_only_a_replay_opens_a_golden(store: GoldenStore) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="dry or full mode, not record"):
            store.open(
                store.golden_dir / "x.jsonl", Mode.RECORD, test_id=TEST_ID, redactor=REDACTOR
            )
