"""Proxy config reload under a live client: the real CLI over stdio, the file edited while it runs."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from support import cmdline, descendants
from support.proxy import fixture_entry


def _write(path: Path, servers: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(_padded(servers))
    tmp.replace(path)  # as editors and scripts do: never a half-written file


def _padded(servers: dict[str, Any]) -> str:
    """Always the same size, so an in-place edit with the old mtime is invisible to the poller (SIGHUP test)."""
    return json.dumps({"mcpServers": servers}).ljust(4096)


async def test_reload_adds_and_removes_upstreams_and_keeps_the_config_on_a_broken_edit(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    _write(path, {"fix": fixture_entry()})
    cli = [sys.executable, "-m", "mcp_offload", "--config", str(path), "--store", str(tmp_path / "store")]
    changed: list[anyio.Event] = [anyio.Event()]

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed[-1].set()

    async def names(session: ClientSession) -> set[str]:
        return {t.name for t in (await session.list_tools()).tools}

    async def edit(servers: dict[str, Any] | str) -> None:
        changed.append(anyio.Event())
        if isinstance(servers, str):
            path.write_text(servers)
        else:
            _write(path, servers)

    errlog = (tmp_path / "stderr.txt").open("w")
    params = StdioServerParameters(command=cli[0], args=cli[1:])
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        await session.initialize()
        before = await names(session)
        assert "fix__echo" in before and not any(n.startswith("two__") for n in before)

        await edit({"fix": fixture_entry(), "two": fixture_entry()})  # add one: the other keeps running
        proxy = next(p for p in descendants(os.getpid()) if "--config" in cmdline(p))
        fix_pid = (await session.call_tool("fix__pid", {})).content[0].text  # type: ignore[union-attr]
        with anyio.fail_after(20):
            await changed[-1].wait()
        assert {"fix__echo", "two__echo"} <= await names(session)
        echo = await session.call_tool("two__echo", {"name": "hello"})
        assert echo.content[0].text == "hello"  # type: ignore[union-attr]
        assert (await session.call_tool("fix__pid", {})).content[0].text == fix_pid  # type: ignore[union-attr]

        await edit('{"mcpServers": {"fix": ')  # broken: the running config stays
        await anyio.sleep(2.5)
        assert {"fix__echo", "two__echo"} <= await names(session)
        await edit({"fix": fixture_entry(), "bad": {"command": 42}})  # valid JSON, invalid entry
        await anyio.sleep(2.5)
        assert not changed[-1].is_set()
        assert {"fix__echo", "two__echo"} <= await names(session)

        await edit({"two": fixture_entry()})  # remove one
        with anyio.fail_after(20):
            await changed[-1].wait()
        after = await names(session)
        assert "two__echo" in after and not any(n.startswith("fix__") for n in after)

        changed.append(anyio.Event())  # an edit the poller cannot see (same inode, size and mtime): SIGHUP
        stat = path.stat()
        with path.open("r+") as file:
            file.write(_padded({"two": fixture_entry(), "three": fixture_entry()}))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        await anyio.sleep(2.5)
        assert not changed[-1].is_set() and "three__echo" not in await names(session)
        os.kill(proxy, signal.SIGHUP)
        with anyio.fail_after(20):
            await changed[-1].wait()
        assert "three__echo" in await names(session)
    errlog.close()
    lines = (tmp_path / "stderr.txt").read_text().splitlines()
    refused = [json.loads(line)["msg"] for line in lines if "reload refused" in line]  # stderr is JSON lines
    assert len(refused) == 2, refused
    assert "servers.json: not valid JSON" in refused[0]
    assert "server 'bad': \"command\" must be a non-empty string" in refused[1]
