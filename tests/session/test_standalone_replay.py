"""A golden replayed outside pytest (docs/replay.md, "Replaying outside pytest"): the
``rollout`` object a test gets, opened, sealed and closed as the plugin does it, and the
verdict a failing test reports, in the same words."""

from __future__ import annotations

import contextlib
import importlib.util
import re
import shlex
import shutil
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import pytest
from fake_models import OPENAI_BASE_URL, OPENAI_CHAT, Call, FakeModel, Say
from plugin_agent import IN_PROCESS, WEATHER_TEST, record, write_project
from sdk_agents import AGENTS, get_weather
from sessions import new_session
from weather_agent import ScriptedModel, convert_temperature, run_agent
from weather_agent import get_weather as station

import pytest_rollout as package
from pytest_rollout import (
    GoldenEditedError,
    GoldenMissingError,
    Redactor,
    ReplayDivergenceError,
    RolloutError,
    RolloutNetworkError,
    RolloutSession,
    load,
    replay,
    verdict_text,
)
from pytest_rollout.session import Mode
from pytest_rollout.session.standalone import StandaloneReplay
from pytest_rollout.store.golden_store import GoldenStore, Kept
from pytest_rollout.store.replay_receipt import check_replay

ROOT: Final = Path(__file__).resolve().parents[2]
#: A golden of the bundled example agent, committed with its receipt.
LYON: Final = ROOT / "golden/tests/examples/test_example_agent/test_weather_agent[lyon].jsonl"
QUESTION: Final = "What is the weather in Lyon?"
TOOLS: Final[dict[str, Callable[..., Any]]] = {
    "get_weather": station,
    "convert_temperature": convert_temperature,
}


def weather_run(rollout: RolloutSession, live: Any = None) -> str:
    """The example agent's run, as its test writes it."""
    llm = rollout.provider(live)
    tools = rollout.tools(TOOLS)
    with rollout.run(prompt=QUESTION) as run:
        run.output = run_agent(llm, tools, QUESTION)
    return str(run.output)


@pytest.fixture
def lyon(tmp_path: Path) -> Path:
    """A copy of the committed Lyon golden and its receipt, free to edit."""
    target = tmp_path / "golden" / LYON.name
    target.parent.mkdir()
    shutil.copy(LYON, target)
    shutil.copy(f"{LYON}.receipt", f"{target}.receipt")
    return target


# -- the same object, the same verdict ---------------------------------------------------


def test_a_matching_dry_replay_gives_the_rollout_object_and_a_matching_verdict() -> None:
    with replay(LYON) as rollout:
        assert isinstance(rollout, RolloutSession)
        assert rollout.mode is Mode.DRY
        answer = weather_run(rollout)
    assert answer == "It is 21.0°C with sunny in Lyon."
    verdict = rollout.verdict()
    assert verdict.matched
    assert verdict.golden_path == str(LYON)
    assert verdict.report.outcome_diff == "identical"
    assert verdict.score.winner == "tie"
    assert verdict.report.cost_delta_usd == 0
    assert verdict_text(verdict) == "this run matches its golden"
    assert [c.arguments for c in rollout.tool_calls["get_weather"]] == [{"city": "Lyon"}]


def test_a_full_replay_runs_the_provider_live_and_answers_the_tools() -> None:
    model = ScriptedModel()
    with replay(LYON, mode="full") as rollout:
        weather_run(rollout, model)
    assert model.calls == 2  # live, both turns
    assert rollout.verdict().matched


def test_a_changed_agent_leaves_its_golden_and_the_text_names_the_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEATHER_AGENT_BUG", "lowercase-city")
    with replay(LYON) as rollout:  # its next request diverges too, and ends the block
        weather_run(rollout)
    verdict = rollout.verdict()
    assert not verdict.matched
    lines = verdict_text(verdict).splitlines()
    assert lines[0] == (
        "this run left its golden at step 1: tool_call_mismatch (attributed to the agent)"
    )
    assert lines[1] == f"Golden: {LYON}"
    assert 'Divergence: call #1 of step 1: recorded get_weather(city="Lyon"), ' in lines[2]
    assert any(line.startswith(f"  rollout fork {shlex.quote(str(LYON))} ") for line in lines)


