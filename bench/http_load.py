"""HTTP load suite: many concurrent MCP sessions making mixed calls against `mcp-offload --transport http`.

Workload (seeded): every session offloads a ~1 MB JSON and a ~1 MB log, then makes mixed calls until it has made
`calls` in all: offload (100 KB–1 MB), read (50 lines), search (regex, one output) and query (jq). Each session
has its own bearer token (its own principal) and a marker written into everything it stores; every reply is checked
for other sessions' markers, and at the end each session tries to read, search and list a peer's outputs. Zero
errors and zero cross-session reads are required of mcp-offload.

Two scenarios: "stress" (every session calls again as soon as it has an answer: a closed loop that measures the
ceiling) and "paced" (each session thinks ~1 s between calls, as an agent's model does).

Yardstick: the same workload through `mcp-proxy` 0.13.0 (PyPI, in its own venv: a stdio<->HTTP bridge) in front of
`mcp-offload` over stdio. mcp-proxy shares one stdio server among all its HTTP clients, so there every session
lands in one store scope: its cross-session reads are reported, not failed.

    python bench/http_load.py [--sessions 50] [--calls 100] [--transport http|sse] [--mode legacy|auto]
                              [--scenario stress|paced|both] [--think 1.0] [--no-proxy] [--quick]
    python bench/run.py --only http_load [--quick]

Clients and server share this machine: CPU seconds of each side are reported next to the latencies.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import os
import random
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

MCP_PROXY_VERSION = "0.13.0"  # the yardstick; its venv is bench/proxy.py peer_venv's
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
        by_tool = {
            tool: _percentiles([s.ms for s in self.samples if s.tool == tool])
            for tool in ("offload", "read_large_output", "search_large_output", "query_large_output")
        }
        return {
            "calls": len(calls),
            "errors": len(self.errors),
            "cross_reads": len(self.cross_reads),
            "probes": self.probes,
            "wall_s": round(self.wall_s, 2),
            "throughput_cps": round(len(calls) / self.wall_s, 1) if self.wall_s else None,
            "all": _percentiles(calls),
            "on_1mb": _percentiles(big),
            "offload": _percentiles(offloads),
            "by_tool": by_tool,
            "client_cpu_s": round(self.client_cpu_s, 1),
            "server_cpu_s": None if self.server_cpu_s is None else round(self.server_cpu_s, 1),
            "first_errors": self.errors[:5],
            "first_cross_reads": self.cross_reads[:5],
        }


def _percentiles(values: Sequence[float]) -> dict[str, float | int | None]:
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
class _Output:
    handle: str
    kind: str
    size: int
    lines: int


class _Session:
    def __init__(self, index: int, cfg: LoadConfig, payloads: Payloads, result: LoadResult) -> None:
        self.index = index
        self.cfg = cfg
        self.payloads = payloads
        self.result = result
        self.marker = f"S{index:03d}"
        self.rng = random.Random(cfg.seed * 100_003 + index)
        self.outputs: list[_Output] = []
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
            data = reply.structured_content
            self.outputs.append(_Output(data["handle"], data["kind"], data["bytes"], data["lines"]))

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
            if (
                reply is not None
                and query == ".session"
                and reply.structured_content["result"].strip('"\n') != self.marker
            ):
                self.result.cross_reads.append(f"{self.marker} queried {reply.structured_content['result'][:40]!r}")

    async def probe_peer(self, client: Client, peer: _Session) -> None:
        """Try to reach a peer's outputs by handle, by search and by listing; any success is a cross-session read."""
        if not peer.outputs:
            return
        self.result.probes += 1
        handle = peer.outputs[0].handle
        reply = await client.call_tool("read_large_output", {"handle": handle, "start_line": 1, "end_line": 1})
        if not reply.is_error:
            self.result.cross_reads.append(f"{self.marker} read {peer.marker}'s {handle}")
        reply = await client.call_tool("search_large_output", {"pattern": f"session={peer.marker} ", "literal": True})
        if not reply.is_error and reply.structured_content["total_matches"]:
            self.result.cross_reads.append(f"{self.marker} found {peer.marker}'s text by search")
        reply = await client.call_tool("list_outputs", {})
        if not reply.is_error:
            mine = {o.handle for o in self.outputs}
            foreign = [o["handle"] for o in reply.structured_content["outputs"] if o["handle"] not in mine]
            if foreign:
                self.result.cross_reads.append(f"{self.marker} listed {len(foreign)} outputs that are not its own")


