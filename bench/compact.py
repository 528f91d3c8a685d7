"""Compaction for agent loops: a 500-message Anthropic history with 200 tool results (50 MB in all).

Cases: the first compaction of the whole history (boundary "all"); an incremental step (one new 250 KB tool result
appended, the rest already compacted) shown next to its yardstick, `outputs.offload` of the same content in the same
run, so `ours - yardstick` is what compaction adds on top of storing the new result (target < 20 ms); and the
compacted history's tokens over the original's (target < 5 %).

Cache and cost per boundary and mode: an agent loop of REQUESTS requests (one tool result more each, a new user turn
every 5), sent as each mode compacts it, against a prompt cache that hits on the longest unchanged message prefix
(tools + system included, unchanged). Cacheable share = cached input tokens / input tokens. Cost at the providers'
cache prices (cachesafe/cost.py: Anthropic 5-minute cache write 1.25x read 0.1x; OpenAI gpt-4.1 read 0.25x, no write
premium), in base-input-token units, next to the yardstick of sending the history uncompacted (`x direct`).
The same requests also go through the tests' simulated Anthropic prompt cache (tests/llm_upstream/cache.py:
automatic caching, breakpoint on the last block, 20-block lookback, 1,024-token minimum, exact token counts), as a
second yardstick with the provider's own rules ("upstream" in the note).
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from mcp_offload.apis.registry import api_named
from mcp_offload.compact import AsyncCompactor
from mcp_offload.core import outputs
from mcp_offload.providers.prices import CachePrices
from mcp_offload.providers.registry import home_prices

# The simulated provider cache is the tests' (tests/llm_upstream); appended, as in bench/gateway.py.
sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))

from llm_upstream.cache import PromptCache
from llm_upstream.prompt import TokenCache, render_anthropic

TURNS, CALLS_PER_TURN, RESULT_BYTES = 50, 4, 250_000


def tool_result(rng: random.Random, n: int) -> str:
    rows: list[dict[str, object]] = []
    size = 0
    while size < RESULT_BYTES:
        row_id = rng.randint(1, 10**9)  # drawn in the order of the published runs: the same data for a seed
        row: dict[str, object] = {
            "id": row_id,
            "name": f"item {n}-{len(rows)}",
            "tags": rng.sample(list("abcdefgh"), 3),
        }
        row["text"] = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "error", "ok"]) for _ in range(20))
        rows.append(row)
        size += 190
    return json.dumps({"call": n, "rows": rows})


def build_history(rng: random.Random) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    n = 0
    for turn in range(TURNS):
        messages.append({"role": "user", "content": f"step {turn}: look into topic {turn}"})
        for _ in range(CALLS_PER_TURN):
            call_id = f"toolu_{n:04d}"
            messages.append(
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": call_id, "name": "fetch", "input": {"n": n}}],
                }
            )
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call_id, "content": tool_result(rng, n)}],
                }
            )
            n += 1
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"topic {turn} done"}]})
    return messages


def new_step(rng: random.Random, n: int) -> list[dict[str, Any]]:
    call_id = f"toolu_new_{n}"
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "fetch", "input": {"n": n}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": tool_result(rng, 10_000 + n)}],
        },
    ]


async def measure(repeat: int) -> list[dict[str, object]]:
    rng = random.Random(9)
    history = build_history(rng)
    total_bytes = sum(
        len(m["content"][0]["content"]) for m in history if m["role"] == "user" and isinstance(m["content"], list)
    )
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="bench-compact-") as store:
        async with AsyncCompactor(store=store, session="bench", store_session_max_bytes=2 * 1024**3) as compactor:
            started = time.perf_counter()
            compacted = await compactor.compact(history, boundary="all")
            first_ms = (time.perf_counter() - started) * 1000
            assert len(compactor.last_report.offloaded) == 200, compactor.last_report  # type: ignore[union-attr]
            rows.append(
                {
                    "suite": "compact",
                    "case": "first compaction (500 msgs, 200 results)",
                    "size": f"{total_bytes / 1e6:.0f} MB",
                    "ours_ms": first_ms,
                }
            )
            steps, offloads, extras = [], [], []
            for i in range(repeat):
                step = new_step(rng, i)
                content = step[1]["content"][0]["content"]
                t0 = time.perf_counter()
                await outputs.offload(compactor.services, compactor.scope, content, name="yardstick", source="bench")
                offload_ms = (time.perf_counter() - t0) * 1000
                grown = [*compacted, *step]
                t0 = time.perf_counter()
                compacted = await compactor.compact(grown, boundary="all")
                step_ms = (time.perf_counter() - t0) * 1000
                steps.append(step_ms)
                offloads.append(offload_ms)
                extras.append(step_ms - offload_ms)
            rows.append(
                {
                    "suite": "compact",
                    "case": "incremental step (+1 result)",
                    "size": f"{len(compacted)} msgs",
                    "ours_ms": statistics.median(steps),
                    "yardstick": "outputs.offload same result",
                    "yardstick_ms": statistics.median(offloads),
                    "ratio": statistics.median(steps) / statistics.median(offloads),
                    "note": f"compaction overhead {statistics.median(extras):.1f} ms (target < 20)",
                }
            )
            before = (await compactor.usage(history)).tokens
            after = (await compactor.usage(compacted[: len(history)])).tokens
            rows.append(
                {
                    "suite": "compact",
                    "case": "compacted / original tokens",
                    "size": f"{before:,} tokens",
                    "ours_ms": None,
                    "note": f"{after:,} tokens = {100 * after / before:.2f}% (target < 5%)",
                }
            )
    return rows


REQUESTS, HEAD_TOKENS = 60, 3_000  # the loop's length; tools + system prompt, the same bytes on every request
RESULT_CHARS = (400, 4_000, 40_000, 120_000)


def loop_history(rng: random.Random, requests: int) -> list[list[dict[str, Any]]]:
    """The client's raw history as sent at each request of the loop."""
    history: list[dict[str, Any]] = []
    sent: list[list[dict[str, Any]]] = []
    for n in range(requests):
        if n % 5 == 0:
            if history:
                history.append({"role": "assistant", "content": [{"type": "text", "text": f"part {n // 5} done"}]})
            history.append({"role": "user", "content": f"next: look into part {n // 5 + 1}"})
        call_id = f"toolu_{n:04d}"
        result = json.dumps({"n": n, "rows": ["x" * 60 + str(i) for i in range(rng.choice(RESULT_CHARS) // 64)]})
        history.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "fetch", "input": {"n": n}}]}
        )
        history.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}]}
        )
        sent.append(list(history))
    return sent


