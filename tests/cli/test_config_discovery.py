"""Without --config the server proxies the per-user servers.json (and says so on stderr); --no-config skips it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

from support.proxy import fixture_entry

EXE = str(Path(sys.executable).with_name("mcp-offload"))


async def _tool_names(tmp_path: Path, *extra: str) -> tuple[set[str], str]:
    errlog = tmp_path / f"stderr{len(extra)}.txt"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    # the server's stderr goes to a file (sh redirects it, then execs the real console script)
    args = ["-c", f'exec "$0" "$@" 2>"{errlog}"', EXE, "--store", str(tmp_path / "store"), *extra]
    async with Client(StdioServerParameters(command="sh", args=args, env=env), read_timeout_seconds=60) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    return names, errlog.read_text()


async def test_per_user_servers_json_is_discovered_and_can_be_skipped(tmp_path: Path) -> None:
    servers = tmp_path / "xdg" / "mcp-offload" / "servers.json"
    servers.parent.mkdir(parents=True)
    servers.write_text(json.dumps({"mcpServers": {"up": fixture_entry()}}))
    names, err = await _tool_names(tmp_path)
    assert "offload" in names and any(n.startswith("up__") for n in names)
    lines = [json.loads(line) for line in err.splitlines() if str(servers) in line]
    assert [(line["level"], line["msg"]) for line in lines] == [
        ("INFO", f"proxying the servers in {servers} (--no-config to skip it)")
    ]

    names, err = await _tool_names(tmp_path, "--no-config")
    assert "offload" in names and not any(n.startswith("up__") for n in names)
    assert str(servers) not in err


async def test_no_per_user_file_no_proxy_and_no_message(tmp_path: Path) -> None:
    names, err = await _tool_names(tmp_path)
    assert "offload" in names and not any("__" in n for n in names)
    assert "proxying" not in err
