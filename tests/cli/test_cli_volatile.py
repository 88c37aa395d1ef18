"""``rollout diff`` and volatile values: ``--volatile LABEL=REGEX`` renames more of them,
``--no-volatile`` compares the built-in kinds as they are, ``--float-digits N`` sets the
places floats are compared to; a bad value is refused in one line that names its flag."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from command import diff, write_lines

from pytest_rollout.cli import main

ORDER = "order=ORD-[0-9]{6}"


def write_run(path: Path, order: str, created_at: str, score: float) -> Path:
    """A run whose tool reports on an order: its id, when it was placed, and a score."""
    output: dict[str, Any] = {"order_id": order, "created_at": created_at, "score": score}
    events: list[tuple[str, dict[str, Any]]] = [
        ("run.started", {}),
        ("llm.turn.started", {"step": 1}),
        ("tool.call.completed", {"step": 1, "name": "get_order", "output": output}),
        ("run.completed", {"step": 1}),
    ]
    return write_lines(path, *events)


def divergence(out: str) -> str:
    """The report's line that names the first difference."""
    return next(line for line in out.splitlines() if line.startswith("Divergence: "))


@pytest.fixture
def today(tmp_path: Path) -> Path:
    return write_run(tmp_path / "today.jsonl", "ORD-123456", "2026-12-01T09:14:03Z", 0.12341)


def test_a_declared_pattern_renames_what_the_built_in_kinds_do_not_know(
    today: Path, tmp_path: Path
) -> None:
    other = write_run(tmp_path / "other.jsonl", "ORD-654321", "2026-12-02T10:00:00Z", 0.12341)

    code, out = diff(today, other)
    assert code == 1
    # The date is renamed by default: the order is what differs.
    assert divergence(out) == "Divergence: first difference in data.output.order_id"

    code, out = diff("--volatile", ORDER, today, other)
    assert code == 0, out
    assert out.startswith("B matches A\n")


def test_no_volatile_compares_dates_as_they_are(today: Path, tmp_path: Path) -> None:
    other = write_run(tmp_path / "other.jsonl", "ORD-654321", "2026-12-02T10:00:00Z", 0.12341)

    code, out = diff("--no-volatile", "--volatile", ORDER, today, other)

    # The declared pattern still applies; the date no longer is renamed.
    assert code == 1
    assert divergence(out) == "Divergence: first difference in data.output.created_at"


def test_relations_still_count_under_a_declared_pattern(today: Path, tmp_path: Path) -> None:
    def with_previous(name: str, previous: bytes) -> Path:
        data = today.read_bytes().replace(
            b'"created_at"', b'"previous":' + previous + b',"created_at"'
        )
        (tmp_path / name).write_bytes(data)
        return tmp_path / name

    # The reference's tool names its order twice; the run's names two orders: renamed,
    # they are still two where the reference has one.
    same = with_previous("same.jsonl", b'"ORD-123456"')
    other = with_previous("other.jsonl", b'"ORD-999999"')
    renamed = with_previous("renamed.jsonl", b'"ORD-123456"')
    renamed.write_bytes(renamed.read_bytes().replace(b"ORD-123456", b"ORD-555555"))

    assert diff("--volatile", ORDER, same, renamed)[0] == 0
    assert diff("--volatile", ORDER, same, other)[0] == 1


@pytest.mark.parametrize(("digits", "code"), [(None, 1), ("9", 1), ("4", 0), ("3", 0), ("5", 1)])
def test_float_digits_sets_the_places_floats_are_compared_to(
    today: Path, tmp_path: Path, digits: str | None, code: int
) -> None:
    other = write_run(tmp_path / "other.jsonl", "ORD-123456", "2026-12-01T09:14:03Z", 0.12342)
    flags = () if digits is None else ("--float-digits", digits)

    found, out = diff(*flags, today, other)

    assert found == code, out
    if code:
        assert divergence(out) == "Divergence: first difference in data.output.score"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--volatile", "order"], "--volatile: 'order' is not LABEL=REGEX or LABEL@PATH"),
        (
            ["--volatile", "=ORD-"],
            "--volatile: label '' must be a lowercase word "
            "(letters, digits and _, starting with a letter)",
        ),
        (
            ["--volatile", "Order=ORD-[0-9]+"],
            "--volatile: label 'Order' must be a lowercase word "
            "(letters, digits and _, starting with a letter)",
        ),
        (
            ["--volatile", "order=ORD-("],
            "--volatile: order=ORD-(: not a regular expression: "
            "missing ), unterminated subpattern at position 4",
        ),
        (
            ["--volatile", "order=[0-9]*"],
            "--volatile: order=[0-9]*: the pattern matches the empty string",
        ),
        (
            ["--float-digits", "-1"],
            "--float-digits takes a whole number of decimal places (0 or more); got '-1'",
        ),
        (
            ["--float-digits", "2.5"],
            "--float-digits takes a whole number of decimal places (0 or more); got '2.5'",
        ),
    ],
)
def test_a_bad_value_is_refused_in_one_line_naming_its_flag(
    today: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = diff(*argv, today, today)

    assert (code, out) == (2, "")
    assert capsys.readouterr().err == f"rollout diff: error: {message}\n"


def test_the_flags_are_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["diff", "--help"], out=io.StringIO())
    shown = " ".join(capsys.readouterr().out.split())
    assert "--volatile LABEL=REGEX also rename what REGEX matches" in shown
    assert "--no-volatile compare dates, timestamps, uuids and provider ids as they are" in shown
    assert "--float-digits N round floats to N decimal places before comparing (default 9)" in shown
