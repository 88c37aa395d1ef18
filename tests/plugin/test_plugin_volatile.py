"""Volatile values in the plugin: what the user declares, turns off or keeps exact, per
session (ini keys), per test (the marker) and per folder (the ``pytest_rollout_volatile``
hook), and the decimal places floats are compared to (``rollout_float_digits``).

The agent here carries what changes from one day to the next the way real agents do, in
what it makes itself: its system prompt names the customer's order (``ORDER``) and a fresh
session uuid, and it reports the job it ran with a fresh uuid, the time it started and a
score. Its tool reports on the last order (``LAST_ORDER``, ``CREATED_AT``): in a replay the
tool's answer is the recorded one, so a new tool output is seen only by a re-record, whose
unchanged check renames as the comparison does. Every pass has a control beside it that
fails (or rewrites the golden) on the same value without the setting under test.
"""

from __future__ import annotations

import pytest
from plugin_agent import IN_PROCESS, failure_sections

from pytest_rollout.diff.canonical import CanonicalOptions
from pytest_rollout.plugin.flags import FLOAT_DIGITS

AGENT = """
import os
import uuid
from datetime import datetime, timezone

from pytest_rollout import ToolCall, Turn

USAGE = {"input_tokens": 12, "output_tokens": 3}


class OrderLLM:
    model = "scripted-1"

    def complete(self, messages, tools=None, **params):
        if not any(m["role"] == "tool" for m in messages):
            calls = [ToolCall("call_1", "get_order", {"which": "last"})]
            return Turn("Let me look.", calls, USAGE, 0.0001, self.model)
        return Turn("Your last order has shipped.", [], USAGE, 0.0001, self.model)


def get_order(which):
    return {
        "order_id": os.environ["LAST_ORDER"],
        "created_at": os.environ["CREATED_AT"],
        "status": "shipped",
    }


def ask(rollout):
    llm = rollout.provider(OrderLLM())
    tools = rollout.tools({"get_order": get_order})
    system = f"You help with order {os.environ['ORDER']}. Session {uuid.uuid4()}."
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": "Has my last order shipped?"},
    ]
    with rollout.run(prompt="Has my last order shipped?") as run:
        turn = llm.complete(messages, tools=["get_order"])
        messages.append({"role": "assistant", "content": turn.content})
        for call in turn.tool_calls:
            result = tools[call.name](**call.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        run.output = llm.complete(messages, tools=["get_order"]).content
        rollout.emit(
            "job",
            id=str(uuid.uuid4()),
            started_at=datetime.now(timezone.utc).isoformat(),
            score=float(os.environ["SCORE"]),
            at=int(os.environ.get("EPOCH", "0")),
        )
"""

TEST = """
import pytest
from orders import ask

{marker}
def test_order(rollout, golden):
    ask(rollout)
    assert rollout == golden
"""

ORDER_PATTERN = "order=ORD-[0-9]{6}"
ORDER_HOOK = """
def pytest_rollout_volatile(item):
    return [("order", "ORD-[0-9]{6}")]
"""


