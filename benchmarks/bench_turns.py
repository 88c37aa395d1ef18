"""Benchmark of a replayed model turn late in a long run (docs/performance.md).

A seeded 60-turn agent sends its whole history with every request (a system prompt, the
user's question, then per turn the model's answer with a tool call and the tool's result,
a few KB each; five tool schemas), the way real agents do. It is recorded once, then
replayed in dry replay, several times, through two paths:

* **provider**: ``rollout.provider()`` serving the golden's turns (what a test with a
  provider class does); a turn is the time of one ``provider.complete(...)`` call;
* **sdk**: an ``openai.OpenAI`` client built by ``rollout.openai()`` on the fake service of
  the test suite (``tests/fake_models.py``); a turn is the time spent in pytest-rollout's
  transport (the request matched and answered from the golden) plus the recording of the
  turn when the SDK has read the answer. The SDK's own work (building the request, parsing
  the answer) is printed beside it and has no target.

For each path it prints the median turn of turns 1-10 and of turns 51-60, and the median
of the floor of turns 51-60: hashing the whole request once
(``sha256(orjson.dumps(request, OPT_SORT_KEYS))``), measured right before each turn in the
same run. Targets: turns 51-60 <= 1.5x turns 1-10, and <= 3x their floor. Runs of the two
paths alternate; medians are over every repeat. Exits 1 when a target is missed.

    python benchmarks/bench_turns.py                 # 60 turns, 7 repeats: ~15 seconds
    python benchmarks/bench_turns.py --repeat 15     # steadier figures on a busy machine
    python benchmarks/bench_turns.py --quick         # smoke run (1 repeat), no verdict
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_models import OPENAI_BASE_URL, OPENAI_CHAT, Call, FakeModel, Say

import pytest_rollout
from pytest_rollout import Recorder, ToolCall, Turn
from pytest_rollout.format.loader import Rollout
from pytest_rollout.safety.redact import Redactor
from pytest_rollout.session import Mode, RolloutSession
from pytest_rollout.session.setup import RunSetup
from pytest_rollout.store.golden_store import LoadedGolden

SEED = 20260701
TURNS = 60
WINDOW = 10
TARGET_GROWTH = 1.5
TARGET_FLOOR = 3.0
MODEL = "gpt-4o-mini"
PARAMS: dict[str, Any] = {"model": MODEL, "temperature": 0.2, "max_tokens": 1024}

# -- a realistic conversation -----------------------------------------------------------

_PHRASE = (
    "the agent reads the quarterly report and compares revenue growth with the forecast "
    "before it drafts a summary for the finance team including churn margins regional "
    "figures open questions risks and the next steps agreed in the planning meeting while "
    "the tool returns rows of orders customers invoices totals and notes from the archive"
)
_WORDS = _PHRASE.split()

_TOOL_NAMES = ("search_docs", "run_query", "read_file", "fetch_url", "send_summary")


def _schema(name: str, properties: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ').capitalize()}: " + " ".join(_WORDS[:24]),
            "parameters": {
                "type": "object",
                "properties": {
                    key: {"type": kind, "description": f"The {key} to use."}
                    for key, kind in properties.items()
                },
                "required": list(properties),
            },
        },
    }


TOOLS: list[dict[str, Any]] = [
    _schema("search_docs", {"query": "string", "limit": "integer", "ref": "string"}),
    _schema("run_query", {"sql": "string", "database": "string", "ref": "string"}),
    _schema("read_file", {"path": "string", "max_bytes": "integer", "ref": "string"}),
    _schema("fetch_url", {"url": "string", "timeout_s": "number", "ref": "string"}),
    _schema("send_summary", {"to": "string", "body": "string", "ref": "string"}),
]


def _text(rng: random.Random, low: int, high: int) -> str:
    size = rng.randint(low, high)
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words).capitalize() + "."


@dataclass(frozen=True)
class Step:
    """One turn of the agent: what the model says, the tool it calls, what the tool says."""

    content: str
    tool: str
    arguments: dict[str, Any]
    result: str


@dataclass(frozen=True)
class Conversation:
    system: str
    user: str
    steps: tuple[Step, ...]  # every turn but the last calls a tool
    answer: str
    results: dict[str, str] = field(default_factory=dict)  # tool result by "ref"


def conversation(turns: int, seed: int = SEED) -> Conversation:
    rng = random.Random(seed)
    steps = []
    for number in range(1, turns):
        tool = rng.choice(_TOOL_NAMES)
        arguments = {"query": _text(rng, 40, 120), "limit": rng.randint(3, 20), "ref": f"r{number}"}
        rows = [
            {"id": rng.randint(1, 99_999), "note": _text(rng, 60, 160), "total": rng.random()}
            for _ in range(rng.randint(8, 16))
        ]
        steps.append(Step(_text(rng, 200, 600), tool, arguments, json.dumps(rows)))
    results = {s.arguments["ref"]: s.result for s in steps}
    return Conversation(
        _text(rng, 2500, 3500), _text(rng, 200, 400), tuple(steps), _text(rng, 300, 600), results
    )


def request_floor(request: dict[str, Any]) -> float:
    """Seconds to hash the whole request once: the floor of a turn."""
    t0 = time.perf_counter()
    hashlib.sha256(orjson.dumps(request, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return time.perf_counter() - t0


@dataclass
class Timings:
    """Seconds per turn, by turn number (1-based), over every repeat."""

    turns: dict[int, list[float]] = field(default_factory=dict)
    floors: dict[int, list[float]] = field(default_factory=dict)
    outside: dict[int, list[float]] = field(default_factory=dict)  # the SDK's own work

    def add(self, table: dict[int, list[float]], number: int, seconds: float) -> None:
        table.setdefault(number, []).append(seconds)

    def median(self, table: dict[int, list[float]], first: int, last: int) -> float:
        values = [v for n in range(first, last + 1) for v in table.get(n, [])]
        return statistics.median(values) if values else float("nan")


def _session(mode: Mode, golden: Rollout | None = None) -> RolloutSession:
    return RolloutSession(
        RunSetup(test_id="bench_turns.py::test_agent", mode=mode),
        Recorder(redactor=Redactor(environ={})),
        None if golden is None else LoadedGolden.of(golden, "golden/bench_turns/test_agent.jsonl"),
    )


def _tool_functions(conv: Conversation) -> dict[str, Callable[..., Any]]:
    def tool(**arguments: Any) -> str:
        return conv.results[str(arguments["ref"])]

    return dict.fromkeys(_TOOL_NAMES, tool)


# -- the provider path ------------------------------------------------------------------


class ScriptedProvider:
    """The live model of the recording: answers the conversation's turns in order."""

    model = MODEL

    def __init__(self, conv: Conversation) -> None:
        self._turns: Iterator[Turn] = iter(
            [
                *(
                    Turn(s.content, [ToolCall(f"call_{i}", s.tool, s.arguments)])
                    for i, s in enumerate(conv.steps)
                ),
                Turn(conv.answer),
            ]
        )

    def complete(self, messages: Any, tools: Any = None, **params: Any) -> Turn:
        return next(self._turns)


