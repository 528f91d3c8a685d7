"""The HTTP load workload: concurrent MCP sessions of mixed calls against one endpoint (`/mcp` or `/sse`).

Shared by tests/serve/http/test_load.py (small, no think time: zero errors, zero cross-session reads) and
bench/http_load.py (50 sessions x 100 calls, stress and paced, next to mcp-proxy); the bench imports it from here,
the tests never execute bench/.

Workload (seeded): every session has its own bearer token (its own principal) and writes a marker into everything it
stores; it offloads a JSON and a log of `max_bytes`, then makes mixed calls until it has made `calls` in all:
offload (`min_bytes`-`max_bytes`), read (50 lines), search (regex, one output) and query (jq), pausing `think_s` on
average between calls. Every reply is checked for another session's marker; once all sessions are done (still
connected), each one tries to read, search and list its neighbour's outputs. Failures are counted, never raised.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import random
import re
import resource
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

from mcp_offload.mcp_server.tools import result_of
from support import HANG_TIMEOUT_S, free_port

TOOLS = ("offload", "read_large_output", "search_large_output", "query_large_output")
ONE_MB_SHARE = 0.9  # outputs at least this share of max_bytes count as "1 MB outputs"
_MARKER = re.compile(r'session["=:\s]+"?(S\d{3,})')


@dataclass(frozen=True, slots=True)
class LoadConfig:
    sessions: int = 50
    calls: int = 100  # per session, offloads included
    min_bytes: int = 100_000
    max_bytes: int = 1_000_000
    transport: str = "http"  # http (streamable HTTP) | sse
    mode: str = "legacy"  # legacy (2025-11-25 handshake) | auto (2026-07-28 on servers that speak it)
    seed: int = 7
    tokens: tuple[str, ...] = ()  # one per session (cycled); empty: no Authorization header
    think_s: float = 0.0  # mean pause between a session's calls (uniform 0.5x-1.5x): an agent's model thinking
    time_limit_s: float = 900.0


@dataclass(slots=True)
class Sample:
    tool: str
    ms: float
    output_bytes: int  # size of the output the call worked on (offload: the content)


@dataclass(slots=True)
class LoadResult:
    samples: list[Sample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cross_reads: list[str] = field(default_factory=list)
    probes: int = 0  # sessions that tried to reach a live peer's outputs
    wall_s: float = 0.0
    client_cpu_s: float = 0.0
    server_cpu_s: float | None = None

    def summary(self, max_bytes: int) -> dict[str, Any]:
        big = [s.ms for s in self.samples if s.tool != "offload" and s.output_bytes >= ONE_MB_SHARE * max_bytes]
        offloads = [s.ms for s in self.samples if s.tool == "offload"]
        calls = [s.ms for s in self.samples]
        by_tool = {tool: percentiles([s.ms for s in self.samples if s.tool == tool]) for tool in TOOLS}
        return {
            "calls": len(calls),
            "errors": len(self.errors),
            "cross_reads": len(self.cross_reads),
            "probes": self.probes,
            "wall_s": round(self.wall_s, 2),
            "throughput_cps": round(len(calls) / self.wall_s, 1) if self.wall_s else None,
            "all": percentiles(calls),
            "on_1mb": percentiles(big),
            "offload": percentiles(offloads),
            "by_tool": by_tool,
            "client_cpu_s": round(self.client_cpu_s, 1),
            "server_cpu_s": None if self.server_cpu_s is None else round(self.server_cpu_s, 1),
            "first_errors": self.errors[:5],
            "first_cross_reads": self.cross_reads[:5],
        }


def percentiles(values: Sequence[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "p50": None, "p99": None, "max": None}
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 1),
        "p99": round(p99, 1),
        "max": round(ordered[-1], 1),
    }


# -- payloads -------------------------------------------------------------------------------------------------------
class Payloads:
    """Seeded JSON items and log lines, generated once; a payload is a prefix of them plus the session marker."""

    def __init__(self, max_bytes: int, seed: int) -> None:
        rng = random.Random(seed)
        words = ["alpha", "beta", "gamma", "delta", "request", "handled", "user", "cache", "miss", "ok"]
        self.items: list[str] = []
        self.item_ends: list[int] = []
        total, i = 0, 0
        while total < max_bytes:
            item = {
                "id": i,
                "name": f"item-{i}",
                "state": "open" if i % 3 else "closed",
                "price": round(rng.random() * 100, 2),
                "owner": {"login": f"user{i % 97}", "active": i % 2 == 0},
                "text": " ".join(rng.choices(words, k=8)),
            }
            encoded = json.dumps(item)
            total += len(encoded) + 1
            self.items.append(encoded)
            self.item_ends.append(total)
            i += 1
        lines, total, i = [], 0, 0
        self.line_ends: list[int] = []
        while total < max_bytes:
            if i % 997 == 500:
                line = f"2026-11-21T10:00:{i % 60:02d}Z ERROR db: timeout after {rng.randint(100, 9999)} ms id={i}"
            else:
                line = f"2026-11-21T10:00:{i % 60:02d}Z INFO api: " + " ".join(rng.choices(words, k=10)) + f" id={i}"
            lines.append(line)
            total += len(line) + 1
            self.line_ends.append(total)
            i += 1
        self.log = "\n".join(lines) + "\n"

    def json_doc(self, marker: str, seq: int, size: int) -> str:
        k = max(1, _count_upto(self.item_ends, size))
        return f'{{"session": "{marker}", "seq": {seq}, "items": [' + ",".join(self.items[:k]) + "]}"

    def text_doc(self, marker: str, seq: int, size: int) -> str:
        k = max(1, _count_upto(self.line_ends, size))
        return f"session={marker} seq={seq}\n" + self.log[: self.line_ends[k - 1]]


def _count_upto(ends: list[int], size: int) -> int:
    return bisect.bisect_right(ends, size)


# -- clients --------------------------------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def open_client(url: str, transport: str, mode: str, token: str | None) -> AsyncIterator[Client]:
    """An SDK client on streamable HTTP (`url` ends in /mcp) or SSE (`url` ends in /sse)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if transport == "sse":
        async with Client(
            sse_client(url, headers=headers, timeout=60, sse_read_timeout=600), mode=mode, read_timeout_seconds=120
        ) as client:
            yield client
    else:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=600)) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=120) as client,
        ):
            yield client


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@dataclass(slots=True)
class Output:
    handle: str
    kind: str
    size: int
    lines: int


