"""Compaction for agent loops: a 500-message Anthropic history with 200 tool results (50 MB in all).

Cases: the first compaction of the whole history (boundary "all"); an incremental step (one new 250 KB tool result
appended, the rest already compacted) shown next to its yardstick, `api.offload` of the same content in the same
run, so `ours - yardstick` is what compaction adds on top of storing the new result (target < 20 ms); and the
compacted history's tokens over the original's (target < 5 %).
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from typing import Any

import anyio

from mcp_offload.compact import AsyncCompactor
from mcp_offload.core import api

TURNS, CALLS_PER_TURN, RESULT_BYTES = 50, 4, 250_000


def tool_result(rng: random.Random, n: int) -> str:
    rows, size = [], 0
    while size < RESULT_BYTES:
        row = {"id": rng.randint(1, 10**9), "name": f"item {n}-{len(rows)}", "tags": rng.sample(list("abcdefgh"), 3)}
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
                await api.offload(compactor.services, compactor.scope, content, name="yardstick", source="bench")
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
                    "yardstick": "api.offload same result",
                    "yardstick_ms": statistics.median(offloads),
                    "ratio": statistics.median(steps) / statistics.median(offloads),
                    "note": f"compaction overhead {statistics.median(extras):.1f} ms (target < 20)",
                }
            )
            before = (await compactor.usage(history))["tokens"]
            after = (await compactor.usage(compacted[: len(history)]))["tokens"]
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


def run(args: Any) -> list[dict[str, object]]:
    return anyio.run(measure, max(3, getattr(args, "repeat", 5)))


if __name__ == "__main__":
    import types

    for row in run(types.SimpleNamespace(repeat=5)):
        print(row)
