"""The recorder and the redactor: secrets are replaced as events are encoded, and a file whose
bytes still hold one is never put in place (docs/secrets.md)."""

from __future__ import annotations

from pathlib import Path

from pytest_rollout.diff.canonical import canonical_bytes, canonicalize
from pytest_rollout.diff.compare import compare
from pytest_rollout.format.loader import load
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.safety.redact import RedactionMode, Redactor

KEY = "sk-proj-" + "Zq7Lm2Np4Rs6Tu8Vw0Xy1Ab3Cd5Ef7Gh9"
OTHER_KEY = "sk-proj-" + "Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk1"


def redactor(mode: RedactionMode = RedactionMode.REDACTED) -> Redactor:
    return Redactor(mode, environ={})


def run(rec: Recorder, secret: str = KEY) -> Recorder:
    rec.emit("run.started", {"prompt": "hi"})
    rec.emit("llm.turn.started", {"messages": [{"role": "user", "content": "hi"}]})
    rec.emit("tool.call.started", {"call_id": "c1", "name": "vault", "arguments": {}})
    rec.emit("tool.call.completed", {"call_id": "c1", "name": "vault", "output": secret})
    rec.emit("run.completed", {"outcome": "completed", "output": f"the key is {secret}"})
    rec.close()
    return rec


def test_secrets_are_replaced_as_they_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rec = run(Recorder(path, redactor=redactor()))
    data = path.read_bytes()
    assert data == rec.getvalue()
    assert KEY.encode() not in data
    events = load(path).events
    assert events[3].data["output"] == "[REDACTED:openai-key]"
    assert events[4].data["output"] == "the key is [REDACTED:openai-key]"
    assert rec.stats.dropped == 0


def test_mode_none_drops_the_event_and_redacts_the_terminal_one() -> None:
    rec = run(Recorder(redactor=redactor(RedactionMode.NONE)))
    events = rec.rollout().events
    assert [e.type for e in events] == [
        "run.started",
        "llm.turn.started",
        "tool.call.started",
        "recorder.drop_detected",
        "run.completed",
    ]
    assert events[3].data == {"step": 1, "dropped": 1}
    assert events[4].data["output"] == "the key is [REDACTED:openai-key]"
    assert rec.stats.withheld == 1
    assert rec.stats.dropped == 1


def test_hashed_secrets_compare_as_their_label() -> None:
    a = run(Recorder(redactor=redactor(RedactionMode.HASHED))).rollout()
    b = run(Recorder(redactor=redactor(RedactionMode.HASHED)), OTHER_KEY).rollout()
    assert a.events[3].data["output"] != b.events[3].data["output"]
    assert a.events[3].data["output"].startswith("[REDACTED:openai-key:sha256:")
    assert compare(a.events, b.events).identical
    assert canonicalize(a.events)[3].data["output"] == "[REDACTED:openai-key]"
    assert canonical_bytes(a.events[3].data) == canonical_bytes(b.events[3].data)


def test_other_labels_still_differ() -> None:
    assert canonical_bytes("[REDACTED:jwt:sha256:" + "0" * 64 + "]") != canonical_bytes(
        "[REDACTED:openai-key:sha256:" + "0" * 64 + "]"
    )


def test_a_file_holding_a_secret_the_payload_pass_missed_is_not_put_in_place(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"the previous run\n")
    rec = Recorder(path, flush_every=1, redactor=redactor())
    rec.emit("run.started", {})
    rec.emit(f"note.{KEY}", {})  # event types are not redacted: only the final scan sees it
    rec.emit("run.completed", {})
    rec.close()
    assert rec.stats.leaked == "openai-key"
    assert path.read_bytes() == b"the previous run\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.jsonl"]  # the partial file is gone
    assert len(rec.rollout().events) == 3  # the run in memory is unaffected