async def run_load(url: str, cfg: LoadConfig) -> LoadResult:
    """Run the workload against one endpoint; never raises for call failures (they are counted)."""
    payloads = Payloads(cfg.max_bytes, cfg.seed)
    result = LoadResult()
    sessions = [_Session(i, cfg, payloads, result) for i in range(cfg.sessions)]
    done = 0
    all_done = anyio.Event()

    async def drive(session: _Session) -> None:
        nonlocal done
        token = cfg.tokens[session.index % len(cfg.tokens)] if cfg.tokens else None
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
                    done += 1
                    if done == len(sessions):
                        all_done.set()
                await all_done.wait()  # every session still connected: probes run against live peers
                await session.probe_peer(client, sessions[(session.index + 1) % len(sessions)])
        except Exception as exc:
            result.errors.append(f"{session.marker} session: {type(exc).__name__}: {exc}"[:300])
            if done < len(sessions) and not all_done.is_set():
                done += 1
                if done == len(sessions):
                    all_done.set()

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


# -- servers --------------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_cpu_s(pid: int) -> float:
    """User+system CPU of a process and its reaped children... plus its live descendants (jq workers)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for p in [pid, *descendants(pid)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
    return total


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


@dataclass
class RunningServer:
    process: subprocess.Popen[bytes]
    url: str
    stderr_path: Path

    def stop(self, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def wait_until_up(url: str, process: subprocess.Popen[bytes], stderr_path: Path, timeout: float = 30.0) -> None:
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
def mcp_offload_server(
    store: Path,
    *,
    tokens: Sequence[str] = (),
    transport: str = "http",
    extra: Sequence[str] = (),
    log_level: str = "WARNING",
) -> Any:
    """`python -m mcp_offload --transport …` on a free loopback port; stopped with SIGTERM."""
    port = free_port()
    stderr_path = store.parent / f"server-{port}.log"
    env = {**os.environ, "MCP_OFFLOAD_TOKEN": ",".join(tokens)}
    argv = [sys.executable, "-m", "mcp_offload", "--transport", transport, "--port", str(port), "--store", str(store)]
    with stderr_path.open("wb") as err:
        process = subprocess.Popen(
            [*argv, "--log-level", log_level, *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    server = RunningServer(process, f"http://127.0.0.1:{port}", stderr_path)
    try:
        wait_until_up(server.url + "/healthz", process, stderr_path)
        yield server
    finally:
        server.stop()


def mcp_proxy_bin() -> Path | None:
    """mcp-proxy 0.13.0 in its own venv (it needs mcp 1.x; ours is 2.x): the proxy suite's peer venv, shared."""
    from proxy import MCP_PROXY_VERSION as VERSION
    from proxy import Skip, peer_venv

    try:
        return peer_venv("mcp-proxy", VERSION) / "bin" / "mcp-proxy"
    except Skip as exc:
        print(f"[http_load] {exc}", file=sys.stderr)
        return None


@contextlib.contextmanager
def mcp_proxy_server(binary: Path, store: Path) -> Any:
    """mcp-proxy serving HTTP, spawning `mcp-offload` (stdio) as its one upstream."""
    port = free_port()
    stderr_path = store.parent / f"mcp-proxy-{port}.log"
    argv = [
        str(binary),
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "WARNING", "--pass-environment",
        "--", sys.executable, "-m", "mcp_offload", "--store", str(store),
    ]  # fmt: skip
    with stderr_path.open("wb") as err:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    server = RunningServer(process, f"http://127.0.0.1:{port}", stderr_path)
    try:
        wait_until_up(server.url + "/status", process, stderr_path)
        yield server
    finally:
        server.stop()


