"""Redis Cluster scale suite: 1, 2 and 3 `mcp-offload --transport http` processes on one Redis Cluster (3 masters,
3 replicas, `.ci/redis-cluster.sh`) under the same load, as ratios against one process on one Redis node; then what
a master's failover costs (SIGKILL of the master holding most sessions, 2 processes under load).

Load (seeded, closed loop): `--sessions` MCP sessions, each its own principal (bearer token), spread round-robin
over the processes; each one offloads a unique ~64 KB text output and reads 40 lines of it back, again and again, for
`--seconds`. Reported per run: calls/s, p50 and p99 of a call (client side), errors. Yardstick: the same load on one
process with one Redis node, in the same run (the `ratio` column is p50 / the yardstick's p50; the note gives the
throughput and p99 ratios).

    python bench/cluster_scale.py [--sessions 12] [--seconds 8] [--quick]
    python bench/run.py --only cluster_scale

What a 2-core machine can show: the cost of the cluster path (WAIT for a replica's ack, the store-wide ledger's
extra round trips, MOVED-free slot routing) against one node, and that processes sharing one cluster stay correct
and lose nothing across a failover. What it cannot show: scaling. The load generator, every server process and the
six redis-servers share the same two cores, so more processes only split the same CPU; throughput that grows with
processes needs one core per process and the nodes on their own machines.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import redis

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the servers and clients are the tests' own helpers
sys.path.insert(0, str(HERE.parent))

from mcp_offload.mcp_server.tools import result_of  # noqa: E402
from support import free_port  # noqa: E402
from support.load_workload import RunningServer, open_client, percentiles, serve  # noqa: E402
from support.store import RedisCluster, RedisServer  # noqa: E402


def _token(i: int) -> str:
    return f"cluster-bench-{i:04d}-" + "k" * 20


@contextlib.contextmanager
def services(store: str, count: int, sessions: int, logs: Path) -> Iterator[list[RunningServer]]:
    """`count` HTTP service processes on `store`, every session's token known to each."""
    env = {**os.environ, "MCP_OFFLOAD_TOKEN": ",".join(_token(i) for i in range(sessions))}
    with contextlib.ExitStack() as stack:
        running = []
        for _ in range(count):
            port = free_port()
            argv = [sys.executable, "-m", "mcp_offload", "--transport", "http", "--port", str(port)]
            argv += ["--store", store, "--log-level", "WARNING"]
            running.append(
                stack.enter_context(serve(argv, port=port, log=logs / f"server-{port}.log", health="/healthz", env=env))
            )
        yield running


class Tally:
    def __init__(self) -> None:
        self.latencies_ms: list[float] = []
        self.failed_at: list[float] = []
        self.ok_at: list[float] = []


async def _session(url: str, index: int, until: float, tally: Tally) -> None:
    rng = random.Random(index)
    async with open_client(url + "/mcp", "http", "auto", _token(index)) as client:
        seq = 0
        while time.monotonic() < until:
            seq += 1
            words = " ".join(f"w{rng.randrange(10**6)}" for _ in range(12))
            text = "".join(f"session {index} call {seq} line {n}: {words}\n" for n in range(600))
            for name, args in (("offload", {"content": text, "name": f"s{index}-{seq}"}), ("read", None)):
                started = time.monotonic()
                try:
                    if name == "offload":
                        result = await client.call_tool("offload", args or {})
                        handle = None if result.is_error else result_of(result).get("handle")
                        if not handle:
                            raise RuntimeError("offload failed")
                    else:
                        result = await client.call_tool("read_large_output", {"handle": handle, "start": 1, "end": 40})
                        if result.is_error:
                            raise RuntimeError("read failed")
                except Exception:  # a failed call (the failover window): counted, then the loop goes on
                    tally.failed_at.append(time.monotonic())
                    await anyio.sleep(0.1)
                    break
                tally.latencies_ms.append((time.monotonic() - started) * 1000)
                tally.ok_at.append(time.monotonic())


