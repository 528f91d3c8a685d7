"""Helpers for the HTTP tests: the real app under uvicorn in this process (`serving`), the real SDK client over
streamable HTTP or SSE (`connect`), outputs to offload and the isolation check, and helpers for tests that start a
real `mcp-offload` HTTP process (`wait_healthy`, free ports, process trees)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client, MCPError
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from mcp_offload.core.services import Services
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.serve.http import HttpOptions, build_http_app
from support import HANG_TIMEOUT_S, resource_text, text_of

TOKEN_A = "token-a-" + "a" * 24
TOKEN_B = "token-b-" + "b" * 24
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
UPSTREAM = Path(__file__).resolve().parent / "proxy.py"  # a small MCP server for proxy mode
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def wait_healthy(base: str, timeout_s: float = HANG_TIMEOUT_S) -> None:
    """Wait until the server at `base` answers /healthz with 200 (fails after `timeout_s`)."""
    async with httpx2.AsyncClient() as http:
        with anyio.fail_after(timeout_s):
            while True:
                with contextlib.suppress(httpx2.HTTPError):
                    if (await http.get(base + "/healthz")).status_code == 200:
                        return
                await anyio.sleep(0.1)


@contextlib.asynccontextmanager
async def serving(services: Services, options: HttpOptions, extensions: Sequence[Any] = ()) -> AsyncIterator[str]:
    """The real app under uvicorn in this process, on a free loopback port; yields the base URL."""
    built = build_http_app(services, options, extensions=extensions)
    config = uvicorn.Config(built.app, host="127.0.0.1", port=0, log_config=None, access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        for _ in range(500):
            if server.started:
                break
            await anyio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


@contextlib.asynccontextmanager
async def connect(base: str, transport: str, mode: str, token: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if transport == "sse":
        client = Client(sse_client(base + "/sse", headers=headers, timeout=30), mode=mode, read_timeout_seconds=30)
        async with client:
            yield client
    else:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(
                streamable_http_client(base + "/mcp", http_client=http), mode=mode, read_timeout_seconds=30
            ) as client,
        ):
            yield client


def document(marker: str, i: int) -> str:
    items = [{"id": n, "owner": marker, "note": f"{marker} item {n}"} for n in range(200)]
    return json.dumps({"marker": marker, "seq": i, "items": items}, indent=1)


async def offload_some(client: Client, marker: str, count: int = 3) -> list[str]:
    handles = []
    for i in range(count):
        r = await client.call_tool("offload", {"content": document(marker, i), "name": f"{marker}-{i}"})
        assert not r.is_error, text_of(r)
        handles.append(result_of(r)["handle"])
        r = await client.call_tool("query_large_output", {"handle": handles[-1], "query": ".marker", "raw": True})
        assert text_of(r).strip() == marker
    return handles


async def assert_unreachable(client: Client, foreign: list[str], foreign_marker: str, own: list[str]) -> None:
    """`client` can reach its own outputs and none of `foreign`, by any tool or resource."""
    for handle in foreign:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("read_large_output", {"handle": handle, "start_line": 1, "end_line": 3}),
            ("search_large_output", {"pattern": "item", "handle": handle}),
            ("query_large_output", {"handle": handle, "query": ".marker"}),
        ]
        for tool, args in calls:
            r = await client.call_tool(tool, args)
            assert r.is_error and "no output" in text_of(r).lower(), (tool, text_of(r))
            assert foreign_marker not in text_of(r)
        with pytest.raises(MCPError):
            await client.read_resource(f"offload://outputs/{handle}")
    r = await client.call_tool("search_large_output", {"pattern": foreign_marker, "literal": True})
    assert not r.is_error and result_of(r)["total_matches"] == 0, text_of(r)
    r = await client.call_tool("list_outputs", {})
    assert {o["handle"] for o in result_of(r)["outputs"]} == set(own)
    uris = {str(res.uri) for res in (await client.list_resources()).resources}
    assert uris == {f"offload://outputs/{h}" for h in own}
    read = await client.read_resource(f"offload://outputs/{own[0]}")
    assert json.loads(resource_text(read.contents[0]))["marker"] != foreign_marker


async def endpoint_of(stream: httpx2.Response) -> str:
    """The message endpoint from an SSE stream's first event. The line iterator is kept on the response: if it
    were garbage-collected, its finalizer would close the stream (and so end the session)."""
    lines = stream.aiter_lines()
    stream.extensions["test_lines"] = lines
    async for line in lines:
        if line.startswith("data:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("no endpoint event")
