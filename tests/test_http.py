"""Serving over HTTP: streamable HTTP and SSE on loopback, the real SDK client, both protocol eras.

Isolation (no client reaches another's outputs by read, search, query, listing or resource), bearer tokens (401
and nothing touched), Host/Origin checks (421/403), limits (body size, sessions, idle expiry), /healthz, and a
SIGTERM during load on a real `mcp-offload --transport both` process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client, MCPError
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from http_fixtures import wait_healthy
from mcp_offload.auth import principal_id
from mcp_offload.http_app import HttpOptions, RefusedConfig, build_http_app, check_exposure, transport_security
from mcp_offload.services import Services
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.handles import scope_key
from support import descendants, free_port

TOKEN_A = "token-a-" + "a" * 24
TOKEN_B = "token-b-" + "b" * 24
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
UPSTREAM = Path(__file__).resolve().parent / "proxy_fixtures.py"  # a small MCP server for proxy mode
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def text_of(result: object) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)  # type: ignore[attr-defined]


# -- harness ------------------------------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def serving(services: Services, options: HttpOptions) -> AsyncIterator[str]:
    """The real app under uvicorn in this process, on a free loopback port; yields the base URL."""
    built = build_http_app(services, options)
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
        handles.append(r.structured_content["handle"])
        r = await client.call_tool("query_large_output", {"handle": handles[-1], "query": ".marker", "raw": True})
        assert text_of(r).strip() == marker
    return handles


async def assert_unreachable(client: Client, foreign: list[str], foreign_marker: str, own: list[str]) -> None:
    """`client` can reach its own outputs and none of `foreign`, by any tool or resource."""
    for handle in foreign:
        for tool, args in [
            ("read_large_output", {"handle": handle, "start_line": 1, "end_line": 3}),
            ("search_large_output", {"pattern": "item", "handle": handle}),
            ("query_large_output", {"handle": handle, "query": ".marker"}),
        ]:
            r = await client.call_tool(tool, args)
            assert r.is_error and "no output" in text_of(r).lower(), (tool, text_of(r))
            assert foreign_marker not in text_of(r)
        with pytest.raises(MCPError):
            await client.read_resource(f"offload://outputs/{handle}")
    r = await client.call_tool("search_large_output", {"pattern": foreign_marker, "literal": True})
    assert not r.is_error and r.structured_content["total_matches"] == 0, text_of(r)
    r = await client.call_tool("list_outputs", {})
    assert {o["handle"] for o in r.structured_content["outputs"]} == set(own)
    uris = {str(res.uri) for res in (await client.list_resources()).resources}
    assert uris == {f"offload://outputs/{h}" for h in own}
    read = await client.read_resource(f"offload://outputs/{own[0]}")
    assert json.loads(read.contents[0].text)["marker"] != foreign_marker


# -- isolation ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", ["http", "sse"])
@pytest.mark.parametrize(
    ("mode", "tokens"),
    [("auto", (TOKEN_A, TOKEN_B)), ("legacy", (TOKEN_A, TOKEN_B)), ("legacy", ())],
    ids=["2026-two-principals", "handshake-two-principals", "handshake-no-auth"],
)
async def test_concurrent_clients_never_reach_each_other(
    services: Services, transport: str, mode: str, tokens: tuple[str, ...]
) -> None:
    options = HttpOptions(transport="both", tokens=tokens)
    async with serving(services, options) as base:
        token_a, token_b = (tokens or (None, None))[:2]
        async with connect(base, transport, mode, token_a) as a, connect(base, transport, mode, token_b) as b:
            assert a.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            handles: dict[str, list[str]] = {}

            async def work(name: str, client: Client) -> None:
                handles[name] = await offload_some(client, f"MARKER-{name}")

            async with anyio.create_task_group() as tg:  # both clients offload and read at the same time
                tg.start_soon(work, "A", a)
                tg.start_soon(work, "B", b)
            await assert_unreachable(b, handles["A"], "MARKER-A", handles["B"])
            await assert_unreachable(a, handles["B"], "MARKER-B", handles["A"])


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_the_rule_for_one_principal(services: Services, transport: str) -> None:
    """Same token: handshake sessions are still apart; 2026-07-28 requests share the principal's scope."""
    async with serving(services, HttpOptions(transport="both", tokens=(TOKEN_A,))) as base:
        async with connect(base, transport, "legacy", TOKEN_A) as a, connect(base, transport, "legacy", TOKEN_A) as b:
            ha, hb = await offload_some(a, "MARKER-A", 1), await offload_some(b, "MARKER-B", 1)
            await assert_unreachable(b, ha, "MARKER-A", hb)
        async with connect(base, transport, "auto", TOKEN_A) as a, connect(base, transport, "auto", TOKEN_A) as b:
            ha = await offload_some(a, "MARKER-A", 1)
            r = await b.call_tool("list_outputs", {})
            assert [o["handle"] for o in r.structured_content["outputs"]] == ha


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_anonymous_2026_requests_cannot_enumerate(services: Services, transport: str) -> None:
    """No token and no session: one anonymous scope where handles are capabilities and nothing can be listed."""
    async with (
        serving(services, HttpOptions(transport="both")) as base,
        connect(base, transport, "auto") as a,
        connect(base, transport, "auto") as b,
    ):
        ha = await offload_some(a, "MARKER-A", 1)
        for tool, args in [("list_outputs", {}), ("search_large_output", {"pattern": "MARKER-A", "literal": True})]:
            r = await b.call_tool(tool, args)
            assert r.is_error and "no session identity" in text_of(r), text_of(r)
            assert ha[0] not in text_of(r)
        assert (await b.list_resources()).resources == []
        r = await b.call_tool("read_large_output", {"handle": "out_" + "a" * 26})
        assert r.is_error and ha[0] not in text_of(r)
        # the capability itself: whoever holds the handle (130 random bits) can read it
        r = await b.call_tool("query_large_output", {"handle": ha[0], "query": ".marker", "raw": True})
        assert text_of(r).strip() == "MARKER-A"


