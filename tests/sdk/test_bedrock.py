"""Amazon Bedrock (Converse, ConverseStream) recorded and replayed through ``rollout.bedrock()``:
the real boto3 client, botocore's event hooks, and a fake of the service on 127.0.0.1 that
gives fresh request ids, tool use ids and timestamps and answers after uneven delays."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Final

import orjson
import pytest

pytest.importorskip("boto3", reason="the Bedrock tests need boto3: pip install boto3")

from bedrock_agents import MODEL, SYSTEM, TOOLS, weather_agent
from fake_bedrock import Call, Fail, FakeBedrock, Say
from plugin_agent import IN_PROCESS, failure_sections
from sessions import new_session

from pytest_rollout import ReplayDivergenceError
from pytest_rollout.diff.divergence import DivergenceKind
from pytest_rollout.format.events import LLM_TURN_COMPLETED, LLM_TURN_STARTED
from pytest_rollout.format.loader import Rollout
from pytest_rollout.sdk.clients import MissingPackageError
from pytest_rollout.session import Mode, RolloutSession

QUESTION: Final = "Weather and time in Paris?"
ANSWER: Final = "Sunny in Paris, it is noon."
PARALLEL: Final = [
    [Call("get_weather", {"city": "Paris"}), Call("get_time", {"city": "Paris"})],
    Say(ANSWER),
]
#: Signing credentials of AWS's documentation: they must never reach a rollout.
ACCESS_KEY: Final = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY: Final = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
CREDENTIALS: Final = {"aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY}


def _run(session: RolloutSession, url: str, *, stream: bool = False, **options: Any) -> str:
    kwargs = {"endpoint_url": url, "region_name": "us-east-1"}
    if session.mode is not Mode.DRY:
        kwargs.update(CREDENTIALS)
    client = session.bedrock(**kwargs)
    tools = session.tools(dict(TOOLS))
    with session.run(prompt=QUESTION) as run:
        run.output = weather_agent(client, tools, QUESTION, stream=stream, **options)
    session.close()
    return str(run.output)


def _record(script: list[Any], *, stream: bool = False) -> tuple[Rollout, FakeBedrock]:
    with FakeBedrock(script) as fake:
        session = new_session(Mode.RECORD)
        assert _run(session, fake.url, stream=stream) == ANSWER
    assert fake.remaining == 0
    return session.recorder.rollout(), fake


def _rollout_bytes(rollout: Rollout) -> bytes:
    return b"\n".join(orjson.dumps(e.data) for e in rollout.events)


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse-stream"])
def test_a_recorded_run_replays_with_the_service_stopped(stream: bool) -> None:
    golden, fake = _record(PARALLEL, stream=stream)
    sent = len(fake.requests)
    assert all(h["Authorization"].startswith("AWS4-HMAC-SHA256") for _, h, _ in fake.requests)
    replay = new_session(Mode.DRY, golden)
    assert _run(replay, fake.url, stream=stream) == ANSWER
    assert len(fake.requests) == sent  # the fake is stopped, and nothing was sent to it
    verdict = replay.verdict()
    assert verdict.matched, verdict.divergences
    assert replay.engine.divergences() == []


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse-stream"])
def test_each_call_is_a_turn_with_parallel_tool_uses_usage_and_cost(stream: bool) -> None:
    golden, _ = _record(PARALLEL, stream=stream)
    events = golden.events
    first, last = (e.data for e in events if e.type == LLM_TURN_COMPLETED)
    assert [c["name"] for c in first["tool_calls"]] == ["get_weather", "get_time"]
    assert [c["arguments"] for c in first["tool_calls"]] == [{"city": "Paris"}] * 2
    assert all(c["id"].startswith("tooluse_") for c in first["tool_calls"])
    assert last["content"] == ANSWER
    for data in (first, last):
        assert data["usage"]["input_tokens"] > 0
        assert data["usage"]["output_tokens"] > 0
        expected = (
            data["usage"]["input_tokens"] * 1.00 + data["usage"]["output_tokens"] * 5.00
        ) / 1e6  # Claude Haiku 4.5's price, through its Bedrock inference profile id
        assert data["cost_usd"] == pytest.approx(expected)
        assert ("events" if stream else "json") in data["raw"]
    request = next(e for e in events if e.type == LLM_TURN_STARTED).data
    assert request["messages"][0] == {"role": "system", "content": [{"text": SYSTEM}]}
    assert request["messages"][1] == {"role": "user", "content": [{"text": QUESTION}]}
    assert [t["toolSpec"]["name"] for t in request["tools"]] == ["get_weather", "get_time"]
    assert request["params"]["model"] == MODEL
    assert request["params"].get("stream", False) is stream
    assert events[0].data["provider"] == "bedrock"
    assert events[0].data["model"] == MODEL
    # the signed request's headers and the credentials never reach the rollout
    recorded = _rollout_bytes(golden)
    for secret in (ACCESS_KEY.encode(), SECRET_KEY.encode(), b"AWS4-HMAC", b"X-Amz-Date"):
        assert secret not in recorded


def test_a_streamed_answer_is_recorded_as_its_events() -> None:
    golden, _ = _record(PARALLEL, stream=True)
    raw = next(e for e in golden.events if e.type == LLM_TURN_COMPLETED).data["raw"]
    assert raw["content_type"] == "application/vnd.amazon.eventstream"
    kinds = [event["headers"][":event-type"] for event in raw["events"]]
    assert kinds[0] == "messageStart"
    assert kinds[-2:] == ["messageStop", "metadata"]
    assert {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"city":'}}} in [
        event["data"] for event in raw["events"]
    ]


def test_a_tool_error_is_sent_back_as_an_error_result_and_replays() -> None:
    script = [Call("get_weather", {"city": "Atlantis"}), Say(ANSWER)]
    golden, fake = _record(script)
    result = fake.requests[1][2]["messages"][-1]["content"][0]["toolResult"]
    assert result["status"] == "error"
    assert result["content"] == [{"text": "no weather station in Atlantis"}]
    completed = next(e for e in golden.events if e.type == "tool.call.completed")
    assert completed.data["error"]["class"] == "UnknownCity"
    replay = new_session(Mode.DRY, golden)
    assert _run(replay, fake.url) == ANSWER
    assert replay.verdict().matched


def test_a_changed_system_prompt_is_a_prompt_mismatch_and_never_sent() -> None:
    golden, fake = _record(PARALLEL)
    sent = len(fake.requests)
    replay = new_session(Mode.DRY, golden)
    with pytest.raises(ReplayDivergenceError) as raised:
        _run(replay, fake.url, system="You are terse.")
    divergence = raised.value.divergence
    assert divergence.kind is DivergenceKind.PROMPT_MISMATCH
    assert divergence.attribution == "harness"
    assert divergence.step == 1
    assert divergence.detail == (
        "the request differs from the recorded one at messages[0].content[0].text: "
        'recorded "You are a weather assistant. Use the tools.", got "You are terse."'
    )
    assert len(fake.requests) == sent


def test_a_changed_model_id_is_a_prompt_mismatch_naming_the_model() -> None:
    golden, _ = _record(PARALLEL)
    replay = new_session(Mode.DRY, golden)
    with pytest.raises(ReplayDivergenceError) as raised:
        _run(replay, "http://127.0.0.1:9", model="amazon.nova-pro-v1:0")
    divergence = raised.value.divergence
    assert divergence.kind is DivergenceKind.PROMPT_MISMATCH
    assert "params.model" in divergence.detail
    assert "amazon.nova-pro-v1:0" in divergence.detail


def test_an_api_error_is_a_failed_turn_and_replays_as_the_same_exception() -> None:
    from botocore.exceptions import ClientError  # type: ignore[import-untyped]

    def agent(session: RolloutSession, url: str) -> str:
        kwargs = {"endpoint_url": url, "region_name": "us-east-1"}
        client = session.bedrock(**kwargs, **({} if session.mode is Mode.DRY else CREDENTIALS))
        with session.run(prompt=QUESTION) as run:
            try:
                weather_agent(client, {"get_time": TOOLS["get_time"]}, QUESTION)
            except ClientError as exc:
                run.output = exc.response["Error"]["Code"]
        session.close()
        return str(run.output)

    with FakeBedrock([Fail(400, "ValidationException", "The prompt is too long.")]) as fake:
        session = new_session(Mode.RECORD)
        assert agent(session, fake.url) == "ValidationException"
    golden = session.recorder.rollout()
    failed = next(e for e in golden.events if e.type == "llm.turn.failed").data
    assert failed["response"]["status"] == 400
    replay = new_session(Mode.DRY, golden)
    assert agent(replay, fake.url) == "ValidationException"
    assert replay.verdict().matched


def test_cache_tokens_are_parts_of_the_input_and_priced_at_cache_rates() -> None:
    from pytest_rollout.sdk.wire import BEDROCK_CONVERSE

    usage = {"inputTokens": 100, "outputTokens": 10, "cacheReadInputTokens": 1000}
    turn = BEDROCK_CONVERSE.turn(
        {"status": 200, "content_type": "application/json", "json": {"usage": usage}}
    )
    assert turn.usage == {"input_tokens": 1100, "output_tokens": 10, "cache_read_tokens": 1000}


def test_replay_needs_no_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    golden, _ = _record(PARALLEL)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    replay = new_session(Mode.DRY, golden)
    client = replay.bedrock()
    tools = replay.tools(dict(TOOLS))
    with replay.run(prompt=QUESTION) as run:
        run.output = weather_agent(client, tools, QUESTION)
    replay.close()
    assert run.output == ANSWER
    assert replay.verdict().matched


def test_a_missing_boto3_names_the_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "botocore.session", None)
    with pytest.raises(MissingPackageError, match=r"pip install boto3"):
        new_session(Mode.RECORD).bedrock()


# -- a user's suite: record, re-record, replay offline, and the four breaks ----------------

_USER_TESTS: Final = """
import os

