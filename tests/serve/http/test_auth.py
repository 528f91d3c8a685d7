"""Bearer tokens (http/auth.py): 401 and nothing touched without the right token, sessions bound to the token that
opened them, stable principals, short tokens refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from mcp_offload.core.services import Services
from mcp_offload.serve.http import HttpOptions
from mcp_offload.web.token_check import principal_id
from support.http_transport import (
    INIT,
    MCP_HEADERS,
    TOKEN_A,
    TOKEN_B,
    connect,
    endpoint_of,
    serving,
)


async def test_requests_without_the_right_token_get_401_and_touch_nothing(services: Services, store_dir: Path) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "offload",
            "arguments": {"content": "secret " * 1000},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
        },
    }
    modern = {**MCP_HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "offload"}
    async with serving(services, HttpOptions(transport="both", tokens=(TOKEN_A,))) as base:
        async with httpx2.AsyncClient(timeout=10) as http:
            for auth, error in [
                (None, None),
                (f"Bearer {TOKEN_B}", "invalid_token"),
                (f"Bearer {TOKEN_A}x", "invalid_token"),
                (f"Bearer {TOKEN_A[:-1]}", "invalid_token"),
                (f"Basic {TOKEN_A}", "invalid_token"),
                ("Bearer", "invalid_token"),
            ]:
                headers = {"Authorization": auth} if auth else {}
                for method, path, extra in [
                    ("POST", "/mcp", modern),
                    ("POST", "/mcp", MCP_HEADERS),
                    ("GET", "/sse", {}),
                    ("POST", "/messages/?session_id=" + "0" * 32, MCP_HEADERS),
                ]:
                    body = json.dumps(call if path == "/mcp" else INIT) if method == "POST" else None
                    r = await http.request(method, base + path, content=body, headers={**extra, **headers})
                    assert r.status_code == 401, (auth, path, r.status_code)
                    assert r.headers["www-authenticate"].startswith("Bearer")
                    assert (
                        (error in r.headers["www-authenticate"])
                        if error
                        else ("error=" not in r.headers["www-authenticate"])
                    )
                    assert r.json()["error"]["code"] == -32001
                    assert TOKEN_A not in r.text
            assert (await http.get(base + "/healthz")).status_code == 200  # the one open path
        scopes = store_dir / "v1" / "scopes"
        assert not scopes.exists() or list(scopes.iterdir()) == []
        for transport in ("http", "sse"):
            with pytest.raises(Exception) as failure:  # a 401 surfaces differently per transport
                async with connect(base, transport, "legacy", TOKEN_B) as client:
                    await client.list_tools()
            assert "401" in repr(failure.value) or "Unauthorized" in repr(failure.value)
        async with connect(base, "http", "auto", TOKEN_A) as client:  # the right token works
            assert not (await client.call_tool("list_outputs", {})).is_error


async def test_a_session_only_works_with_the_token_that_opened_it(services: Services) -> None:
    async with (
        serving(services, HttpOptions(transport="both", tokens=(TOKEN_A, TOKEN_B))) as base,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        auth_a, auth_b = {"Authorization": f"Bearer {TOKEN_A}"}, {"Authorization": f"Bearer {TOKEN_B}"}
        r = await http.post(base + "/mcp", json=INIT, headers={**MCP_HEADERS, **auth_a})
        assert r.status_code == 200
        session = r.headers["mcp-session-id"]
        hijack = {**MCP_HEADERS, **auth_b, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        r = await http.post(base + "/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=hijack)
        assert r.status_code == 404
        async with http.stream("GET", base + "/sse", headers=auth_a) as stream:
            endpoint = await endpoint_of(stream)
            r = await http.post(base + endpoint, json=INIT, headers={**MCP_HEADERS, **auth_b})
            assert r.status_code == 404
            r = await http.post(base + endpoint, json=INIT, headers={**MCP_HEADERS, **auth_a})
            assert r.status_code == 202


def test_tokens_map_to_stable_principals_and_short_ones_are_refused() -> None:
    from mcp_offload.serve.http.auth import BearerAuthMiddleware
    from mcp_offload.web.token_check import parse_tokens

    assert parse_tokens([f"{TOKEN_A}, {TOKEN_B}", TOKEN_A]) == (TOKEN_A, TOKEN_B)
    with pytest.raises(ValueError, match="at least 16"):
        parse_tokens(["short"])
    auth = BearerAuthMiddleware(lambda *a: None, [TOKEN_A, TOKEN_B])  # type: ignore[arg-type]
    assert auth.authenticate(f"Bearer {TOKEN_B}".encode()) == principal_id(TOKEN_B) != principal_id(TOKEN_A)
    assert auth.authenticate(f"bearer {TOKEN_A}".encode()) == principal_id(TOKEN_A)
    assert auth.authenticate(b"Bearer nope") is None and auth.authenticate(None) is None
    assert TOKEN_A not in principal_id(TOKEN_A)
