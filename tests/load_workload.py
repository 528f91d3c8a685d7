"""The load test's workload: concurrent sessions of mixed calls against a real `mcp-offload` HTTP/SSE process.

A small, test-only cousin of bench/http_load.py (the tests never execute bench/): every session has its own bearer
token (its own principal) and writes a marker into everything it stores; it offloads a JSON and a log of
`max_bytes`, then makes mixed calls (offload, read, search, query) until it has made `calls` in all. Every reply is
checked for another session's marker; once all sessions are done (still connected), each one tries to read, search
and list its neighbour's outputs. Failures are counted, never raised: the test asserts on the counts.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from support import free_port

TOOLS = ("offload", "read_large_output", "search_large_output", "query_large_output")
_MARKER = re.compile(r'session["=:\s]+"?(S\d{3,})')


@dataclass(frozen=True, slots=True)
class LoadConfig:
    sessions: int
    calls: int  # per session, offloads included
    min_bytes: int
    max_bytes: int
    transport: str = "http"  # http (streamable HTTP) | sse
    mode: str = "legacy"  # legacy (2025-11-25 handshake) | auto (2026-07-28)
    tokens: tuple[str, ...] = ()  # one per session (cycled); empty: no Authorization header
    seed: int = 7
    time_limit_s: float = 60.0


@dataclass(slots=True)
class LoadResult:
    latencies: list[tuple[str, float]] = field(default_factory=list)  # (tool, ms) of each successful call
    errors: list[str] = field(default_factory=list)
    cross_reads: list[str] = field(default_factory=list)
    probes: int = 0  # sessions that tried to reach a live peer's outputs

    def summary(self) -> dict[str, Any]:
        return {
            "calls": len(self.latencies),
            "errors": len(self.errors),
            "cross_reads": len(self.cross_reads),
            "probes": self.probes,
            "all": _percentiles([ms for _, ms in self.latencies]),
            "by_tool": {tool: _percentiles([ms for t, ms in self.latencies if t == tool]) for tool in TOOLS},
            "first_errors": self.errors[:5],
            "first_cross_reads": self.cross_reads[:5],
        }


def _percentiles(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0, "p50": None, "p99": None}
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "p50": statistics.median(ordered),
        "p99": ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))],
    }


class Payloads:
    """Seeded JSON items and log lines, made once; a document is a prefix of them after the session marker."""

    def __init__(self, max_bytes: int, seed: int) -> None:
        rng = random.Random(seed)
        words = ["alpha", "beta", "gamma", "delta", "request", "handled", "user", "cache", "miss", "ok"]
        self.items: list[str] = []
        self.item_ends: list[int] = []
        total = 0
        while total < max_bytes:
            i = len(self.items)
            item = {"id": i, "name": f"item-{i}", "state": "open" if i % 3 else "closed", "text": rng.choice(words)}
            self.items.append(json.dumps(item))
            total += len(self.items[-1]) + 1
            self.item_ends.append(total)
        lines: list[str] = []
        self.line_ends: list[int] = []
        total = 0
        while total < max_bytes:
            i = len(lines)
            level = (
                "ERROR db: timeout after 250 ms" if i % 997 == 500 else "INFO api: " + " ".join(rng.choices(words, k=8))
            )
            lines.append(f"2026-11-21T10:00:{i % 60:02d}Z {level} id={i}")
            total += len(lines[-1]) + 1
            self.line_ends.append(total)
        self.log = "\n".join(lines) + "\n"

    def json_doc(self, marker: str, seq: int, size: int) -> str:
        k = max(1, bisect.bisect_right(self.item_ends, size))
        return f'{{"session": "{marker}", "seq": {seq}, "items": [' + ",".join(self.items[:k]) + "]}"

    def text_doc(self, marker: str, seq: int, size: int) -> str:
        k = max(1, bisect.bisect_right(self.line_ends, size))
        return f"session={marker} seq={seq}\n" + self.log[: self.line_ends[k - 1]]


@contextlib.asynccontextmanager
async def open_client(url: str, transport: str, mode: str, token: str | None) -> AsyncIterator[Client]:
    """An SDK client on streamable HTTP (`url` ends in /mcp) or SSE (`url` ends in /sse), with patient timeouts."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if transport == "sse":
        sse = sse_client(url, headers=headers, timeout=60, sse_read_timeout=600)
        async with Client(sse, mode=mode, read_timeout_seconds=120) as client:
            yield client
    else:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=600)) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=120) as client,
        ):
            yield client


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


