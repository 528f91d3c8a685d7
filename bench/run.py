"""One command for every benchmark: `python bench/run.py` prints a table and writes bench/results/<name>.json.

Each suite is a module with `run(args) -> list[dict]`; a row has at least `suite`, `case`, `ours_ms`, and where a
yardstick ran in the same run, `yardstick`, `yardstick_ms` and `ratio` (ours / yardstick: lower is better).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the suites are modules of the `bench` package
SUITES = [
    "core",
    "proxy",
    "http_load",
    "redis_store",
    "cluster_scale",
    "compact",
    "previews",
    "first_answer",
    "ranked",
    "sql",
    "gateway",
    "isolation",
    "workers",
]


def machine() -> dict[str, object]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = ["suite", "case", "size", "ours_ms", "yardstick", "yardstick_ms", "ratio", "note"]
    shown = [{c: _fmt(r.get(c)) for c in cols} for r in rows]
    widths = {c: max(len(c), *(len(r[c]) for r in shown)) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols))
    print("  ".join("-" * widths[c] for c in cols))
    for r in shown:
        print("  ".join(r[c].ljust(widths[c]) for c in cols))


def _fmt(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}" if value < 10 else f"{value:.1f}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default=",".join(SUITES), help=f"comma list of suites ({', '.join(SUITES)})")
    parser.add_argument("--sizes", default="100K,10M,100M", help="core suite output sizes")
    parser.add_argument("--ranked-size", default=None, help="ranked suite: one session's outputs in all (default 100M)")
    parser.add_argument("--sql-size", default=None, help="sql suite: the CSV / JSON Lines output size (default 20M)")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per measurement (median reported)")
    parser.add_argument("--quick", action="store_true", help="small sizes and few repetitions (smoke run)")
    parser.add_argument("--out", default=str(HERE / "results" / "latest.json"))
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.repeat = "100K,1M", 2
    rows: list[dict[str, Any]] = []
    for name in [s.strip() for s in args.only.split(",") if s.strip()]:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as exc:
            print(f"[skip] suite {name}: {exc}", file=sys.stderr)
            continue
        print(f"[run] {name} …", file=sys.stderr)
        rows.extend(module.run(args))
    report(rows, Path(args.out))


def report(rows: list[dict[str, Any]], out: Path) -> None:
    """Print the rows' table and write them, with the machine, as JSON to `out`."""
    print_table(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine(), "rows": rows}, indent=2))
    print(f"\nmachine: {machine()}\nwrote {out}")


if __name__ == "__main__":
    main()
