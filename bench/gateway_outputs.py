"""bench/gateway.py's tool outputs: seeded JSON documents, logs, diffs and small listings, each with a fact planted
in its middle, and the `Scenario` that says which output each step of a session produces."""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llm_upstream.errors import ApiKind


def fact(step: int) -> str:
    return f"FACT-{step}-{random.Random(step).randbytes(4).hex()}"


def json_output(rng: random.Random, size: int, step: int) -> str:
    rows: list[dict[str, Any]] = []
    total = 0
    while total < size:
        row = {
            "id": len(rows),
            "sku": f"SKU-{rng.randint(10**5, 10**6)}",
            "region": rng.choice(["eu", "us", "ap"]),
            "price": round(rng.uniform(1, 900), 2),
            "tags": rng.sample(["new", "sale", "bulk", "eol", "gift"], 2),
            "note": " ".join(rng.choice(["ok", "late", "restock", "audit", "hold"]) for _ in range(6)),
        }
        rows.append(row)
        total += 150
    rows[len(rows) // 2]["note"] = f"escalated: {fact(step)}"
    return json.dumps({"step": step, "items": rows}, indent=1)


def log_output(rng: random.Random, size: int, step: int) -> str:
    lines, total = [], 0
    services = ["api", "worker", "db", "cache", "auth"]
    while total < size:
        level = rng.choices(["INFO", "DEBUG", "WARN", "ERROR"], [60, 25, 10, 5])[0]
        line = (
            f"2026-11-24T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}."
            f"{rng.randint(0, 999):03d}Z {level:5} {rng.choice(services)}[{rng.randint(100, 999)}]: "
            f"request id={rng.randint(10**8, 10**9)} took {rng.randint(1, 3000)}ms "
            f"status={rng.choice([200, 200, 404, 500])}"
        )
        lines.append(line)
        total += len(line) + 1
    lines.insert(len(lines) // 2, f"2026-11-24T12:00:00.000Z ERROR worker[777]: root cause {fact(step)}")
    return "\n".join(lines)


def diff_output(rng: random.Random, size: int, step: int) -> str:
    parts, total, n = [], 0, 0
    while total < size:
        name = f"src/module_{rng.randint(1, 80)}/file_{n}.py"
        hunk = [f"diff --git a/{name} b/{name}", f"--- a/{name}", f"+++ b/{name}", f"@@ -{n * 10},7 +{n * 10},8 @@"]
        for _ in range(rng.randint(6, 20)):
            sign = rng.choice([" ", " ", "+", "-"])
            hunk.append(
                f"{sign}    value_{rng.randint(0, 999)} = compute(x{rng.randint(0, 9)}, retries={rng.randint(1, 5)})"
            )
        block = "\n".join(hunk)
        parts.append(block)
        total += len(block) + 1
        n += 1
    parts.insert(len(parts) // 2, f"+    # {fact(step)}")
    return "\n".join(parts)


def small_output(rng: random.Random, size: int, step: int) -> str:
    return "\n".join(f"file_{step}_{i}.txt  {rng.randint(10, 99_999)} bytes" for i in range(max(1, size // 28)))


KINDS: dict[str, Callable[[random.Random, int, int], str]] = {
    "json": json_output,
    "log": log_output,
    "diff": diff_output,
    "small": small_output,
}


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    api: ApiKind
    steps: list[tuple[str, int]]  # (kind, size in bytes) of each tool output
    retrieve_at: frozenset[int] = frozenset()  # steps at which the model searches an earlier output (gateway)
    tool_heavy: bool = True
    marks: bool = True  # the client sets cache breakpoints (Claude Code does); False: a plain SDK app that sets none

    def output(self, step: int) -> str:
        kind, size = self.steps[step]
        return KINDS[kind](random.Random(zlib.crc32(f"{self.name}/{step}".encode())), size, step)
