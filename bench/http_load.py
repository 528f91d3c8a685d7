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

Clients and server share this machine: CPU seconds of each side are reported next to the latencies. The workload
itself (sessions, payloads, checks) is tests/support/load_workload.py, which the load test runs on a smaller scale.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the workload and its server are the load test's, shared
sys.path.insert(0, str(HERE.parent))  # run as a script: `bench` from the repo root

from support import descendants, free_port  # noqa: E402
from support.load_workload import (  # noqa: E402
    LoadConfig,
    LoadResult,
    mcp_offload_server,
    percentiles,
    run_load,
    serve,
)

MCP_PROXY_VERSION = "0.13.0"  # the yardstick; its venv is bench/proxy.py peer_venv's


# -- servers --------------------------------------------------------------------------------------------------------
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


def mcp_proxy_bin() -> Path | None:
    """mcp-proxy 0.13.0 in its own venv (it needs mcp 1.x; ours is 2.x): the proxy suite's peer venv, shared."""
    from bench.proxy import MCP_PROXY_VERSION as VERSION
    from bench.proxy import Skip, peer_venv

    try:
        return peer_venv("mcp-proxy", VERSION) / "bin" / "mcp-proxy"
    except Skip as exc:
        print(f"[http_load] {exc}", file=sys.stderr)
        return None


@contextlib.contextmanager
def mcp_proxy_server(binary: Path, store: Path) -> Any:
    """mcp-proxy serving HTTP, spawning `mcp-offload` (stdio) as its one upstream."""
    port = free_port()
    argv = [
        str(binary),
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "WARNING", "--pass-environment",
        "--", sys.executable, "-m", "mcp_offload", "--store", str(store),
    ]  # fmt: skip
    with serve(argv, port=port, log=store.parent / f"mcp-proxy-{port}.log", health="/status") as server:
        yield server


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
    return {tool: percentiles(values) for tool, values in sorted(by_tool.items())}


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


def run(args: Any = None) -> list[dict[str, Any]]:
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


def _rows(results: list[tuple[_Run, dict[str, Any]]]) -> list[dict[str, Any]]:
    yard = f"mcp-proxy {MCP_PROXY_VERSION} (stdio)"
    proxies = {planned.scenario: summary for planned, summary in results if planned.target == "proxy"}
    rows: list[dict[str, Any]] = []
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
    parser.add_argument("--out", default=str(HERE / "results" / "http_load.json"))
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
