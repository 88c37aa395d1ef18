"""``rollout import otel``: traces made by pydantic-ai's own instrumentation become rollouts
that the strict loader and ``rollout check`` accept."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path
from typing import Any

import pytest
from fake_models import Call, Say
from fifo import beside_fifo
from otel_traces import pydantic_ai_trace

from pytest_rollout.cli.otel_commands import (
    add_export_parser,
    add_import_parser,
    export_otel,
    import_otel,
)
from pytest_rollout.diff.integrity import check
from pytest_rollout.errors import RolloutError, RolloutFileError, RolloutFormatError
from pytest_rollout.format.loader import Rollout, load
from pytest_rollout.otel import import_spans, read_spans, spans_from_bytes

PARALLEL = [[Call("get_weather", {"city": "Paris"}), Call("get_weather", {"city": "Oslo"})]]


def run_cli(*argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="rollout")
    commands = parser.add_subparsers(dest="command", required=True)
    add_import_parser(commands)
    add_export_parser(commands)
    args = parser.parse_args(argv)
    out = io.StringIO()
    handler = import_otel if args.command == "import" else export_otel
    return handler(args, out), out.getvalue()


def imported(tmp_path: Path, trace: bytes, *extra: str) -> tuple[Rollout, str]:
    source = tmp_path / "trace.jsonl"
    source.write_bytes(trace)
    target = tmp_path / "incidents" / "ticket-123.jsonl"
    status, out = run_cli("import", "otel", str(source), "-o", str(target), *extra)
    assert status == 0
    return load(target), out


def of_type(run: Rollout, event_type: str) -> list[dict[str, Any]]:
    return [e.data for e in run.events if e.type == event_type]


def test_a_pydantic_ai_trace_becomes_a_rollout_that_check_accepts(tmp_path: Path) -> None:
    run, out = imported(tmp_path, pydantic_ai_trace([*PARALLEL, Say("Sunny in both.")]))
    assert [e.type for e in run.events] == [
        "run.started",
        "llm.turn.started",
        "llm.turn.completed",
        "usage.delta",
        "tool.call.started",
        "tool.call.started",
        "tool.call.completed",
        "tool.call.completed",
        "llm.turn.started",
        "llm.turn.completed",
        "usage.delta",
        "run.completed",
    ]
    assert check(run.events).matched
    first = of_type(run, "llm.turn.started")[0]
    assert first["messages"] == [
        {"role": "system", "content": "You are a weather assistant. Use the tools."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert [t["name"] for t in first["tools"]] == ["get_weather"]
    turn = of_type(run, "llm.turn.completed")[0]
    assert [c["arguments"] for c in turn["tool_calls"]] == [{"city": "Paris"}, {"city": "Oslo"}]
    assert turn["cost_usd"] > 0  # priced from the table: gpt-4o-mini
    # The second request's new messages: the assistant's calls and both results.
    second = of_type(run, "llm.turn.started")[1]["messages"]
    assert [m["role"] for m in second] == ["assistant", "tool", "tool"]
    assert second[1]["content"] == {"city": "Paris", "sky": "sunny", "celsius": 21}
    assert of_type(run, "run.completed")[0]["output"] == "Sunny in both."
    assert out.startswith("imported trace ")


def test_a_tool_error_is_the_calls_recorded_error(tmp_path: Path) -> None:
    script = [[Call("get_weather", {"city": "Paris"}), Call("get_weather", {"city": "Atlantis"})]]
    run, _ = imported(tmp_path, pydantic_ai_trace(script))
    errors = [d.get("error") for d in of_type(run, "tool.call.completed")]
    assert {"class": "LookupError", "message": "no weather station for 'Atlantis'"} in errors
    assert run.events[-1].type == "run.failed"
    assert check(run.events).matched


def test_a_streamed_run_imports_like_a_plain_one(tmp_path: Path) -> None:
    run, _ = imported(tmp_path, pydantic_ai_trace([*PARALLEL, Say("Sunny.")], stream=True))
    assert of_type(run, "run.completed")[0]["output"] == "Sunny."
    assert len(of_type(run, "tool.call.completed")) == 2
    assert check(run.events).matched


@pytest.mark.filterwarnings("ignore:Instrumentation format versions")
def test_the_previous_attribute_names_are_read(tmp_path: Path) -> None:
    run, _ = imported(tmp_path, pydantic_ai_trace([*PARALLEL, Say("Sunny.")], version=2))
    assert [d["arguments"] for d in of_type(run, "tool.call.started")] == [
        {"city": "Paris"},
        {"city": "Oslo"},
    ]
    assert of_type(run, "tool.call.completed")[0]["output"]["sky"] == "sunny"


def test_missing_content_is_a_warning_naming_the_span_never_invented(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = pydantic_ai_trace([*PARALLEL, Say("Sunny.")], include_content=False)
    run, _ = imported(tmp_path, trace)
    warnings = capsys.readouterr().err.splitlines()
    assert any("span 'chat gpt-4o-mini'" in w and "not captured" in w for w in warnings)
    assert any("span 'execute_tool get_weather'" in w for w in warnings)
    # The prompt the trace did not carry is nowhere in the file (where a trace with content
    # puts it), not made up.
    assert b"Weather in Paris?" not in (tmp_path / "incidents" / "ticket-123.jsonl").read_bytes()
    with_content = tmp_path / "with-content"
    with_content.mkdir()
    imported(with_content, pydantic_ai_trace([*PARALLEL, Say("Sunny.")]))
    assert b"Weather in Paris?" in (with_content / "incidents" / "ticket-123.jsonl").read_bytes()
    assert all(d["arguments"] is None for d in of_type(run, "tool.call.started"))
    assert of_type(run, "run.completed")[0]["output"] is None
    assert check(run.events).matched


def test_the_latest_trace_is_chosen_and_the_others_listed(tmp_path: Path) -> None:
    early = pydantic_ai_trace([Say("First.")], "first?")
    late = pydantic_ai_trace([Say("Second.")], "second?")
    run, out = imported(tmp_path, early + late)
    assert of_type(run, "run.completed")[0]["output"] == "Second."
    first_id = spans_from_bytes(early)[0].trace_id
    assert f"  {first_id}\n" in out
    chosen, _ = imported(tmp_path, early + late, "--trace-id", first_id, "--force")
    assert of_type(chosen, "run.completed")[0]["output"] == "First."


def test_an_unknown_trace_id_is_one_clear_error(tmp_path: Path) -> None:
    spans = spans_from_bytes(pydantic_ai_trace([Say("Hi.")]))
    with pytest.raises(RolloutFileError, match=r"no trace '0+' in the file; it holds [0-9a-f]{32}"):
        import_spans(spans, "0" * 32, path="t.jsonl")


def test_secrets_are_redacted_on_the_way_in(tmp_path: Path) -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    run, _ = imported(tmp_path, pydantic_ai_trace([Say(f"Your key is {key}")]))
    raw = (tmp_path / "incidents" / "ticket-123.jsonl").read_text(encoding="utf-8")
    assert key not in raw
    assert "[REDACTED" in str(of_type(run, "run.completed")[0]["output"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_a_fifo_as_the_trace_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    refused = beside_fifo(fifo, lambda: read_spans(fifo))
    assert isinstance(refused, RolloutFormatError)
    assert str(refused) == f"{fifo}: is a FIFO, not a regular file"


def test_a_directory_as_the_trace_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RolloutFormatError) as info:
        read_spans(tmp_path)
    assert str(info.value) == f"{tmp_path}: is a directory, not a regular file"


def test_an_existing_golden_is_not_replaced_unless_forced(tmp_path: Path) -> None:
    first, _ = imported(tmp_path, pydantic_ai_trace([Say("Sunny.")]))
    target = tmp_path / "incidents" / "ticket-123.jsonl"
    receipt = target.with_name(target.name + ".receipt")
    before = (target.read_bytes(), receipt.read_bytes())
    source = tmp_path / "trace.jsonl"
    source.write_bytes(pydantic_ai_trace([Say("Cloudy.")]))
    with pytest.raises(RolloutError, match=r"exists: a golden and its receipt are not replaced"):
        run_cli("import", "otel", str(source), "-o", str(target))
    assert (target.read_bytes(), receipt.read_bytes()) == before
    status, _ = run_cli("import", "otel", str(source), "-o", str(target), "--force")
    assert status == 0
    assert load(target).events[-1].data["output"] != first.events[-1].data["output"]


def test_a_link_or_a_device_is_never_imported_through(tmp_path: Path) -> None:
    source = tmp_path / "trace.jsonl"
    source.write_bytes(pydantic_ai_trace([Say("Sunny.")]))
    kept = tmp_path / "kept.jsonl"
    kept.write_text("mine\n", encoding="utf-8")
    link = tmp_path / "link.jsonl"
    link.symlink_to(kept)
    for target in (link, Path(os.devnull)):
        with pytest.raises(RolloutError, match=r"is not a regular file: import to a file"):
            run_cli("import", "otel", str(source), "-o", str(target), "--force")
    assert kept.read_text(encoding="utf-8") == "mine\n"
    assert Path(os.devnull).is_char_device()
