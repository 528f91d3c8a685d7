"""Isolation suite: one agent's big tool results must not stall another agent on a shared `mcp-offload gateway`.

Two agents (two credentials, so two sessions) on one real gateway process, in front of the scripted Anthropic
upstream (tests/llm_upstream) in its own process:

* agent X sends small turns back to back (a short conversation, nothing to offload), each one through the gateway
  and, right after it, the same request straight to the upstream: X's added latency is the difference, pair by
  pair, so the drift of a shared machine lands on both sides alike;
* agent Y sends `--turns` turns (default 5), each carrying one more fresh `--result-mb` MB tool result (default 4);
  its whole history is sent every turn, as agents do, so turn 5 is a 20 MB request of which 4 MB are new. After
  each turn through the gateway Y sends the same request straight to a second scripted upstream, its yardstick.
  That one is Y's own: a scripted upstream is one process with one event loop, and parsing Y's 4-20 MB direct
  requests holds it for 80-230 ms. Shared with X, it held X's gateway call that long, which is no work of the
  gateway (a provider does not queue one customer's request behind another's); before the second upstream those
  stalls were X's whole p99 under Y's load (each slow pair of X ended as Y's direct request did).

Phase 1 measures X alone; phase 2 measures X while Y's turns run (only X's pairs that overlap a Y request count).
Reported: X's added latency p50 / p99 in both phases, the ratio of the p99s (goal: within 2x of X alone, and under
50 ms), and Y's turn times through the gateway against going direct. Y's request bodies are encoded before the
timed phases, and Y sends from its own process, so the bench's own GIL does not stall X's client.

    python bench/run.py --only isolation
    python bench/isolation.py [--pairs 150] [--turns 5] [--result-mb 4] [--gateway-args "--workers 2"]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent / "tests"))  # the scripted upstream and the gateway process helper
sys.path.insert(0, str(HERE.parent))

from bench.gateway_upstream import child_upstream  # noqa: E402
from llm_upstream import UpstreamServer  # noqa: E402
from support import free_port  # noqa: E402
from support.gateway_process import gateway_args, wait_healthy  # noqa: E402

MODEL = "claude-sonnet-4-6"
HEADERS = {"anthropic-version": "2023-06-01", "content-type": "application/json"}
TOOL = {"name": "fetch_logs", "description": "Fetch logs", "input_schema": {"type": "object", "properties": {}}}


def small_body(i: int) -> bytes:
    messages = [
        {"role": "user", "content": "what time is it?"},
        {"role": "assistant", "content": "Let me think."},
        {"role": "user", "content": f"small turn {i}"},
    ]
    return json.dumps({"model": MODEL, "max_tokens": 64, "messages": messages}).encode()


def big_result(size: int, seed: int) -> str:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "request", "handled", "user", "cache", "miss", "ok"]
    lines, total, i = [], 0, 0
    while total < size:
        level = "ERROR" if i % 500 == 250 else "INFO"
        line = (
            f"2026-11-21T10:{i // 60 % 60:02d}:{i % 60:02d}Z {level} api: {' '.join(rng.choices(words, k=12))} id={i}"
        )
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines)


def heavy_bodies(turns: int, size: int) -> list[bytes]:
    """Agent Y's requests: turn k carries k fresh tool results (the history grows as an agent's does)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read the logs of every service"}]
    bodies = []
    for k in range(turns):
        use_id = f"toolu_{k:04d}"
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": use_id, "name": TOOL["name"],
                                                           "input": {}}]})  # fmt: skip
        result = big_result(size, seed=os.getpid() * 100 + k)
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id,
                                                      "content": result}]})  # fmt: skip
        bodies.append(json.dumps({"model": MODEL, "max_tokens": 64, "tools": [TOOL], "messages": messages}).encode())
    return bodies


# -- agent Y in its own process -----------------------------------------------------------------------------------
def agent_y(gateway: str, direct: str, turns: int, size: int, out: Path) -> None:
    """Child: encode the bodies, say "ready", wait for "go", send each turn through the gateway then direct."""
    bodies = heavy_bodies(turns, size)
    print("ready", flush=True)
    sys.stdin.readline()
    spans: list[dict[str, float]] = []
    with httpx2.Client(timeout=600) as http:
        for body in bodies:
            start = time.time()
            r = http.post(gateway + "/v1/messages", content=body, headers={**HEADERS, "x-api-key": "sk-ant-agent-y"})
            end = time.time()
            t = time.perf_counter()
            d = http.post(direct + "/v1/messages", content=body, headers={**HEADERS, "x-api-key": "sk-ant-agent-y"})
            direct_ms = (time.perf_counter() - t) * 1000
            spans.append({"start": start, "end": end, "gateway_ms": (end - start) * 1000, "direct_ms": direct_ms,
                          "status": r.status_code, "direct_status": d.status_code})  # fmt: skip
    out.write_text(json.dumps(spans))


@dataclass(slots=True)
class Pairs:
    added: list[float] = field(default_factory=list)  # gateway minus direct, ms
    at: list[tuple[float, float]] = field(default_factory=list)  # the gateway call's wall-clock span

    def overlapping(self, spans: list[dict[str, float]]) -> list[float]:
        return [a for a, (s, e) in zip(self.added, self.at, strict=True) if any(s < y["end"] and e > y["start"]
                                                                              for y in spans)]  # fmt: skip


