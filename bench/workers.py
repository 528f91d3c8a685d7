"""Workers suite: throughput of small turns through `mcp-offload gateway --workers N`, N=1 and N=2 in one run.

The scripted Anthropic upstream (tests/llm_upstream) runs in its own process; a load process keeps `--concurrency`
connections busy with small Messages turns (nothing to offload: the gateway's fixed cost per turn) for `--seconds`,
first straight to the upstream (the yardstick: what the upstream and the client alone can do on this machine), then
through a gateway with 1 worker, then with 2, repeated `--repeat` times in alternating order so a shared machine's
drift lands on both. Each row gives the time per turn at full load (1000 / turns per second, all connections
together) and, for N=2, the ratio to N=1 in the same round (under 1: the second worker helped); the gateway's CPU
seconds per turn (every worker and the parent); and how many turns each worker served (the kernel hands each new
connection to whichever worker is waiting on the shared socket).

Everything runs on this machine: with 2 cores, the client and the upstream take CPU from the workers, so N=2 can at
best win the share of a core the single worker could not get. The `direct` row shows the ceiling.

    python bench/run.py --only workers [--quick]
    python bench/workers.py [--seconds 8] [--concurrency 16] [--repeat 3] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent / "tests"))  # the scripted upstream and the gateway process helper
sys.path.insert(0, str(HERE.parent))

from bench.gateway_upstream import child_upstream  # noqa: E402
from llm_upstream import UpstreamServer  # noqa: E402
from support import descendants, free_port  # noqa: E402
from support.gateway_process import gateway_args, wait_healthy  # noqa: E402

MODEL = "claude-sonnet-4-6"
HEADERS = {"anthropic-version": "2023-06-01", "content-type": "application/json", "x-api-key": "sk-bench"}


def small_body(i: int) -> bytes:
    messages = [
        {"role": "user", "content": "what time is it?"},
        {"role": "assistant", "content": "Let me think."},
        {"role": "user", "content": f"small turn {i}"},
    ]
    return json.dumps({"model": MODEL, "max_tokens": 64, "messages": messages}).encode()


# -- the load (its own process, so the bench's interpreter does not share the GIL with it) ---------------------------
async def _load(base: str, seconds: float, concurrency: int) -> dict[str, Any]:
    done, errors = 0, 0
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx2.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        for i in range(concurrency):  # warm up every connection
            await client.post("/v1/messages", content=small_body(i), headers=HEADERS)
        stop = time.monotonic() + seconds

        async def one(worker: int) -> None:
            nonlocal done, errors
            i = worker
            while time.monotonic() < stop:
                answer = await client.post("/v1/messages", content=small_body(i), headers=HEADERS)
                if answer.status_code == 200:
                    done += 1
                else:
                    errors += 1
                i += concurrency

        started = time.monotonic()
        await asyncio.gather(*(one(w) for w in range(concurrency)))
        elapsed = time.monotonic() - started
    return {"turns": done, "errors": errors, "seconds": elapsed}


def load(base: str, seconds: float, concurrency: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--load", base, str(seconds), str(concurrency)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return dict(json.loads(done.stdout))


def cpu_s(pids: list[int]) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def served_by(log: Path, since: int) -> dict[int, int]:
    counts: dict[int, int] = {}
    for line in log.read_text(errors="replace").splitlines()[since:]:
        if line.startswith("{") and '"POST /v1/messages' in line:
            pid = json.loads(line).get("pid", 0)
            counts[pid] = counts.get(pid, 0) + 1
    return counts


def through_gateway(direct: str, workers: int, seconds: float, concurrency: int, workdir: Path) -> dict[str, Any]:
    port, log = free_port(), workdir / f"gateway-{workers}.log"
    argv = gateway_args(port, workdir / "store", direct, direct + "/v1", "--workers", str(workers))
    with log.open("wb") as out:
        gateway = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, gateway, lambda: log.read_text(errors="replace"), timeout_s=300)
        deadline = time.monotonic() + 300
        while workers > 1 and "workers serving" not in log.read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise RuntimeError("the workers did not all start")
            time.sleep(0.1)
        processes = [gateway.pid, *descendants(gateway.pid)]
        before_cpu, before_lines = cpu_s(processes), len(log.read_text(errors="replace").splitlines())
        figures = load(base, seconds, concurrency)
        figures["cpu_s"] = cpu_s(processes) - before_cpu
        figures["served_by"] = sorted(served_by(log, before_lines).values(), reverse=True)
        return figures
    finally:
        gateway.terminate()
        gateway.wait(60)


def ms_per_turn(figures: dict[str, Any]) -> float:
    return 1000 * float(figures["seconds"]) / max(int(figures["turns"]), 1)


def measure(counts: list[int], seconds: float, concurrency: int, repeat: int, workdir: Path) -> list[dict[str, Any]]:
    with child_upstream([sys.executable, __file__, "--serve-upstream"]) as (direct, _):
        rounds: list[dict[int, dict[str, Any]]] = []
        directs: list[dict[str, Any]] = []
        load_before = os.getloadavg()[0]
        for r in range(repeat):
            directs.append(load(direct, seconds, concurrency))
            order = counts if r % 2 == 0 else counts[::-1]
            rounds.append({n: through_gateway(direct, n, seconds, concurrency, workdir) for n in order})
        load_after = os.getloadavg()[0]
    common = {"suite": "workers", "size": f"{concurrency} connections x {seconds:g} s",
              "loadavg_before_after": [round(load_before, 2), round(load_after, 2)]}  # fmt: skip
    direct_ms = [ms_per_turn(d) for d in directs]
    rows: list[dict[str, Any]] = [
        {**common, "case": "small turns: direct to the upstream", "ours_ms": round(statistics.median(direct_ms), 3),
         "range_ms": [round(min(direct_ms), 3), round(max(direct_ms), 3)],
         "turns_per_s": [round(d["turns"] / d["seconds"], 1) for d in directs]},
    ]  # fmt: skip
    base_n = counts[0]
    for n in counts:
        ms = [ms_per_turn(r[n]) for r in rounds]
        row: dict[str, Any] = {
            **common,
            "case": f"small turns: gateway --workers {n}",
            "ours_ms": round(statistics.median(ms), 3),
            "range_ms": [round(min(ms), 3), round(max(ms), 3)],
            "turns_per_s": [round(r[n]["turns"] / r[n]["seconds"], 1) for r in rounds],
            "cpu_ms_per_turn": [round(1000 * r[n]["cpu_s"] / max(r[n]["turns"], 1), 3) for r in rounds],
            "served_by": [r[n]["served_by"] for r in rounds],
            "errors": sum(r[n]["errors"] for r in rounds),
        }
        if n == base_n:
            row.update(yardstick="direct", yardstick_ms=round(statistics.median(direct_ms), 3))
        else:
            ratios = [ms_per_turn(r[n]) / ms_per_turn(r[base_n]) for r in rounds]  # the same round's N=1
            row.update(yardstick=f"--workers {base_n}", yardstick_ms=round(statistics.median(ms_per_turn(r[base_n])
                       for r in rounds), 3), ratio=round(statistics.median(ratios), 3),
                       ratio_range=[round(min(ratios), 3), round(max(ratios), 3)])  # fmt: skip
        if "ratio" not in row:
            row["ratio"] = round(row["ours_ms"] / row["yardstick_ms"], 3) if row.get("yardstick_ms") else None
        rows.append(row)
    return rows


def run(args: Any) -> list[dict[str, Any]]:
    quick = bool(getattr(args, "quick", False))
    seconds = getattr(args, "seconds", None) or (3.0 if quick else 8.0)
    concurrency = getattr(args, "concurrency", None) or 16
    repeat = getattr(args, "workers_repeat", None) or (1 if quick else 3)
    counts = [int(n) for n in (getattr(args, "workers", None) or "1,2").split(",")]
    with tempfile.TemporaryDirectory(prefix="mcp-offload-bench-workers-") as tmp:
        return measure(counts, seconds, concurrency, repeat, Path(tmp))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-upstream":
        with UpstreamServer(seed=1) as upstream:
            print(upstream.port, flush=True)
            sys.stdin.read()
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--load":
        base, seconds, concurrency = sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
        print(json.dumps(asyncio.run(_load(base, seconds, concurrency))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, help="load per measurement (default 8; --quick 3)")
    parser.add_argument("--concurrency", type=int, help="connections kept busy (default 16)")
    parser.add_argument("--repeat", dest="workers_repeat", type=int, help="rounds (default 3; --quick 1)")
    parser.add_argument("--workers", help="worker counts, comma-separated (default 1,2)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    rows = run(args)
    print(json.dumps(rows, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