async def _load(urls: list[str], sessions: int, seconds: float, kill: Any = None) -> tuple[Tally, float]:
    tally = Tally()
    started = time.monotonic()
    until = started + seconds
    async with anyio.create_task_group() as tg:
        for i in range(sessions):
            tg.start_soon(_session, urls[i % len(urls)], i, until, tally)
        if kill is not None:
            await anyio.sleep(seconds / 3)
            kill()
    return tally, time.monotonic() - started


def _row(case: str, tally: Tally, elapsed: float, base: dict[str, float] | None) -> dict[str, Any]:
    pct = percentiles(tally.latencies_ms)
    p50, p99 = float(pct["p50"] or 0), float(pct["p99"] or 0)
    rate = len(tally.latencies_ms) / elapsed
    row: dict[str, Any] = {"suite": "cluster_scale", "case": case, "ours_ms": p50, "p99_ms": p99}
    row.update({"calls_per_s": rate, "errors": len(tally.failed_at)})
    if base is not None:
        row.update({"yardstick": "1 process, 1 node", "yardstick_ms": base["p50"], "ratio": p50 / base["p50"]})
        row["note"] = (
            f"{rate:.1f} calls/s = {rate / base['rate']:.2f}x; p99 {p99:.0f} ms = {p99 / base['p99']:.2f}x; "
            f"{len(tally.failed_at)} errors"
        )
    else:
        row["note"] = f"{rate:.1f} calls/s; p99 {p99:.0f} ms; {len(tally.failed_at)} errors"
    return row


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    sessions = int(getattr(args, "sessions", 0) or (6 if args.quick else 12))
    seconds = float(getattr(args, "seconds", 0) or (4 if args.quick else 8))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp)
        node = RedisServer().start()
        try:
            with services(node.url, 1, sessions, logs) as running:
                tally, elapsed = anyio.run(_load, [s.url for s in running], sessions, seconds)
        finally:
            node.stop()
        pct = percentiles(tally.latencies_ms)
        base = {"p50": float(pct["p50"] or 1), "p99": float(pct["p99"] or 1), "rate": len(tally.latencies_ms) / elapsed}
        rows.append(_row("1 process, 1 node (yardstick)", tally, elapsed, None))
        cluster = RedisCluster(logs / "cluster", node_timeout_ms=1000).start()
        try:
            for count in (1, 2, 3):
                with services(cluster.url, count, sessions, logs) as running:
                    tally, elapsed = anyio.run(_load, [s.url for s in running], sessions, seconds)
                rows.append(_row(f"{count} process(es), cluster 3+3", tally, elapsed, base))
            rows.append(_failover(cluster, sessions, seconds * 2, logs, base))
        finally:
            cluster.stop()
    return rows


def _failover(
    cluster: RedisCluster, sessions: int, seconds: float, logs: Path, base: dict[str, float]
) -> dict[str, Any]:
    """2 processes under load; a third of the way in, SIGKILL one master. Recovery: from the kill to the first
    successful call after the last failed one."""
    killed: list[float] = []

    def kill() -> None:
        for port in cluster.ports:
            if redis.Redis(port=port).info("replication").get("role") == "master":
                os.kill(cluster.pid(port), signal.SIGKILL)
                killed.append(time.monotonic())
                return

    with services(cluster.url, 2, sessions, logs) as running:
        tally, elapsed = anyio.run(_load, [s.url for s in running], sessions, seconds, kill)
    row = _row("failover: SIGKILL a master, 2 processes", tally, elapsed, base)
    last_fail = max(tally.failed_at, default=killed[0] if killed else 0.0)
    after = [t for t in tally.ok_at if t > last_fail]
    recovered = (min(after) - killed[0]) if after and killed else float("nan")
    row["failed_calls"], row["recover_s"] = len(tally.failed_at), recovered
    row["note"] = f"{len(tally.failed_at)} call(s) failed; recovered {recovered:.1f} s after the kill; " + row["note"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=str(HERE / "results" / "cluster_scale.json"))
    args = parser.parse_args()
    from bench.run import report

    report(run(args), Path(args.out))


if __name__ == "__main__":
    main()