async def test_stateless_http_scopes_by_principal(services: Services) -> None:
    async with (
        serving(services, HttpOptions(transport="http", stateless=True, tokens=(TOKEN_A, TOKEN_B))) as base,
        connect(base, "http", "legacy", TOKEN_A) as a,
        connect(base, "http", "legacy", TOKEN_B) as b,
    ):
        ha, hb = await offload_some(a, "MARKER-A", 2), await offload_some(b, "MARKER-B", 1)
        await assert_unreachable(b, ha, "MARKER-A", hb)
        r = await a.call_tool("list_outputs", {})
        assert {o["handle"] for o in r.structured_content["outputs"]} == set(ha)
    async with (
        serving(services, HttpOptions(transport="http", stateless=True)) as base,
        connect(base, "http", "legacy") as c,
    ):
        h = await offload_some(c, "MARKER-C", 1)  # reads back: the anonymous scope, not one per request
        r = await c.call_tool("list_outputs", {})
        assert r.is_error and "no session identity" in text_of(r) and h[0] not in text_of(r)


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
            endpoint = await _endpoint_of(stream)
            r = await http.post(base + endpoint, json=INIT, headers={**MCP_HEADERS, **auth_b})
            assert r.status_code == 404
            r = await http.post(base + endpoint, json=INIT, headers={**MCP_HEADERS, **auth_a})
            assert r.status_code == 202