def test_a_divergence_the_agent_did_not_catch_ends_the_block_and_the_verdict_says_it(
    lyon: Path,
) -> None:
    with replay(lyon) as rollout:
        llm = rollout.provider()
        tools = rollout.tools(TOOLS)
        with rollout.run(prompt=QUESTION):
            turn = llm.complete([{"role": "user", "content": "?"}])  # another prompt
            tools["get_weather"](**turn.tool_calls[0].arguments)
        raise AssertionError("not reached: the divergence ends the block")
    verdict = rollout.verdict()
    headline = verdict_text(verdict).splitlines()[0]
    assert headline.startswith("this run left its golden at step 1: prompt_mismatch (")
    assert rollout.events()[-1].type == "run.failed"


def interrupted_run(block: StandaloneReplay) -> None:
    """A run whose agent is interrupted (Ctrl-C) while it handles a divergence."""
    with block as rollout:
        llm = rollout.provider()
        with rollout.run(prompt=QUESTION):
            try:
                llm.complete([{"role": "user", "content": "?"}])
            except ReplayDivergenceError:
                raise KeyboardInterrupt  # noqa: B904  (its context is the divergence)


def test_an_interrupt_while_a_divergence_was_handled_still_propagates(lyon: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        interrupted_run(replay(lyon))


def test_an_exception_of_the_agent_s_own_still_propagates(lyon: Path) -> None:
    with pytest.raises(ZeroDivisionError), replay(lyon) as rollout, rollout.run(prompt=QUESTION):
        _ = 1 / 0
    assert rollout.events()[-1].type == "run.failed"


def test_the_run_is_saved_where_asked_and_the_report_names_it(
    lyon: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = tmp_path / "runs" / "lyon.jsonl"
    monkeypatch.setenv("WEATHER_AGENT_BUG", "lowercase-city")
    with replay(lyon, save=saved) as rollout:
        weather_run(rollout)
    events = load(saved).events
    assert [e.type for e in events] == [e.type for e in rollout.events()]
    assert events[0].data["test_id"] == "tests/test_example_agent.py::test_weather_agent[lyon]"
    lines = verdict_text(rollout.verdict()).splitlines()
    assert lines[-2:] == [
        "This run was saved; compare it with its golden:",
        f"  rollout diff {shlex.quote(str(lyon))} {saved}",
    ]


def test_a_saved_run_gets_a_replay_receipt_that_checks(lyon: Path, tmp_path: Path) -> None:
    saved = tmp_path / "runs" / "lyon.jsonl"
    with replay(lyon, save=saved) as rollout:
        weather_run(rollout)

    check = check_replay(saved)

    assert check.ok, check.problems
    assert check.record is not None
    assert check.record.verified
    assert check.record.identical
    assert (check.record.turns_served, check.record.turns_recorded) == (2, 2)


def test_unverified_replays_an_edited_golden_and_its_receipt_says_so(
    lyon: Path, tmp_path: Path
) -> None:
    receipt = Path(f"{lyon}.receipt").read_bytes()
    lyon.write_bytes(lyon.read_bytes().replace(b"Lyon", b"Lyom", 1))
    saved = tmp_path / "runs" / "lyon.jsonl"

    with replay(lyon, save=saved, unverified=True) as rollout:
        weather_run(rollout)

    assert rollout.verdict().unverified
    assert Path(f"{lyon}.receipt").read_bytes() == receipt  # nothing sealed
    check = check_replay(saved)
    assert check.ok, check.problems
    assert check.record is not None
    assert not check.record.verified


def test_ignore_leaves_a_field_out_of_the_comparison(lyon: Path) -> None:
    def answer_twice(rollout: RolloutSession) -> None:
        llm = rollout.provider()
        tools = rollout.tools(TOOLS)
        with rollout.run(prompt=QUESTION) as run:
            run.output = run_agent(llm, tools, QUESTION) * 2

    with replay(lyon, allow_unconsumed=True) as changed:
        answer_twice(changed)
    assert not changed.verdict().matched
    with replay(lyon, ignore=["run.completed:output"]) as ignored:
        answer_twice(ignored)
    assert ignored.verdict().matched


# -- refused goldens ------------------------------------------------------------------------


def test_a_missing_golden_is_refused_with_the_typed_error(tmp_path: Path) -> None:
    missing = tmp_path / "golden" / "nothing.jsonl"
    with pytest.raises(GoldenMissingError, match=r"nothing\.jsonl does not exist") as refused:
        replay(missing).__enter__()
    assert refused.value.path == str(missing)
    assert "pytest --rollout-record" in str(refused.value)


def test_an_edited_golden_is_refused_before_a_byte_is_replayed(lyon: Path) -> None:
    data = lyon.read_bytes()
    lyon.write_bytes(data.replace(b"Lyon", b"Lyom", 1))
    with pytest.raises(GoldenEditedError, match="does not match its receipt"), replay(lyon):
        raise AssertionError("not reached: an edited golden never opens")
    assert lyon.read_bytes() != data  # refused, never sealed anew


def test_a_golden_without_its_receipt_is_refused(lyon: Path) -> None:
    Path(f"{lyon}.receipt").unlink()
    with pytest.raises(GoldenEditedError, match="has no receipt"):
        replay(lyon, test_id="tests/test_x.py::test_lyon").__enter__()


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"mode": "record"}, r'replays in mode "dry" or "full", got mode=\'record\''),
        ({"network": "block"}, r'takes network= "loopback", "sealed", "open", got \'block\''),
        ({"volatile": ["no pattern"]}, r"volatile=: 'no pattern' is not LABEL=REGEX"),
        ({"ignore": ["data..x"]}, r"ignore=: malformed ignore path"),
        ({"redact": "clear"}, r"clear"),
    ],
)
def test_a_bad_keyword_is_refused_at_the_call(keywords: dict[str, Any], message: str) -> None:
    with pytest.raises(RolloutError, match=message):
        replay(LYON, **keywords)