def test_verbatim_mode_writes_secrets_and_skips_the_final_scan(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    rec = run(Recorder(path, redactor=redactor(RedactionMode.FULL)))
    assert KEY.encode() in path.read_bytes()
    assert rec.stats.leaked is None


class Watched(Redactor):
    """The default redactor, keeping every piece of bytes its last look was asked about."""

    def __init__(self) -> None:
        super().__init__(environ={})
        self.looked: list[bytes] = []

    def scan(self, data: bytes | bytearray | memoryview) -> str | None:
        self.looked.append(bytes(data))
        return super().scan(data)


def tool_run(rec: Recorder, outputs: list[str]) -> Recorder:
    rec.emit("run.started", {"prompt": "hi"})
    rec.emit("llm.turn.started", {"messages": [{"role": "user", "content": "hi"}]})
    for output in outputs:
        rec.emit_payload("tool.call.completed", b'{"call_id":"c1","output":"%b"}' % output.encode())
    rec.emit("run.completed", {"outcome": "completed"})
    rec.close()
    return rec


def test_a_payload_the_gate_passes_is_looked_at_only_in_a_line_with_a_new_envelope(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    watched = Watched()
    outputs = ["sunny in Lyon", "rain in Oslo", "fog"]
    rec = tool_run(Recorder(path, redactor=watched, clock=lambda: 1_790_000_000 * 10**9), outputs)
    looked = b"".join(watched.looked)
    assert b"sunny in Lyon" in looked  # the first line of its type, for the type
    assert b"rain in Oslo" not in looked  # the same second, type and step
    assert b"fog" not in looked
    assert path.read_bytes() == rec.getvalue()
    assert rec.stats.leaked is None


def test_the_first_line_of_each_second_and_step_is_looked_at_whole(tmp_path: Path) -> None:
    seconds = iter([1, 1, 1, 2, 2, 2, 2, 2])
    watched = Watched()
    rec = Recorder(
        tmp_path / "run.jsonl", redactor=watched, clock=lambda: next(seconds) * 10**9 + 7
    )
    rec.emit("run.started", {"prompt": "hi"})
    rec.emit("llm.turn.started", {"n": 1})
    rec.emit_payload("tool.call.completed", b'{"output":"one"}')
    rec.emit_payload("tool.call.completed", b'{"output":"two, a new second"}')
    rec.emit_payload("tool.call.completed", b'{"output":"three"}')
    rec.emit("llm.turn.started", {"n": 2})
    rec.emit_payload("tool.call.completed", b'{"output":"four"}')
    rec.emit("run.completed", {})
    rec.close()
    looked = b"".join(watched.looked)
    assert b'"one"' in looked  # the first line of its type
    assert b"two, a new second" in looked
    assert b'{"n":2,"step":2}' in looked  # the first line of step 2
    assert b"three" not in looked
    assert b"four" not in looked


def test_a_payload_the_gate_does_not_pass_is_looked_at_whole(tmp_path: Path) -> None:
    class Blind(Redactor):
        """A redactor with a bug: it leaves the secrets in (its gate still works)."""

        def redact_payload(self, payload: bytes) -> bytes | None:
            return payload

    path = tmp_path / "run.jsonl"
    rec = tool_run(Recorder(path, redactor=Blind(environ={})), ["fine", f"the key {KEY}"])
    assert rec.stats.leaked == "openai-key"
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_redactor_that_cannot_vouch_for_a_payload_has_every_line_looked_at(
    tmp_path: Path,
) -> None:
    watched = Watched()

    class Plain:
        """A redactor with only what the recorder asks of every one (no gate)."""

        mode = "redacted"
        redact_payload = watched.redact_payload
        redact = watched.redact
        scan = watched.scan

    path = tmp_path / "run.jsonl"
    rec = tool_run(Recorder(path, redactor=Plain()), ["sunny in Lyon", "rain in Oslo", "fog"])
    assert b"".join(watched.looked) == rec.getvalue()
