"""A bounded load test: concurrent sessions making mixed calls against a real `mcp-offload --transport …` process.

The workload is tests/support/load_workload.py, the one bench/http_load.py runs at full size (50 sessions x 100 calls on
100 KB–1 MB outputs, next to mcp-proxy); here it is kept small and without think time so the test stays well under
30 s on a 2-core machine: zero errors, zero cross-session reads, every session probed a live peer, and the server stops
cleanly on SIGTERM afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.load_workload import LoadConfig, mcp_offload_server, run_load


@pytest.mark.parametrize(
    ("transport", "mode", "sessions", "calls"),
    [("http", "legacy", 10, 20), ("http", "auto", 6, 15), ("sse", "legacy", 6, 15)],
)
async def test_concurrent_sessions_mixed_calls(
    tmp_path: Path, transport: str, mode: str, sessions: int, calls: int
) -> None:
    tokens = tuple(f"load-token-{i:02d}-{'z' * 16}" for i in range(sessions))
    cfg = LoadConfig(
        sessions=sessions,
        calls=calls,
        min_bytes=100_000,
        max_bytes=300_000,
        transport=transport,
        mode=mode,
        tokens=tokens,
        time_limit_s=60,
    )
    with mcp_offload_server(tmp_path / "store", tokens=tokens, transport=transport) as server:
        path = "/sse" if transport == "sse" else "/mcp"
        result = await run_load(server.url + path, cfg)
        returncode = server.stop()
    summary = result.summary(cfg.max_bytes)
    assert summary["errors"] == 0, summary["first_errors"]
    assert summary["cross_reads"] == 0, summary["first_cross_reads"]
    assert summary["probes"] == sessions
    assert summary["calls"] == sessions * calls
    assert {"offload", "read_large_output", "search_large_output", "query_large_output"} <= {
        tool for tool, stats in summary["by_tool"].items() if stats["n"]
    }
    assert 0 < summary["all"]["p50"] <= summary["all"]["p99"] < 30_000
    assert returncode == 0
    assert "Traceback" not in server.stderr_path.read_text()
