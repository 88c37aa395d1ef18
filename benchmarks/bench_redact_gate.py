"""Benchmark of the redaction gate on ordinary payloads: what a payload without a secret costs.

Most recorded payloads hold no secret, and :meth:`Redactor.redact_payload` answers them with
the gate alone (docs/secrets.md, ``redact_gate.py``): one ``bytes.translate`` and one search.
Each anchor byte of the gate costs every payload, so a rule that needs a new one is measured
here before and after. This script times, on realistic payloads that hold no secret:

* ``chat``: an OpenAI chat completion request (system prompt, a user question, an assistant
  turn with two tool calls whose ``arguments`` are JSON text, two tool results, the tools'
  schemas): about 5 KB;
* ``tool``: a tool's result, a search with a few KB of English snippets;
* ``event``: a small tool event (about 450 bytes, as in ``bench_recording.py``);
* ``reply``: an assistant reply of a few paragraphs of prose.

For each it prints the median time of ``Redactor.redact_payload`` and of ``gate_passes`` over
``--repeat`` rounds of ``--number`` calls (in CPU time, so that a busy machine counts less),
and whether the gate passed it (a payload it does
not pass goes the slow way, and that is a finding too). Compare two versions of the package
by running the script under each, alternately (``PYTHONPATH=/path/to/other/checkout``).

    python benchmarks/bench_redact_gate.py
    python benchmarks/bench_redact_gate.py --repeat 41 --number 2000
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson

from pytest_rollout.safety.redact import Redactor

PROSE = (
    "The quarterly report shows revenue growing in every region except the north, where "
    "two large customers moved their orders to the spring. Churn stayed under two percent, "
    "and the support team closed most tickets within a day. I would suggest we compare the "
    "margin of the new plans with last year's figures before the planning meeting, and keep "
    "an eye on the shipping costs, which rose sharply after the carrier changed its prices. "
    "Would you like me to draft a summary for the finance team, or look up the invoices that "
    "are still open? Let me know which format works best: a short table, a chart, or a few "
    "bullet points with the key numbers and the risks we discussed on Monday. "
)
SYSTEM = (
    "You are a helpful assistant for the operations team. Answer briefly and cite the "
    "documents you used. When a question needs current data, call the tools: get_weather "
    "for the forecast of a city, search_docs for internal documents, and query_orders for "
    "order data. Never invent numbers; if a tool fails, say so and suggest what to try next."
)


def _tool_schema(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
                "additionalProperties": False,
            },
        },
    }


TOOLS = [
    _tool_schema(
        "get_weather",
        "Get the current weather and the hourly forecast for a city.",
        {
            "city": {"type": "string", "description": "The name of the city, e.g. Paris"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
    ),
    _tool_schema(
        "search_docs",
        "Search the internal documents and return the best matching snippets.",
        {
            "query": {"type": "string", "description": "What to look for"},
            "limit": {"type": "integer", "description": "How many results, at most 20"},
        },
    ),
    _tool_schema(
        "query_orders",
        "Query the order database by region and month.",
        {
            "region": {"type": "string", "description": "north, south, east or west"},
            "month": {"type": "string", "description": "The month, as YYYY-MM"},
        },
    ),
]

SEARCH_RESULT = {
    "results": [
        {
            "title": f"Quarterly planning notes, part {i}",
            "url": f"https://docs.example.org/planning/q{i % 4 + 1}/notes-{i}.html",
            "snippet": PROSE[(i * 37) % 200 : (i * 37) % 200 + 400],
            "score": round(0.93 - i * 0.041, 3),
            "updated": f"2026-0{i % 9 + 1}-1{i % 9}T09:30:00Z",
        }
        for i in range(8)
    ],
    "total": 8,
    "took_ms": 41,
}

CHAT = {
    "model": "gpt-4o-mini",
    "temperature": 0.2,
    "max_tokens": 1024,
    "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "How did the north region do this quarter? " + PROSE[:300]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_Qm3k2xT9a1",
                    "type": "function",
                    "function": {
                        "name": "query_orders",
                        "arguments": orjson.dumps({"region": "north", "month": "2026-03"}).decode(),
                    },
                },
                {
                    "id": "call_Vb81zLr0c4",
                    "type": "function",
                    "function": {
                        "name": "search_docs",
                        "arguments": orjson.dumps(
                            {"query": "north region churn spring orders", "limit": 5}
                        ).decode(),
                    },
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_Qm3k2xT9a1",
            "content": orjson.dumps(
                {
                    "region": "north",
                    "orders": 1284,
                    "revenue": 918233.5,
                    "rows": [{"day": d, "orders": 40 + d % 7} for d in range(1, 15)],
                }
            ).decode(),
        },
        {
            "role": "tool",
            "tool_call_id": "call_Vb81zLr0c4",
            "content": orjson.dumps(SEARCH_RESULT["results"][:3]).decode(),  # type: ignore[index]
        },
        {"role": "assistant", "content": PROSE[:500]},
        {"role": "user", "content": "Thanks. Draft the summary for the finance team, please."},
    ],
    "tools": TOOLS,
}

EVENT = {
    "call_id": "call_7_2_9f3a11c2",
    "name": "search_docs",
    "arguments": {"query": "invoice archive summary", "limit": 5, "region": "eu"},
    "output": [
        {"title": "Invoice archive summary for the finance team", "score": 0.91},
        {"title": "Margin figures by quarter", "score": 0.77},
    ],
    "duration_ms": 412.5,
}

REPLY = {
    "step": 4,
    "model": "gpt-4o-mini",
    "content": PROSE * 3,
    "usage": {"input_tokens": 2210, "output_tokens": 412, "cache_read_input_tokens": 0},
    "stop_reason": "end_turn",
    "tool_calls": [],
}

PAYLOADS = {
    "chat": orjson.dumps(CHAT),
    "tool": orjson.dumps(SEARCH_RESULT),
    "event": orjson.dumps(EVENT),
    "reply": orjson.dumps(REPLY),
}


def _median_ns(call: Callable[[bytes], Any], payload: bytes, repeat: int, number: int) -> float:
    rounds = []
    for _ in range(repeat):
        start = time.process_time_ns()
        for _ in range(number):
            call(payload)
        rounds.append((time.process_time_ns() - start) / number)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--number", type=int, default=1000)
    args = parser.parse_args()
    redactor = Redactor(environ={})
    print(f"{'payload':8} {'bytes':>6} {'passes':>6} {'redact_payload':>15} {'gate_passes':>12}")
    for name, payload in PAYLOADS.items():
        passes = redactor.gate_passes(payload)
        redact = _median_ns(redactor.redact_payload, payload, args.repeat, args.number)
        gate = _median_ns(redactor.gate_passes, payload, args.repeat, args.number)
        print(f"{name:8} {len(payload):6} {passes!s:>6} {redact:12.0f} ns {gate:9.0f} ns")


if __name__ == "__main__":
    main()