@pytest.fixture
def today(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The values the agent reads as they are on the day its golden is recorded."""
    monkeypatch.setenv("ORDER", "ORD-123456")
    monkeypatch.setenv("LAST_ORDER", "ORD-111111")
    monkeypatch.setenv("CREATED_AT", "2026-12-01T09:14:03Z")
    monkeypatch.setenv("SCORE", "0.12341")
    return monkeypatch


def project(pytester: pytest.Pytester, marker: str = "", conftest: str = "", ini: str = "") -> None:
    pytester.makepyfile(orders=AGENT, test_orders=TEST.format(marker=marker))
    if conftest:
        pytester.makeconftest(conftest)
    if ini:
        pytester.makeini("[pytest]\n" + ini)


def record(pytester: pytest.Pytester) -> pytest.RunResult:
    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record")
    result.assert_outcomes(passed=1)
    return result


def compare(pytester: pytest.Pytester) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-compare=golden/")


def said(result: pytest.RunResult, message: str) -> bool:
    """Whether a test's error is ``message``, word for word (patterns hold ``[`` and ``*``,
    which ``fnmatch_lines`` would read as its own)."""
    return f"E           pytest_rollout.RolloutError: {message}" in result.outlines


def report(result: pytest.RunResult) -> str:
    return "\n".join(failure_sections(result)["test_order"])


# -- declared patterns -------------------------------------------------------------------


@pytest.mark.parametrize(
    "declared",
    [
        pytest.param({"ini": f"rollout_volatile =\n    {ORDER_PATTERN}\n"}, id="ini"),
        pytest.param(
            {"marker": f"@pytest.mark.rollout(volatile=[{ORDER_PATTERN!r}])"}, id="marker"
        ),
        pytest.param({"conftest": ORDER_HOOK}, id="hook"),
    ],
)
def test_a_declared_pattern_renames_a_value_the_built_in_kinds_do_not_know(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch, declared: dict[str, str]
) -> None:
    project(pytester, **declared)
    record(pytester)
    today.setenv("ORDER", "ORD-654321")  # the next day's customer: another order

    compare(pytester).assert_outcomes(passed=1)


def test_without_a_declared_pattern_another_order_is_a_changed_prompt(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch
) -> None:
    project(pytester)
    record(pytester)
    today.setenv("ORDER", "ORD-654321")

    result = compare(pytester)

    result.assert_outcomes(failed=1)
    assert "prompt_mismatch" in report(result)
    assert "ORD-654321" in report(result)


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "control"])
def test_a_declared_pattern_keeps_a_re_recorded_tool_output_unchanged(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch, declared: bool
) -> None:
    project(pytester, ini=f"rollout_volatile =\n    {ORDER_PATTERN}\n" if declared else "")
    record(pytester)
    golden = (pytester.path / "golden/test_orders/test_order.jsonl").read_bytes()
    today.setenv("LAST_ORDER", "ORD-222222")  # the tool now reports another order

    result = record(pytester)

    if declared:
        result.stdout.fnmatch_lines(["*0 golden(s) written (0 created, 0 updated), 1 unchanged*"])
        assert (pytester.path / "golden/test_orders/test_order.jsonl").read_bytes() == golden
    else:
        result.stdout.fnmatch_lines(["*1 golden(s) written (0 created, 1 updated), 0 unchanged*"])


def test_the_hook_s_patterns_reach_only_the_tests_below_its_conftest(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch
) -> None:
    for folder, conftest in (("declared", ORDER_HOOK), ("plain", "")):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / "conftest.py").write_text(conftest, encoding="utf-8")
        (pytester.path / folder / f"test_{folder}.py").write_text(
            TEST.format(marker=""), encoding="utf-8"
        )
    pytester.makepyfile(orders=AGENT)
    pytester.syspathinsert()  # the agent, for the tests in the folders below
    pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record").assert_outcomes(passed=2)
    today.setenv("ORDER", "ORD-654321")

    result = compare(pytester)

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED plain/test_plain.py::test_order*"])


# -- the built-in kinds off, and exact paths ------------------------------------------------


@pytest.mark.parametrize("builtin", [True, False], ids=["default", "volatile-false"])
def test_volatile_false_compares_a_fresh_uuid_as_it_is(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch, builtin: bool
) -> None:
    project(pytester, marker="" if builtin else "@pytest.mark.rollout(volatile=False)")
    record(pytester)

    result = compare(pytester)  # a new session uuid in the prompt, a new job id and time

    if builtin:
        result.assert_outcomes(passed=1)
    else:
        result.assert_outcomes(failed=1)
        assert "prompt_mismatch" in report(result)


#: What the agent makes afresh on every run, declared by hand: its uuids and its clock.
FRESH_BY_HAND = (
    "id=[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}",
    "clock=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+[+]00:00",
)


@pytest.mark.parametrize("order", [True, False], ids=["order-declared", "control"])
def test_volatile_false_keeps_the_declared_patterns(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch, order: bool
) -> None:
    # The built-in kinds off, every fresh value declared by the ini key instead.
    lines = [*FRESH_BY_HAND, *([ORDER_PATTERN] if order else [])]
    ini = "rollout_volatile =\n" + "".join(f"    {line}\n" for line in lines)
    project(pytester, marker="@pytest.mark.rollout(volatile=False)", ini=ini)
    record(pytester)
    today.setenv("ORDER", "ORD-654321")

    result = compare(pytester)

    if order:
        result.assert_outcomes(passed=1)
    else:
        result.assert_outcomes(failed=1)
        assert "ORD-654321" in report(result)


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "control"])
def test_exact_keeps_a_timestamp_compared(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch, exact: bool
) -> None:
    marker = '@pytest.mark.rollout(exact=["job:started_at"])' if exact else ""
    project(pytester, marker=marker)
    record(pytester)

    result = compare(pytester)  # the job started at another time

    if exact:
        result.assert_outcomes(failed=1)
        assert "data.started_at" in report(result)
    else:
        result.assert_outcomes(passed=1)


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "control"])
def test_exact_keeps_a_tool_output_s_timestamp_compared_when_re_recording(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch, exact: bool
) -> None:
    marker = '@pytest.mark.rollout(exact=["tool.call.completed:output.created_at"])'
    project(pytester, marker=marker if exact else "")
    record(pytester)
    today.setenv("CREATED_AT", "2026-12-02T08:00:00Z")

    result = record(pytester)

    if exact:
        result.stdout.fnmatch_lines(["*1 golden(s) written (0 created, 1 updated), 0 unchanged*"])
    else:
        result.stdout.fnmatch_lines(["*0 golden(s) written (0 created, 0 updated), 1 unchanged*"])


# -- rollout_float_digits -----------------------------------------------------------------


@pytest.mark.parametrize("digits", ["", "3"], ids=["default", "three"])
def test_float_digits_sets_the_places_floats_are_compared_to(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch, digits: str
) -> None:
    project(pytester, ini=f"rollout_float_digits = {digits}\n" if digits else "")
    record(pytester)
    today.setenv("SCORE", "0.12342")  # the same to 3 places, not to 9

    result = compare(pytester)

    if digits:
        result.assert_outcomes(passed=1)
    else:
        result.assert_outcomes(failed=1)
        assert "data.score" in report(result)


def test_the_plugin_s_default_digits_are_the_library_s() -> None:
    assert CanonicalOptions().float_digits == FLOAT_DIGITS


# -- bad values: the session stops (ini keys), or the test errors (marker, hook) ----------


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        (
            "rollout_volatile =\n    order\n",
            "rollout_volatile: 'order' is not LABEL=REGEX or LABEL@PATH",
        ),
        (
            "rollout_volatile =\n    Order=ORD-[0-9]+\n",
            "rollout_volatile: label 'Order' must be a lowercase word "
            "(letters, digits and _, starting with a letter)",
        ),
        (
            "rollout_volatile =\n    order=ORD-(\n",
            "rollout_volatile: order=ORD-(: not a regular expression: "
            "missing ), unterminated subpattern at position 4",
        ),
        (
            "rollout_volatile =\n    order=[0-9]*\n",
            "rollout_volatile: order=[0-9]*: the pattern matches the empty string",
        ),
        (
            "rollout_float_digits = many\n",
            "rollout_float_digits must be a whole number of decimal places (0 or more), got 'many'",
        ),
        (
            "rollout_float_digits = -1\n",
            "rollout_float_digits must be a whole number of decimal places (0 or more), got '-1'",
        ),
    ],
)
def test_a_bad_ini_value_stops_the_session(
    pytester: pytest.Pytester, ini: str, message: str
) -> None:
    pytester.makeini("[pytest]\n" + ini)
    pytester.makepyfile(test_x="def test_x(): pass")

    result = pytester.runpytest_inprocess(*IN_PROCESS)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {message}" in result.errlines


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            '@pytest.mark.rollout(volatile=["order"])',
            "@pytest.mark.rollout(volatile=...): 'order' is not LABEL=REGEX or LABEL@PATH",
        ),
        (
            '@pytest.mark.rollout(volatile="order=(")',
            "@pytest.mark.rollout(volatile=...): order=(: not a regular expression: "
            "missing ), unterminated subpattern at position 0",
        ),
        (
            "@pytest.mark.rollout(volatile=3)",
            "@pytest.mark.rollout(volatile=...) must be False or a list of 'LABEL=REGEX' "
            "strings, got 3",
        ),
        (
            '@pytest.mark.rollout(exact=["job:"])',
            "@pytest.mark.rollout(exact=...): empty ignore path: 'job:'",
        ),
        (
            "@pytest.mark.rollout(exact=[1])",
            "@pytest.mark.rollout(exact=...) must be a list of [TYPE:]path strings, got [1]",
        ),
    ],
)
def test_a_bad_marker_value_is_an_error_of_its_test(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch, marker: str, message: str
) -> None:
    project(pytester, marker=marker)

    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record")

    result.assert_outcomes(errors=1)
    assert said(result, message)


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (
            '[("order", "ORD-(")]',
            "pytest_rollout_volatile: order=ORD-(: not a regular expression: "
            "missing ), unterminated subpattern at position 4",
        ),
        ('["order"]', "pytest_rollout_volatile: 'order' is not LABEL=REGEX or LABEL@PATH"),
        (
            '[("or=der", "ORD-[0-9]+")]',
            "pytest_rollout_volatile: label 'or=der' must be a lowercase word "
            "(letters, digits and _, starting with a letter)",
        ),
        (
            "[42]",
            "pytest_rollout_volatile: 42 is neither a 'LABEL=REGEX' string nor a "
            "(label, regex) pair",
        ),
    ],
)
def test_a_bad_pattern_from_the_hook_is_an_error_of_the_tests_it_reaches(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch, returned: str, message: str
) -> None:
    project(
        pytester, conftest=f"def pytest_rollout_volatile(config, item):\n    return {returned}\n"
    )

    result = pytester.runpytest_inprocess(*IN_PROCESS, "--rollout-record")

    result.assert_outcomes(errors=1)
    assert said(result, message)


# -- values found by their place -----------------------------------------------------------


@pytest.mark.parametrize("declared", [True, False], ids=["epoch-path", "control"])
def test_epoch_seconds_at_a_declared_path_are_renamed(
    pytester: pytest.Pytester, today: pytest.MonkeyPatch, declared: bool
) -> None:
    ini = "rollout_volatile =\n    epoch@job:at\n" if declared else ""
    project(pytester, ini=ini)
    today.setenv("EPOCH", "1733040000")
    record(pytester)
    today.setenv("EPOCH", "1733126400")

    result = compare(pytester)

    if declared:
        result.assert_outcomes(passed=1)
    else:
        result.assert_outcomes(failed=1)
        assert "data.at: 1733040000 -> 1733126400" in report(result)