def test_a_block_runs_once(lyon: Path) -> None:
    block = replay(lyon)
    with block as rollout:
        weather_run(rollout)
    with pytest.raises(RolloutError, match="runs its block once"):
        block.__enter__()


# -- the network in dry replay --------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A server on loopback that no test connection should reach unless let through."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.2)
        yield server


def _reach(server: socket.socket) -> None:
    port = server.getsockname()[1]
    socket.create_connection(("127.0.0.1", port), timeout=2).close()


def _reached(server: socket.socket) -> bool:
    try:
        connection, _ = server.accept()
    except TimeoutError:
        return False
    connection.close()
    return True


def swallowing_run(block: StandaloneReplay, server: socket.socket) -> None:
    """The agent's run, then a connection around pytest-rollout (a client built by hand)
    whose error the agent swallows."""
    with block as rollout:
        weather_run(rollout)
        with contextlib.suppress(RolloutNetworkError):
            _reach(server)


def test_a_connection_the_agent_swallowed_still_fails_the_replay(
    lyon: Path, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    block = replay(lyon, network="sealed")
    with pytest.raises(RolloutNetworkError, match=rf"reached 127\.0\.0\.1:{port} outside"):
        swallowing_run(block, listener)
    rollout = block.session
    assert rollout is not None
    assert not _reached(listener)
    assert rollout.verdict().matched  # the run itself is still there to read
    assert len(rollout.network_breaches) == 1


def test_a_refused_connection_that_propagates_is_raised_as_it_is(
    lyon: Path, listener: socket.socket
) -> None:
    with pytest.raises(RolloutNetworkError) as refused, replay(lyon, network="sealed") as rollout:
        _reach(listener)
    assert refused.value is rollout.network_breaches[0]
    assert not _reached(listener)


def test_loopback_goes_through_by_default_and_the_seal_ends_with_the_block(
    lyon: Path, listener: socket.socket
) -> None:
    with replay(lyon) as rollout:
        _reach(listener)
        weather_run(rollout)
    assert _reached(listener)
    assert rollout.verdict().matched
    with replay(lyon, network="sealed") as sealed:
        weather_run(sealed)
    _reach(listener)  # the block is over: the socket layer is as it was
    assert _reached(listener)


def test_a_full_replay_is_not_sealed(lyon: Path, listener: socket.socket) -> None:
    with replay(lyon, mode="full", network="sealed") as rollout:
        _reach(listener)
        weather_run(rollout, ScriptedModel())
    assert _reached(listener)
    assert rollout.verdict().matched


# -- an OpenAI SDK agent --------------------------------------------------------------------

PROMPT: Final = "What is the weather in Paris?"
SCRIPT: Final = (Call("get_weather", {"city": "Paris"}), Say("It is sunny in Paris."))


@pytest.fixture
def sdk_golden(tmp_path: Path) -> Path:
    """A golden of the Chat Completions agent, recorded from the fake service and kept as
    the plugin keeps one (with its receipt)."""
    session = new_session(Mode.RECORD)
    sdk_run(session, transport=FakeModel(OPENAI_CHAT, SCRIPT).transport())
    path = tmp_path / "golden" / "test_sdk_agent.jsonl"
    store = GoldenStore(path.parent)
    assert store.keep(path, session.recorder.getvalue(), Redactor()) is Kept.CREATED
    return path


def sdk_run(rollout: RolloutSession, transport: Any = None) -> str:
    _, agent, _ = AGENTS[OPENAI_CHAT]
    client = rollout.openai(transport=transport, api_key="sk-test", base_url=OPENAI_BASE_URL)
    tools = rollout.tools({"get_weather": get_weather})
    with rollout.run(prompt=PROMPT) as run:
        run.output = agent(client, PROMPT, tools)
    return str(run.output)


def test_an_openai_sdk_agent_replays_dry_without_a_live_transport(sdk_golden: Path) -> None:
    with replay(sdk_golden) as rollout:
        answer = sdk_run(rollout)  # the SDK's default transport: the seal would refuse it
    assert answer == "It is sunny in Paris."
    assert not rollout.network_breaches
    assert rollout.verdict().matched


def test_an_openai_sdk_agent_replays_full_against_the_live_service(sdk_golden: Path) -> None:
    fake = FakeModel(OPENAI_CHAT, SCRIPT)
    with replay(sdk_golden, mode="full") as rollout:
        sdk_run(rollout, transport=fake.transport())
    assert fake.remaining == 0
    assert rollout.verdict().matched


def test_an_openai_sdk_agent_that_changed_its_prompt_diverges(sdk_golden: Path) -> None:
    _, agent, _ = AGENTS[OPENAI_CHAT]
    with replay(sdk_golden) as rollout:
        client = rollout.openai(api_key="sk-test", base_url=OPENAI_BASE_URL)
        tools = rollout.tools({"get_weather": get_weather})
        with rollout.run(prompt=PROMPT):
            agent(client, "What is the weather in Oslo?", tools)
    first = verdict_text(rollout.verdict()).splitlines()[0]
    assert first.startswith("this run left its golden at step 1: prompt_mismatch (")


# -- the public name ------------------------------------------------------------------------


def test_the_public_name_stays_the_function_beside_the_subpackage_of_that_name() -> None:
    import pytest_rollout.replay.seal  # noqa: F401  (binds the subpackage on the package)

    assert "replay" in package.__all__
    assert package.replay is replay
    seal = package.replay.seal  # type: ignore[attr-defined]  # typed as the function
    assert seal is sys.modules["pytest_rollout.replay.seal"]  # its modules, through it
    with pytest.raises(RolloutError, match="replays in mode"):
        package.replay(LYON, mode="live")  # type: ignore[arg-type]  # refused, not typed


# -- the text is the failing test's ----------------------------------------------------------


def _literal(line: str) -> str:
    return "".join(f"[{c}]" if c in "[]*?" else c for c in line)


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("standalone_replay_agent", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_verdict_reads_as_the_failing_test_s_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester, test_weather=WEATHER_TEST)
    record(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("AGENT_CHANGE", "argument")
    failed = pytester.runpytest_inprocess(*IN_PROCESS)
    failed.assert_outcomes(failed=1)

    agent = _module(pytester.path / "agent.py")
    question = "What is the weather in Paris?"
    golden = "golden/test_weather/test_weather.jsonl"
    saved = ".pytest_cache/d/rollout/runs/test_weather/test_weather.jsonl"  # as pytest's
    with replay(golden, save=saved) as rollout:
        llm = rollout.provider(agent.ScriptedLLM())
        tools = rollout.tools(agent.TOOLS)
        with rollout.run(prompt=question):
            agent.agent(llm, tools, question, "argument")  # raises: the block ends there
    lines = verdict_text(rollout.verdict()).splitlines()
    assert lines[0].startswith("this run left its golden at step 1: tool_call_mismatch")
    assert len(lines) > 20
    failed.stdout.fnmatch_lines(["*_ test_weather _*", *map(_literal, lines)], consecutive=True)


# -- the documented example -----------------------------------------------------------------

_BLOCK: Final = re.compile(r"## Replaying outside pytest\n.*?```python\n(.*?)```", re.DOTALL)


def test_the_documented_example_runs_as_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = (ROOT / "docs" / "replay.md").read_text(encoding="utf-8")
    found = _BLOCK.search(page)
    assert found is not None
    monkeypatch.chdir(ROOT)  # "run from the repository's root"
    exec(compile(found.group(1), "docs/replay.md", "exec"), {})
    assert capsys.readouterr().out == "True\nthis run matches its golden\n"
