"""A SIGTERM'd `mcp-offload gateway` (a real process) drains as the MCP HTTP service does (`web/server.py`): it stops
accepting connections, /healthz says "draining", a new request on a connection that is still open gets a 503 in its
API's own error document (retry: another instance answers), the stream in flight runs to its end, and the process
exits 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import anthropic
import httpx2
import pytest

from llm_upstream import UpstreamServer, reply
from support import free_port
from support.gateway_process import gateway_args, wait_healthy

HEADERS = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
BODY = {"model": "claude-sonnet-4-6", "max_tokens": 2000, "messages": [{"role": "user", "content": "go"}]}


def test_sigterm_drains_the_stream_in_flight_and_refuses_new_requests(upstream: UpstreamServer, tmp_path: Path) -> None:
    upstream.use([reply("tick " * 120, event_delay_s=0.05, chunk_chars=5)])  # a stream of about 6 s
    port = free_port()
    args = gateway_args(port, tmp_path / "store", upstream.base_url, upstream.openai_url)
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ})
    base = f"http://127.0.0.1:{port}"
    streamed: list[bytes] = []
    try:
        wait_healthy(base, proc, lambda: "")
        started = threading.Event()

        def stream() -> None:
            with (
                httpx2.Client(timeout=60) as http,
                http.stream("POST", base + "/v1/messages", json={**BODY, "stream": True}, headers=HEADERS) as answer,
            ):
                for chunk in answer.iter_raw():
                    streamed.append(chunk)
                    started.set()

        streaming = threading.Thread(target=stream)
        streaming.start()
        assert started.wait(30)
        with httpx2.Client(timeout=30) as kept:  # a keep-alive connection opened before the SIGTERM
            assert kept.get(base + "/healthz").json()["status"] == "ok"
            proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 20
            while (health := kept.get(base + "/healthz")).status_code == 200 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert health.status_code == 503 and health.json()["status"] == "draining"
            refused = kept.post(base + "/v1/messages", json=BODY, headers=HEADERS)
        assert refused.status_code == 503
        assert refused.json()["type"] == "error" and "shutting down" in refused.json()["error"]["message"]
        with (
            anthropic.Anthropic(base_url=base, api_key="k", max_retries=0) as fresh,
            pytest.raises(anthropic.APIConnectionError),  # no new connections
        ):
            fresh.messages.create(model="claude-sonnet-4-6", max_tokens=8, messages=[{"role": "user", "content": "x"}])
        streaming.join(30)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()[-2000:]
    events = b"".join(streamed)
    assert b"message_stop" in events and events.count(b"tick") == 120  # the stream in flight ran to its end
    assert upstream.requests[0].finished and len(upstream.requests) == 1  # the refused one never went upstream
    lines = [json.loads(line) for line in err.decode().splitlines() if line.startswith("{")]
    assert any("shutting down: waiting" in line["msg"] for line in lines)
