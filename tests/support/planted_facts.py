"""A 30-fact agent script for the framework adapters: big tool results with one planted fact each, which the
scripted model must get back through the retrieval tools after the adapter has compacted them away.

Per fact n: the model calls `fetch_report(n)` (a ~110 KB report, fact n on one line in the middle), sees the
compacted reference, and calls `search_large_output` with the handle from that reference and the fact's tag.
After the last fact it answers in text. `next_step(exchanges)` decides, from (tool name, arguments, result) so far.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

FACTS = 30
REPORT_LINES = 1600
HANDLE = re.compile(r"\bout_[A-Za-z0-9_-]+")


def secret(n: int) -> str:
    return "vault-" + hashlib.sha256(f"fact {n}".encode()).hexdigest()[:12]


def tag(n: int) -> str:
    return f"FACT-{n:02d}:"


def big_report(n: int) -> str:
    lines = [
        f"report {n} line {i:05d}: status nominal, latency {(i * 37 + n) % 900} ms, region eu-{i % 7}"
        for i in range(REPORT_LINES)
    ]
    lines[REPORT_LINES // 2 + n] = f"{tag(n)} the code for report {n} is {secret(n)}"
    return "\n".join(lines)


@dataclass(frozen=True)
class Exchange:
    name: str
    arguments: dict[str, Any]
    result: str


@dataclass(frozen=True)
class Step:
    tool: str | None  # None: the final text answer
    arguments: dict[str, Any]
    text: str = ""


def next_step(exchanges: list[Exchange]) -> Step:
    fetched = sum(1 for e in exchanges if e.name == "fetch_report")
    last = exchanges[-1] if exchanges else None
    if last is not None and last.name == "fetch_report":
        found = HANDLE.search(last.result)
        assert found, f"fetch_report {fetched - 1} reached the model uncompacted ({len(last.result):,} chars)"
        return Step("search_large_output", {"handle": found.group(0), "pattern": tag(fetched - 1), "literal": True})
    if fetched < FACTS:
        return Step("fetch_report", {"n": fetched})
    recovered = [e.result for e in exchanges if e.name == "search_large_output"]
    return Step(None, {}, text="\n".join(recovered))


def recovered_all(text: str) -> list[int]:
    """The facts missing from `text` (empty when every secret came back)."""
    return [n for n in range(FACTS) if secret(n) not in text]