async def _endpoint_of(stream: httpx2.Response) -> str:
    """The message endpoint from an SSE stream's first event. The line iterator is kept on the response: if it
    were garbage-collected, its finalizer would close the stream (and so end the session)."""
    lines = stream.aiter_lines()
    stream.extensions["test_lines"] = lines
    async for line in lines:
        if line.startswith("data:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("no endpoint event")


# -- authentication -------------------------------------------------------------------------------------------------
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


def test_tokens_map_to_stable_principals_and_short_ones_are_refused() -> None:
    from mcp_offload.auth import BearerAuthMiddleware, parse_tokens

    assert parse_tokens([f"{TOKEN_A}, {TOKEN_B}", TOKEN_A]) == (TOKEN_A, TOKEN_B)
    with pytest.raises(ValueError, match="at least 16"):
        parse_tokens(["short"])
    auth = BearerAuthMiddleware(lambda *a: None, [TOKEN_A, TOKEN_B])  # type: ignore[arg-type]
    assert auth.authenticate(f"Bearer {TOKEN_B}".encode()) == principal_id(TOKEN_B) != principal_id(TOKEN_A)
    assert auth.authenticate(f"bearer {TOKEN_A}".encode()) == principal_id(TOKEN_A)
    assert auth.authenticate(b"Bearer nope") is None and auth.authenticate(None) is None
    assert TOKEN_A not in principal_id(TOKEN_A)


# -- Host / Origin -------------------------------------------------------------------------------------------------
async def test_host_and_origin_checks(services: Services) -> None:
    options = HttpOptions(
        transport="both", allowed_hosts=("mcp.example.com",), allowed_origins=("https://app.example.com",)
    )
    async with serving(services, options) as base, httpx2.AsyncClient(timeout=10) as http:
        cases = [
            ({"Host": "evil.example"}, 421),
            ({"Host": "evil.example:80"}, 421),
            ({"Origin": "http://evil.example"}, 403),
            ({"Origin": "https://app.example.com.evil"}, 403),
            ({"Host": "mcp.example.com"}, 200),
            ({"Host": "mcp.example.com:443", "Origin": "https://app.example.com"}, 200),
            ({"Origin": "http://localhost:3000"}, 200),
        ]
        for headers, status in cases:
            r = await http.post(base + "/mcp", json=INIT, headers={**MCP_HEADERS, **headers})
            assert r.status_code == status, (headers, r.status_code, r.text)
            if status != 200:  # SSE: the GET stream is refused the same way
                r = await http.get(base + "/sse", headers=headers)
                assert r.status_code == status, (headers, r.status_code)
        r = await http.post(base + "/mcp", json=INIT, headers={**MCP_HEADERS, "Host": "evil.example"})
        assert "mcp-session-id" not in r.headers


def test_security_settings_and_exposure() -> None:
    open_lan = HttpOptions(host="0.0.0.0")
    with pytest.raises(RefusedConfig, match="without a token"):
        check_exposure(open_lan)
    check_exposure(HttpOptions(host="0.0.0.0", allow_open=True))
    check_exposure(HttpOptions(host="0.0.0.0", tokens=(TOKEN_A,)))
    check_exposure(HttpOptions(host="::1"))
    settings = transport_security(HttpOptions(host="10.1.2.3", allowed_hosts=("mcp.example.com",)))
    assert settings.enable_dns_rebinding_protection
    assert {"10.1.2.3:*", "mcp.example.com", "mcp.example.com:*", "localhost:*"} <= set(settings.allowed_hosts)
    assert not transport_security(HttpOptions(allowed_hosts=("*",))).enable_dns_rebinding_protection


# -- limits --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_body_size_limit(services: Services, mode: str) -> None:
    async with serving(services, HttpOptions(transport="both", max_body_bytes=64_000)) as base:
        async with connect(base, "http", mode) as client:
            with pytest.raises(MCPError, match="too large") as refused:
                await client.call_tool("offload", {"content": "x" * 100_000})
            assert "64,000" in refused.value.message
            r = await client.call_tool("offload", {"content": "x" * 50_000})  # the session is still good
            assert not r.is_error and r.structured_content["bytes"] == 50_000

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the transports' own cap applies
            for _ in range(10):
                yield b" " * 10_000

        async with httpx2.AsyncClient(timeout=10) as http, http.stream("GET", base + "/sse") as stream:
            endpoint = await _endpoint_of(stream)
            for path in ("/mcp", endpoint):  # streamable HTTP, and the SSE transport's message endpoint
                r = await http.post(base + path, content=b"{" + b" " * 100_000 + b"}", headers=MCP_HEADERS)
                assert r.status_code == 413 and r.json()["error"]["message"].startswith("Request body too large")
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
            await _endpoint_of(s1)
            await _endpoint_of(s2)
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
            endpoint = await _endpoint_of(stream)
            with anyio.fail_after(5):
                async for _ in stream.extensions["test_lines"]:  # the server ends the stream of an idle session
                    pass
        assert 0.3 < time.monotonic() - started < 5
        assert (await http.post(base + endpoint, json=INIT, headers=MCP_HEADERS)).status_code == 404


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
            h = (await client.call_tool("offload", {"content": "json mode\n" * 1000})).structured_content["handle"]
            r = await client.call_tool("read_large_output", {"handle": h, "start_line": 2, "end_line": 2})
            assert r.structured_content["text"] == "json mode\n"
        async with httpx2.AsyncClient(timeout=10) as http:
            auth = {"Authorization": f"Bearer {TOKEN_A}"}
            r = await http.post(base + "/mcp", json=INIT, headers={**MCP_HEADERS, **auth})
            assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
            assert r.json()["result"]["serverInfo"]["name"] == "mcp-offload"


# -- the real process ----------------------------------------------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_cli_refuses_unsafe_configurations(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "mcp_offload", "--store", str(tmp_path / "s"), "--transport", "http"]
    env = {k: v for k, v in os.environ.items() if k != "MCP_OFFLOAD_TOKEN"}
    for extra, message in [
        (["--host", "0.0.0.0"], "refusing to listen on 0.0.0.0 without a token"),
        (["--token", "short"], "at least 16 characters"),
        (["--max-sessions", "0"], "must be positive"),
    ]:
        done = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 2 and message in done.stderr, (extra, done.stderr)


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
    stop = anyio.Event()
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
                            acknowledged[r.structured_content["handle"]] = hashlib.sha256(content.encode()).hexdigest()
                        await client.call_tool("search_large_output", {"pattern": "#\\d+", "max_results": 5})
                        i += 1

        async with anyio.create_task_group() as tg:
            for n, (transport, mode) in enumerate([("http", "auto"), ("http", "legacy"), ("sse", "legacy")] * 2):
                tg.start_soon(load, transport, mode, n)
            await anyio.sleep(2.0)
            children = descendants(process.pid)
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(30):
                await process.wait()
            stop.set()
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
    assert not [pid for pid in children if _alive(pid)], "orphaned children"
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


async def test_proxy_mode_over_http_offloads_into_the_callers_scope(tmp_path: Path) -> None:
    """`--config` with `--transport http`: proxied results are offloaded into the calling session's scope, and
    SIGTERM stops the upstream server too."""
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"fix": {"command": sys.executable, "args": [str(UPSTREAM)]}}}))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "mcp_offload", "--transport", "http", "--port", str(port)]
    argv += ["--store", str(tmp_path / "store"), "--config", str(config), "--token", TOKEN_A, "--token", TOKEN_B]
    log = tmp_path / "server.log"
    with log.open("wb") as err:
        process = await anyio.open_process(argv, stdin=subprocess.DEVNULL, stderr=err)
    try:
        await wait_healthy(base)
        async with connect(base, "http", "legacy", TOKEN_A) as a, connect(base, "http", "auto", TOKEN_B) as b:
            upstream_pid = int(text_of(await a.call_tool("fix__pid", {})).strip())
            big = await a.call_tool("fix__json", {"n": 3000})
            handle = re.search(r"out_[a-z0-9]+", text_of(big))
            assert handle is not None, text_of(big)
            r = await a.call_tool("query_large_output", {"handle": handle.group(0), "query": ".items | length"})
            assert text_of(r).strip() == "3000"
            r = await b.call_tool("query_large_output", {"handle": handle.group(0), "query": ".items | length"})
            assert r.is_error and "no output" in text_of(r).lower()
        assert _alive(upstream_pid)
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(30):
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0 and "Traceback" not in log.read_text(), log.read_text()[-3000:]
    for _ in range(200):  # the upstream is stopped as part of the shutdown
        if not _alive(upstream_pid):
            break
        await anyio.sleep(0.05)
    assert not _alive(upstream_pid)