def provider_agent(session: RolloutSession, conv: Conversation, live: Any, timings: Timings) -> str:
    """The agent: send the whole history each turn; time each turn and its floor."""
    provider = session.provider(live)
    tools = session.tools(_tool_functions(conv))
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": conv.system},
        {"role": "user", "content": conv.user},
    ]
    with session.run(prompt=conv.user) as run:
        for number in range(1, len(conv.steps) + 2):
            request = {"messages": messages, "tools": TOOLS, "params": PARAMS}
            timings.add(timings.floors, number, request_floor(request))
            t0 = time.perf_counter()
            turn = provider.complete(messages, TOOLS, **PARAMS)
            timings.add(timings.turns, number, time.perf_counter() - t0)
            if not turn.tool_calls:
                run.output = turn.content
                break
            calls = [c.to_json_obj() for c in turn.tool_calls]
            messages.append({"role": "assistant", "content": turn.content, "tool_calls": calls})
            for c in turn.tool_calls:
                result = tools[c.name](**c.arguments)
                messages.append({"role": "tool", "tool_call_id": c.id, "content": result})
    session.close()
    return str(run.output)


def record_provider(conv: Conversation) -> Rollout:
    session = _session(Mode.RECORD)
    provider_agent(session, conv, ScriptedProvider(conv), Timings())
    return session.recorder.rollout()


def replay_provider(conv: Conversation, golden: Rollout, timings: Timings) -> None:
    session = _session(Mode.DRY, golden)
    assert provider_agent(session, conv, None, timings) == conv.answer
    verdict = session.verdict()
    assert verdict.matched, verdict.divergences


# -- the SDK path -----------------------------------------------------------------------


def _our_transport(client: Any) -> Any:
    """The rollout transport under an ``openai.OpenAI`` client built by ``rollout.openai()``."""
    return client._client._transport  # the SDK's httpx client, then its transport


class _SdkClock:
    """Times what pytest-rollout does for a request: its transport, and the recording of
    the turn once the SDK has read the answer."""

    def __init__(self, session: RolloutSession, client: Any) -> None:
        self.spent = 0.0
        transport = _our_transport(client)
        handle = transport.handle_request
        engine = session.engine
        complete = engine.record_turn  # what the SDK port calls once the answer is read

        def timed_handle(request: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return handle(request)
            finally:
                self.spent += time.perf_counter() - t0

        def timed_complete(*args: Any, **kwargs: Any) -> None:
            t0 = time.perf_counter()
            try:
                complete(*args, **kwargs)
            finally:
                self.spent += time.perf_counter() - t0

        transport.handle_request = timed_handle
        engine.record_turn = timed_complete  # type: ignore[method-assign]

    def take(self) -> float:
        spent, self.spent = self.spent, 0.0
        return spent


def sdk_agent(session: RolloutSession, conv: Conversation, live: Any, timings: Timings) -> str:
    client = session.openai(transport=live, api_key="sk-test", base_url=OPENAI_BASE_URL)
    clock = _SdkClock(session, client)
    tools = session.tools(_tool_functions(conv))
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": conv.system},
        {"role": "user", "content": conv.user},
    ]
    extra = {k: v for k, v in PARAMS.items() if k != "model"}
    with session.run(prompt=conv.user) as run:
        for number in range(1, len(conv.steps) + 2):
            request = {"model": MODEL, "messages": messages, "tools": TOOLS, **extra}
            timings.add(timings.floors, number, request_floor(request))
            t0 = time.perf_counter()
            message = client.chat.completions.create(**request).choices[0].message
            whole = time.perf_counter() - t0
            ours = clock.take()
            timings.add(timings.turns, number, ours)
            timings.add(timings.outside, number, whole - ours)
            if not message.tool_calls:
                run.output = message.content
                break
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in message.tool_calls
            ]
            messages.append({"role": "assistant", "content": message.content, "tool_calls": calls})
            for c in message.tool_calls:
                result = tools[c.function.name](**json.loads(c.function.arguments))
                messages.append({"role": "tool", "tool_call_id": c.id, "content": result})
    session.close()
    return str(run.output)