def _tokens(message: dict[str, Any]) -> int:
    return len(json.dumps(message)) // 4 + 4


def cache_figures(requests: list[list[dict[str, Any]]], prices: CachePrices) -> tuple[float, int, float]:
    """(cacheable share, input tokens, cost) of sending `requests` in order through a prefix cache."""
    previous: list[dict[str, Any]] = []
    cached_total = input_total = 0
    cost = 0.0
    for messages in requests:
        same = 0
        while same < min(len(previous), len(messages)) and previous[same] == messages[same]:
            same += 1
        tokens = [_tokens(m) for m in messages]
        cached = (HEAD_TOKENS if previous else 0) + sum(tokens[:same])
        total = HEAD_TOKENS + sum(tokens)
        cost += prices.input_cost(uncached=0, cache_read=cached, cache_write=total - cached)
        cached_total, input_total, previous = cached_total + cached, input_total + total, messages
    return cached_total / input_total, input_total, cost


HEAD_TEXT = "You follow the house rules for tool use, one rule per line.\n" * 250  # ~3k tokens, the same each time
_UPSTREAM_TOKENS = TokenCache()


def upstream_figures(requests: list[list[dict[str, Any]]], prices: CachePrices) -> tuple[float, float]:
    """(cacheable share, cost) of sending `requests` to the simulated Anthropic cache (automatic caching)."""
    cache = PromptCache()
    read = total = 0
    cost = 0.0
    for messages in requests:
        body = {"system": HEAD_TEXT, "messages": messages, "cache_control": {"type": "ephemeral"}}
        usage = cache.anthropic("bench", render_anthropic(body, _UPSTREAM_TOKENS))
        read, total = read + usage.cache_read, total + usage.prompt_tokens
        cost += prices.input_cost(uncached=usage.uncached, cache_read=usage.cache_read, cache_write=usage.cache_write)
    return read / total, cost


MODES: list[tuple[str, Any, int | None]] = [
    ("last-turn (default)", "last-turn", None),
    ("all", "all", None),
    ("keep-first 3", ("keep-first", 3), None),
    ("keep-last 6", ("keep-last", 6), None),
    ("last-turn, window 50k", "last-turn", 50_000),
    ("keep-last 6, window 50k", ("keep-last", 6), 50_000),
]


async def measure_cache(requests: int) -> list[dict[str, object]]:
    raw = loop_history(random.Random(18), requests)
    anthropic, openai = (
        home_prices(api_named("anthropic"), "claude-sonnet-4-6"),
        home_prices(api_named("openai_chat"), "gpt-4.1"),
    )
    direct = {p.provider: cache_figures(raw, p) for p in (anthropic, openai)}
    upstream_direct = upstream_figures(raw, anthropic)
    rows: list[dict[str, object]] = []
    share, tokens, _ = direct[anthropic.provider]
    rows.append(_cache_row("direct (uncompacted)", share, tokens, direct, direct, upstream_direct, upstream_direct))
    for name, boundary, window in MODES:
        with tempfile.TemporaryDirectory(prefix="bench-compact-cache-") as store:
            async with AsyncCompactor(store=store, session="cache") as compactor:
                sent = [
                    await compactor.compact(
                        m, boundary=boundary, context_window=window, retrieval_tools=False, model="claude-sonnet-4-6"
                    )
                    for m in raw
                ]
        ours = {p.provider: cache_figures(sent, p) for p in (anthropic, openai)}
        share, tokens, _ = ours[anthropic.provider]
        rows.append(_cache_row(name, share, tokens, ours, direct, upstream_figures(sent, anthropic), upstream_direct))
    return rows


def _cache_row(
    name: str,
    share: float,
    tokens: int,
    ours: dict[str, tuple[float, int, float]],
    direct: dict[str, tuple[float, int, float]],
    upstream: tuple[float, float],
    upstream_direct: tuple[float, float],
) -> dict[str, object]:
    costs = ", ".join(
        f"{provider}: {ours[provider][2]:,.0f} ({ours[provider][2] / direct[provider][2]:.3f}x direct)"
        for provider in ours
    )
    costs += (
        f"; upstream (Anthropic simulated): cacheable {100 * upstream[0]:.1f}%, "
        f"cost {upstream[1]:,.0f} ({upstream[1] / upstream_direct[1]:.3f}x direct)"
    )
    return {
        "suite": "compact",
        "case": f"cache: {name}",
        "size": f"{tokens:,} input tokens",
        "ours_ms": None,
        "cacheable_share": round(share, 4),
        "note": f"cacheable {100 * share:.1f}%; cost {costs}",
    }


def run(args: Any) -> list[dict[str, object]]:
    rows = anyio.run(measure, max(3, getattr(args, "repeat", 5)))
    return rows + anyio.run(measure_cache, 30 if getattr(args, "quick", False) else REQUESTS)


if __name__ == "__main__":
    for row in anyio.run(measure_cache, REQUESTS):
        print(row)
