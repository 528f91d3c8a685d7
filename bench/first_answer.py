"""The first answer on a big output, in one process: what a log's, a table's or a JSON document's preview costs over
storing plain text of no kind (a head/tail preview), the yardstick in the same run.

Each case is offloaded through the in-process API (`outputs.offload`: encode, index, kind, preview, token count,
store write) into a filesystem store, the cases taking turns, `repeat` times, each time under a fresh scope (a new
output, nothing cached). Two modes: `thread` (`ingest_workers = 0`: all the work in a thread of this process, the
pure CPU cost) and `workers` (the default 2 ingest worker processes, started before measuring: the shared services'
path). Rows give the median and range of wall time, this process's CPU (`time.process_time`) and, with workers, the
workers' CPU (from /proc), and the median of the per-turn differences against plain text. Background builds started
by an offload (passage and structure indexes) finish before the next one is timed.

Last, offloading a JSON document of each `--sizes` size from 1 MB up against `orjson.loads` of the same text (the
core suite's "offload JSON" row without the MCP client), in turns, in both modes.

    python bench/run.py --only first_answer --sizes 10M,100M   # 4 MB log / text / 2 MB CSV / 4 MB JSON, then JSON
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from bench.core import _loads_gc_paused, make_json, make_text, parse_size, settle
from bench.proxy import make_csv, make_prose
from mcp_offload.core import outputs
from mcp_offload.core.services import Services, build_services
from mcp_offload.retrieve.ranked.index_cache import INDEXES
from mcp_offload.settings import Settings

YARDSTICK = "text"
CASES: dict[str, tuple[str, int, Callable[[int, random.Random], str]]] = {
    # case: (label, size, maker): the proxy bench's first-answer cases
    "text": ("4 MB plain text", 4_000_000, make_prose),
    "log": ("4 MB log", 4_000_000, make_text),
    "csv": ("2 MB CSV", 2_000_000, make_csv),
    "json": ("4 MB JSON", 4_000_000, make_json),
}


def _cpu_s(pid: int) -> float:
    """A process's CPU seconds, all its threads (Linux /proc/PID/schedstat: nanoseconds on a CPU)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


def _workers_cpu_s(services: Services) -> float:
    return sum(_cpu_s(worker.process.pid) for worker in services.ingest._all)


async def _quiet() -> None:
    """Wait for the background builds an offload started (they would run into the next measurement)."""
    await settle()  # the structure index's build, and the background freeing of a parsed document
    await anyio.to_thread.run_sync(INDEXES.wait_idle, 60.0)


