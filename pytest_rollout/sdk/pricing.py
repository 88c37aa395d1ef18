"""Model prices: what a turn cost, in US dollars, from its model and token usage.

:data:`PRICES` holds the list prices of OpenAI, Anthropic and Google Gemini models per million
input and output tokens, keyed by model-name prefix; :func:`price_for` picks the longest prefix that
matches a model name (``gpt-4o-mini-2024-07-18`` is ``gpt-4o-mini``, not ``gpt-4o``), and
:func:`cost_usd` prices a turn's usage. Input tokens read from or written to a provider's
prompt cache (``cache_read_tokens`` and ``cache_write_tokens`` of a turn's usage, parts of its
``input_tokens``) are priced at the model's cache rates, :data:`CACHE_RATES`, as fractions of
its input price: OpenAI's cached input (half, a quarter or a tenth of the input price, by
model), Anthropic's cache reads (0.1x) and cache writes (1.25x, the 5-minute cache), Gemini's
cached content (a tenth of the input price from Gemini 2.5 on, a quarter before; the cache's
storage is billed by the hour and not modelled), Amazon Nova's on Bedrock (reads at a quarter).
Bedrock model ids (``us.anthropic.claude-...-v1:0``, ``amazon.nova-pro-v1:0``) are priced
by the model they name. Batch discounts and long context surcharges (Gemini's Pro models
above 200k prompt tokens) are not modelled. Users extend or override the table
with ``MODEL=INPUT,OUTPUT`` lines (:func:`parse_price`); the cache rates of the model name
apply to their input price too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, TypeVar

__all__ = [
    "CACHE_RATES",
    "PRICES",
    "CacheRates",
    "Price",
    "cache_rates_for",
    "cost_usd",
    "model_entry",
    "parse_price",
    "price_for",
]


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million input tokens and per million output tokens."""

    input_per_mtok: float
    output_per_mtok: float


# List prices (standard tier, text tokens) of the OpenAI and Anthropic pricing pages as of
# late 2025: table taken 2025-12. A prefix covers every dated snapshot and alias that starts
# with it; a variant priced apart from its prefix has its own entry (o3-mini, gpt-5-pro...).
PRICES: Final[Mapping[str, Price]] = MappingProxyType(
    {
        # OpenAI
        "gpt-4o": Price(2.50, 10.00),
        "gpt-4o-2024-05-13": Price(5.00, 15.00),
        "gpt-4o-mini": Price(0.15, 0.60),
        "gpt-4.1": Price(2.00, 8.00),
        "gpt-4.1-mini": Price(0.40, 1.60),
        "gpt-4.1-nano": Price(0.10, 0.40),
        "o1": Price(15.00, 60.00),
        "o1-mini": Price(1.10, 4.40),
        "o1-pro": Price(150.00, 600.00),
        "o3": Price(2.00, 8.00),
        "o3-mini": Price(1.10, 4.40),
        "o3-pro": Price(20.00, 80.00),
        "o3-deep-research": Price(10.00, 40.00),
        "o4-mini": Price(1.10, 4.40),
        "o4-mini-deep-research": Price(2.00, 8.00),
        "gpt-5": Price(1.25, 10.00),
        "gpt-5-mini": Price(0.25, 2.00),
        "gpt-5-nano": Price(0.05, 0.40),
        "gpt-5-pro": Price(15.00, 120.00),
        "gpt-5.1": Price(1.25, 10.00),
        "gpt-5.2": Price(1.75, 14.00),
        "gpt-5.2-pro": Price(21.00, 168.00),
        # Anthropic
        "claude-opus-4-5": Price(5.00, 25.00),
        "claude-opus-4": Price(15.00, 75.00),  # and claude-opus-4-1
        "claude-sonnet-4": Price(3.00, 15.00),  # and claude-sonnet-4-5
        "claude-3-7-sonnet": Price(3.00, 15.00),
        "claude-3-5-sonnet": Price(3.00, 15.00),
        "claude-haiku-4-5": Price(1.00, 5.00),
        "claude-3-5-haiku": Price(0.80, 4.00),
        "claude-3-opus": Price(15.00, 75.00),
        "claude-3-haiku": Price(0.25, 1.25),
        # Google Gemini (Gemini API and Vertex AI list the same; Pro at prompts <= 200k;
        # thinking tokens are billed as output)
        "gemini-3-pro": Price(2.00, 12.00),
        "gemini-3-flash": Price(0.50, 3.00),
        "gemini-2.5-pro": Price(1.25, 10.00),
        "gemini-2.5-flash": Price(0.30, 2.50),
        "gemini-2.5-flash-lite": Price(0.10, 0.40),
        "gemini-2.0-flash": Price(0.10, 0.40),
        "gemini-2.0-flash-lite": Price(0.075, 0.30),
        # Amazon Bedrock (on-demand, us-east-1, late 2025). Claude on Bedrock is priced by
        # the Anthropic rows above (see _BEDROCK_NAME); Bedrock's regional endpoints for
        # Claude 4.5 models charge 10% more, which is not modelled.
        "amazon.nova-micro": Price(0.035, 0.14),
        "amazon.nova-lite": Price(0.06, 0.24),
        "amazon.nova-pro": Price(0.80, 3.20),
        "amazon.nova-premier": Price(2.50, 12.50),
        "meta.llama3-1-8b-instruct": Price(0.22, 0.22),
        "meta.llama3-1-70b-instruct": Price(0.72, 0.72),
        "meta.llama3-1-405b-instruct": Price(2.40, 2.40),
        "meta.llama3-2-1b-instruct": Price(0.10, 0.10),
        "meta.llama3-2-3b-instruct": Price(0.15, 0.15),
        "meta.llama3-3-70b-instruct": Price(0.72, 0.72),
        "meta.llama4-scout-17b-instruct": Price(0.17, 0.66),
        "meta.llama4-maverick-17b-instruct": Price(0.24, 0.97),
    }
)


