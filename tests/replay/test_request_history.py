"""A turn's request hash at the cost of its new messages (RequestHistory, the provider proxy
and the SDK exchange): the same digest as hashing the whole redacted request, every time."""

from __future__ import annotations

import string
from typing import Any

import orjson
from fake_models import OPENAI_BASE_URL, OPENAI_CHAT, Call, FakeModel, Say
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_rollout import Recorder, ToolCall, Turn
from pytest_rollout.format.events import LLM_TURN_STARTED
from pytest_rollout.replay.history import RequestHistory, request_hash
from pytest_rollout.safety.redact import Redactor
from pytest_rollout.sdk.wire import api_for, key_messages
from pytest_rollout.session import Mode, RolloutSession
from pytest_rollout.session.setup import RunSetup
from pytest_rollout.store.golden_store import LoadedGolden

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEY = "sk-proj-" + "Q7abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
ENV_SECRET = "envsecretvalue-42xyz"
REDACTORS = {
    "redacted": Redactor(environ={"SERVICE_TOKEN": ENV_SECRET}),
    "hashed": Redactor("hashed", environ={"SERVICE_TOKEN": ENV_SECRET}),
}
TOOLS = [{"name": "lookup", "parameters": {"type": "object"}}]

# -- messages with secrets, whole or split across two messages --------------------------

_TEXT = st.text(alphabet=string.ascii_letters + string.digits + " .:=-_[]", max_size=30)
_SECRETISH = st.sampled_from([KEY, ENV_SECRET, f"Bearer {KEY}", "password=hunter2hunter2"])


@st.composite
def _texts(draw: st.DrawFn) -> list[str]:
    """Texts, some holding a secret, some holding one half of a secret split in two."""
    out: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["plain", "secret", "split"]))
        if kind == "plain":
            out.append(draw(_TEXT))
        elif kind == "secret":
            out.append(draw(_TEXT) + draw(_SECRETISH) + draw(_TEXT))
        else:
            secret = draw(_SECRETISH)
            cut = draw(st.integers(1, len(secret) - 1))
            out += [draw(_TEXT) + secret[:cut], secret[cut:] + draw(_TEXT)]
    return out


def _message(text: str, kind: int) -> Any:
    if kind == 0:
        return text  # a bare string message
    if kind == 1:
        return {"role": "user", "content": text}
    if kind == 2:
        return {"role": "tool", "content": [{"type": "text", "text": text}], "n": 1.5}
    if kind == 3:
        return ["Authorization", text]  # a header pair inside a message
    return {"role": "assistant", "api_key": text, "tool_calls": [{"arguments": {"k": text}}]}


MESSAGES = st.builds(
    lambda texts, kinds: [_message(t, kinds[i % len(kinds)]) for i, t in enumerate(texts)],
    _texts(),
    st.lists(st.integers(0, 4), min_size=1, max_size=5),
)
#: A conversation: each request adds messages to the previous one, or starts anew.
CONVERSATIONS = st.lists(st.tuples(st.booleans(), MESSAGES), min_size=1, max_size=5)
PAIRS = st.sampled_from([["Authorization", f"Bearer {KEY}"], ["x-api-key", "abc12345"]])


def _whole(redactor: Redactor, messages: list[Any], tools: Any, params: dict[str, Any]) -> str:
    r = redactor.redact
    return request_hash(r(messages), r(tools), r(params))


@PROPERTY
@given(
    mode=st.sampled_from(sorted(REDACTORS)),
    conversation=CONVERSATIONS,
    pair=st.one_of(st.none(), PAIRS),
)
def test_the_running_hash_is_the_hash_of_the_whole_redacted_request(
    mode: str, conversation: list[tuple[bool, list[Any]]], pair: list[str] | None
) -> None:
    redactor = REDACTORS[mode]
    history = RequestHistory(redactor.redact)
    whole: list[Any] = []
    if pair is not None:  # a message list that is also a [name, value] header pair
        conversation = [(True, pair[:1]), (False, pair[1:]), *conversation]
    for number, (anew, added) in enumerate(conversation):
        start = 0 if anew else len(whole)
        whole = [*whole[:start], *added]
        params = {"model": "m", "secret": KEY} if number % 2 else {"model": "m"}
        request = history.request(start, added if start else whole, added, TOOLS, params)
        assert request.messages_hash == _whole(redactor, whole, TOOLS, params)


@PROPERTY
@given(mode=st.sampled_from(sorted(REDACTORS)), messages=MESSAGES)
def test_redacting_a_message_list_is_redacting_each_message(mode: str, messages: list[Any]) -> None:
    """What the running hash relies on: redaction works value by value, so a list is
    redacted item by item, except a list of two strings, which reads as a header pair."""
    redactor = REDACTORS[mode]
    if len(messages) == 2 and all(isinstance(m, str) for m in messages):
        return
    assert redactor.redact(messages) == [redactor.redact(m) for m in messages]


# -- the provider proxy ------------------------------------------------------------------


