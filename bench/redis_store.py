"""Redis backend next to the filesystem backend: offload, 4 KB read, search and jq on a 10 MB output.

Same calls through the real MCP client (in memory) on both backends in the same run; the ratio is Redis / filesystem.
Starts its own loopback `redis-server` (no persistence) unless REDIS_URL is set; skips loudly without one.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: `bench` from the repo root
from bench.core import NEEDLE, amedian_ms, make_json, make_text, parse_size
from mcp_offload.core.services import build_services
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.settings import Settings


def _start_redis() -> tuple[str, subprocess.Popen[bytes] | None]:
    if os.environ.get("REDIS_URL"):
        return os.environ["REDIS_URL"], None
    if not shutil.which("redis-server"):
        return "", None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return f"redis://127.0.0.1:{port}/0", proc


async def _measure(store: str, text: str, doc: str, repeat: int) -> dict[str, float]:
    services = build_services(Settings(store=store, jq_timeout_s=120))
    out: dict[str, float] = {}
    try:
        async with Client(build_server(services), read_timeout_seconds=600) as client:
            handles: dict[str, str] = {}

            async def offload() -> None:
                r = await client.call_tool("offload", {"content": text})
                handles["text"] = result_of(r)["handle"]

            out["offload 10MB text"] = await amedian_ms(offload, repeat)
            handles["json"] = result_of(await client.call_tool("offload", {"content": doc}))["handle"]
            mid = len(text) // 2

            async def read() -> None:
                args = {"handle": handles["text"], "start": mid, "end": mid + 4095}
                r = await client.call_tool("read_large_output", args)
                assert len(result_of(r)["text"]) == 4096

            async def search() -> None:
                args = {"pattern": NEEDLE, "handle": handles["text"], "literal": True, "case_sensitive": True}
                assert result_of(await client.call_tool("search_large_output", args))["total_matches"] == 1

            async def query() -> None:
                args = {"handle": handles["json"], "query": ".items | length"}
                assert not (await client.call_tool("query_large_output", args)).is_error

            out["read 4KB mid"] = await amedian_ms(read, repeat * 4)
            out["search literal"] = await amedian_ms(search, repeat)
            out["jq .items | length"] = await amedian_ms(query, repeat)
    finally:
        await services.aclose()
    return out


def run(args: Any) -> list[dict[str, Any]]:
    url, proc = _start_redis()
    if not url:
        return [
            {"suite": "redis", "case": "all", "note": "SKIPPED: no redis-server on PATH (bash .ci/run installs it)"}
        ]
    size = parse_size("10M")

    text, doc = make_text(size, random.Random(1)), make_json(size, random.Random(2))
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="mcp-offload-bench-") as tmp:
            fs = anyio.run(_measure, str(Path(tmp) / "store"), text, doc, args.repeat)
            rd = anyio.run(_measure, url, text, doc, args.repeat)
        for case in fs:
            rows.append(
                {
                    "suite": "redis",
                    "case": case,
                    "size": "10M",
                    "ours_ms": round(rd[case], 3),
                    "yardstick": "filesystem",
                    "yardstick_ms": round(fs[case], 3),
                    "ratio": round(rd[case] / fs[case], 2) if fs[case] else None,
                    "note": "Redis backend vs filesystem backend",
                }
            )
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    for row in run(parser.parse_args()):
        print(row)