@dataclass(frozen=True, slots=True)
class CacheRates:
    """What a cached input token costs, as a fraction of the model's input price: one read
    from the prompt cache, and one written to it."""

    read: float
    write: float


_HALF: Final = CacheRates(0.5, 1.0)
_QUARTER: Final = CacheRates(0.25, 1.0)
_TENTH: Final = CacheRates(0.1, 1.0)
_NO_DISCOUNT: Final = CacheRates(1.0, 1.0)

#: Cache rates by model-name prefix, matched like :data:`PRICES` (same late-2025 pricing
#: pages). OpenAI charges nothing extra to write its cache; a model without a cached-input
#: price pays the full input price. Every Anthropic model reads at 0.1x and writes at 1.25x.
CACHE_RATES: Final[Mapping[str, CacheRates]] = MappingProxyType(
    {
        # OpenAI
        "gpt-4o": _HALF,
        "gpt-4o-2024-05-13": _NO_DISCOUNT,
        "gpt-4.1": _QUARTER,
        "o1": _HALF,
        "o1-pro": _NO_DISCOUNT,
        "o3": _QUARTER,
        "o3-mini": _HALF,
        "o3-pro": _NO_DISCOUNT,
        "o4-mini": _QUARTER,
        "gpt-5": _TENTH,
        "gpt-5-pro": _NO_DISCOUNT,
        "gpt-5.1": _TENTH,
        "gpt-5.2": _TENTH,
        "gpt-5.2-pro": _NO_DISCOUNT,
        # Anthropic
        "claude-": CacheRates(0.1, 1.25),
        # Google Gemini: cached content is read at its price; writing it costs nothing more
        # (its storage is billed by the hour, apart)
        "gemini-": _TENTH,
        "gemini-2.0": _QUARTER,
        # Amazon Nova on Bedrock: cache reads at a quarter, writes at no extra charge
        "amazon.nova-": _QUARTER,
    }
)

#: A leading ``provider/`` or ``provider:`` in a model name (``openai/gpt-4o``).
_PROVIDER: Final = re.compile(r"[A-Za-z0-9_.-]+[/:]")
#: What a Bedrock model id adds to a model's name: a cross-region inference profile's
#: geography (``us.``, ``eu.``, ``global.``...) and, for Claude, the ``anthropic.`` vendor
#: (``us.anthropic.claude-sonnet-4-20250514-v1:0`` is priced as ``claude-sonnet-4``).
_BEDROCK_NAME: Final = re.compile(
    r"^(?:(?:us|eu|apac|global|us-gov|jp|au|ca)\.)?(?:anthropic\.(?=claude-))?"
)
_NUMBER: Final = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


#: What may follow a prefix in a model name it covers: ``gpt-5`` covers ``gpt-5-mini-...``
#: and ``gpt-5@...``, not ``gpt-5.2`` (another model) nor ``gpt-50``.
_SEPARATORS: Final = frozenset("-_:@/")


def _covers(prefix: str, name: str) -> bool:
    if not name.startswith(prefix):
        return False
    return (
        len(name) == len(prefix)
        or prefix[-1:] in _SEPARATORS | {"."}
        or (name[len(prefix)] in _SEPARATORS)
    )


_T = TypeVar("_T")


