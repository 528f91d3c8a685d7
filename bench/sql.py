"""SQL over a stored CSV / JSON Lines output through our API vs DuckDB's Python API on the same file, same run.

Ours: `outputs.query` with SQL (the DuckDB worker process: the output is loaded once as table t, then each query runs on
it inside the sandbox; the first call includes starting the worker and loading). Yardsticks, on the stored file
itself: `duckdb.sql(...)` reading the file in each query (`read_csv` / `read_json`: what a user of DuckDB on the
file does), and DuckDB with the file loaded once into an in-memory table (the same work as our warm path, without
the process boundary and the sandbox). Interleaved (ours, file, table, ours, ...) so each sees the VM's drift.

Cold start: the first SQL query of a process when the offload of a table has started the worker in the background
(a second later, the model's turn; and at once) against the worker started by that query, and the offload's own
time with and without that background start.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

from mcp_offload.core import outputs
from mcp_offload.core.services import build_services
from mcp_offload.settings import Settings

QUERIES = [
    ("group by", "SELECT status, count(*) AS n, round(sum(amount), 2) AS total FROM {t} GROUP BY 1 ORDER BY 1"),
    ("filter + order + limit", "SELECT id, customer, amount FROM {t} WHERE amount > 900 ORDER BY amount DESC LIMIT 20"),
    ("distinct count", "SELECT count(DISTINCT customer) AS customers FROM {t}"),
]


def parse_size(text: str) -> int:
    units = {"K": 1000, "M": 1000**2, "G": 1000**3}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def make_csv(size: int, rng: random.Random) -> str:
    lines = ["id,customer,status,amount,note"]
    total, i = 0, 0
    while total < size:
        line = f"{i},cust{rng.randint(0, 5000)},{rng.choice(['open', 'paid', 'refunded'])},{rng.random() * 1000:.2f},"
        line += rng.choice(["ok", "late delivery", "gift", "priority shipping requested"])
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def make_jsonl(size: int, rng: random.Random) -> str:
    lines, total, i = [], 0, 0
    while total < size:
        record = {
            "id": i,
            "customer": f"cust{rng.randint(0, 5000)}",
            "status": rng.choice(["open", "paid", "refunded"]),
            "amount": round(rng.random() * 1000, 2),
            "meta": {"source": rng.choice(["web", "app"])},
        }
        line = json.dumps(record)
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def row(case: str, size: str, ours: float, yard: str, yard_ms: float, **extra: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"suite": "sql", "case": case, "size": size, "ours_ms": round(ours, 3)}
    r.update(yardstick=yard, yardstick_ms=round(yard_ms, 3), ratio=round(ours / yard_ms, 2))
    r.update(extra)
    return r


async def _bench(kind: str, content: str, label: str, repeat: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcp-offload-sql-bench-") as tmp:
        services = build_services(Settings(store=tmp))
        scope = outputs.SessionScope.new()
        try:
            handle = (await outputs.offload(services, scope, content)).handle
            async with services.store.open(scope.key, handle) as output:
                assert output.path is not None
                path = Path(output.path)
            reader = f"read_csv('{path}')" if kind == "csv" else f"read_json('{path}', format='newline_delimited')"
            direct = duckdb.connect(":memory:", config={"threads": 1})
            loaded = duckdb.connect(":memory:", config={"threads": 1})
            loaded.execute(f"CREATE TABLE t AS FROM {reader}")
            first_query = QUERIES[0][1]
            t = time.perf_counter()
            await outputs.query(services, scope, handle, first_query.format(t="t"))
            first = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            direct.execute(first_query.format(t=reader)).fetchall()
            once = (time.perf_counter() - t) * 1000
            rows.append(
                row(f"{kind}: first query (starts the worker, loads)", label, first, "duckdb on the file", once)
            )
            for name, query in QUERIES:
                ours_ms, file_ms, table_ms = [], [], []
                for _ in range(repeat):
                    t = time.perf_counter()
                    out = await outputs.query(services, scope, handle, query.format(t="t"))
                    ours_ms.append((time.perf_counter() - t) * 1000)
                    t = time.perf_counter()
                    got = direct.execute(query.format(t=reader)).fetchall()
                    file_ms.append((time.perf_counter() - t) * 1000)
                    t = time.perf_counter()
                    loaded.execute(query.format(t="t")).fetchall()
                    table_ms.append((time.perf_counter() - t) * 1000)
                assert out.results == len(got)
                ours, on_file, on_table = (statistics.median(x) for x in (ours_ms, file_ms, table_ms))
                rows.append(row(f"{kind}: {name}", label, ours, "duckdb on the file", on_file))
                rows.append(row(f"{kind}: {name}", label, ours, "duckdb, table loaded once", on_table))
        finally:
            await services.aclose()
    return rows


async def _first_query(content: str, prestart: bool, pause_s: float) -> tuple[float, float]:
    """(ms of the offload, ms of the first SQL query `pause_s` after it) in a fresh runner, with the worker started
    in the background by the offload (as the server does) or by the query itself (the runner's prestart off)."""
    with tempfile.TemporaryDirectory(prefix="mcp-offload-sql-bench-") as tmp:
        services = build_services(Settings(store=tmp))
        if not prestart:
            services.sql.prestart = lambda: False  # type: ignore[method-assign]
        scope = outputs.SessionScope.new()
        try:
            t = time.perf_counter()
            handle = (await outputs.offload(services, scope, content)).handle
            offload_ms = (time.perf_counter() - t) * 1000
            await asyncio.sleep(pause_s)  # the model's turn between the offload and its first query
            t = time.perf_counter()
            await outputs.query(services, scope, handle, QUERIES[0][1].format(t="t"))
            return offload_ms, (time.perf_counter() - t) * 1000
        finally:
            await services.aclose()


async def _cold_start(content: str, label: str, repeat: int) -> list[dict[str, Any]]:
    """The first SQL query of a process, the worker pre-started by the offload of a table vs started by the query;
    and what the pre-start costs the offload. Interleaved (on, off, on, ...)."""
    rows = []
    for pause_s in (1.0, 0.0):
        on_offload: list[float] = []
        on_query: list[float] = []
        off_offload: list[float] = []
        off_query: list[float] = []
        for _ in range(repeat):
            for prestart, offload_ms, query_ms in ((True, on_offload, on_query), (False, off_offload, off_query)):
                spent = await _first_query(content, prestart, pause_s)
                offload_ms.append(spent[0])
                query_ms.append(spent[1])
        when = f"{pause_s:g} s after the offload"
        ours, yard = statistics.median(on_query), statistics.median(off_query)
        rows.append(row(f"csv: first query of a process, {when}", label, ours, "worker started by the query", yard))
        if pause_s:
            ours, yard = statistics.median(on_offload), statistics.median(off_offload)
            rows.append(row("csv: offload that pre-starts the SQL worker", label, ours, "no pre-start", yard))
    return rows


def run(args: Any) -> list[dict[str, Any]]:
    size = parse_size(getattr(args, "sql_size", None) or ("1M" if args.quick else "20M"))
    label = f"{size / 1e6:.0f}MB"
    rng = random.Random(5)
    rows = asyncio.run(_bench("csv", make_csv(size, rng), label, args.repeat))
    rows += asyncio.run(_bench("jsonl", make_jsonl(size, rng), label, args.repeat))
    rows += asyncio.run(_cold_start(make_csv(100_000, rng), "100KB", max(3, args.repeat)))
    return rows
