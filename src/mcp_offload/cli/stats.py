"""`mcp-offload stats`: what offloading saved, from the durable savings record (savings/) beside the store.

    mcp-offload stats [--store DIR|redis://…] [--days N] [--json]

A table per day and per server/tool, with a total per day and overall; `--json` prints the same document as the
HTTP transport's `/stats` (plus, under "gateway", the LLM gateway's per-session figures and its cost against going
direct; in the table, a second section). Server "(direct)" is our own tools: direct `offload` calls and the
retrieval tools. "by handle" is the tokens of stored outputs the proxy passed to upstream tools as
`offload://outputs/<handle>` arguments (minus the references), which the model did not have to write out; it counts
in the net saving with what was kept out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import anyio

from mcp_offload.cachesafe.record import record_beside
from mcp_offload.cli.exit_status import CommandDeclined
from mcp_offload.cli.own_parser import main_on_own_parser, own_parser
from mcp_offload.cli.store_flags import add_redis_store_flags, redis_store_overrides
from mcp_offload.cli.store_location import missing_store, nothing_stored_yet, unused_default_store
from mcp_offload.errors import OperatorError
from mcp_offload.gateway.status import record_stats, stats_lines
from mcp_offload.savings import SavingsRow, last_days, open_savings, summarize, summary_json
from mcp_offload.savings.record import MAX_DAYS
from mcp_offload.settings import Settings

DIRECT_LABEL = "(direct)"
_COLUMNS = ("seen", "offloaded", "kept out", "by handle", "pulled back", "net saved")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:  # argparse's _SubParsersAction is private
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "stats", help="what offloading saved, per day and per server/tool", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--store",
        help="store directory, redis://host:port/db or redis+cluster://host:port[,host:port…] (env MCP_OFFLOAD_STORE)",
    )
    add_redis_store_flags(parser)
    parser.add_argument("--days", type=int, default=7, help=f"how many UTC days back, today included (1-{MAX_DAYS})")
    parser.add_argument("--json", action="store_true", help="print JSON (the same document as HTTP /stats)")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.days <= MAX_DAYS:
        raise OperatorError(f"--days must be between 1 and {MAX_DAYS}")
    settings = Settings.from_env().with_overrides(store=args.store, **redis_store_overrides(args))
    fresh = unused_default_store(settings)
    if fresh is not None:
        return _nothing_yet(args, fresh)
    location = settings.store_location()
    problem = missing_store(location)
    if problem is not None:
        raise CommandDeclined(problem)
    days = last_days(args.days, time.time())
    try:
        rows = anyio.run(_read, location, args.days)
    except Exception as exc:  # an unreachable Redis, an unreadable directory: one line, no traceback
        raise CommandDeclined(f"cannot read the savings record at {location}: {exc}") from None
    try:
        gateway = anyio.run(_read_gateway, location)
    except Exception as exc:  # the gateway's record beside the store: same failure, same one line
        raise CommandDeclined(f"cannot read the gateway's record at {location}: {exc}") from None
    if args.json:
        print(json.dumps({**summary_json(rows, days), "gateway": gateway}, indent=2))
    else:
        print_table(rows, days, sys.stdout)
        lines = stats_lines(gateway)
        if lines:
            print("", *lines, sep="\n")
    return 0


def _nothing_yet(args: argparse.Namespace, fresh: Path) -> int:
    """The per-user store before the first offload: an empty record (the same document as an empty store's)."""
    if args.json:
        gateway = {"sessions": [], "sessions_total": 0, "totals": {"sessions": 0, "cost_ratio": None}}
        print(json.dumps({**summary_json({}, last_days(args.days, time.time())), "gateway": gateway}, indent=2))
    else:
        print(f"No savings recorded: {nothing_stored_yet(fresh)}.")
    return 0


def parser() -> argparse.ArgumentParser:
    """`mcp-offload stats`'s own parser (its options are what the dispatcher lets precede the command's name)."""
    return own_parser(add_parser)


def main(argv: list[str]) -> int:
    return main_on_own_parser(argv, add_parser, run, "mcp-offload stats")


async def _read(location: str, days: int) -> dict[Any, SavingsRow]:
    record = open_savings(location)
    try:
        return await record.read(days)
    finally:
        await record.aclose()


async def _read_gateway(location: str) -> dict[str, Any]:
    """The LLM gateway's per-session figures (gateway/status.py), read from its record beside the store (alone: the
    services' tokenizer and workers cost a second of CPU and are not needed)."""
    async with record_beside(location) as record:
        return await record_stats(record)


def print_table(rows: dict[Any, SavingsRow], days: list[str], out: TextIO) -> None:
    summaries, total = summarize(rows, days)
    lines: list[tuple[str, ...]] = [("day", "server", "tool", *_COLUMNS)]
    for summary in summaries:
        if not summary.rows:
            continue
        for server, tool, row in summary.rows:
            lines.append((summary.day, server or DIRECT_LABEL, tool, *_figures(row)))
        lines.append((summary.day, "", "total", *_figures(summary.total)))
    lines.append(("all", "", "total", *_figures(total)))
    if len(lines) == 2:
        print(f"No savings recorded in the last {len(days)} day(s).", file=out)
        return
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for n, line in enumerate(lines):
        cells = [c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))]
        print("  ".join(cells).rstrip(), file=out)
        if n == 0 or line[2] == "total":
            print("  ".join("-" * w for w in widths), file=out)


def _figures(row: SavingsRow) -> tuple[str, ...]:
    return (
        f"{row.results_seen:,}",
        f"{row.results_offloaded:,}",
        f"{row.tokens_kept_out:,}",
        f"{row.tokens_passed_by_handle:,}",
        f"{row.tokens_retrieved:,}",
        f"{row.tokens_net:,}",
    )