class Session:
    def __init__(self, index: int, cfg: LoadConfig, payloads: Payloads, result: LoadResult) -> None:
        self.index = index
        self.cfg = cfg
        self.payloads = payloads
        self.result = result
        self.marker = f"S{index:03d}"
        self.rng = random.Random(cfg.seed * 100_003 + index)
        self.outputs: list[Output] = []
        self.calls = 0

    def _check_reply(self, tool: str, text: str) -> None:
        for found in set(_MARKER.findall(text)):
            if found != self.marker:
                self.result.cross_reads.append(f"{self.marker} saw {found} in a {tool} reply")

    async def _call(self, client: Client, tool: str, arguments: dict[str, Any], output_bytes: int) -> Any:
        started = time.perf_counter()
        try:
            reply = await client.call_tool(tool, arguments)
        except Exception as exc:  # transport failure, timeout: an error, never a crash of the bench
            self.result.errors.append(f"{self.marker} {tool}: {type(exc).__name__}: {exc}"[:300])
            return None
        finally:
            self.calls += 1
        elapsed = (time.perf_counter() - started) * 1000
        text = _text(reply)
        if reply.is_error:
            self.result.errors.append(f"{self.marker} {tool}: {text[:200]}")
            return None
        self.result.samples.append(Sample(tool, elapsed, output_bytes))
        self._check_reply(tool, text)
        return reply

    async def pause(self) -> None:
        if self.cfg.think_s:
            await anyio.sleep(self.cfg.think_s * (0.5 + self.rng.random()))

    async def offload(self, client: Client, kind: str, size: int) -> None:
        seq = len(self.outputs)
        doc = (self.payloads.json_doc if kind == "json" else self.payloads.text_doc)(self.marker, seq, size)
        reply = await self._call(client, "offload", {"content": doc, "name": f"{self.marker}-{seq}"}, len(doc))
        if reply is not None:
            data = result_of(reply)
            self.outputs.append(Output(data["handle"], data["kind"], data["bytes"], data["lines"]))

    async def mixed_call(self, client: Client) -> None:
        op = self.rng.choices(["offload", "read", "search", "query"], weights=[1, 4, 3, 2])[0]
        if op == "offload" or not self.outputs:
            size = self.rng.randint(self.cfg.min_bytes, self.cfg.max_bytes)
            await self.offload(client, self.rng.choice(["json", "text"]), size)
            return
        target = self.rng.choice(self.outputs)
        if op == "read":
            start = self.rng.randint(1, max(1, target.lines - 50))
            args = {"handle": target.handle, "start_line": start, "end_line": start + 49}
            await self._call(client, "read_large_output", args, target.size)
        elif op == "search":
            pattern = self.rng.choice([r"timeout after \d+ ms", "item-1[0-9]{3}\\b", "ERROR db"])
            args = {"pattern": pattern, "handle": target.handle, "max_results": 20}
            await self._call(client, "search_large_output", args, target.size)
        else:
            jsons = [o for o in self.outputs if o.kind == "json"]
            if not jsons:
                await self._call(
                    client, "read_large_output", {"handle": target.handle, "start": 1, "end": 2000}, target.size
                )
                return
            target = self.rng.choice(jsons)
            query = self.rng.choice(
                [".session", ".items | length", '[.items[] | select(.state == "closed") | .id] | length', ".items[7]"]
            )
            reply = await self._call(
                client, "query_large_output", {"handle": target.handle, "query": query}, target.size
            )
            if reply is not None and query == ".session" and result_of(reply)["result"].strip('"\n') != self.marker:
                self.result.cross_reads.append(f"{self.marker} queried {result_of(reply)['result'][:40]!r}")

    async def probe_peer(self, client: Client, peer: Session) -> None:
        """Try to reach a peer's outputs by handle, by search and by listing; any success is a cross-session read."""
        if not peer.outputs:
            return
        self.result.probes += 1
        handle = peer.outputs[0].handle
        reply = await client.call_tool("read_large_output", {"handle": handle, "start_line": 1, "end_line": 1})
        if not reply.is_error:
            self.result.cross_reads.append(f"{self.marker} read {peer.marker}'s {handle}")
        reply = await client.call_tool("search_large_output", {"pattern": f"session={peer.marker} ", "literal": True})
        if not reply.is_error and result_of(reply)["total_matches"]:
            self.result.cross_reads.append(f"{self.marker} found {peer.marker}'s text by search")
        reply = await client.call_tool("list_outputs", {})
        if not reply.is_error:
            mine = {o.handle for o in self.outputs}
            foreign = [o["handle"] for o in result_of(reply)["outputs"] if o["handle"] not in mine]
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

    async def drive(session: Session) -> None:
        token = cfg.tokens[session.index % len(cfg.tokens)] if cfg.tokens else None
        done = False
        try:
            async with open_client(url, cfg.transport, cfg.mode, token) as client:
                try:
                    if cfg.think_s:  # agents do not all start at the same instant
                        await anyio.sleep(2 * cfg.think_s * session.rng.random())
                    await session.offload(client, "json", cfg.max_bytes)
                    await session.pause()
                    await session.offload(client, "text", cfg.max_bytes)
                    while session.calls < cfg.calls:
                        await session.pause()
                        await session.mixed_call(client)
                finally:
                    done = True
                    finish()
                await all_finished.wait()  # every session still connected: probes run against live peers
                await session.probe_peer(client, sessions[(session.index + 1) % len(sessions)])
        except Exception as exc:
            result.errors.append(f"{session.marker} session: {type(exc).__name__}: {exc}"[:300])
            if not done:
                finish()

    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    with anyio.fail_after(cfg.time_limit_s):
        async with anyio.create_task_group() as tg:
            for session in sessions:
                tg.start_soon(drive, session)
    result.wall_s = time.perf_counter() - started
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    result.client_cpu_s = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return result