async def _measure(mode: str, repeat: int, store: Path) -> list[dict[str, Any]]:
    workers = 0 if mode == "thread" else 2
    texts = {case: maker(size, random.Random(size)) for case, (_, size, maker) in CASES.items()}
    services = build_services(Settings(store=str(store), max_output_bytes=20_000_000, ingest_workers=workers))
    wall: dict[str, list[float]] = {case: [] for case in CASES}
    cpu: dict[str, list[float]] = {case: [] for case in CASES}
    wcpu: dict[str, list[float]] = {case: [] for case in CASES}
    try:
        if workers:
            services.ingest.start()
            while len(services.ingest._all) < workers or not services.ingest.ready:  # noqa: ASYNC110
                await anyio.sleep(0.05)
            await anyio.sleep(1.0)
        for text in texts.values():  # a warm-up of each (imports, the tokenizer's caches, the workers' too)
            await outputs.offload(services, outputs.SessionScope.new(), text)
            await _quiet()
        for _ in range(repeat):
            for case, text in texts.items():
                scope = outputs.SessionScope.new()
                w0 = _workers_cpu_s(services) if workers else 0.0
                c0, t0 = time.process_time(), time.perf_counter()
                stored = await outputs.offload(services, scope, text)
                t1, c1 = time.perf_counter(), time.process_time()
                w1 = _workers_cpu_s(services) if workers else 0.0
                assert stored.preview, case
                wall[case].append((t1 - t0) * 1000)
                cpu[case].append((c1 - c0) * 1000)
                wcpu[case].append((w1 - w0) * 1000)
                await _quiet()
    finally:
        await services.aclose()
    rows = []
    for case, (label, _, _) in CASES.items():
        deltas = [a - b for a, b in zip(wall[case], wall[YARDSTICK], strict=True)]
        cpu_deltas = [a - b for a, b in zip(cpu[case], cpu[YARDSTICK], strict=True)]
        w_deltas = [a - b for a, b in zip(wcpu[case], wcpu[YARDSTICK], strict=True)]
        med, yard = statistics.median(wall[case]), statistics.median(wall[YARDSTICK])
        note = (
            f"wall {min(wall[case]):.1f}-{max(wall[case]):.1f} ms; CPU here {statistics.median(cpu[case]):.1f} ms "
            f"({min(cpu[case]):.1f}-{max(cpu[case]):.1f})"
        )
        if workers:
            note += f", in workers {statistics.median(wcpu[case]):.1f} ms"
        if case != YARDSTICK:
            note += (
                f"; over text, per turn: wall {statistics.median(deltas):+.1f} ms "
                f"({min(deltas):+.1f}..{max(deltas):+.1f}), CPU here {statistics.median(cpu_deltas):+.1f}"
            )
            if workers:
                note += f", in workers {statistics.median(w_deltas):+.1f}"
        rows.append(
            {
                "suite": "first_answer",
                "case": f"first answer, {label} ({mode})",
                "size": label.split(" ", 2)[0] + " MB",
                "ours_ms": round(med, 2),
                "yardstick": "4 MB plain text, same mode",
                "yardstick_ms": round(yard, 2),
                "ratio": round(med / yard, 2) if yard else None,
                "over_yardstick_ms": round(statistics.median(deltas), 2),
                "over_yardstick_range_ms": [round(min(deltas), 2), round(max(deltas), 2)],
                "cpu_ms": round(statistics.median(cpu[case]), 2),
                "cpu_over_yardstick_ms": round(statistics.median(cpu_deltas), 2),
                "workers_cpu_ms": round(statistics.median(wcpu[case]), 1) if workers else None,
                "wall_range_ms": [round(min(wall[case]), 2), round(max(wall[case]), 2)],
                "note": note,
            }
        )
    return rows


async def _json_vs_orjson(label: str, mode: str, repeat: int, store: Path) -> dict[str, Any]:
    """Offloading a JSON document against `orjson.loads` of the same text with the GC paused (as the offload
    parses), in turns: in a thread (`ingest_workers = 0`) or in the ingest workers (started and ready first), each
    turn after the previous one's background builds are done."""
    size = parse_size(label)
    text = make_json(size, random.Random(size))
    workers = 0 if mode == "thread" else 2
    settings = Settings(store=str(store), max_output_bytes=2 * size + 1_000_000, ingest_workers=workers)
    services = build_services(settings)
    ours: list[float] = []
    yard: list[float] = []
    try:
        if workers:
            services.ingest.start()
            while len(services.ingest._all) < workers or not services.ingest.ready:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        for _ in range(repeat):
            await _quiet()
            t0 = time.perf_counter()
            _loads_gc_paused(text)
            yard.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            await outputs.offload(services, outputs.SessionScope.new(), text)
            ours.append((time.perf_counter() - t0) * 1000)
        await _quiet()
    finally:
        await services.aclose()
    ratios = [a / b for a, b in zip(ours, yard, strict=True)]
    med, yard_med = statistics.median(ours), statistics.median(yard)
    return {
        "suite": "first_answer",
        "case": f"offload JSON (in process, {mode}) vs orjson.loads",
        "size": label,
        "ours_ms": round(med, 1),
        "yardstick": "orjson.loads, GC paused",
        "yardstick_ms": round(yard_med, 1),
        "ratio": round(med / yard_med, 2),
        "note": f"ours {min(ours):.0f}-{max(ours):.0f} ms, orjson {min(yard):.0f}-{max(yard):.0f} ms, "
        f"ratio per turn {min(ratios):.2f}-{max(ratios):.2f}",
    }


def run(args: Any) -> list[dict[str, Any]]:
    repeat = 3 if args.quick else max(3, args.repeat)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mcp-offload-bench-") as tmp:
        for mode in ("thread", "workers"):
            rows += anyio.run(_measure, mode, repeat, Path(tmp) / mode)
        for label in [s for s in args.sizes.split(",") if s and parse_size(s) >= 1_000_000]:
            for mode in ("thread", "workers"):
                rows.append(anyio.run(_json_vs_orjson, label, mode, repeat, Path(tmp) / f"json-{label}-{mode}"))
    return rows