def x_pairs(http: httpx2.Client, gateway: str, direct: str, n: int, until: Any = None) -> Pairs:
    pairs = Pairs()
    headers = {**HEADERS, "x-api-key": "sk-ant-agent-x"}
    i = 0
    while (until is None and i < n) or (until is not None and not until()):
        body = small_body(i)
        s, t = time.time(), time.perf_counter()
        r = http.post(gateway + "/v1/messages", content=body, headers=headers)
        g_ms, e = (time.perf_counter() - t) * 1000, time.time()
        t = time.perf_counter()
        d = http.post(direct + "/v1/messages", content=body, headers=headers)
        d_ms = (time.perf_counter() - t) * 1000
        if r.status_code != 200 or d.status_code != 200:
            raise AssertionError(f"agent X: gateway {r.status_code} {r.text[:200]!r}, direct {d.status_code}")
        pairs.added.append(g_ms - d_ms)
        pairs.at.append((s, e))
        i += 1
    return pairs


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(pairs: int, turns: int, result_mb: float, extra: list[str], workdir: Path) -> list[dict[str, Any]]:
    size = int(result_mb * 1_000_000)
    serve = [sys.executable, __file__, "--serve-upstream"]
    with child_upstream(serve) as (direct, _), child_upstream(serve) as (y_upstream, _):
        port, log = free_port(), workdir / "gateway.log"
        argv = gateway_args(port, workdir / "store", direct, direct + "/v1", *extra)
        with log.open("wb") as out:
            gateway = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_healthy(base, gateway, lambda: log.read_text(errors="replace"), timeout_s=300)  # a loaded machine
            return _phases(base, direct, y_upstream, pairs, turns, size, workdir)
        finally:
            gateway.terminate()
            gateway.wait(30)


def _phases(
    gateway: str, direct: str, y_upstream: str, pairs: int, turns: int, size: int, workdir: Path
) -> list[dict[str, Any]]:
    load_before = os.getloadavg()[0]
    out = workdir / "y.json"
    y = subprocess.Popen([sys.executable, __file__, "--agent-y", gateway, y_upstream, str(turns), str(size), str(out)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    with httpx2.Client(timeout=600) as http:
        x_pairs(http, gateway, direct, 20)  # warm up (connections, the gateway's first-request work)
        alone = x_pairs(http, gateway, direct, pairs)
        assert y.stdout is not None and y.stdin is not None
        if y.stdout.readline().strip() != "ready":
            raise RuntimeError("agent Y did not start")
        y.stdin.write("go\n")
        y.stdin.flush()
        loaded = x_pairs(http, gateway, direct, 0, until=lambda: y.poll() is not None)
    if y.wait() != 0:
        raise RuntimeError("agent Y failed")
    spans = json.loads(out.read_text())
    bad = [s for s in spans if s["status"] != 200 or s["direct_status"] != 200]
    if bad:
        raise AssertionError(f"agent Y: non-200 answers {bad}")
    under = loaded.overlapping(spans)
    load = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    a50, a99 = pct(alone.added, 0.5), pct(alone.added, 0.99)
    u50, u99 = pct(under, 0.5), pct(under, 0.99)
    size_label = f"{size / 1e6:g} MB x {turns}"
    common = {"suite": "isolation", "size": size_label, "loadavg_before_after": load}
    y_gw = statistics.median(s["gateway_ms"] for s in spans)
    y_direct = statistics.median(s["direct_ms"] for s in spans)
    return [
        {**common, "case": "agent X alone: added p99", "ours_ms": round(a99, 2), "p50_ms": round(a50, 2),
         "calls": len(alone.added), "note": f"p50 {a50:.2f} ms, n={len(alone.added)}"},
        {**common, "case": "agent X under Y's load: added p99", "ours_ms": round(u99, 2), "p50_ms": round(u50, 2),
         "yardstick": "agent X alone, p99", "yardstick_ms": round(a99, 2), "ratio": round(u99 / a99, 2) if a99 > 0
         else None, "calls": len(under),
         "note": f"p50 {u50:.2f} ms, n={len(under)} overlapping Y; goal: ratio <= 2 and < 50 ms"},
        {**common, "case": "agent Y: one turn (median)", "ours_ms": round(y_gw, 1), "yardstick": "direct",
         "yardstick_ms": round(y_direct, 1), "ratio": round(y_gw / y_direct, 2) if y_direct else None,
         "note": "a fresh result stored each turn, the earlier ones replayed from the decision record"},
    ]  # fmt: skip


def run(args: Any) -> list[dict[str, Any]]:
    quick = bool(getattr(args, "quick", False))
    pairs = getattr(args, "pairs", None) or (40 if quick else 150)
    turns = getattr(args, "turns", None) or (3 if quick else 5)
    result_mb = getattr(args, "result_mb", None) or (1.0 if quick else 4.0)
    extra = shlex.split(getattr(args, "gateway_args", None) or "")
    with tempfile.TemporaryDirectory(prefix="mcp-offload-bench-isolation-") as tmp:
        return measure(pairs, turns, result_mb, extra, Path(tmp))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-upstream":
        with UpstreamServer(seed=1) as upstream:
            print(upstream.port, flush=True)
            sys.stdin.read()
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--agent-y":
        gateway, direct, turns, size, out = sys.argv[2:7]
        agent_y(gateway, direct, int(turns), int(size), Path(out))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, help="agent X's timed pairs alone (default 150; --quick 40)")
    parser.add_argument("--turns", type=int, help="agent Y's turns (default 5; --quick 3)")
    parser.add_argument("--result-mb", type=float, help="each of Y's fresh tool results, MB (default 4; --quick 1)")
    parser.add_argument("--gateway-args", help="extra arguments for `mcp-offload gateway`")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    from bench.run import print_table

    rows = run(args)
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
