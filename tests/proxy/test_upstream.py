"""Upstream supervision: broken, crashing, hanging and killed upstreams; restarts; call timeouts; cancellation
reaching the upstream; no child process left when the proxy exits (the reaper; the real CLI as a stdio subprocess)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters

from mcp_offload.core.services import Services
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.proxy.transports.stdio import REAPER
from support import ERAS, alive, cmdline, descendants, text_of
from support.proxy import fixture_entry, npm_entry, python_entry, running_proxy

BROKEN = {"command": "no-such-mcp-server-binary"}


CRASHING = {"command": "sh", "args": ["-c", "echo 'fatal: bad config' >&2; exit 3"]}


def _pid_of(pattern: str) -> int:
    matches = [p for p in descendants(os.getpid()) if pattern in cmdline(p) and str(REAPER) not in cmdline(p)]
    assert len(matches) == 1, matches
    return matches[0]


@pytest.mark.parametrize("mode", ERAS)
async def test_broken_upstreams_do_not_stop_the_others(services: Services, mode: str) -> None:
    config = {
        "mcpServers": {
            "broken": BROKEN,
            "crashing": CRASHING,
            "hanging": {"command": "sleep", "args": ["120"], "offload": {"startup_timeout_s": 1.5}},  # no handshake
            "time": python_entry("mcp-server-time", "--local-timezone", "UTC"),
            "fix": fixture_entry(),
        },
    }
    async with running_proxy(services, config) as server, Client(server, mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"time__get_current_time", "fix__echo", "proxy_status"} <= names
        assert not any(n.startswith(("broken__", "crashing__")) for n in names)
        now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert not now.is_error and '"timezone": "UTC"' in text_of(now)
        status = await client.call_tool("proxy_status", {})
        servers = {s["name"]: s for s in result_of(status)["servers"]}
        assert servers["time"]["state"] == "ready" and servers["fix"]["state"] == "ready"
        assert servers["broken"]["state"] == "failed"
        assert "'no-such-mcp-server-binary' was not found on PATH" in servers["broken"]["last_error"]
        assert "fatal: bad config" in servers["crashing"]["last_error"]  # its stderr, in the status
        assert servers["hanging"]["last_error"] == "it did not start within 1.5 s"
        hung = [p for p in descendants(os.getpid()) if cmdline(p) == "sleep 120 "]
        assert len(hung) <= 1  # timed-out attempts are stopped (a listing may have started a retry since)
        assert "- broken (stdio): failed" in text_of(status)
        down = await client.call_tool("broken__anything", {})
        assert down.is_error and "MCP server 'broken'" in text_of(down)


@pytest.mark.parametrize("mode", ERAS)
async def test_upstream_killed_mid_session_then_recovers(services: Services, mode: str) -> None:
    """A real server (server-everything) killed during a long call: a clear error naming it, then the next call
    restarts it. Killed between calls: the next call just works (the death was noticed)."""
    config = {"mcpServers": {"every": npm_entry("server-everything", "stdio")}}
    async with running_proxy(services, config) as server, Client(server, mode=mode) as client:
        assert "echo" in text_of(await client.call_tool("every__echo", {"message": "echo one"}))
        first = _pid_of("server-everything")
        async with anyio.create_task_group() as tg:
            results: list[types.CallToolResult] = []

            async def long_call() -> None:
                args = {"duration": 20, "steps": 20}
                results.append(await client.call_tool("every__trigger-long-running-operation", args))

            tg.start_soon(long_call)
            await anyio.sleep(1.0)
            os.kill(first, signal.SIGKILL)
        crashed = results[0]
        assert crashed.is_error and "MCP server 'every' closed the connection" in text_of(crashed)
        again = await client.call_tool("every__echo", {"message": "after the crash"})
        assert not again.is_error and "after the crash" in text_of(again)
        second = _pid_of("server-everything")
        assert second != first

        os.kill(second, signal.SIGKILL)  # between calls
        await anyio.sleep(0.5)
        third = await client.call_tool("every__echo", {"message": "third"})
        assert not third.is_error and "third" in text_of(third)
        status = await client.call_tool("proxy_status", {})
        assert result_of(status)["servers"][0]["restarts"] == 2


async def test_hung_call_times_out_and_the_connection_stays(services: Services) -> None:
    config = {"mcpServers": {"fix": fixture_entry(offload={"call_timeout_s": 0.5})}}
    async with running_proxy(services, config) as server, Client(server) as client:
        pid = text_of(await client.call_tool("fix__pid", {}))
        started = time.monotonic()
        hung = await client.call_tool("fix__hang", {"n": 30})
        assert time.monotonic() - started < 5
        assert hung.is_error and "did not answer the call to 'hang' within 0.5 s" in text_of(hung)
        assert text_of(await client.call_tool("fix__pid", {})) == pid  # same process: no restart needed


@pytest.mark.parametrize("mode", ERAS)
async def test_client_cancellation_reaches_the_upstream(services: Services, tmp_path: Path, mode: str) -> None:
    marker = tmp_path / "cancelled.txt"
    config = {"mcpServers": {"fix": fixture_entry()}}
    async with running_proxy(services, config) as server, Client(server, mode=mode) as client:
        await client.call_tool("fix__pid", {})
        with pytest.raises(MCPError, match=r"(?i)timed out"):  # the client gives up and cancels its request
            await client.call_tool("fix__hang", {"n": 30, "name": str(marker)}, read_timeout_seconds=0.5)
        with anyio.fail_after(5):
            while not marker.exists():  # noqa: ASYNC110 - the upstream process writes a file; no event to wait on
                await anyio.sleep(0.05)
        assert marker.read_text() == "cancelled"


@pytest.mark.parametrize("how", ["close", "SIGTERM", "SIGKILL"])
async def test_no_child_process_left_after_the_proxy_exits(tmp_path: Path, how: str) -> None:
    """The real CLI over stdio, with a stdio upstream behind a shell (a grandchild), a Python one and a node one."""
    fixture_script = fixture_entry()["args"][0]
    config = {
        "mcpServers": {
            # a launcher leaving a grandchild that ignores stdin EOF (npx/uvx leave node/python grandchildren)
            "wrapped": {"command": "sh", "args": ["-c", f"sleep 300 & exec '{sys.executable}' '{fixture_script}'"]},
            "fix": fixture_entry(),
            "every": npm_entry("server-everything", "stdio"),
        }
    }
    path = tmp_path / "servers.json"
    path.write_text(json.dumps(config))
    cli = [sys.executable, "-m", "mcp_offload", "--config", str(path), "--store", str(tmp_path / "store")]
    params = StdioServerParameters(command=cli[0], args=cli[1:])
    async with Client(params, mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"wrapped__echo", "fix__echo", "every__echo"} <= names
        proxy = next(p for p in descendants(os.getpid()) if "mcp_offload" in cmdline(p) and "--config" in cmdline(p))
        children = descendants(proxy)
        assert len(alive(children)) >= 7  # 3 reapers, sleep + python, python, node
        if how != "close":
            os.kill(proxy, getattr(signal, how))
            await _all_gone(children)
    await _all_gone(children)


async def _all_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 5
    while alive(pids) and time.monotonic() < deadline:  # noqa: ASYNC110 - polling /proc, there is no event
        await anyio.sleep(0.1)
    assert alive(pids) == [], [cmdline(p) for p in alive(pids)]