import pytest
from bedrock_agents import TOOLS, weather_agent
from fake_bedrock import Call, FakeBedrock, Say

ANSWER = "Sunny in Paris, it is noon."
PARALLEL = [[Call("get_weather", {"city": "Paris"}), Call("get_time", {"city": "Paris"})],
            Say(ANSWER)]
LYON = [[Call("get_weather", {"city": "Lyon"}), Call("get_time", {"city": "Paris"})],
        Say(ANSWER)]
CREDENTIALS = {"aws_access_key_id": "AKIAIOSFODNN7EXAMPLE",
               "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}


def run(rollout, script, tools=TOOLS, live=False, **changes):
    fake = FakeBedrock(script)
    if live or not os.environ.get("MODEL_OFFLINE"):
        fake.start()
    try:
        client = rollout.bedrock(endpoint_url=fake.url or "http://127.0.0.1:9",
                                 region_name="us-east-1", **CREDENTIALS)
        wrapped = rollout.tools(dict(tools))
        with rollout.run(prompt="Weather?") as handle:
            handle.output = weather_agent(client, wrapped, "Weather?", **changes)
    finally:
        fake.stop()
    return handle.output


@pytest.mark.parametrize("stream", [False, True])
def test_parallel(rollout, golden, stream):
    assert run(rollout, PARALLEL, stream=stream) == ANSWER
    assert rollout == golden


def test_tool_error(rollout, golden):
    assert run(rollout, [Call("get_weather", {"city": "Atlantis"}), Say(ANSWER)]) == ANSWER
    assert rollout == golden


@pytest.mark.parametrize("change", [
    pytest.param("argument", marks=pytest.mark.rollout(mode="full")),
    "system", "dropped-tool", "model",
])
def test_break(rollout, golden, change):
    applied = "" if rollout.mode.value == "record" else change
    changes, tools = {}, TOOLS
    if applied == "system":
        changes["system"] = "You are a terse weather assistant."
    if applied == "model":
        changes["model"] = "amazon.nova-pro-v1:0"
    if applied == "dropped-tool":
        tools = {"get_weather": TOOLS["get_weather"]}
    script = LYON if applied == "argument" else PARALLEL
    run(rollout, script, tools, live=applied == "argument", **changes)
    assert rollout == golden
"""

BREAKS: Final = {
    "argument": ("tool_call_mismatch", "agent"),
    "system": ("prompt_mismatch", "harness"),
    "dropped-tool": ("setup_mismatch", "harness"),
    "model": ("setup_mismatch", "harness"),
}
_HEADLINE: Final = re.compile(r"left its golden at step (\d+): (\w+) \(attributed to ([^)]+)\)")


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_users_bedrock_suite_records_rerecords_identically_replays_and_breaks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = Path(__file__).parent.parent
    pytester.makepyfile(
        fake_models=(here / "fake_models.py").read_text(encoding="utf-8"),
        fake_bedrock=(here / "fake_bedrock.py").read_text(encoding="utf-8"),
        bedrock_agents=(here / "bedrock_agents.py").read_text(encoding="utf-8"),
        test_bedrock_agent=_USER_TESTS,
    )
    inner = (*IN_PROCESS, "-p", "no:cacheprovider", "-rA")
    pytester.runpytest_inprocess(*inner, "--rollout-record").assert_outcomes(passed=7)
    recorded = _tree(pytester.path / "golden")
    pytester.runpytest_inprocess(*inner, "--rollout-record").assert_outcomes(passed=7)
    assert recorded
    assert _tree(pytester.path / "golden") == recorded  # byte-identical
    monkeypatch.setenv("MODEL_OFFLINE", "1")
    replay = pytester.runpytest_inprocess(*inner)
    replay.assert_outcomes(passed=3, failed=4)
    sections = failure_sections(replay)
    for change, (kind, who) in BREAKS.items():
        report = "\n".join(sections[f"test_break[{change}]"])
        headline = _HEADLINE.search(report)
        assert headline is not None, report
        assert headline.group(2) == kind, report
        assert headline.group(3).startswith(f"the {who}"), report
        assert f"First divergence at step {headline.group(1)}" in report, report


# -- the wire, below the client ---------------------------------------------------------------


def test_converse_paths_name_the_api_and_the_model_percent_decoded() -> None:
    from pytest_rollout.sdk.wire import api_for

    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0"
    quoted = arn.replace(":", "%3A").replace("/", "%2F")
    api = api_for("POST", f"/model/{quoted}/converse-stream")
    assert api is not None
    assert api.name == "bedrock.converse_stream"
    request = api.request(b'{"messages": []}', f"/model/{quoted}/converse-stream")
    assert request.model == arn
    assert request.params == {"model": arn, "stream": True}
    assert api_for("POST", "/model/amazon.nova-pro-v1:0/invoke") is None


def test_tool_use_ids_in_a_request_do_not_change_its_key() -> None:
    from pytest_rollout.sdk.wire import key_messages

    def history(call_id: str) -> list[Any]:
        use = {"toolUseId": call_id, "name": "lookup", "input": {"toolUseId": "data"}}
        result = {"toolUseId": call_id, "content": [{"text": "ok"}], "status": "success"}
        return [
            {"role": "assistant", "content": [{"toolUse": use}]},
            {"role": "user", "content": [{"toolResult": result}]},
        ]

    first, second = key_messages(history("tooluse_aaa")), key_messages(history("tooluse_bbb"))
    assert first == second
    assert first[0]["content"][0]["toolUse"]["toolUseId"] == "id-1"
    assert first[0]["content"][0]["toolUse"]["input"] == {"toolUseId": "data"}  # data stays


def test_recorded_events_replay_as_bytes_botocore_reads_back() -> None:
    from fake_bedrock import event_message

    from pytest_rollout.sdk.aws_events import decode_events, encode_events

    body = event_message("messageStart", {"role": "assistant"}) + event_message(
        "messageStop", {"stopReason": "end_turn"}
    )
    events = decode_events(body)
    assert events is not None
    assert [e["data"] for e in events] == [{"role": "assistant"}, {"stopReason": "end_turn"}]
    assert decode_events(encode_events(events)) == events
    assert decode_events(body[:-1]) is None  # a stream cut short is not kept as events


# -- the documented test ------------------------------------------------------------------------

_DOCUMENTED: Final = re.compile(
    r"```python\n# test_bedrock_agent\.py \(boto3\)\n(.*?)```", re.DOTALL
)


def test_the_documented_bedrock_test_records_and_replays_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    page = (Path(__file__).parents[2] / "docs" / "sdk-agents.md").read_text(encoding="utf-8")
    found = _DOCUMENTED.search(page)
    assert found is not None
    pytester.makepyfile(test_bedrock_agent=found.group(1))
    args = (*IN_PROCESS, "-p", "no:cacheprovider")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    with FakeBedrock([Call("get_weather", {"city": "Paris"}), Say(ANSWER)]) as fake:
        # botocore's own setting for a service's endpoint: the page's client reaches the fake
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        pytester.runpytest_inprocess(*args, "--rollout-record").assert_outcomes(passed=1)
    assert fake.remaining == 0
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["1 golden(s) compared: 2/2 turns served, 1/1 tool calls matched, 0 diverged"]
    )