def _longest_prefix(name: str, table: Mapping[str, _T]) -> _T | None:
    best: _T | None = None
    length = -1
    for prefix, entry in table.items():
        # Later entries win a tie: a user's "GPT-4o" overrides the built-in "gpt-4o".
        if len(prefix) >= length and _covers(prefix.lower(), name):
            best, length = entry, len(prefix)
    return best


def model_entry(model: str | None, table: Mapping[str, _T]) -> _T | None:
    """The entry of ``table`` (keyed by model-name prefix) for ``model``, or ``None``: the
    entry of the longest prefix of its name, matched as :func:`price_for` describes."""
    if not model:
        return None
    name = model.strip().lower()
    while True:
        found = _longest_prefix(name, table)
        if found is None and (bedrock := _BEDROCK_NAME.sub("", name, count=1)) != name:
            found = _longest_prefix(bedrock, table)
        if found is not None:
            return found
        provider = _PROVIDER.match(name)
        if provider is None or provider.end() == len(name):
            return None
        name = name[provider.end() :]


def price_for(model: str | None, prices: Mapping[str, Price] = PRICES) -> Price | None:
    """The price of ``model``: the entry of the longest prefix of its name (compared
    case-insensitively), or ``None``. A prefix covers the names that continue it after a
    separator (``-``, ``_``, ``:``, ``@``, ``/``): ``gpt-5`` prices ``gpt-5-2025-08-07`` but
    not ``gpt-5.2``, unless the prefix itself ends with a separator or a dot (``gpt-5.``).
    A name that matches nothing is tried again without its leading ``provider/`` or
    ``provider:`` parts (``openai/gpt-4o``)."""
    return model_entry(model, prices)


def cache_rates_for(model: str | None) -> CacheRates:
    """The cache rates of ``model`` (matched as :func:`price_for` does); a model the table
    does not know pays its full input price for every input token."""
    return model_entry(model, CACHE_RATES) or _NO_DISCOUNT


def cost_usd(
    model: str | None, usage: Mapping[str, int] | None, prices: Mapping[str, Price] = PRICES
) -> float | None:
    """The USD cost of ``usage`` on ``model``, rounded to 9 decimals; ``None`` when the
    model has no price, the usage reports no tokens, or a count is not a whole number >= 0.

    ``input_tokens`` and ``output_tokens`` are priced at the model's prices; the parts of
    ``input_tokens`` read from and written to the prompt cache (``cache_read_tokens``,
    ``cache_write_tokens``) at its :data:`CACHE_RATES`.
    """
    price = price_for(model, prices)
    if price is None or not usage:
        return None
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    if tokens_in is None and tokens_out is None:
        return None
    counts = (
        tokens_in or 0,
        tokens_out or 0,
        usage.get("cache_read_tokens") or 0,
        usage.get("cache_write_tokens") or 0,
    )
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in counts):
        return None
    total_in, total_out, read, write = counts
    rates = cache_rates_for(model)
    uncached = max(total_in - read - write, 0)
    input_tokens = uncached + read * rates.read + write * rates.write
    total = input_tokens * price.input_per_mtok + total_out * price.output_per_mtok
    return round(total / 1_000_000, 9)


def parse_price(text: str) -> tuple[str, Price]:
    """Read ``MODEL=INPUT,OUTPUT`` (USD per million tokens, e.g. ``gpt-4o=2.5,10``).

    Raises ``ValueError`` naming what is wrong for anything else: no ``=``, an empty
    model name, not exactly two prices, or a price that is not a plain non-negative
    decimal number.
    """
    model, equals, rest = text.partition("=")
    model = model.strip()
    if not equals:
        raise ValueError(f"invalid price {text!r}: write MODEL=INPUT,OUTPUT (USD per 1M tokens)")
    if not model:
        raise ValueError(f"invalid price {text!r}: the model name before '=' is empty")
    parts = [p.strip() for p in rest.split(",")]
    if len(parts) != 2:
        raise ValueError(
            f"invalid price {text!r}: give two prices after '=', input and output "
            f"(USD per 1M tokens), e.g. {model}=2.5,10"
        )
    values: list[float] = []
    for label, part in zip(("input", "output"), parts, strict=True):
        if not _NUMBER.fullmatch(part):
            raise ValueError(
                f"invalid price {text!r}: the {label} price {part!r} is not a "
                f"non-negative decimal number"
            )
        value = float(part)
        if not math.isfinite(value):
            raise ValueError(f"invalid price {text!r}: the {label} price {part!r} is too large")
        values.append(value)
    return model, Price(values[0], values[1])
