"""bench/gateway.py's report: the terminal table and the Markdown table of docs/benchmarks.md."""

from __future__ import annotations

from typing import Any

COLUMNS = [
    ("scenario", 22),
    ("mode", 9),
    ("cost_x", 7),
    ("tokens_sent", 11),
    ("max_prompt", 10),
    ("hit_share", 9),
    ("breaks", 6),
    ("facts_found", 6),
    ("facts_missing", 6),
    ("upstream_requests", 8),
    ("added_p50_ms", 9),
    ("added_p99_ms", 9),
    ("ttft_p50_ms", 9),
]


def print_table(rows: list[dict[str, Any]]) -> None:
    print("  ".join(name[:width].ljust(width) for name, width in COLUMNS))
    for row in rows:
        cells = []
        for name, width in COLUMNS:
            value = row.get(name)
            text = "" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))
            cells.append(text[:width].ljust(width))
        print("  ".join(cells))


def markdown(rows: list[dict[str, Any]]) -> str:
    """The README table: one line per scenario and mode, then the no-offload probe."""
    lines = [
        "| session (API) | client | cost vs direct | tokens sent | largest prompt | cache hits | breaks | "
        "facts retrieved | added p50 / p99 | TTFT p50 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "tokens_sent" not in r:
            continue
        added = f"{r['added_p50_ms']:.0f} / {r['added_p99_ms']:.0f} ms" if r.get("added_p50_ms") is not None else ""
        ttft = f"{r['ttft_p50_ms']:.0f} ms" if r.get("ttft_p50_ms") is not None else ""
        lines.append(
            f"| {r['scenario']} ({API_LABEL[r['api']]}) | {r['mode']} | {r['cost_x']:.3f}x | {r['tokens_sent']:,} | "
            f"{r.get('max_prompt', 0):,} | {r['hit_share']:.0%} | {r['breaks']} | {facts(r)} | {added} | {ttft} |"
        )
    for r in rows:
        if "tokens_sent" in r:
            continue
        lines.append(
            f"| one call with nothing to offload, {r['turns']} alternating ({API_LABEL[r['api']]}) | gateway | "
            "1.000x | | | | 0 | | "
            f"{r['added_p50_ms']:.1f} / {r['added_p99_ms']:.1f} ms | {r['ttft_p50_ms']:.1f} ms "
            f"(direct {r['direct_ttft_p50_ms']:.1f} ms) |"
        )
    return "\n".join(lines)


def facts(row: dict[str, Any]) -> str:
    asked = row.get("facts_found", 0) + row.get("facts_missing", 0)
    return f"{row['facts_found']}/{asked}" if asked else ""


API_LABEL = {"anthropic": "Anthropic", "openai_chat": "Chat", "responses": "Responses", "gemini": "Gemini"}
