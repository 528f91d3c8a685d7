"""SQL over a stored CSV / JSON Lines output through our API vs DuckDB's Python API on the same file, same run.

Ours: `api.query` with SQL (the DuckDB worker process: the output is loaded once as table t, then each query runs on
it inside the sandbox; the first call includes starting the worker and loading). Yardsticks, on the stored file
itself: `duckdb.sql(...)` reading the file in each query (`read_csv` / `read_json`: what a user of DuckDB on the
file does), and DuckDB with the file loaded once into an in-memory table (the same work as our warm path, without
the process boundary and the sandbox). Interleaved (ours, file, table, ours, ...) so each sees the VM's drift.
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

from mcp_offload.core import api
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
        scope = api.SessionScope.new()
        try:
            handle = (await api.offload(services, scope, content)).handle
            async with services.store.open(scope.key, handle) as output:
                assert output.path is not None
                path = Path(output.path)
            reader = f"read_csv('{path}')" if kind == "csv" else f"read_json('{path}', format='newline_delimited')"
            direct = duckdb.connect(":memory:", config={"threads": 1})
            loaded = duckdb.connect(":memory:", config={"threads": 1})
            loaded.execute(f"CREATE TABLE t AS FROM {reader}")
            first_query = QUERIES[0][1]
            t = time.perf_counter()
            await api.query(services, scope, handle, first_query.format(t="t"))
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
                    out = await api.query(services, scope, handle, query.format(t="t"))
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


def run(args: Any) -> list[dict[str, Any]]:
    size = parse_size(getattr(args, "sql_size", None) or ("1M" if args.quick else "20M"))
    label = f"{size / 1e6:.0f}MB"
    rng = random.Random(5)
    rows = asyncio.run(_bench("csv", make_csv(size, rng), label, args.repeat))
    rows += asyncio.run(_bench("jsonl", make_jsonl(size, rng), label, args.repeat))
    return rows