def record_sdk(conv: Conversation) -> Rollout:
    script: list[Any] = [[Say(s.content), Call(s.tool, s.arguments)] for s in conv.steps]
    fake = FakeModel(OPENAI_CHAT, [*script, Say(conv.answer)])
    session = _session(Mode.RECORD)
    sdk_agent(session, conv, fake.transport(), Timings())
    assert fake.remaining == 0
    return session.recorder.rollout()


def replay_sdk(conv: Conversation, golden: Rollout, timings: Timings) -> None:
    session = _session(Mode.DRY, golden)
    offline = FakeModel.offline(OPENAI_CHAT).transport()
    assert sdk_agent(session, conv, offline, timings) == conv.answer
    verdict = session.verdict()
    assert verdict.matched, verdict.divergences


# -- the report ---------------------------------------------------------------------------


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:8.1f} us"


def report(name: str, timings: Timings, turns: int, quick: bool) -> list[tuple[str, bool]]:
    first = timings.median(timings.turns, 1, WINDOW)
    late_from = turns - WINDOW + 1
    last = timings.median(timings.turns, late_from, turns)
    floor = timings.median(timings.floors, late_from, turns)
    growth, over_floor = last / first, last / floor
    print(f"\n{name}")
    print(f"  turns 1-{WINDOW:<12} {_us(first)}")
    print(f"  turns {late_from}-{turns:<10} {_us(last)}")
    print(f"  floor, turns {late_from}-{turns:<3} {_us(floor)}  (hash the whole request once)")
    if timings.outside:
        sdk_first = timings.median(timings.outside, 1, WINDOW)
        sdk_last = timings.median(timings.outside, late_from, turns)
        print(f"  the SDK's own work: {_us(sdk_first)} -> {_us(sdk_last)}  (no target)")
    verdicts = [
        (f"{name}: turns {late_from}-{turns} / turns 1-{WINDOW}", growth <= TARGET_GROWTH),
        (f"{name}: turns {late_from}-{turns} / floor", over_floor <= TARGET_FLOOR),
    ]
    for (label, ok), value, target in zip(
        verdicts, (growth, over_floor), (TARGET_GROWTH, TARGET_FLOOR), strict=True
    ):
        verdict = "" if quick else ("  PASS" if ok else "  FAIL")
        print(f"  {label:<44} {value:5.2f}x  (target <= {target}x){verdict}")
    return verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=TURNS, help="turns of the agent's run")
    parser.add_argument("--repeat", type=int, default=7, help="replays of each path")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 repeat, no verdict")
    args = parser.parse_args(argv)
    turns = max(2 * WINDOW, args.turns)
    repeat = 1 if args.quick else max(1, args.repeat)
    print(
        f"pytest-rollout {pytest_rollout.__version__}, Python {sys.version.split()[0]}, "
        f"orjson {orjson.__version__}, {os.cpu_count()} CPUs; {turns} turns, medians of "
        f"{repeat} replay(s) of each path, alternating"
    )
    conv = conversation(turns)
    size = len(conv.system) + len(conv.user)
    size += sum(len(s.content) + len(s.result) + len(orjson.dumps(s.arguments)) for s in conv.steps)
    print(f"history at the last turn: about {size // 1024} KiB; {len(TOOLS)} tool schemas")
    goldens = record_provider(conv), record_sdk(conv)
    provider, sdk = Timings(), Timings()
    replay_provider(conv, goldens[0], Timings())  # warm-up
    replay_sdk(conv, goldens[1], Timings())
    for _ in range(repeat):
        replay_provider(conv, goldens[0], provider)
        replay_sdk(conv, goldens[1], sdk)
    verdicts = report("provider (rollout.provider, dry replay)", provider, turns, args.quick)
    verdicts += report("sdk (rollout.openai, dry replay)", sdk, turns, args.quick)
    failed = [label for label, ok in verdicts if not ok]
    if args.quick:
        return 0
    print("\nall targets met" if not failed else f"\nmissed: {'; '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
