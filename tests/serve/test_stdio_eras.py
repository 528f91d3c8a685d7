"""A client that probes `server/discover` and then sends `initialize` on the same stdio pipe (GitHub Copilot CLI 1.0.102
does) is served in the handshake era (serve/stdio_eras.py), on a raw pipe to the real `mcp-offload` process: the probe
is answered, the handshake succeeds, and the tools work. A 2026-07-28 client that probes and goes on with enveloped
requests stays in that era, and an `initialize` after a real request is still refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.raw_pipe import RawPipe

CLIENT = {"name": "copilot-cli", "version": "1.0.102"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": CLIENT,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})


DISCOVER = request(0, "server/discover", {"_meta": META})
INITIALIZE = request(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT})


@pytest.fixture
def pipe(tmp_path: Path) -> Any:
    raw = RawPipe(tmp_path / "store", "--no-config")
    yield raw
    raw.close()


def tools_after_handshake(pipe: RawPipe) -> list[str]:
    pipe.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    pipe.send(request(2, "tools/list"))
    answer = pipe.receive()
    assert answer["id"] == 2, answer
    return [tool["name"] for tool in answer["result"]["tools"]]


def test_initialize_after_an_answered_probe_opens_the_handshake(pipe: RawPipe) -> None:
    pipe.send(DISCOVER)
    probe = pipe.receive()
    assert probe["id"] == 0 and "2026-07-28" in probe["result"]["supportedVersions"]
    pipe.send(INITIALIZE)
    opened = pipe.receive()
    assert opened["id"] == 1 and "error" not in opened, opened
    assert opened["result"]["protocolVersion"] == "2025-11-25"
    assert "read_large_output" in tools_after_handshake(pipe)


def test_initialize_sent_before_the_probe_is_answered_waits_for_that_answer(pipe: RawPipe) -> None:
    pipe.send(DISCOVER)
    pipe.send(INITIALIZE)  # pipelined: the probe is still being answered
    answers = [pipe.receive(), pipe.receive()]
    assert [a["id"] for a in answers] == [0, 1]
    assert "supportedVersions" in answers[0]["result"] and "error" not in answers[1], answers
    assert "read_large_output" in tools_after_handshake(pipe)


def test_a_modern_client_that_probes_stays_modern(pipe: RawPipe) -> None:
    pipe.send(DISCOVER)
    assert pipe.receive()["id"] == 0
    pipe.send(request(5, "tools/list", {"_meta": META}))
    listed = pipe.receive()
    assert listed["id"] == 5 and "read_large_output" in [t["name"] for t in listed["result"]["tools"]]
    pipe.send(INITIALIZE)  # after a real request the era is decided: refused, as the SDK does
    refused = pipe.receive()
    assert refused["id"] == 1 and refused["error"]["code"] == -32022, refused
