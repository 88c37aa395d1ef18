"""Model prices: the longest prefix of a model's name prices its tokens."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rollout.sdk.pricing import PRICES, Price, cost_usd, parse_price, price_for


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", Price(2.50, 10.00)),
        ("gpt-4o-2024-08-06", Price(2.50, 10.00)),
        ("gpt-4o-2024-05-13", Price(5.00, 15.00)),
        ("gpt-4o-mini-2024-07-18", Price(0.15, 0.60)),
        ("gpt-4.1-2025-04-14", Price(2.00, 8.00)),
        ("gpt-4.1-mini-2025-04-14", Price(0.40, 1.60)),
        ("gpt-4.1-nano", Price(0.10, 0.40)),
        ("o3-2025-04-16", Price(2.00, 8.00)),
        ("o3-mini-2025-01-31", Price(1.10, 4.40)),
        ("o4-mini-2025-04-16", Price(1.10, 4.40)),
        ("gpt-5-2025-08-07", Price(1.25, 10.00)),
        ("gpt-5-mini-2025-08-07", Price(0.25, 2.00)),
        ("gpt-5-nano", Price(0.05, 0.40)),
        ("gpt-5-chat-latest", Price(1.25, 10.00)),
        ("gpt-5.1-2025-11-13", Price(1.25, 10.00)),
        ("claude-opus-4-5-20251101", Price(5.00, 25.00)),
        ("claude-opus-4-1-20250805", Price(15.00, 75.00)),
        ("claude-opus-4-20250514", Price(15.00, 75.00)),
        ("claude-sonnet-4-5-20250929", Price(3.00, 15.00)),
        ("claude-sonnet-4-20250514", Price(3.00, 15.00)),
        ("claude-3-7-sonnet-latest", Price(3.00, 15.00)),
        ("claude-3-5-sonnet-v2@20241022", Price(3.00, 15.00)),
        ("claude-haiku-4-5-20251001", Price(1.00, 5.00)),
        ("claude-3-5-haiku-20241022", Price(0.80, 4.00)),
        ("claude-3-haiku-20240307", Price(0.25, 1.25)),
    ],
)
def test_the_longest_prefix_wins(model: str, expected: Price) -> None:
    assert price_for(model) == expected


@pytest.mark.parametrize(
    "model",
    ["openai/gpt-4o-mini", "openai:gpt-4o-mini", "openrouter/openai/gpt-4o-mini", "GPT-4o-Mini"],
)
def test_provider_prefixes_and_case_are_ignored(model: str) -> None:
    assert price_for(model) == Price(0.15, 0.60)


@pytest.mark.parametrize(
    "model",
    [None, "", "llama-3.1-70b", "gemini-1.5-pro", "gpt-50", "gpt-5.9", "openai/", "o", "gpt"],
)
def test_unknown_models_have_no_price(model: str | None) -> None:
    assert price_for(model) is None


def test_a_prefix_does_not_cover_another_version() -> None:
    # "gpt-5" is not the price of "gpt-5.4": a dot continues the version, not the name.
    assert price_for("gpt-5.4-mini") is None
    assert price_for("gpt-5.4-mini", {"gpt-5.": Price(1, 2)}) == Price(1, 2)


def test_a_custom_table_replaces_the_built_in_one() -> None:
    prices = {"my-model": Price(1.0, 2.0)}
    assert price_for("my-model-v2", prices) == Price(1.0, 2.0)
    assert price_for("gpt-4o", prices) is None


def test_later_entries_win_a_tie() -> None:
    prices = {**PRICES, "GPT-4o": Price(9.0, 9.0)}
    assert price_for("gpt-4o-2024-08-06", prices) == Price(9.0, 9.0)


def test_the_table_is_read_only() -> None:
    assert isinstance(PRICES, Mapping)
    with pytest.raises(TypeError):
        PRICES["gpt-4o"] = Price(0, 0)  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        PRICES["gpt-4o"].input_per_mtok = 0  # type: ignore[misc]


def test_the_table_is_sane() -> None:
    for name, price in PRICES.items():
        assert name == name.lower().strip()
        assert 0 < price.input_per_mtok <= price.output_per_mtok, name


def test_cost() -> None:
    usage = {"input_tokens": 1200, "output_tokens": 350}
    # 1200 * 2.50 / 1e6 + 350 * 10 / 1e6
    assert cost_usd("gpt-4o-2024-08-06", usage) == 0.0065
    assert cost_usd("claude-sonnet-4-5", {"input_tokens": 412, "output_tokens": 96}) == 0.002676


def test_cost_is_rounded_to_nine_decimals() -> None:
    cost = cost_usd("gpt-5-nano", {"input_tokens": 1, "output_tokens": 1})
    assert cost == 0.00000045
    assert cost == round(cost, 9)


def test_cost_with_a_custom_table() -> None:
    prices = {"local": Price(0.0, 0.0), "mine": Price(1.0, 3.0)}
    assert cost_usd("local-7b", {"input_tokens": 10**6, "output_tokens": 10**6}, prices) == 0.0
    assert cost_usd("mine", {"input_tokens": 10**6, "output_tokens": 10**6}, prices) == 4.0


def test_cost_of_a_missing_side_is_zero() -> None:
    assert cost_usd("gpt-4o", {"input_tokens": 10**6}) == 2.5


@pytest.mark.parametrize(
    ("model", "usage"),
    [
        ("gpt-4o", None),
        ("gpt-4o", {}),
        ("gpt-4o", {"total_tokens": 10}),
        ("gpt-4o", {"input_tokens": -1, "output_tokens": 2}),
        ("gpt-4o", {"input_tokens": True, "output_tokens": 2}),
        ("gpt-4o", {"input_tokens": 1.5, "output_tokens": 2}),
        (None, {"input_tokens": 1, "output_tokens": 2}),
        ("unknown-model", {"input_tokens": 1, "output_tokens": 2}),
    ],
)
def test_cost_is_unknown_without_a_price_or_a_usage(model: str | None, usage: object) -> None:
    assert cost_usd(model, usage) is None  # type: ignore[arg-type]


@given(st.integers(0, 10**9), st.integers(0, 10**9), st.sampled_from(sorted(PRICES)))
def test_cost_is_never_negative_and_grows_with_tokens(
    tokens_in: int, tokens_out: int, model: str
) -> None:
    cost = cost_usd(model, {"input_tokens": tokens_in, "output_tokens": tokens_out})
    more = cost_usd(model, {"input_tokens": tokens_in + 1000, "output_tokens": tokens_out})
    assert cost is not None
    assert more is not None
    assert 0 <= cost <= more


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpt-4o=2.5,10", ("gpt-4o", Price(2.5, 10.0))),
        ("  my-model = 0.15 , 0.6 ", ("my-model", Price(0.15, 0.6))),
        ("local=0,0", ("local", Price(0.0, 0.0))),
        ("ft:gpt-4o-mini=.3,1.2", ("ft:gpt-4o-mini", Price(0.3, 1.2))),
        ("openai/gpt-4o=3.,12", ("openai/gpt-4o", Price(3.0, 12.0))),
    ],
)
def test_parse_price(text: str, expected: tuple[str, Price]) -> None:
    assert parse_price(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpt-4o", "write MODEL=INPUT,OUTPUT"),
        ("", "write MODEL=INPUT,OUTPUT"),
        ("=1,2", "model name before '=' is empty"),
        ("gpt-4o=", "give two prices"),
        ("gpt-4o=2.5", "give two prices"),
        ("gpt-4o=1,2,3", "give two prices"),
        ("gpt-4o=-1,2", "input price '-1' is not a non-negative decimal number"),
        ("gpt-4o=1,-2", "output price '-2'"),
        ("gpt-4o=nan,1", "input price 'nan'"),
        ("gpt-4o=1,inf", "output price 'inf'"),
        ("gpt-4o=1e3,1", "input price '1e3'"),
        ("gpt-4o=$2.50,10", "input price '\\$2.50'"),
        ("gpt-4o=1_0,1", "input price '1_0'"),
        ("gpt-4o=,1", "input price ''"),
        ("gpt-4o=1" + "0" * 400 + ",1", "too large"),
    ],
)
def test_parse_price_refuses_anything_else(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_price(text)


@given(
    st.from_regex(r"[a-z][a-z0-9.:/-]{0,20}", fullmatch=True),
    st.floats(0, 1000, allow_nan=False),
    st.floats(0, 1000, allow_nan=False),
)
def test_parse_price_reads_what_a_user_writes(
    model: str, price_in: float, price_out: float
) -> None:
    text = f"{model}={price_in:.6f},{price_out:.6f}"
    name, price = parse_price(text)
    assert name == model
    assert math.isclose(price.input_per_mtok, price_in, abs_tol=1e-6)
    assert math.isclose(price.output_per_mtok, price_out, abs_tol=1e-6)
