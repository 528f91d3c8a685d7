"""What the real `mcp-offload` process writes on stderr while it serves over stdio: JSON lines only, for its own
records, a proxied server's stderr, a refused config reload and Python warnings; INFO for the normal things; and no
deprecation warning per health check of a handshake-era upstream."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_offload.mcp_server.tools import result_of
from support import HANG_TIMEOUT_S, free_port
from support.gateway_process import gateway_process
from support.http_transport import wait_healthy
from support.proxy import fixture_entry, npm_entry

EXE = str(Path(sys.executable).with_name("mcp-offload"))
CHATTY = {"command": "sh", "args": ["-c", "echo 'chatty: starting on stdio' >&2; echo 'Error: no token' >&2; exit 1"]}


def _lines(path: Path) -> list[dict[str, Any]]:
    text = path.read_text()
    records = []
    for line in text.splitlines():
        assert line.startswith("{"), f"not a JSON line on stderr: {line!r}"
        records.append(json.loads(line))
    return records


async def test_stderr_is_json_lines_for_everything(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    servers = {"fix": fixture_entry(), "chatty": CHATTY, "memory": npm_entry("server-memory")}
    config.write_text(json.dumps({"mcpServers": servers}))
    params = StdioServerParameters(
        command=EXE, args=["--store", str(tmp_path / "store"), "--config", str(config)], env={**os.environ}
    )
    stderr = tmp_path / "stderr.txt"
    with stderr.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as client:
            await client.list_tools()
            for _ in range(3):  # each status call health-checks every upstream (the npm server, 2025-11-25: a ping)
                status = await client.call_tool("proxy_status", {})
            assert {s["name"]: s["state"] for s in result_of(status)["servers"]}["memory"] == "ready"
            config.write_text("{ not json")
            deadline = time.monotonic() + 10
            while "reload refused" not in stderr.read_text() and time.monotonic() < deadline:  # noqa: ASYNC110 - a file
                await anyio.sleep(0.2)
    records = _lines(stderr)
    chatty = [r for r in records if r.get("server") == "chatty"]
    assert {r["msg"] for r in chatty} >= {"chatty: starting on stdio", "Error: no token"}
    assert all(r["level"] == "INFO" and r["logger"] == "mcp_offload.upstream" for r in chatty)
    failed = [r for r in records if "chatty failed to start" in r["msg"]]
    assert failed and failed[0]["level"] == "WARNING" and "Error: no token" in failed[0]["msg"]
    ready = [r for r in records if r["msg"].startswith("upstream fix ready")]
    assert ready and ready[0]["level"] == "INFO"
    refused = [r for r in records if "config reload refused" in r["msg"]]
    assert refused and refused[0]["level"] == "WARNING"
    assert not [r for r in records if "ping" in r["msg"].lower() or "deprecat" in r["msg"].lower()]


async def test_http_startup_line_is_info_and_every_line_is_json(tmp_path: Path) -> None:
    """The normal startup line is INFO (it was a WARNING), shown at the default level, in the same JSON lines."""
    port = free_port()
    stderr = tmp_path / "stderr.txt"
    argv = [EXE, "--transport", "http", "--port", str(port), "--store", str(tmp_path / "store"), "--no-config"]
    with stderr.open("wb") as err:
        process = await anyio.open_process(argv, stdin=subprocess.DEVNULL, stderr=err)
    try:
        await wait_healthy(f"http://127.0.0.1:{port}")
    finally:
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(HANG_TIMEOUT_S):
            await process.wait()
    records = _lines(stderr)
    started = [r for r in records if " serving http://127.0.0.1:" in r["msg"]]
    assert len(started) == 1 and started[0]["level"] == "INFO" and started[0]["logger"] == "mcp_offload.serve.http.run"
    assert not [r for r in records if r["level"] in ("WARNING", "ERROR")], records


def test_gateway_startup_line_is_info_and_every_line_is_json(tmp_path: Path) -> None:
    """The gateway's normal start-up line is INFO, like the HTTP service's (it was a WARNING)."""
    log = tmp_path / "gateway.log"
    with gateway_process(tmp_path / "store", "http://127.0.0.1:9", "http://127.0.0.1:9/v1", log):
        pass
    records = _lines(log)
    started = [r for r in records if " gateway on http://127.0.0.1:" in r["msg"]]
    assert len(started) == 1 and started[0]["level"] == "INFO", records
    assert not [r for r in records if r["level"] in ("WARNING", "ERROR")], records