# -- the server -------------------------------------------------------------------------------------------------
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


def wait_until_up(
    url: str, process: subprocess.Popen[bytes], stderr_path: Path, timeout: float = HANG_TIMEOUT_S
) -> None:
    """Poll `url` until it answers at all; a server that exits or stays silent for `timeout` raises with its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: {stderr_path.read_text()[-2000:]}")
        try:
            httpx2.get(url, timeout=1.0)
            return
        except httpx2.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"server did not come up on {url}: {stderr_path.read_text()[-2000:]}")


@contextlib.contextmanager
def serve(
    argv: Sequence[str], *, port: int, log: Path, health: str, env: dict[str, str] | None = None
) -> Iterator[RunningServer]:
    """Start `argv` (a server listening on loopback `port`, its stderr in `log`), wait until `health` answers, yield
    it; stopped with SIGTERM on the way out."""
    with log.open("wb") as err:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
    server = RunningServer(process, f"http://127.0.0.1:{port}", log)
    try:
        wait_until_up(server.url + health, process, log)
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def mcp_offload_server(
    store: Path,
    *,
    tokens: Sequence[str] = (),
    transport: str = "http",
    extra: Sequence[str] = (),
    log_level: str = "WARNING",
) -> Iterator[RunningServer]:
    """`python -m mcp_offload --transport …` on a free loopback port, its stderr in a file beside the store."""
    port = free_port()
    env = {**os.environ, "MCP_OFFLOAD_TOKEN": ",".join(tokens)}
    argv = [sys.executable, "-m", "mcp_offload", "--transport", transport, "--port", str(port), "--store", str(store)]
    argv += ["--log-level", log_level, *extra]
    with serve(argv, port=port, log=store.parent / f"server-{port}.log", health="/healthz", env=env) as server:
        yield server