class Session:
    """One client's part of the workload: its marker, its outputs (handle, kind, lines), its call count."""

    def __init__(self, index: int, cfg: LoadConfig, payloads: Payloads, result: LoadResult) -> None:
        self.cfg = cfg
        self.payloads = payloads
        self.result = result
        self.marker = f"S{index:03d}"
        self.rng = random.Random(cfg.seed * 100_003 + index)
        self.outputs: list[tuple[str, str, int]] = []
        self.calls = 0

    async def _call(self, client: Client, tool: str, arguments: dict[str, Any]) -> Any:
        started = time.perf_counter()
        try:
            reply = await client.call_tool(tool, arguments)
        except Exception as exc:  # transport failure, timeout: counted as an error
            self.result.errors.append(f"{self.marker} {tool}: {type(exc).__name__}: {exc}"[:300])
            return None
        finally:
            self.calls += 1
        text = _text(reply)
        if reply.is_error:
            self.result.errors.append(f"{self.marker} {tool}: {text[:200]}")
            return None
        self.result.latencies.append((tool, (time.perf_counter() - started) * 1000))
        for found in set(_MARKER.findall(text)) - {self.marker}:
            self.result.cross_reads.append(f"{self.marker} saw {found} in a {tool} reply")
        return reply

    async def offload(self, client: Client, kind: str, size: int) -> None:
        seq = len(self.outputs)
        doc = (self.payloads.json_doc if kind == "json" else self.payloads.text_doc)(self.marker, seq, size)
        reply = await self._call(client, "offload", {"content": doc, "name": f"{self.marker}-{seq}"})
        if reply is not None:
            data = reply.structured_content
            self.outputs.append((data["handle"], data["kind"], data["lines"]))

    async def mixed_call(self, client: Client) -> None:
        op = self.rng.choices(["offload", "read", "search", "query"], weights=[1, 4, 3, 2])[0]
        if op == "offload" or not self.outputs:
            size = self.rng.randint(self.cfg.min_bytes, self.cfg.max_bytes)
            await self.offload(client, self.rng.choice(["json", "text"]), size)
        elif op == "read":
            handle, _, lines = self.rng.choice(self.outputs)
            start = self.rng.randint(1, max(1, lines - 50))
            await self._call(
                client, "read_large_output", {"handle": handle, "start_line": start, "end_line": start + 49}
            )
        elif op == "search":
            handle = self.rng.choice(self.outputs)[0]
            pattern = self.rng.choice([r"timeout after \d+ ms", "item-1[0-9]{3}\\b", "ERROR db"])
            await self._call(client, "search_large_output", {"pattern": pattern, "handle": handle, "max_results": 20})
        else:
            handle = self.rng.choice([h for h, kind, _ in self.outputs if kind == "json"])  # the first is JSON
            query = self.rng.choice([".session", ".items | length", '[.items[] | select(.state == "closed")] | length'])
            reply = await self._call(client, "query_large_output", {"handle": handle, "query": query})
            if (
                reply is not None
                and query == ".session"
                and reply.structured_content["result"].strip('"\n') != self.marker
            ):
                self.result.cross_reads.append(f"{self.marker} queried {reply.structured_content['result'][:40]!r}")

    async def probe_peer(self, client: Client, peer: Session) -> None:
        """Try to reach a peer's outputs by handle, by search and by listing; any success is a cross-session read."""
        if not peer.outputs:
            return
        self.result.probes += 1
        handle = peer.outputs[0][0]
        reply = await client.call_tool("read_large_output", {"handle": handle, "start_line": 1, "end_line": 1})
        if not reply.is_error:
            self.result.cross_reads.append(f"{self.marker} read {peer.marker}'s {handle}")
        reply = await client.call_tool("search_large_output", {"pattern": f"session={peer.marker} ", "literal": True})
        if not reply.is_error and reply.structured_content["total_matches"]:
            self.result.cross_reads.append(f"{self.marker} found {peer.marker}'s text by search")
        reply = await client.call_tool("list_outputs", {})
        if not reply.is_error:
            mine = {h for h, _, _ in self.outputs}
            foreign = [o["handle"] for o in reply.structured_content["outputs"] if o["handle"] not in mine]
            if foreign:
                self.result.cross_reads.append(f"{self.marker} listed {len(foreign)} outputs that are not its own")


async def run_load(url: str, cfg: LoadConfig) -> LoadResult:
    """Run the workload against one endpoint; call failures are counted in the result, not raised."""
    payloads = Payloads(cfg.max_bytes, cfg.seed)
    result = LoadResult()
    sessions = [Session(i, cfg, payloads, result) for i in range(cfg.sessions)]
    finished = 0
    all_finished = anyio.Event()

    def finish() -> None:
        nonlocal finished
        finished += 1
        if finished == len(sessions):
            all_finished.set()

    async def drive(index: int, session: Session) -> None:
        token = cfg.tokens[index % len(cfg.tokens)] if cfg.tokens else None
        done = False
        try:
            async with open_client(url, cfg.transport, cfg.mode, token) as client:
                try:
                    await session.offload(client, "json", cfg.max_bytes)
                    await session.offload(client, "text", cfg.max_bytes)
                    while session.calls < cfg.calls:
                        await session.mixed_call(client)
                finally:
                    done = True
                    finish()
                await all_finished.wait()  # every session still connected: probes run against live peers
                await session.probe_peer(client, sessions[(index + 1) % len(sessions)])
        except Exception as exc:
            result.errors.append(f"{session.marker} session: {type(exc).__name__}: {exc}"[:300])
            if not done:
                finish()

    with anyio.fail_after(cfg.time_limit_s):
        async with anyio.create_task_group() as tg:
            for index, session in enumerate(sessions):
                tg.start_soon(drive, index, session)
    return result


@dataclass
class RunningServer:
    process: subprocess.Popen[bytes]
    url: str
    stderr_path: Path

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then the exit code (SIGKILL after `timeout`)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@contextlib.contextmanager
def mcp_offload_server(store: Path, *, tokens: Sequence[str], transport: str) -> Iterator[RunningServer]:
    """`python -m mcp_offload --transport …` on a free loopback port, its stderr in a file; stopped with SIGTERM."""
    port = free_port()
    stderr_path = store.parent / f"server-{port}.log"
    env = {**os.environ, "MCP_OFFLOAD_TOKEN": ",".join(tokens)}
    argv = [sys.executable, "-m", "mcp_offload", "--transport", transport, "--port", str(port), "--store", str(store)]
    with stderr_path.open("wb") as err:
        process = subprocess.Popen(
            [*argv, "--log-level", "WARNING"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env
        )
    server = RunningServer(process, f"http://127.0.0.1:{port}", stderr_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode}: {stderr_path.read_text()[-2000:]}")
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(server.url + "/healthz", timeout=1.0).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"server did not come up on {server.url}: {stderr_path.read_text()[-2000:]}")
            time.sleep(0.1)
        yield server
    finally:
        server.stop()