async def measure(url: str, pid: int, cfg: LoadConfig) -> LoadResult:
    cpu0 = process_cpu_s(pid)
    result = await run_load(url, cfg)
    result.server_cpu_s = process_cpu_s(pid) - cpu0
    return result


def server_side_ms(log_path: Path) -> dict[str, Any]:
    """Per-tool time inside mcp-offload (from its structured request log): handler + tool, no HTTP, no client."""
    by_tool: dict[str, list[float]] = {}
    for line in log_path.read_text(errors="replace").splitlines():
        if not line.startswith("{") or '"mcp_offload.requests"' not in line:
            continue
        record = json.loads(line)
        if record.get("mcp_method") == "tools/call":
            by_tool.setdefault(record.get("tool") or "?", []).append(float(record["ms"]))
    return {tool: _percentiles(values) for tool, values in sorted(by_tool.items())}


# -- the suite ------------------------------------------------------------------------------------------------------
def _opt(args: Any, name: str, default: Any) -> Any:
    value = getattr(args, name, None) if args is not None else None
    return default if value is None else value


@dataclass(frozen=True, slots=True)
class _Run:
    scenario: str  # "stress" (no pause between calls) | "paced" (agents think between calls)
    target: str  # "ours" | "proxy"
    cfg: LoadConfig


