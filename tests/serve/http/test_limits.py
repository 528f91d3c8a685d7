"""Limits with clear errors: body size (http/body_limit.py and the transports' own cap), open sessions (503), idle
sessions expire (streamable HTTP by the SDK, SSE by http/sse_expiry.py).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest
from mcp import MCPError

from mcp_offload.core.services import Services
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.serve.http import HttpOptions
from support.http_transport import (
    INIT,
    MCP_HEADERS,
    connect,
    endpoint_of,
    serving,
)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_body_size_limit(services: Services, mode: str) -> None:
    async with serving(services, HttpOptions(transport="both", max_body_bytes=64_000)) as base:
        async with connect(base, "http", mode) as client:
            with pytest.raises(MCPError, match="too large") as refused:
                await client.call_tool("offload", {"content": "x" * 100_000})
            assert "64,000" in refused.value.message
            r = await client.call_tool("offload", {"content": "x" * 50_000})  # the session is still good
            assert not r.is_error and result_of(r)["bytes"] == 50_000

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the transports' own cap applies
            for _ in range(10):
                yield b" " * 10_000

        async with httpx2.AsyncClient(timeout=10) as http, http.stream("GET", base + "/sse") as stream:
            endpoint = await endpoint_of(stream)
            for path in ("/mcp", endpoint):  # streamable HTTP, and the SSE transport's message endpoint
                response = await http.post(base + path, content=b"{" + b" " * 100_000 + b"}", headers=MCP_HEADERS)
                assert response.status_code == 413
                assert response.json()["error"]["message"].startswith("Request body too large")
                assert (await http.post(base + path, content=chunks(), headers=MCP_HEADERS)).status_code == 413
            assert (await http.post(base + endpoint, json=INIT, headers=MCP_HEADERS)).status_code == 202


async def test_session_limit(services: Services) -> None:
    async with (
        serving(services, HttpOptions(transport="both", max_sessions=2)) as base,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        for _ in range(2):
            assert (await http.post(base + "/mcp", json=INIT, headers=MCP_HEADERS)).status_code == 200
        r = await http.post(base + "/mcp", json=INIT, headers=MCP_HEADERS)
        assert r.status_code == 503 and r.json()["error"]["message"] == "Too many open sessions"
        async with http.stream("GET", base + "/sse") as s1, http.stream("GET", base + "/sse") as s2:
            await endpoint_of(s1)
            await endpoint_of(s2)
            r = await http.get(base + "/sse")
            assert r.status_code == 503 and r.json()["error"]["message"] == "Too many open sessions"
        with anyio.fail_after(5):  # room again once those streams closed
            while True:
                async with http.stream("GET", base + "/sse") as s3:
                    if s3.status_code == 200:
                        break
                await anyio.sleep(0.05)


async def test_idle_sessions_expire(services: Services) -> None:
    async with (
        serving(services, HttpOptions(transport="both", session_idle_timeout=0.4)) as base,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        r = await http.post(base + "/mcp", json=INIT, headers=MCP_HEADERS)
        session = {**MCP_HEADERS, "mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        await http.post(base + "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert (await http.post(base + "/mcp", json=ping, headers=session)).status_code == 200
        await anyio.sleep(1.0)
        r = await http.post(base + "/mcp", json=ping, headers=session)
        assert r.status_code == 404
        started = time.monotonic()
        async with http.stream("GET", base + "/sse") as stream:
            endpoint = await endpoint_of(stream)
            with anyio.fail_after(5):
                async for _ in stream.extensions["test_lines"]:  # the server ends the stream of an idle session
                    pass
        assert 0.3 < time.monotonic() - started < 5
        assert (await http.post(base + endpoint, json=INIT, headers=MCP_HEADERS)).status_code == 404
