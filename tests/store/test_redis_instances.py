"""Several mcp-offload instances on one Redis (a load-balanced service) and a Redis outage, end to end.

Two real `mcp-offload --transport http --store redis://…` processes: an output offloaded through one is read,
searched and queried through the other by the same principal (2026-07-28 requests are scoped by their bearer
token), and another principal cannot reach it through either. Then Redis goes away: calls fail with a clear
error, nothing hangs, and the service recovers when Redis is back.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_offload.mcp_server.tools import result_of
from support import free_port, text_of
from support.http_transport import wait_healthy
from support.store import RedisServer, have_redis_server

TOKEN_A = "instance-test-a-" + "a" * 20
TOKEN_B = "instance-test-b-" + "b" * 20
DOC = '{"items": [' + ",".join(f'{{"id": {i}, "name": "n{i}"}}' for i in range(3000)) + '], "marker": "ZQX-42"}'


@contextlib.contextmanager
def instance(redis_url: str, tmp_path: Path, name: str) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "MCP_OFFLOAD_TOKEN": f"{TOKEN_A},{TOKEN_B}"}
    argv = [sys.executable, "-m", "mcp_offload", "--transport", "http", "--port", str(port), "--store", redis_url]
    with (tmp_path / f"{name}.log").open("wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.asynccontextmanager
async def connect(base: str, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(base + "/mcp", http_client=http), read_timeout_seconds=30) as client,
    ):
        yield client


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    if not have_redis_server():
        pytest.skip("REDIS-SERVER NOT INSTALLED: the multi-instance Redis tests did NOT run (bash .ci/run installs it)")
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


async def test_two_instances_share_outputs_per_principal(redis_server: RedisServer, tmp_path: Path) -> None:
    with instance(redis_server.url, tmp_path, "one") as one, instance(redis_server.url, tmp_path, "two") as two:
        await wait_healthy(one)
        await wait_healthy(two)
        async with connect(one, TOKEN_A) as a_on_one:
            r = await a_on_one.call_tool("offload", {"content": DOC, "name": "shared doc"})
            assert not r.is_error, text_of(r)
            handle = result_of(r)["handle"]
        async with connect(two, TOKEN_A) as a_on_two:  # same principal, other instance: everything works
            r = await a_on_two.call_tool("read_large_output", {"handle": handle, "start": 1, "end": 30})
            assert result_of(r)["text"] == DOC[:30]
            r = await a_on_two.call_tool("search_large_output", {"pattern": "ZQX-42", "literal": True})
            assert result_of(r)["total_matches"] == 1 and result_of(r)["matches"][0]["handle"] == handle
            r = await a_on_two.call_tool("query_large_output", {"handle": handle, "query": ".items | length"})
            assert result_of(r)["result"].strip() == "3000"
            listed = result_of(await a_on_two.call_tool("list_outputs", {}))["outputs"]
            assert [o["handle"] for o in listed] == [handle]
        for base in (one, two):  # another principal reaches nothing, on either instance
            async with connect(base, TOKEN_B) as b:
                r = await b.call_tool("read_large_output", {"handle": handle})
                assert r.is_error and "no output" in text_of(r).lower()
                r = await b.call_tool("query_large_output", {"handle": handle, "query": "."})
                assert r.is_error
                assert result_of(await b.call_tool("list_outputs", {}))["outputs"] == []
                r = await b.call_tool("search_large_output", {"pattern": "ZQX-42", "literal": True})
                assert result_of(r)["total_matches"] == 0


async def test_redis_outage_gives_clear_errors_then_recovers(redis_server: RedisServer, tmp_path: Path) -> None:
    with instance(redis_server.url, tmp_path, "solo") as base:
        await wait_healthy(base)
        async with connect(base, TOKEN_A) as client:
            handle = result_of(await client.call_tool("offload", {"content": DOC}))["handle"]
            redis_server.stop()
            for tool, args in [
                ("offload", {"content": DOC}),
                ("read_large_output", {"handle": handle}),
                ("list_outputs", {}),
            ]:
                with anyio.fail_after(20):  # no hang
                    r = await client.call_tool(tool, args)
                assert r.is_error, (tool, text_of(r))
                assert "redis" in text_of(r).lower() or "store" in text_of(r).lower(), text_of(r)
                assert "Traceback" not in text_of(r)
            redis_server.start()
            with anyio.fail_after(30):
                while True:
                    r = await client.call_tool("offload", {"content": DOC})
                    if not r.is_error:
                        break
                    await anyio.sleep(0.5)
            again = result_of(r)["handle"]
            r = await client.call_tool("read_large_output", {"handle": again, "start": 1, "end": 10})
            assert result_of(r)["text"] == DOC[:10]
