"""Graceful shutdown (http/run.py, shutdown_gate.py, in_flight.py): a SIGTERM during load on a real
`mcp-offload --transport both` process drains calls, exits 0, leaves no orphans and a consistent store.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from mcp import MCPError

from mcp_offload.mcp_server.tools import result_of
from mcp_offload.serve.http.in_flight import InFlight
from mcp_offload.serve.http.rpc_errors import SHUTTING_DOWN
from mcp_offload.serve.http.shutdown_gate import ShutdownGate
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.handles import scope_key
from mcp_offload.web.token_check import principal_id
from support import HANG_TIMEOUT_S, alive, descendants, free_port
from support.http_transport import (
    TOKEN_A,
    TOKEN_B,
    connect,
    wait_healthy,
)


async def test_sigterm_during_load_is_graceful(tmp_path: Path) -> None:
    store = tmp_path / "store"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "mcp_offload", "--transport", "both", "--port", str(port), "--store", str(store)]
    log = tmp_path / "server.log"
    env = {**os.environ, "MCP_OFFLOAD_TOKEN": f"{TOKEN_A},{TOKEN_B}"}
    with log.open("wb") as err:
        process = await anyio.open_process(
            [*argv, "--log-level", "INFO"], stdin=subprocess.DEVNULL, stderr=err, env=env
        )
    acknowledged: dict[str, str] = {}  # handle -> sha256 of the content, for 2026-07-28 clients (principal scope)
    stop, running = anyio.Event(), anyio.Event()  # running: two outputs acknowledged, the load is on
    try:
        await wait_healthy(base)

        async def load(transport: str, mode: str, n: int) -> None:
            with contextlib.suppress(Exception):  # the server goes away under it: errors are expected here
                async with connect(base, transport, mode, TOKEN_A) as client:
                    i = 0
                    while not stop.is_set():
                        content = f"client {transport}-{mode}-{n} #{i}\n" + "line of text\n" * 20_000
                        r = await client.call_tool("offload", {"content": content})
                        if not r.is_error and mode == "auto":
                            acknowledged[result_of(r)["handle"]] = hashlib.sha256(content.encode()).hexdigest()
                            if len(acknowledged) >= 2:
                                running.set()
                        await client.call_tool("search_large_output", {"pattern": "#\\d+", "max_results": 5})
                        i += 1

        async with anyio.create_task_group() as tg:
            for n, (transport, mode) in enumerate([("http", "auto"), ("http", "legacy"), ("sse", "legacy")] * 2):
                tg.start_soon(load, transport, mode, n)
            with anyio.fail_after(HANG_TIMEOUT_S):  # the load runs (a fixed 2 s was not always enough under load)
                await running.wait()
            children = descendants(process.pid)
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(HANG_TIMEOUT_S):
                await process.wait()
            stop.set()
            # the server is gone: a client still waiting on it (the SDK may wait for an answer forever once its
            # transport broke) has nothing more to get, and the run must not hang on it
            tg.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    stderr = log.read_text()
    assert process.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "shutting down: waiting" in stderr and "still running after the grace period" not in stderr
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert any(line.get("path") == "/mcp" and line.get("status") == 200 for line in lines)
    assert TOKEN_A not in stderr and TOKEN_B not in stderr
    assert not [pid for pid in children if bool(alive([pid]))], "orphaned children"
    assert len(acknowledged) >= 2  # the load did run

    # store consistent: nothing half-written, every listed output opens and reads back whole, every
    # acknowledged one is there intact
    assert [p.name for p in (store / "v1" / "tmp").iterdir()] == []
    fs = FilesystemStore(store)
    scopes_dir = store / "v1" / "scopes"
    total = 0
    for scope_dir in scopes_dir.iterdir():
        for meta in await fs.list(scope_dir.name):
            async with fs.open(scope_dir.name, meta.handle) as output:
                assert len(output.read_bytes(0, meta.size)) == meta.size == len(output.data)
            total += 1
    principal_scope = scope_key("principal:" + principal_id(TOKEN_A))
    for handle, digest in acknowledged.items():
        async with fs.open(principal_scope, handle) as output:
            assert hashlib.sha256(output.read_bytes(0, output.meta.size)).hexdigest() == digest
    assert total >= len(acknowledged)
    await fs.aclose()


def _ctx(request_id: int | None) -> Any:
    """The two things the drain middleware read from a request context."""
    return SimpleNamespace(request_id=request_id, request=None)


async def test_the_gate_refuses_requests_once_closed_but_lets_notifications_through() -> None:
    gate, calls = ShutdownGate(), []

    async def handler(ctx: Any) -> dict[str, Any]:
        calls.append(ctx.request_id)
        return {"ok": True}

    assert await gate(_ctx(1), handler) == {"ok": True}
    gate.close()
    with pytest.raises(MCPError, match="shutting down") as refused:
        await gate(_ctx(2), handler)
    assert refused.value.code == SHUTTING_DOWN
    assert await gate(_ctx(None), handler) == {"ok": True}
    assert calls == [1, None]
    response = gate.refusal()
    assert response.status_code == 503 and json.loads(bytes(response.body))["error"]["code"] == SHUTTING_DOWN


async def test_in_flight_counts_requests_and_wait_idle_returns_when_they_end() -> None:
    in_flight, release = InFlight(), anyio.Event()
    assert await in_flight.wait_idle(0.1)  # nothing in flight

    async def slow(ctx: Any) -> None:
        await release.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(in_flight, _ctx(1), slow)
        tg.start_soon(in_flight, _ctx(2), slow)
        tg.start_soon(in_flight, _ctx(None), slow)  # a notification is not counted
        await anyio.sleep(0.05)
        assert in_flight.count == 2
        assert not await in_flight.wait_idle(0.1)  # the grace period runs out
        release.set()
        assert await in_flight.wait_idle(5)
    assert in_flight.count == 0
