"""Analyzers: what they emit over hand-built event streams, and exactly when."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import math
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rollout.analysis.analyzers import (
    ANALYZERS,
    CONTEXT_WINDOWS,
    Analysis,
    AnalyzerOptions,
    Antipattern,
    analyze,
    find_antipatterns,
    parse_analyzers,
    tool_names,
)
from pytest_rollout.format.events import Event
from pytest_rollout.sdk.pricing import PRICES, model_entry, price_for

Stream = Sequence[tuple[str, Any, Any]]
HASH = hashlib.sha256(b"the request").hexdigest()


def events(stream: Stream) -> list[Event]:
    return [Event(seq, "", kind, data, step) for seq, (kind, data, step) in enumerate(stream)]


def options(*enabled: str, **settings: Any) -> AnalyzerOptions:
    return AnalyzerOptions(enabled=frozenset(enabled), **settings)


def found(stream: Stream, *enabled: str, **settings: Any) -> list[tuple[int, str, dict[str, Any]]]:
    """The batch answer, checked against the live one."""
    batch = analyze(events(stream), options(*enabled, **settings))
    assert batch == live(stream, options(*enabled, **settings))
    return batch


def live(stream: Stream, opts: AnalyzerOptions) -> list[tuple[int, str, dict[str, Any]]]:
    """What a session emitting ``stream`` would emit, with the index each analyzer event
    goes before."""
    analysis = Analysis(opts)
    emitted: list[tuple[int, str, dict[str, Any]]] = []
    for index, (kind, data, step) in enumerate(stream):
        emitted.extend((index, t, d) for t, d in analysis.before(kind, data, step))
        emitted.extend((index + 1, t, d) for t, d in analysis.after(kind, data, step))
    return emitted


def types(emitted: Sequence[tuple[int, str, dict[str, Any]]]) -> list[str]:
    return [t for _, t, _ in emitted]


def of_type(emitted: Sequence[tuple[int, str, dict[str, Any]]], kind: str) -> list[Any]:
    return [(i, d) for i, t, d in emitted if t == kind]


def started(model: str | None = "gpt-4o", tools: Any = ("lookup",)) -> tuple[str, Any, int]:
    return ("run.started", {"model": model, "tools": list(tools)}, 0)


def turn(step: int, cost: Any = None, **data: Any) -> tuple[str, Any, int]:
    return ("llm.turn.completed", {"step": step, "cost_usd": cost, **data}, step)


def call(step: int, name: str, arguments: Any, call_id: Any = None) -> tuple[str, Any, int]:
    data = {"step": step, "name": name, "arguments": arguments, "call_id": call_id}
    return ("tool.call.started", data, step)


def done(step: int, name: str, call_id: Any = None, error: Any = None) -> tuple[str, Any, int]:
    data: dict[str, Any] = {"step": step, "name": name, "call_id": call_id, "output": "ok"}
    if error is not None:
        data["error"] = error
    return ("tool.call.completed", data, step)


def failed(step: int, causes: Any = None) -> tuple[str, Any, int]:
    error: dict[str, Any] = {"class": "RuntimeError", "message": "boom"}
    if causes is not None:
        error["causes"] = causes
    return ("run.failed", {"step": step, "error": error}, step)


# -- parse_analyzers and options ---------------------------------------------------------


def test_parse_analyzers_reads_names_lists_and_all() -> None:
    assert parse_analyzers([]) == frozenset()
    assert parse_analyzers(["all"]) == frozenset(ANALYZERS)
    assert parse_analyzers(["cost_anomaly, antipatterns", "error_chain\tcontext_window"]) == {
        "cost_anomaly",
        "antipatterns",
        "error_chain",
        "context_window",
    }
    assert parse_analyzers(["Tool_Decisions,,", " "]) == {"tool_decisions"}
    # a single string is one item, not its characters
    assert parse_analyzers("request_envelope,all") == frozenset(ANALYZERS)


def test_parse_analyzers_names_the_unknown_name_and_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown analyzer 'cost'") as info:
        parse_analyzers(["antipatterns,cost"])
    for name in (*ANALYZERS, "all"):
        assert name in str(info.value)
    with pytest.raises(ValueError, match="must be strings"):
        parse_analyzers([3])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("cost_multiplier", 0),
        ("cost_multiplier", -1.0),
        ("cost_multiplier", math.inf),
        ("cost_multiplier", math.nan),
        ("cost_multiplier", True),
        ("cost_multiplier", "2"),
        ("antipattern_threshold", 1),
        ("antipattern_threshold", 3.0),
        ("antipattern_threshold", True),
        ("error_chain_calls", -1),
        ("error_chain_calls", None),
        ("context_threshold", 0),
        ("context_threshold", 1.01),
        ("context_threshold", math.nan),
        ("context_limit", 0),
        ("context_limit", 1.5),
        ("context_windows", ["gpt-4o"]),
        ("hmac_key", b""),
        ("hmac_key", "text"),
        ("enabled", "antipatterns"),
    ],
)
def test_options_refuse_bad_values(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"^{field} must be"):
        AnalyzerOptions(**{field: value})


def test_options_refuse_unknown_analyzers() -> None:
    with pytest.raises(ValueError, match="unknown analyzer 'cost': choose from cost_anomaly, "):
        AnalyzerOptions(enabled=frozenset({"cost", "antipatterns"}))


def test_options_defaults_are_valid_hashable_and_hide_the_key() -> None:
    default = AnalyzerOptions()
    assert default.enabled == frozenset()
    assert default.context_windows is CONTEXT_WINDOWS
    assert (default.cost_multiplier, default.antipattern_threshold) == (2.0, 3)
    assert (default.error_chain_calls, default.context_threshold) == (5, 0.8)
    assert default.context_limit is None
    assert default.hmac_key is None
    keyed = AnalyzerOptions(hmac_key=b"s3cret", enabled={"antipatterns"})  # type: ignore[arg-type]
    assert keyed.enabled == frozenset({"antipatterns"})
    assert hash(keyed) == hash(dataclasses.replace(keyed))
    assert "s3cret" not in repr(keyed)
    custom = AnalyzerOptions(context_windows={"mine": 10})
    assert isinstance(custom.context_windows, MappingProxyType)
    assert custom == AnalyzerOptions(context_windows={"mine": 10})


def test_context_windows_table() -> None:
    assert isinstance(CONTEXT_WINDOWS, MappingProxyType)
    expected = {
        "gpt-4o-2024-08-06": 128_000,
        "gpt-4o-mini-2024-07-18": 128_000,
        "gpt-4.1-2025-04-14": 1_047_576,
        "gpt-4.1-mini": 1_047_576,
        "gpt-5-2025-08-07": 400_000,
        "gpt-5-mini": 400_000,
        "gpt-5.1-2025-11-13": 400_000,
        "gpt-5.2": 400_000,
        "o1-2024-12-17": 200_000,
        "o3-mini-2025-01-31": 200_000,
        "o4-mini-2025-04-16": 200_000,
        "claude-sonnet-4-5-20250929": 200_000,
        "claude-sonnet-4-20250514": 200_000,
        "claude-opus-4-1-20250805": 200_000,
        "claude-3-5-haiku-latest": 200_000,
        "openai/gpt-4o": 128_000,
    }
    assert {m: model_entry(m, CONTEXT_WINDOWS) for m in expected} == expected
    assert model_entry("llama-3.1-70b", CONTEXT_WINDOWS) is None


@pytest.mark.parametrize(
    "model", ["gpt-4o-mini-2024-07-18", "GPT-5.2", "openai:o3-mini", "gpt-50", "", None]
)
def test_the_shared_prefix_matcher_prices_as_before(model: str | None) -> None:
    assert model_entry(model, PRICES) == price_for(model)


# -- cost_anomaly ---------------------------------------------------------------------


def test_cost_anomaly_not_at_the_first_step_nor_at_exactly_the_multiplier() -> None:
    stream = [started(), turn(1, 0.5), turn(2, 1.0), turn(3, 1.5)]
    # 1.0 is 2x the mean 0.5 (not more); 1.5 is 2x the mean 0.75
    assert found(stream, "cost_anomaly") == []
    assert found([started(), turn(1, 100.0)], "cost_anomaly") == []


def test_cost_anomaly_at_a_step_above_the_multiplier() -> None:
    stream = [started(), turn(1, 1.0), turn(2, 2.01), turn(3, 1.0)]
    assert found(stream, "cost_anomaly") == [
        (
            3,
            "cost.anomaly",
            {
                "step_cost_usd": 2.01,
                "rolling_average_usd": 1.0,
                "multiplier": 2.0,
                "steps_before": 1,
            },
        )
    ]


def test_cost_anomaly_exactly_twice_despite_float_noise() -> None:
    stream = [started(), turn(1, 0.1), turn(2, 0.2), turn(3, 0.3)]
    assert found(stream, "cost_anomaly") == []  # 0.3 is exactly 2 x 0.15


def test_cost_anomaly_sums_the_turns_of_a_step_and_fires_once_per_step() -> None:
    stream = [
        started(),
        turn(1, 1.0),
        turn(1, 1.0),  # step 1 cost 2.0
        turn(2, None),  # no cost: not a costed step
        turn(3, 3.0),  # 1.5 x
        turn(3, 1.5),  # 4.5 > 2 x 2.0
        turn(3, 1.0),  # still above, already said
        turn(4, 12.0),  # mean (2.0 + 5.5) / 2 = 3.75, 12 > 7.5
    ]
    emitted = found(stream, "cost_anomaly")
    assert [(i, d["step_cost_usd"], d["steps_before"]) for i, _, d in emitted] == [
        (6, 4.5, 1),
        (8, 12.0, 2),
    ]
    assert emitted[1][2]["rolling_average_usd"] == 3.75


def test_cost_anomaly_honours_the_multiplier_and_skips_bad_costs() -> None:
    stream = [started(), turn(1, 1.0), turn(2, 2.5), turn(3, "9"), turn(4, True)]
    stream += [turn(5, math.nan), turn(6, -4.0), turn(7, 10**400)]
    assert found(stream, "cost_anomaly", cost_multiplier=3.0) == []
    assert types(found(stream, "cost_anomaly", cost_multiplier=2.4)) == ["cost.anomaly"]


# -- antipatterns --------------------------------------------------------------------


def test_antipattern_at_the_third_identical_call_only() -> None:
    stream = [
        started(),
        call(1, "lookup", {"q": "x", "n": 1}),
        call(1, "lookup", {"q": "y", "n": 1}),  # other arguments
        call(2, "fetch", {"q": "x", "n": 1}),  # other tool
        call(2, "lookup", {"n": 1, "q": "x"}),  # same, keys in another order
        call(3, "lookup", {"n": 1.0, "q": "x"}),  # 1.0 is not 1
        call(4, "lookup", {"q": "x", "n": 1}),  # the third
        call(5, "lookup", {"q": "x", "n": 1}),  # the fourth: already said
    ]
    assert found(stream, "antipatterns") == [
        (
            7,
            "tool.antipattern",
            {"name": "lookup", "arguments": {"q": "x", "n": 1}, "count": 3, "steps": [1, 2, 4]},
        )
    ]
    assert found(stream[:6], "antipatterns") == []


def test_antipattern_threshold_option_and_unencodable_arguments() -> None:
    stream = [started(), call(1, "a", None), call(2, "a", None), call(3, "b", {1, 2})]
    stream += [call(3, "b", {1, 2}), call(4, 7, {}), call(4, 7, {})]  # type: ignore[arg-type]
    emitted = found(stream, "antipatterns", antipattern_threshold=2)
    assert emitted == [
        (3, "tool.antipattern", {"name": "a", "arguments": None, "count": 2, "steps": [1, 2]})
    ]


def test_antipattern_event_is_a_copy() -> None:
    arguments = {"path": ["a"]}
    analysis = Analysis(options("antipatterns", antipattern_threshold=2))
    analysis.after(*call(1, "read", arguments))
    [(_, data)] = analysis.after(*call(2, "read", {"path": ["a"]}))
    arguments["path"].append("b")
    assert data["arguments"] == {"path": ["a"]}


def test_find_antipatterns_counts_every_call_in_reaching_order() -> None:
    stream = [
        started(),
        call(1, "b", {"x": 1}),
        call(1, "a", {}),
        call(2, "a", {}),
        call(2, "b", {"x": 1}),
        call(3, "a", {}),  # a reaches 3 first
        call(4, "b", {"x": 1}),
        call(5, "a", {}),
        call(5, "c", {}),
        ("tool.call.started", "not a mapping", 5),
    ]
    assert find_antipatterns(events(stream)) == [
        Antipattern("a", {}, 4, (1, 2, 3, 5)),
        Antipattern("b", {"x": 1}, 3, (1, 2, 4)),
    ]
    assert [a.name for a in find_antipatterns(events(stream), threshold=4)] == ["a"]
    assert find_antipatterns(events(stream[:5])) == []
    with pytest.raises(ValueError, match="threshold"):
        find_antipatterns(events(stream), threshold=1)


# -- error_chain ------------------------------------------------------------------------


def test_error_context_goes_before_run_failed_with_the_last_calls() -> None:
    stream = [
        started(),
        call(1, "a", {"i": 1}, "c1"),
        done(1, "a", "c1"),
        call(2, "b", {"i": 2}, "c2"),
        call(2, "c", {"i": 3}, "c3"),
        done(2, "c", "c3", error={"class": "KeyError", "message": "'k'"}),  # out of order
        done(2, "b", "c2"),
        call(3, "d", {"i": 4}),  # no id: paired by order
        done(3, "d", error={"class": "OSError", "message": "disk"}),
        call(3, "e", {"i": 5}),  # never completed
        failed(3, causes=[{"class": "ValueError", "message": "root"}]),
    ]
    emitted = found(stream, "error_chain", error_chain_calls=4)
    assert emitted == [
        (
            10,
            "error.context",
            {
                "error": {"class": "RuntimeError", "message": "boom"},
                "causes": [{"class": "ValueError", "message": "root"}],
                "last_tool_calls": [
                    {"step": 2, "name": "b", "arguments": {"i": 2}},
                    {
                        "step": 2,
                        "name": "c",
                        "arguments": {"i": 3},
                        "error": {"class": "KeyError", "message": "'k'"},
                    },
                    {
                        "step": 3,
                        "name": "d",
                        "arguments": {"i": 4},
                        "error": {"class": "OSError", "message": "disk"},
                    },
                    {"step": 3, "name": "e", "arguments": {"i": 5}},
                ],
            },
        )
    ]


def test_error_context_only_for_a_failed_run() -> None:
    calls = [started(), call(1, "a", {}, "c1"), done(1, "a", "c1")]
    completed = ("run.completed", {"step": 1, "outcome": "completed"}, 1)
    assert found([*calls, completed], "error_chain") == []
    assert found(calls, "error_chain") == []
    # no causes given: an empty chain; no calls asked for: an empty list
    emitted = found([*calls, failed(1)], "error_chain", error_chain_calls=0)
    assert emitted == [
        (
            3,
            "error.context",
            {
                "error": {"class": "RuntimeError", "message": "boom"},
                "causes": [],
                "last_tool_calls": [],
            },
        )
    ]
    odd = ("run.failed", {"step": 1, "error": "boom"}, 1)
    assert found([*calls, odd], "error_chain") == []
    bad_causes = failed(1, causes="not a list")
    assert found([*calls, bad_causes], "error_chain")[0][2]["causes"] == []


def test_error_context_pairs_duplicate_ids_in_order() -> None:
    stream = [
        started(),
        call(1, "a", 1, "same"),
        call(1, "a", 2, "same"),
        done(1, "a", "same", error="first"),
        done(1, "a", "other", error="second"),  # unknown id: the oldest open call
        failed(1),
    ]
    [(_, _, data)] = found(stream, "error_chain")
    assert [(c["arguments"], c.get("error")) for c in data["last_tool_calls"]] == [
        (1, "first"),
        (2, "second"),
    ]


# -- context_window -------------------------------------------------------------------


def usage_turn(step: int, tokens_in: Any, tokens_out: Any, **data: Any) -> tuple[str, Any, int]:
    usage = {"input_tokens": tokens_in, "output_tokens": tokens_out}
    return turn(step, None, usage=usage, **data)


def test_context_snapshot_every_turn_and_warning_from_the_threshold() -> None:
    stream = [
        started(model="mine"),
        usage_turn(1, 70_000, 9_999),
        usage_turn(2, 70_000, 10_000),
        usage_turn(3, 95_000, 10_000),
    ]
    emitted = found(stream, "context_window", context_limit=100_000)
    assert emitted == [
        (2, "context.window.snapshot", {"tokens_used": 79_999, "limit": 100_000, "fraction": 0.8}),
        # 0.79999 shows as 0.8: the warning follows what the snapshot says
        (
            2,
            "context.window.warning",
            {"tokens_used": 79_999, "limit": 100_000, "fraction": 0.8, "threshold": 0.8},
        ),
        (3, "context.window.snapshot", {"tokens_used": 80_000, "limit": 100_000, "fraction": 0.8}),
        (
            3,
            "context.window.warning",
            {"tokens_used": 80_000, "limit": 100_000, "fraction": 0.8, "threshold": 0.8},
        ),
        (
            4,
            "context.window.snapshot",
            {"tokens_used": 105_000, "limit": 100_000, "fraction": 1.05},
        ),
        (
            4,
            "context.window.warning",
            {"tokens_used": 105_000, "limit": 100_000, "fraction": 1.05, "threshold": 0.8},
        ),
    ]
    below = found(
        [started(), usage_turn(1, 70_000, 9_000)], "context_window", context_limit=100_000
    )
    assert types(below) == ["context.window.snapshot"]
    assert below[0][2]["fraction"] == 0.79


def test_context_limit_from_the_model_version_else_the_run_model() -> None:
    stream = [
        started(model="gpt-4o"),
        usage_turn(1, 100_000, 2_400, model_version="gpt-4o-mini-2024-07-18"),
        usage_turn(2, 100_000, 2_400, model_version="claude-sonnet-4-5-20250929"),
        usage_turn(3, 100_000, 2_400, model_version="unknown-model"),
        usage_turn(4, 100_000, 2_400),
    ]
    emitted = found(stream, "context_window")
    snapshots = [d["limit"] for _, d in of_type(emitted, "context.window.snapshot")]
    assert snapshots == [128_000, 200_000, 128_000, 128_000]
    assert [i for i, _ in of_type(emitted, "context.window.warning")] == [2, 4, 5]
    custom = found(stream[:2], "context_window", context_windows={"gpt-4o-mini": 1_000_000})
    assert custom[0][2] == {"tokens_used": 102_400, "limit": 1_000_000, "fraction": 0.1024}


def test_context_unknown_model_has_no_limit_and_no_warning() -> None:
    stream = [started(model="llama-3"), usage_turn(1, 10**6, 10**6), usage_turn(2, 1, 1)]
    stream += [started(model=None), usage_turn(3, 5, 5, model_version=None)]
    emitted = found(stream, "context_window")
    assert types(emitted) == ["context.window.snapshot"] * 3
    assert emitted[0][2] == {"tokens_used": 2 * 10**6, "limit": None, "fraction": None}


def test_context_skips_turns_without_token_counts() -> None:
    stream = [
        started(),
        turn(1),
        turn(2, usage=None),
        usage_turn(3, True, 1),
        usage_turn(4, 1.0, 1),
        usage_turn(5, -1, 1),
        usage_turn(6, 1, None),
        usage_turn(7, 10**400, 1),
    ]
    assert found(stream, "context_window") == []  # the last: too many tokens for a float


# -- tool_decisions ---------------------------------------------------------------------

OPENAI_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {}}},
    {"type": "function", "function": {"name": "search"}},
]
ANTHROPIC_TOOLS = [
    {"name": "get_weather", "description": "", "input_schema": {"type": "object"}},
    {"type": "web_search_20250305", "name": "web_search"},
]


def test_tool_names_of_every_shape() -> None:
    assert tool_names(OPENAI_TOOLS) == ["get_weather", "search"]
    assert tool_names(ANTHROPIC_TOOLS) == ["get_weather", "web_search"]
    mixed = ["plain", {"name": "named"}, {"type": "function", "function": {"name": 3}}, 4, None]
    mixed += [{"function": "x"}, {"name": None, "function": {"name": "inner"}}, ("tuple",)]
    assert tool_names(mixed) == ["plain", "named", "inner"]
    assert tool_names(("a", "b")) == ["a", "b"]
    for odd in (None, "abc", {"name": "x"}, 3, {"a", "b"}):
        assert tool_names(odd) == []


def turn_started(step: int, tools: Any = None, **data: Any) -> tuple[str, Any, int]:
    return ("llm.turn.started", {"step": step, "messages": [], "tools": tools, **data}, step)


def calls_turn(step: int, *names: Any) -> tuple[str, Any, int]:
    calls = [{"id": f"c{i}", "name": n, "arguments": {}} for i, n in enumerate(names)]
    return turn(step, None, tool_calls=calls)


def test_tool_decision_names_what_was_offered_and_chosen() -> None:
    stream = [
        started(tools=["run_tool_a", "run_tool_b"]),
        turn_started(1, OPENAI_TOOLS),
        calls_turn(1, "search", "get_weather", 5),
        turn_started(2, ANTHROPIC_TOOLS),
        calls_turn(2),
        turn_started(3, ["plain"]),
        turn(3),  # no tool_calls at all
        turn_started(4),  # no tools: the run's
        calls_turn(4, "run_tool_b"),
        calls_turn(5, "run_tool_a"),  # no llm.turn.started for this step: the run's
        turn(6, tool_calls="odd"),
    ]
    emitted = found(stream, "tool_decisions")
    assert emitted == [
        (
            3,
            "tool.decision",
            {"available": ["get_weather", "search"], "selected": ["search", "get_weather"]},
        ),
        (5, "tool.decision", {"available": ["get_weather", "web_search"], "selected": []}),
        (7, "tool.decision", {"available": ["plain"], "selected": []}),
        (
            9,
            "tool.decision",
            {"available": ["run_tool_a", "run_tool_b"], "selected": ["run_tool_b"]},
        ),
        (
            10,
            "tool.decision",
            {"available": ["run_tool_a", "run_tool_b"], "selected": ["run_tool_a"]},
        ),
    ]


# -- request_envelope ----------------------------------------------------------------


def test_request_snapshot_carries_the_plain_hash_without_a_key() -> None:
    stream = [
        started(),
        turn_started(1, OPENAI_TOOLS, messages=[{"role": "user"}] * 3, messages_hash=HASH),
        turn_started(2, None, messages="odd", messages_hash=HASH),
        turn_started(3, ANTHROPIC_TOOLS),  # no messages_hash
        turn(3, None, latency_ms=812.5, model_version="gpt-4o-2024-08-06"),
    ]
    assert found(stream, "request_envelope") == [
        (
            2,
            "llm.request.snapshot",
            {
                "prompt_hash": HASH,
                "algorithm": "sha256",
                "tool_names": ["get_weather", "search"],
                "message_count": 3,
            },
        ),
        (
            3,
            "llm.request.snapshot",
            {"prompt_hash": HASH, "algorithm": "sha256", "tool_names": [], "message_count": None},
        ),
        (5, "llm.response.meta", {"latency_ms": 812.5, "model_version": "gpt-4o-2024-08-06"}),
    ]
    assert found([started(), turn(1)], "request_envelope") == [
        (2, "llm.response.meta", {"latency_ms": None, "model_version": None})
    ]


def test_request_snapshot_keys_the_hash_with_hmac() -> None:
    stream = [started(), turn_started(1, [], messages_hash=HASH)]

    def keyed(key: bytes) -> dict[str, Any]:
        [(_, _, data)] = found(stream, "request_envelope", hmac_key=key)
        return data

    data = keyed(b"key one")
    assert data["algorithm"] == "hmac-sha256"
    assert data["prompt_hash"] != HASH
    assert data["prompt_hash"] == hmac.new(b"key one", HASH.encode(), hashlib.sha256).hexdigest()
    assert keyed(b"key one") == data  # stable for a key
    assert keyed(b"key two")["prompt_hash"] != data["prompt_hash"]


# -- all together -----------------------------------------------------------------------


def full_run() -> list[tuple[str, Any, int]]:
    return [
        started(model="gpt-4o", tools=["lookup"]),
        turn_started(1, OPENAI_TOOLS, messages=[{"role": "user"}], messages_hash=HASH),
        usage_turn(1, 1_000, 10, cost_usd=0.01, tool_calls=[{"id": "a", "name": "search"}]),
        call(1, "search", {"q": "x"}, "a"),
        done(1, "search", "a"),
        turn_started(2, OPENAI_TOOLS, messages=[{"role": "tool"}], messages_hash=HASH),
        usage_turn(2, 120_000, 10, cost_usd=0.3, latency_ms=5, model_version="gpt-4o-x"),
        call(2, "search", {"q": "x"}, "b"),
        done(2, "search", "b", error={"class": "E", "message": "m"}),
        call(2, "search", {"q": "x"}, "c"),
        done(2, "search", "c"),
        failed(2),
    ]


def test_events_after_one_event_come_in_the_order_of_analyzers() -> None:
    emitted = found(full_run(), *ANALYZERS)
    assert [t for i, t, _ in emitted if i == 7] == [
        "cost.anomaly",
        "context.window.snapshot",
        "context.window.warning",
        "tool.decision",
        "llm.response.meta",
    ]
    assert types(emitted) == [
        "llm.request.snapshot",
        "context.window.snapshot",
        "tool.decision",
        "llm.response.meta",
        "llm.request.snapshot",
        "cost.anomaly",
        "context.window.snapshot",
        "context.window.warning",
        "tool.decision",
        "llm.response.meta",
        "tool.antipattern",
        "error.context",
        "causal.graph.snapshot",
    ]
    assert all(orjson.loads(orjson.dumps(d)) == d for _, _, d in emitted)


def test_all_with_parse_analyzers() -> None:
    assert found(full_run(), *parse_analyzers(["all"])) == found(full_run(), *ANALYZERS)


OWN_TYPES = {
    "cost_anomaly": {"cost.anomaly"},
    "antipatterns": {"tool.antipattern"},
    "error_chain": {"error.context"},
    "context_window": {"context.window.snapshot", "context.window.warning"},
    "tool_decisions": {"tool.decision"},
    "request_envelope": {"llm.request.snapshot", "llm.response.meta"},
    "causal_graph": {"causal.graph.snapshot"},
}


@pytest.mark.parametrize("name", ANALYZERS)
def test_each_analyzer_alone_emits_only_its_events(name: str) -> None:
    assert set(types(found(full_run(), name))) == OWN_TYPES[name]


def test_disabled_analyzers_emit_nothing() -> None:
    assert found(full_run()) == []
    analysis = Analysis(AnalyzerOptions())
    for kind, data, step in full_run():
        assert analysis.before(kind, data, step) == []
        assert analysis.after(kind, data, step) == []


def test_batch_places_events_before_the_recorded_event_they_precede() -> None:
    run = events(full_run())
    emitted = analyze(run, options(*ANALYZERS))
    for index, kind, _ in emitted:
        if kind in {"error.context", "causal.graph.snapshot"}:
            assert run[index].type == "run.failed"
        elif kind == "llm.request.snapshot":
            assert run[index - 1].type == "llm.turn.started"
        else:
            assert run[index - 1].type in {"llm.turn.completed", "tool.call.started"}


# -- odd data ---------------------------------------------------------------------------

ODD: list[Any] = [object(), {1, 2}, b"x", 10**30, 10**400, math.nan, -math.inf, -1, True, ""]
leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
json = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
anything = json | st.sampled_from(ODD) | st.dictionaries(st.integers(), json, max_size=2)
TYPES = [
    "run.started",
    "llm.turn.started",
    "llm.turn.completed",
    "tool.call.started",
    "tool.call.completed",
    "run.failed",
    "run.completed",
    "custom.event",
]
usage = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": st.integers(0, 300_000) | anything,
        "output_tokens": st.integers(0, 300_000) | anything,
    },
)
error = st.fixed_dictionaries(
    {}, optional={"class": anything, "message": anything, "causes": st.lists(anything) | anything}
)
call_entry = st.fixed_dictionaries({}, optional={"name": st.sampled_from(["a", "b"]) | anything})
payload = st.fixed_dictionaries(
    {},
    optional={
        "model": st.sampled_from(["gpt-4o", "claude-sonnet-4", "x"]) | anything,
        "tools": st.lists(st.sampled_from(["a", {"name": "b"}]) | anything, max_size=3) | anything,
        "messages": st.lists(json, max_size=3) | anything,
        "messages_hash": st.just(HASH) | anything,
        "tool_calls": st.lists(call_entry | anything, max_size=3) | anything,
        "usage": usage | anything,
        "cost_usd": st.floats(0, 1) | anything,
        "model_version": st.sampled_from(["gpt-5", "o3"]) | anything,
        "latency_ms": anything,
        "name": st.sampled_from(["a", "b"]) | anything,
        "arguments": st.sampled_from([{}, {"k": 1}]) | anything,
        "call_id": st.sampled_from(["1", "2", None]) | anything,
        "error": error | anything,
    },
)
data = payload | anything
step = st.integers(-2, 6) | st.sampled_from([None, True, "2", 2.5, 10**30])
streams = st.lists(st.tuples(st.sampled_from(TYPES), data, step), max_size=25)
all_options = st.builds(
    AnalyzerOptions,
    enabled=st.frozensets(st.sampled_from(ANALYZERS)),
    cost_multiplier=st.floats(0.5, 3),
    antipattern_threshold=st.integers(2, 3),
    error_chain_calls=st.integers(0, 3),
    context_threshold=st.floats(0.01, 1),
    context_limit=st.none() | st.integers(1, 200_000),
    hmac_key=st.none() | st.binary(min_size=1, max_size=4),
)


@settings(deadline=None, database=None)
@given(stream=streams, opts=all_options)
def test_odd_data_never_raises_and_batch_equals_live(stream: Stream, opts: AnalyzerOptions) -> None:
    emitted = live(stream, opts)
    assert analyze(events(stream), opts) == emitted
    for index, kind, found_data in emitted:
        assert 0 <= index <= len(stream)
        assert isinstance(kind, str)
        assert isinstance(found_data, dict)


@settings(max_examples=100, deadline=None, database=None)
@given(stream=streams)
def test_find_antipatterns_never_raises(stream: Stream) -> None:
    found_ones = find_antipatterns(events(stream), threshold=2)
    assert all(a.count >= 2 and len(a.steps) == a.count for a in found_ones)


def test_after_and_before_skip_non_mapping_data() -> None:
    analysis = Analysis(options(*ANALYZERS))
    for kind in TYPES:
        for odd in ODD:
            assert analysis.before(kind, odd, 1) == []
            assert analysis.after(kind, odd, 1) == []
