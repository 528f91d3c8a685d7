"""Scoping over HTTP: concurrent clients on streamable HTTP and SSE, both protocol eras, never reach each other's
outputs (by read, search, query, listing or resource); one principal's rules; anonymous 2026-07-28 requests cannot
enumerate; stateless HTTP; proxied results land in the caller's scope (a real `mcp-offload --config` process).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_offload.core.services import Services
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.serve.http import HttpOptions
from support import alive, free_port, text_of
from support.http_transport import (
    TOKEN_A,
    TOKEN_B,
    UPSTREAM,
    assert_unreachable,
    connect,
    offload_some,
    serving,
    wait_healthy,
)


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
            assert [o["handle"] for o in result_of(r)["outputs"]] == ha


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
        assert {o["handle"] for o in result_of(r)["outputs"]} == set(ha)
    async with (
        serving(services, HttpOptions(transport="http", stateless=True)) as base,
        connect(base, "http", "legacy") as c,
    ):
        h = await offload_some(c, "MARKER-C", 1)  # reads back: the anonymous scope, not one per request
        r = await c.call_tool("list_outputs", {})
        assert r.is_error and "no session identity" in text_of(r) and h[0] not in text_of(r)


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
        assert bool(alive([upstream_pid]))
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(30):
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0 and "Traceback" not in log.read_text(), log.read_text()[-3000:]
    for _ in range(200):  # the upstream is stopped as part of the shutdown
        if not bool(alive([upstream_pid])):
            break
        await anyio.sleep(0.05)
    assert not bool(alive([upstream_pid]))
