"""When an HTTP service (a real process) starts its ingest workers: at launch by default (a shared service: no
client's first big output is prepared in the serving process), or at its first big output with `--ingest-workers-at
first-big-output` or `MCP_OFFLOAD_INGEST_WORKERS_AT` (one client's own service), as the gateway does; a value it does
not know is refused in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from support import HANG_TIMEOUT_S, free_port
from support.child_processes import ingest_workers
from support.gateway_process import wait_healthy
from support.http_transport import connect

CLI = [sys.executable, "-m", "mcp_offload"]
VARIABLE = "MCP_OFFLOAD_INGEST_WORKERS_AT"

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads child processes from /proc")


def _workers_reach(proc: subprocess.Popen[bytes], count: int) -> int:
    deadline = time.monotonic() + HANG_TIMEOUT_S
    while ingest_workers(proc.pid) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return ingest_workers(proc.pid)


async def _offload(base: str, content: str) -> None:
    async with connect(base, "http", "legacy") as client:
        result = await client.call_tool("offload", {"content": content, "name": "big log"})
        assert not result.is_error


def test_at_launch_by_flag_or_at_the_first_big_output_by_the_environment(tmp_path: Path) -> None:
    for when, flags in (("launch", ["--ingest-workers-at", "launch"]), ("first-big-output", [])):
        port = free_port()
        argv = [*CLI, "--no-config", "--transport", "http", "--port", str(port), "--store", str(tmp_path / when)]
        env = {**os.environ, VARIABLE: "first-big-output"}  # the flag wins over the environment
        proc = subprocess.Popen([*argv, *flags], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, proc, lambda: "")
            if when == "launch":
                assert _workers_reach(proc, 2) == 2
                continue
            time.sleep(1.0)  # a worker started at launch would be a child by now (Popen returns once it is)
            assert ingest_workers(proc.pid) == 0
            big = "".join(f"2026-11-28T10:00:{i % 60:02d}Z INFO api: request {i} handled\n" for i in range(9000))
            assert len(big) > 256 * 1024
            anyio.run(_offload, base, big)
            assert _workers_reach(proc, 2) == 2
        finally:
            proc.terminate()
            proc.wait(HANG_TIMEOUT_S)


def test_a_value_it_does_not_know_is_refused_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, VARIABLE: "sometimes"}
    argv = [*CLI, "--no-config", "--transport", "http", "--port", str(free_port()), "--store", str(tmp_path / "s")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=HANG_TIMEOUT_S)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and VARIABLE in lines[0] and "launch, first-big-output" in lines[0], done.stderr
    assert not (tmp_path / "s").exists()
