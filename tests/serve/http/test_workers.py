"""`mcp-offload --transport http --stateless --workers 2` as a user runs it (a real process tree), through the real MCP
SDK client in both protocol eras (2026-07-28 and the 2025-11-25 handshake, `mode="legacy"`): an output offloaded
through one worker is read through the other (the store is shared; every request stands alone), /stats counts
every worker's calls whichever worker answers, SIGTERM drains both workers, leaves no process behind and exits 0.
A configuration one process could serve but N could not (handshake sessions, SSE) is refused in one line."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_offload.cli import main
from mcp_offload.mcp_server.tools import result_of
from support import HANG_TIMEOUT_S, alive, cmdline, descendants, free_port, text_of
from support.http_transport import TOKEN_A, connect, document, wait_healthy

MAX_READS = 40  # fresh connections until both workers have served (the kernel picks the worker)


def log_lines(log: Path) -> list[dict[str, Any]]:
    out = []
    for line in log.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            if line.startswith("{"):
                out.append(json.loads(line))
    return out


def mcp_pids(log: Path, since: int = 0) -> list[int]:
    """The pid of the worker behind each request to /mcp (the access log's lines), from line `since` on."""
    return [line["pid"] for line in log_lines(log)[since:] if line.get("path") == "/mcp" and "pid" in line]


def until(condition: Callable[[], bool], timeout_s: float = HANG_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


async def test_two_workers_serve_both_eras_over_one_store(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "server.log"
    base = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "mcp_offload", "--transport", "http", "--stateless", "--workers", "2",
            "--port", str(port), "--store", str(tmp_path / "store"), "--log-level", "INFO"]  # fmt: skip
    with log.open("wb") as err:
        process = await anyio.open_process(
            argv, stdin=subprocess.DEVNULL, stderr=err, env={**os.environ, "MCP_OFFLOAD_TOKEN": TOKEN_A}
        )
    reads = 0
    try:
        await wait_healthy(base)
        await anyio.to_thread.run_sync(
            until, lambda: any("workers serving" in ln.get("msg", "") for ln in log_lines(log))
        )
        workers = {p for p in descendants(process.pid) if "mcp_offload" in cmdline(p) and "--workers" in cmdline(p)}
        assert len(workers) == 2
        for mode in ("auto", "legacy"):
            since = len(log_lines(log))
            async with connect(base, "http", mode, TOKEN_A) as client:
                r = await client.call_tool("offload", {"content": document(mode, 1), "name": mode})
                assert not r.is_error, text_of(r)
                handle = result_of(r)["handle"]
            for _ in range(MAX_READS):
                async with connect(base, "http", mode, TOKEN_A) as client:  # a new connection each time
                    r = await client.call_tool(
                        "query_large_output", {"handle": handle, "query": ".marker", "raw": True}
                    )
                    assert text_of(r).strip() == mode, text_of(r)
                reads += 1
                if set(mcp_pids(log, since)) == workers:
                    break
            else:
                pytest.fail(f"{MAX_READS} connections ({mode}) all went to one worker: {mcp_pids(log, since)}")
        figures = [httpx2.get(base + "/stats", headers={"Authorization": f"Bearer {TOKEN_A}"}, timeout=30).json()
                   for _ in range(6)]  # fmt: skip
        assert all(f["total"] == figures[0]["total"] for f in figures)  # whichever worker answers
        assert figures[0]["total"]["results_offloaded"] == 2 and figures[0]["total"]["retrievals"] == reads
        children = descendants(process.pid)
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(HANG_TIMEOUT_S):
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    stderr = log.read_text()
    assert process.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr and TOKEN_A not in stderr
    assert {line["pid"] for line in log_lines(log) if "shutting down: waiting" in line.get("msg", "")} == workers
    with contextlib.suppress(AssertionError):  # the ingest workers end at the end of their input, after their parent
        await anyio.to_thread.run_sync(until, lambda: not alive(children), 10.0)
    assert alive(children) == [], "orphaned children"


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--transport", "http"], "needs --stateless"),
        (["--transport", "sse", "--stateless"], "--transport http only"),
        (["--transport", "both", "--stateless"], "--transport http only"),
        ([], "for the HTTP transports"),
        (["--transport", "http", "--stateless", "--workers", "0"], "at least 1"),
    ],
)
def test_what_several_workers_cannot_serve_is_refused_in_one_line(
    flags: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--workers", "2", "--store", str(tmp_path / "store"), "--no-config", *flags])
    assert exited.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines
    assert not (tmp_path / "store").exists()
