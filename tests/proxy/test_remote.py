"""Remote upstreams: server-everything over SSE and over streamable HTTP (its own transports, real ports), both
client eras; an HTTP upstream that goes away gives a clear error, and the next call after it is back recovers."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_offload.core.services import Services
from support import ERAS, free_port, text_of
from support.proxy import npm_entry, running_proxy


class NodeServer:
    """server-everything on a port, with its own transport; restartable on the same port."""

    def __init__(self, transport: str) -> None:
        entry = npm_entry("server-everything", transport)
        self.argv = [entry["command"], *entry["args"]]
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PORT": str(self.port)}
        self.proc = subprocess.Popen(self.argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"server-everything did not listen on {self.port}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def sse_server() -> Iterator[NodeServer]:
    server = NodeServer("sse")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def http_server() -> Iterator[NodeServer]:
    server = NodeServer("streamableHttp")
    server.start()
    yield server
    server.stop()


@pytest.mark.parametrize("mode", ERAS)
async def test_sse_and_streamable_http_upstreams(
    services: Services, sse_server: NodeServer, http_server: NodeServer, tmp_path: Path, mode: str
) -> None:
    config = {
        "mcpServers": {
            "viasse": {"url": f"http://127.0.0.1:{sse_server.port}/sse"},
            "viahttp": {"url": f"http://127.0.0.1:{http_server.port}/mcp", "offload": {"threshold_tokens": 500}},
        }
    }
    async with running_proxy(services, config) as server, Client(server, mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"viasse__echo", "viahttp__echo"} <= names
        assert "over sse" in text_of(await client.call_tool("viasse__echo", {"message": "over sse"}))
        assert "over http" in text_of(await client.call_tool("viahttp__echo", {"message": "over http"}))
        image = await client.call_tool("viahttp__get-tiny-image", {})
        assert "binary; 4,033 bytes, image/png" in text_of(image)  # offloading works over HTTP too

        http_server.stop()
        down = await client.call_tool("viahttp__echo", {"message": "nobody home"})
        assert down.is_error and "'viahttp'" in text_of(down)
        assert "still here" in text_of(await client.call_tool("viasse__echo", {"message": "still here"}))

        http_server.start()
        back = await client.call_tool("viahttp__echo", {"message": "back again"})  # restarted by this call
        assert "back again" in text_of(back), text_of(back)