def _plan(args: Any) -> list[_Run]:
    quick = bool(_opt(args, "quick", False))
    sessions = int(_opt(args, "sessions", 10 if quick else 50))
    calls = int(_opt(args, "calls", 20 if quick else 100))
    transport = str(_opt(args, "transport", "http"))
    chosen = _opt(args, "mode", None)
    modes = [chosen] if chosen else (["legacy"] if quick else ["legacy", "auto"])  # mcp-proxy speaks legacy only
    tokens = tuple(f"bench-token-{i:04d}-{'x' * 16}" for i in range(sessions))
    stress = LoadConfig(sessions=sessions, calls=calls, transport=transport, tokens=tokens)
    paced = replace(stress, calls=max(10, calls // 4), think_s=float(_opt(args, "think", 1.0)))
    scenarios = str(_opt(args, "scenario", "stress" if quick else "both"))
    with_proxy = not bool(_opt(args, "no_proxy", False))
    runs: list[_Run] = []
    if scenarios in ("stress", "both"):
        runs += [_Run("stress", "ours", replace(stress, mode=mode)) for mode in modes]
        if with_proxy:
            runs.append(_Run("stress", "proxy", replace(stress, tokens=())))
    if scenarios in ("paced", "both"):
        runs.append(_Run("paced", "ours", paced))
        if with_proxy:
            runs.append(_Run("paced", "proxy", replace(paced, tokens=())))
    return runs


def run(args: Any = None) -> list[dict]:
    """Rows for bench/run.py: p50/p99 latencies and throughput, ours next to mcp-proxy (ratio = ours / proxy)."""
    results: list[tuple[_Run, dict[str, Any]]] = []
    binary: Path | None = None
    with tempfile.TemporaryDirectory(prefix="mcp-offload-http-load-") as tmp:
        for i, planned in enumerate(_plan(args)):
            cfg = planned.cfg
            store = Path(tmp) / f"store-{i}"
            path = "/sse" if cfg.transport == "sse" else "/mcp"
            load_before = os.getloadavg()[0]
            if planned.target == "ours":
                with mcp_offload_server(store, tokens=cfg.tokens, transport=cfg.transport, log_level="INFO") as server:
                    result = anyio.run(measure, server.url + path, server.process.pid, cfg)
                summary = result.summary(cfg.max_bytes)
                summary["server_side_ms"] = server_side_ms(server.stderr_path)
            else:
                binary = binary or mcp_proxy_bin()
                if binary is None:
                    continue
                with mcp_proxy_server(binary, store) as proxy:
                    result = anyio.run(measure, proxy.url + path, proxy.process.pid, cfg)
                summary = result.summary(cfg.max_bytes)
            summary["loadavg_before_after"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
            summary["think_s"] = cfg.think_s
            label = f"{planned.scenario} {planned.target} {cfg.transport} {cfg.mode}"
            print(f"[http_load] {label}: {json.dumps(summary)}", file=sys.stderr)
            results.append((planned, summary))
    return _rows(results)


_METRICS: list[tuple[str, Any]] = [
    ("p50 all calls", lambda s: s["all"]["p50"]),
    ("p99 all calls", lambda s: s["all"]["p99"]),
    ("p50 read/search/query on 1 MB", lambda s: s["on_1mb"]["p50"]),
    ("p99 read/search/query on 1 MB", lambda s: s["on_1mb"]["p99"]),
    ("p50 offload 100 KB-1 MB", lambda s: s["offload"]["p50"]),
    ("p99 offload 100 KB-1 MB", lambda s: s["offload"]["p99"]),
    ("ms per call (1/throughput)", lambda s: round(1000 / s["throughput_cps"], 2) if s["throughput_cps"] else None),
]


def _rows(results: list[tuple[_Run, dict[str, Any]]]) -> list[dict]:
    yard = f"mcp-proxy {MCP_PROXY_VERSION} (stdio)"
    proxies = {planned.scenario: summary for planned, summary in results if planned.target == "proxy"}
    rows: list[dict] = []
    for planned, summary in results:
        cfg = planned.cfg
        size = f"{cfg.sessions}x{cfg.calls}" + (f" think {cfg.think_s:g}s" if cfg.think_s else "")
        name = f"{planned.scenario} {cfg.transport} {cfg.mode}"
        if planned.target == "proxy":
            rows.append({"suite": "http_load", "case": f"{name}: mcp-proxy detail", "size": size, "detail": summary})
            continue
        proxy = proxies.get(planned.scenario) if cfg.mode == "legacy" else None
        for case, pick in _METRICS:
            ours = pick(summary)
            row: dict[str, Any] = {"suite": "http_load", "case": f"{name}: {case}", "size": size, "ours_ms": ours}
            theirs = pick(proxy) if proxy is not None else None
            if ours is not None and theirs:
                row.update(yardstick=yard, yardstick_ms=theirs, ratio=round(ours / theirs, 2))
            rows.append(row)
        note = (
            f"errors={summary['errors']} cross_reads={summary['cross_reads']} "
            f"throughput={summary['throughput_cps']}/s "
            f"cpu server={summary['server_cpu_s']}s client={summary['client_cpu_s']}s"
        )
        if proxy is not None:
            note += (
                f" | proxy: errors={proxy['errors']} cross_reads={proxy['cross_reads']} "
                f"throughput={proxy['throughput_cps']}/s cpu={proxy['server_cpu_s']}s"
            )
        rows.append(
            {"suite": "http_load", "case": f"{name}: correctness", "size": size, "note": note, "detail": summary}
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--transport", choices=["http", "sse"], default="http")
    parser.add_argument("--mode", choices=["legacy", "auto"], default=None, help="default: both (proxy: legacy)")
    parser.add_argument("--no-proxy", action="store_true", help="skip the mcp-proxy yardstick")
    parser.add_argument(
        "--scenario",
        choices=["stress", "paced", "both"],
        default=None,
        help="stress: no pause between calls; paced: agents think ~1 s between calls (default: both; --quick: stress)",
    )
    parser.add_argument("--think", type=float, default=1.0, help="mean think time of the paced scenario (s)")
    parser.add_argument("--quick", action="store_true", help="10 sessions x 20 calls")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "http_load.json"))
    args = parser.parse_args(argv)
    if args.quick:
        args.sessions, args.calls = min(args.sessions, 10), min(args.calls, 20)
    rows = run(args)
    for row in rows:
        if "detail" not in row:
            print(json.dumps(row))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}, "rows": rows}, indent=2)
    )
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