class _CountingRedactor(Redactor):
    """A redactor that remembers every value it was asked to redact."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        super().__init__(environ={"SERVICE_TOKEN": ENV_SECRET})
        self.seen: list[Any] = []

    def redact(self, value: Any) -> Any:
        self.seen.append(value)
        return super().redact(value)


class _Echo:
    """A live provider that asks for one tool call per turn, then answers."""

    model = "echo-1"

    def __init__(self, turns: int) -> None:
        self.left = turns

    def complete(self, messages: Any, tools: Any = None, **params: Any) -> Turn:
        self.left -= 1
        if self.left <= 0:
            return Turn("done")
        return Turn("calling", [ToolCall(f"c{self.left}", "lookup", {"q": self.left})])


def _session(redactor: Redactor | None = None) -> RolloutSession:
    return RolloutSession(
        RunSetup(test_id="t.py::test_agent"),
        Recorder(redactor=redactor or REDACTORS["redacted"]),
    )


def _started(session: RolloutSession) -> list[dict[str, Any]]:
    return [dict(e.data) for e in session.recorder.rollout().events if e.type == LLM_TURN_STARTED]


def test_each_turn_redacts_only_the_messages_it_adds() -> None:
    redactor = _CountingRedactor()
    session = _session(redactor)
    provider = session.provider(_Echo(12))
    messages: list[Any] = [{"role": "user", "content": f"hi {KEY}"}]
    with session.run():
        for turn_number in range(12):
            turn = provider.complete(messages, TOOLS, temperature=0)
            messages.append({"role": "assistant", "content": turn.content, "n": turn_number})
            messages.append({"role": "tool", "content": f"result {turn_number}"})
    session.close()
    whole_lists = [v for v in redactor.seen if isinstance(v, list) and len(v) > 2]
    assert whole_lists == []  # never the whole history
    redacted_messages = [v for v in redactor.seen if isinstance(v, dict) and "role" in v]
    assert len(redacted_messages) == len(messages) - 2  # each sent message, once
    started = _started(session)
    assert started[0]["messages"] == [{"role": "user", "content": "hi [REDACTED:openai-key]"}]
    assert [len(s["messages"]) for s in started[1:]] == [2] * 11


def test_a_history_rewritten_in_place_is_hashed_whole_again() -> None:
    session = _session()
    provider = session.provider(_Echo(4))
    redactor = REDACTORS["redacted"]
    messages: list[Any] = [{"role": "user", "content": "first"}]
    sent: list[list[Any]] = []
    with session.run():
        for step in range(4):
            if step == 2:
                messages[0]["content"] = f"edited {KEY}"  # an old message changed in place
            if step == 3:
                messages = [("a", "tuple"), {"role": "user", "content": {1, 2}}]
            sent.append(orjson.loads(orjson.dumps(messages, default=sorted)))
            provider.complete(messages, TOOLS, temperature=0)
            messages.append({"role": "assistant", "content": f"turn {step}"})
    session.close()
    started = _started(session)
    for request, event in zip(sent, started, strict=True):
        expected = _whole(redactor, request, TOOLS, {"temperature": 0})
        assert event["messages_hash"] == expected
    assert [len(s["messages"]) for s in started] == [1, 1, 3, 2]


def test_a_replayed_run_matches_its_recording_turn_by_turn() -> None:
    session = _session()
    provider = session.provider(_Echo(6))
    messages: list[Any] = [{"role": "user", "content": "go"}]

    def agent(p: Any) -> None:
        local = list(messages)
        for _ in range(6):
            turn = p.complete(local, TOOLS, temperature=0)
            local.append({"role": "assistant", "content": turn.content})

    with session.run():
        agent(provider)
    session.close()
    replay = RolloutSession(
        RunSetup(test_id="t.py::test_agent", mode=Mode.DRY),
        Recorder(redactor=REDACTORS["redacted"]),
        LoadedGolden.of(session.recorder.rollout(), "golden/t/test_agent.jsonl"),
    )
    with replay.run():
        agent(replay.provider())
    replay.close()
    assert replay.engine.divergences() == []
    assert [s["messages_hash"] for s in _started(replay)] == [
        s["messages_hash"] for s in _started(session)
    ]


# -- the SDK exchange --------------------------------------------------------------------


def test_an_sdk_turn_hashes_the_whole_keyed_conversation() -> None:
    script = [Call("lookup", {"q": i}) for i in range(4)] + [Say("done")]
    fake = FakeModel(OPENAI_CHAT, script)
    session = _session()
    client = session.openai(transport=fake.transport(), api_key="sk-test", base_url=OPENAI_BASE_URL)
    messages: list[Any] = [
        {"role": "system", "content": f"key {KEY}"},
        {"role": "user", "content": "go"},
    ]
    with session.run():
        for _ in range(len(script)):
            message = (
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=messages, tools=[], temperature=0
                )
                .choices[0]
                .message
            )
            if not message.tool_calls:
                break
            call = message.tool_calls[0]
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": "lookup", "arguments": call.function.arguments},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})
    session.close()
    api = api_for("POST", "/v1/chat/completions")
    assert api is not None
    redactor = REDACTORS["redacted"]
    started = _started(session)
    assert len(started) == len(fake.requests) == len(script)
    for body, event in zip(fake.requests, started, strict=True):
        request = api.request(orjson.dumps(body))
        keyed = key_messages(request.messages)
        assert event["messages_hash"] == _whole(redactor, keyed, request.tools, request.params)
