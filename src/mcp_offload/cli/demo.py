"""`mcp-offload demo`: a worked example over a real stdio subprocess, with the token bill side by side.

It launches `python -m mcp_offload` exactly as an MCP client would, offloads a large JSON API response and a large
log, then finds a planted fact in each with a query, a search and a read. It prints what the model's context would
hold with and without offloading.

    mcp-offload demo [--store DIR|redis://…] [--encoding NAME]

By default it works in a temporary store that is removed afterwards; with `--store` the outputs stay there (in
the named session "demo"), to look at with `mcp-offload outputs list --store …`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import anyio

from mcp_offload.cli.arg_types import OneLineParser
from mcp_offload.cli.exit_status import exit_status
from mcp_offload.settings import Settings

PLANTED_ISSUE = 4242
PLANTED_LOG = "ERROR payment-gateway: upstream timeout after 30000 ms (order=A-77812)"


def make_api_response(rng: random.Random, count: int = 600) -> str:
    states = ["open", "closed"]
    labels = ["bug", "feature", "docs", "perf", "security", "ui"]
    items = []
    for i in range(count):
        number = 4000 + i
        items.append(
            {
                "number": number,
                "title": f"Issue {number}: "
                + " ".join(rng.choice(["fix", "crash", "slow", "add", "docs"]) for _ in range(5)),
                "state": rng.choice(states),
                "labels": rng.sample(labels, rng.randint(0, 3)),
                "user": {"login": f"user{rng.randint(1, 90)}", "id": rng.randint(1000, 99999)},
                "comments": rng.randint(0, 40),
                "body": "Steps to reproduce: "
                + " ".join(rng.choice(["click", "open", "save", "retry"]) for _ in range(30)),
            }
        )
    items[PLANTED_ISSUE - 4000]["labels"] = ["security", "release-blocker"]
    items[PLANTED_ISSUE - 4000]["title"] = "Issue 4242: token leak in debug logs"
    return json.dumps({"total_count": count, "incomplete_results": False, "items": items}, indent=2)


def make_log(rng: random.Random, lines: int = 20_000) -> str:
    services = ["api", "auth", "db", "cache", "payment-gateway", "search"]
    out = []
    for i in range(lines):
        level = rng.choices(["INFO", "DEBUG", "WARN"], [70, 25, 5])[0]
        out.append(
            f"2026-11-21T10:{i // 600 % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z {level} {rng.choice(services)}: "
            f"request {rng.randint(10**5, 10**6)} handled in {rng.randint(1, 900)} ms"
        )
    out[13_377] = "2026-11-21T10:22:17.377Z " + PLANTED_LOG
    return "\n".join(out) + "\n"


def _text(result: Any) -> str:
    from mcp_offload.mcp_server.content_blocks import text_of

    return text_of(result.content)


DEMO_SESSION = "demo"


def parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="mcp-offload demo",
        description="A worked example over a real stdio server: offload a large API response and a large log, find "
        "a planted fact in each (jq query, search, read), and print the token bill with and without offloading.",
    )
    parser.add_argument(
        "--store",
        help="keep the demo's outputs in this store (a directory or redis://…; session 'demo'); "
        "default: a temporary directory, removed afterwards",
    )
    parser.add_argument("--encoding", help="tiktoken encoding for the token counts (default o200k_base)")
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)

    def demo() -> int:
        settings = Settings.from_env().with_overrides(encoding=args.encoding)
        status: int = anyio.run(run_demo, settings, args.store)
        return status

    return exit_status(demo, prog="mcp-offload demo")


@contextlib.contextmanager
def _demo_store(store: str | None) -> Iterator[str]:
    """The given store, or a temporary directory removed afterwards."""
    if store is not None:
        yield store
        return
    with tempfile.TemporaryDirectory(prefix="mcp-offload-demo-") as temporary:
        yield temporary


async def run_demo(settings: Settings, store_location: str | None = None) -> int:
    """The demo; `store_location`: keep the outputs there (session "demo") instead of in a temporary store."""
    # imported here, not with the module: `demo --help` answers without the MCP SDK (a second of CPU)
    from mcp import Client, StdioServerParameters

    from mcp_offload.core.outputs import SessionScope
    from mcp_offload.mcp_server.tools import result_of
    from mcp_offload.tokens import load_counter

    rng = random.Random(7)
    counter = load_counter(settings.encoding)
    api, log = make_api_response(rng), make_log(rng)
    started = time.perf_counter()
    with _demo_store(store_location) as store:
        session = ["--session", DEMO_SESSION] if store_location is not None else []
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "mcp_offload", "--store", store, "--encoding", settings.encoding, "--no-config", *session],
        )
        seen: list[tuple[str, str]] = []  # (step, text the model would see)
        async with Client(params, read_timeout_seconds=60) as client:
            print(f"Started mcp-offload over stdio (protocol {client.protocol_version}).\n")

            r = await client.call_tool("offload", {"content": api, "name": "GitHub issues API response"})
            api_handle = result_of(r)["handle"]
            seen.append(("offload(API response)", _text(r)))
            print("── offload(200 KB JSON) → what the model sees instead of the response:")
            print(_text(r), "\n")

            r = await client.call_tool("offload", {"content": log, "name": "service log"})
            log_handle = result_of(r)["handle"]
            seen.append(("offload(log)", _text(r)))

            q = '.items[] | select(.labels | index("release-blocker")) | "#\\(.number) \\(.title)"'
            r = await client.call_tool("query_large_output", {"handle": api_handle, "query": q, "raw": True})
            seen.append(("query_large_output", _text(r)))
            print(f"── query_large_output: {q}\n{_text(r)}\n")

            r = await client.call_tool(
                "search_large_output", {"pattern": r"ERROR .*timeout", "handle": log_handle, "context_lines": 1}
            )
            seen.append(("search_large_output", _text(r)))
            print(f"── search_large_output(ERROR .*timeout):\n{_text(r)}\n")
            line = result_of(r)["matches"][0]["line"]

            r = await client.call_tool(
                "read_large_output", {"handle": log_handle, "start_line": line - 2, "end_line": line + 2}
            )
            seen.append(("read_large_output", _text(r)))
            print(f"── read_large_output(lines {line - 2}–{line + 2}):\n{_text(r)}\n")
            found = PLANTED_LOG in _text(r) and str(PLANTED_ISSUE) in seen[2][1]

    inline = counter.count(api) + counter.count(log)
    offloaded = sum(counter.count(text) for _, text in seen)
    print("── context cost (tokens, " + counter.encoding_name + ("" if not counter.estimated else ", ESTIMATED") + ")")
    print(f"{'without offloading (both outputs inline)':<44}{inline:>10,}")
    for step, text in seen:
        print(f"  {step:<42}{counter.count(text):>10,}")
    print(f"{'with mcp-offload (all of the above)':<44}{offloaded:>10,}")
    print(f"{'saved':<44}{inline - offloaded:>10,}  ({100 * (1 - offloaded / inline):.1f}% less)")
    print(f"\nPlanted facts found: {'yes' if found else 'NO'} · took {time.perf_counter() - started:.1f} s")
    await _compaction_section(settings, api, log, store_location)
    if store_location is not None:
        prefix = SessionScope.named(DEMO_SESSION).key[:12]
        print(f"\nThe outputs are kept: mcp-offload outputs list --store {store_location} --session {prefix}")
    return 0 if found else 1


async def _compaction_section(settings: Settings, api_response: str, log_text: str, store_location: str | None) -> None:
    """Your own agent loop: the same two outputs as tool results in an Anthropic message list, compacted."""
    from mcp_offload.compact import AsyncCompactor

    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the release blocker and the timeout."}]
    for call_id, name, result in (("toolu_1", "list_issues", api_response), ("toolu_2", "get_log", log_text)):
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": name, "input": {}}]}
        )
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}]}
        )
    with _demo_store(store_location) as store:
        async with AsyncCompactor(
            store=store, session=DEMO_SESSION, encoding=settings.encoding, jq_workers=1
        ) as compactor:
            compacted = await compactor.compact(messages)
            before, after = await compactor.usage(messages), await compactor.usage(compacted)
    print("\n── your own agent loop: Compactor.compact(messages) on the same outputs as tool results")
    print(f"{'message list before':<44}{before.tokens:>10,}")
    print(f"{'after (results stored, reference + preview)':<44}{after.tokens:>10,}")
