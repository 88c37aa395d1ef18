"""``rollout.http_client(library=...)``: a framework that wants an ``httpx.Client`` (Agno, for
one) ignores an ``httpx2.Client`` and reaches the service on its own; handed the library it
wants, its model requests are recorded and replayed like any other."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import pytest
from fake_models import OPENAI_BASE_URL, OPENAI_CHAT, FakeModel, Say
from sessions import new_session

from pytest_rollout import RolloutError
from pytest_rollout.format.events import LLM_TURN_COMPLETED
from pytest_rollout.session import Mode

URL = f"{OPENAI_BASE_URL}/chat/completions"
REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def httpx_transport(fake: FakeModel) -> httpx.MockTransport:
    """The fake service behind an ``httpx`` transport (its handler reads what both
    libraries' requests have)."""

    def handle(request: httpx.Request) -> httpx.Response:
        answer: Any = fake.handler(request)  # type: ignore[arg-type]
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.read())

    return httpx.MockTransport(handle)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_client_of_the_library_asked_for_records_and_replays(asynchronous: bool) -> None:
    import asyncio

    async def post(http: Any) -> Any:
        async with http:
            return (await http.post(URL, json=REQUEST)).json()

    def exchange(session: Any, transport: Any) -> Any:
        build = session.async_http_client if asynchronous else session.http_client
        http: Any = build(library="httpx", transport=transport)
        assert type(http).__name__ == ("AsyncClient" if asynchronous else "Client")
        assert type(http).__module__.partition(".")[0] == "httpx"
        with session.run():
            if asynchronous:
                return asyncio.run(post(http))
            with http:
                return http.post(URL, json=REQUEST).json()

    session = new_session(Mode.RECORD)
    live = exchange(session, httpx_transport(FakeModel(OPENAI_CHAT, (Say("hello"),))))
    session.close()
    golden = session.recorder.rollout()
    [turn] = [e for e in golden.events if e.type == LLM_TURN_COMPLETED]
    assert turn.data["content"] == "hello"

    replay = new_session(Mode.DRY, golden)
    replayed = exchange(replay, None)
    replay.close()
    assert replay.engine.divergences() == []
    assert replayed["choices"][0]["message"] == live["choices"][0]["message"]


def test_an_unknown_library_or_a_transport_of_the_other_one_is_refused() -> None:
    session = new_session(Mode.RECORD)
    with pytest.raises(RolloutError, match=r"must be one of 'httpx2', 'httpx', got 'requests'"):
        session.http_client(library="requests")
    with pytest.raises(RolloutError, match=r"was given a httpx2 transport: pass a transport of"):
        session.http_client(
            library="httpx", transport=httpx2.MockTransport(lambda r: httpx2.Response(500))
        )


def test_without_a_library_the_transport_decides() -> None:
    session = new_session(Mode.RECORD)
    transport = httpx_transport(FakeModel(OPENAI_CHAT, (Say("hello"),)))
    assert type(session.http_client(transport=transport)) is httpx.Client
    assert type(session.http_client()) is httpx2.Client


def _sdk(name: str, library: Any) -> Any:
    """A stand-in for a model SDK whose own HTTP client class is of ``library``."""
    import types

    module = types.ModuleType(name)
    module.DefaultHttpxClient = type("_DefaultHttpxClient", (library.Client,), {})  # type: ignore[attr-defined]
    return module


@pytest.mark.parametrize(
    ("sdks", "expected"),
    [
        # The OpenAI SDK's 2.x line (what Strands, LlamaIndex and CrewAI pin) is on httpx.
        ({"openai": httpx}, httpx.Client),
        ({"openai": httpx, "anthropic": httpx}, httpx.Client),
        ({"openai": httpx2, "anthropic": httpx2}, httpx2.Client),
        # SDKs that disagree cannot tell: the current library.
        ({"openai": httpx, "anthropic": httpx2}, httpx2.Client),
    ],
)
def test_without_a_library_or_transport_the_loaded_sdks_decide(
    monkeypatch: pytest.MonkeyPatch, sdks: dict[str, Any], expected: type
) -> None:
    import sys

    for name in ("openai", "anthropic"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    for name, library in sdks.items():
        monkeypatch.setitem(sys.modules, name, _sdk(name, library))
    assert type(new_session(Mode.RECORD).http_client()) is expected
