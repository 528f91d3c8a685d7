"""The assembled app (http/app.py): /healthz is the one open path; --json-response answers with plain JSON."""

from __future__ import annotations

import httpx2
import pytest

from mcp_offload.core.services import Services
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.serve.http import HttpOptions
from support.http_transport import (
    INIT,
    MCP_HEADERS,
    TOKEN_A,
    connect,
    serving,
)


async def test_healthz(services: Services) -> None:
    async with (
        serving(services, HttpOptions(transport="http", tokens=(TOKEN_A,))) as base,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        r = await http.get(base + "/healthz")
        assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["version"]
        assert (await http.get(base + "/mcp")).status_code == 401  # only /healthz is open


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_json_response_mode(services: Services, mode: str) -> None:
    """--json-response: POSTs are answered with plain JSON (no SSE stream); the tools work the same."""
    options = HttpOptions(transport="http", tokens=(TOKEN_A,), json_response=True)
    async with serving(services, options) as base:
        async with connect(base, "http", mode, TOKEN_A) as client:
            h = result_of(await client.call_tool("offload", {"content": "json mode\n" * 1000}))["handle"]
            r = await client.call_tool("read_large_output", {"handle": h, "start_line": 2, "end_line": 2})
            assert result_of(r)["text"] == "json mode\n"
        async with httpx2.AsyncClient(timeout=10) as http:
            auth = {"Authorization": f"Bearer {TOKEN_A}"}
            response = await http.post(base + "/mcp", json=INIT, headers={**MCP_HEADERS, **auth})
            assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
            assert response.json()["result"]["serverInfo"]["name"] == "mcp-offload"
