"""`mcp-offload gateway` as a user runs it (a real subprocess): it serves, answers /healthz, relays an SDK call, logs
one JSON line per request on stderr, refuses an open non-loopback address, and stops cleanly on SIGTERM; its
figures show up in its own /stats and in `mcp-offload stats`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import httpx2
import pytest

from llm_upstream import UpstreamServer
from support import HANG_TIMEOUT_S, free_port
from support.child_processes import ingest_workers
from support.gateway_process import gateway_args, wait_healthy
from support.gateway_server import StartGateway
from support.llm_conversations import BASH_ANTHROPIC, NEEDLE, anthropic_messages, build_log, search_then_answer

CLI = [sys.executable, "-m", "mcp_offload"]


def test_cli_serves_logs_and_stops(upstream: UpstreamServer, tmp_path: Path) -> None:
    port = free_port()
    store = tmp_path / "store"
    args = gateway_args(port, store, upstream.base_url, upstream.openai_url, "--threshold-tokens", "500")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, lambda: proc.stderr.read().decode() if proc.poll() is not None and proc.stderr else "")
        health = httpx2.get(base + "/healthz").json()
        assert health["status"] == "ok" and health["service"] == "gateway"
        upstream.use(search_then_answer())
        client = anthropic.Anthropic(base_url=base, api_key="sk-ant-secret-credential", max_retries=0)
        message = client.messages.create(
            model="claude-sonnet-4-6", max_tokens=256, messages=anthropic_messages(build_log()), tools=[BASH_ANTHROPIC]
        )
        assert message.content[-1].text == f"Found it: {NEEDLE}"  # type: ignore[union-attr]
        stats = httpx2.get(base + "/stats").json()
        totals = stats["totals"]
        assert totals["requests"] == 1 and totals["loops"] == 1 and totals["retrieval_calls"] == 1
        assert totals["upstream_calls"] == 2 and totals["tokens_kept_out"] > 1000
        assert 0 < totals["cost_ratio"] < 1
        assert "LLM gateway" in httpx2.get(base + "/").text
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err.decode()
    lines = [json.loads(line) for line in err.decode().splitlines() if line.startswith("{")]
    request = next(line for line in lines if line.get("path") == "/v1/messages")
    assert request["status"] == 200 and request["loops"] == 1 and request["retrieval_calls"] == 1
    assert request["logger"] == "mcp_offload.gateway" and request["changed"] is True
    assert "sk-ant-secret-credential" not in err.decode()
    printed = subprocess.run([*CLI, "stats", "--store", str(store)], capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    assert "LLM gateway" in printed.stdout and "cost" in printed.stdout
    as_json = subprocess.run([*CLI, "stats", "--store", str(store), "--json"], capture_output=True, text=True)
    assert json.loads(as_json.stdout)["gateway"]["totals"]["loops"] == 1


def test_cli_refuses_an_open_address() -> None:
    refused = subprocess.run([*CLI, "gateway", "--host", "0.0.0.0", "--port", str(free_port())],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert refused.returncode == 2
    assert "token" in refused.stderr and "Traceback" not in refused.stderr
    assert "MCP_OFFLOAD_GATEWAY_TOKEN" in refused.stderr  # the gateway's own token variable, not the MCP service's


def test_gateway_status_behind_its_token(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    token = "gw-token-" + "q" * 24
    gateway = start_gateway(upstream, tokens=(token,))
    assert httpx2.get(gateway.base_url + "/stats").status_code == 401
    assert httpx2.get(gateway.base_url + "/stats", headers={"x-mcp-offload-token": token}).json()["sessions_total"] == 0


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads child processes from /proc")
def test_ingest_workers_start_at_launch_or_at_the_first_big_output(upstream: UpstreamServer, tmp_path: Path) -> None:
    """A shared gateway starts its ingest workers at launch; one started with `--ingest-workers-at first-big-output`
    (what `wrap` starts for one agent) starts none until a big output comes, then its workers."""
    upstream.use(search_then_answer())
    for when in ("launch", "first-big-output"):
        port = free_port()
        args = gateway_args(port, tmp_path / when, upstream.base_url, upstream.openai_url, "--ingest-workers-at", when)
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, proc, lambda: "")
            deadline = time.monotonic() + HANG_TIMEOUT_S
            if when == "launch":
                while ingest_workers(proc.pid) < 2 and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert ingest_workers(proc.pid) == 2
                continue
            time.sleep(1.0)  # a worker started at launch would be a child by now (Popen returns once it is)
            assert ingest_workers(proc.pid) == 0
            client = anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
            big_log = build_log(lines=8000)  # ~400 KB: an output of 256 KiB or more, prepared in a thread meanwhile
            assert len(big_log) > 256 * 1024
            messages = anthropic_messages(big_log)
            client.messages.create(model="claude-sonnet-4-6", max_tokens=256, messages=messages, tools=[BASH_ANTHROPIC])
            while ingest_workers(proc.pid) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert ingest_workers(proc.pid) == 2
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
