"""What the gateway adds in time: time to first token through the gateway equals the upstream's when no retrieval
happens (also on the spliced path: tools injected, the model answers in text), and the p50 added latency of a call
with nothing to offload (target < 5 ms; asserted with headroom for a shared machine, printed for the report)."""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpx2

from llm_upstream import UpstreamServer, reply
from support.gateway_server import StartGateway
from support.llm_conversations import BASH_ANTHROPIC, anthropic_messages, build_log

HEADERS = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
FIRST_TOKEN_S = 0.8


def _first_token_s(http: httpx2.Client, base: str, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    with http.stream("POST", base + "/v1/messages", json=body, headers=HEADERS) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            if b"content_block_delta" in chunk:
                return time.perf_counter() - started
    raise AssertionError("no content_block_delta")


def test_time_to_first_token_equals_the_upstreams(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    gateway = start_gateway(upstream)
    plain = {"model": "claude-sonnet-4-6", "max_tokens": 256, "stream": True,
             "messages": [{"role": "user", "content": "hello"}]}  # fmt: skip
    offloading = {**plain, "messages": anthropic_messages(build_log()), "tools": [BASH_ANTHROPIC]}
    slow = reply("a long answer " * 20, first_token_delay_s=FIRST_TOKEN_S, event_delay_s=0.01)
    with httpx2.Client(timeout=30) as http:
        upstream.use([reply("ok")])
        http.post(gateway.base_url + "/v1/messages", json={**offloading, "stream": False}, headers=HEADERS)
        for body in (plain, offloading):  # the offload decision is recorded: this is a later turn's cost
            upstream.use([slow, slow])
            direct = _first_token_s(http, upstream.base_url, body)
            through = _first_token_s(http, gateway.base_url, body)
            assert direct >= FIRST_TOKEN_S
            print(f"TTFT direct {direct * 1000:.1f} ms, through the gateway {through * 1000:.1f} ms")
            assert through - direct < 0.15, (direct, through)
    tools = upstream.received("anthropic", ok_only=True)[-1].body["tools"]
    assert "search_large_output" in [t["name"] for t in tools]  # the second case went through the splice path


def test_added_latency_p50_with_nothing_to_offload(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    gateway = start_gateway(upstream)
    body = {"model": "claude-sonnet-4-6", "max_tokens": 16, "messages": [{"role": "user", "content": "ping"}]}
    upstream.use(lambda turn: reply("pong"))
    direct: list[float] = []
    through: list[float] = []
    with httpx2.Client(timeout=30) as http:
        for base in (upstream.base_url, gateway.base_url):  # warm both connections
            http.post(base + "/v1/messages", json=body, headers=HEADERS)
        for _ in range(40):
            for base, times in ((upstream.base_url, direct), (gateway.base_url, through)):
                started = time.perf_counter()
                response = http.post(base + "/v1/messages", json=body, headers=HEADERS)
                times.append(time.perf_counter() - started)
                assert response.status_code == 200 and response.json()["content"][0]["text"] == "pong"
    added_ms = (statistics.median(through) - statistics.median(direct)) * 1000
    print(f"p50 direct {statistics.median(direct) * 1000:.2f} ms, through {statistics.median(through) * 1000:.2f} ms,"
          f" added {added_ms:.2f} ms")  # fmt: skip
    # target 5 ms (bench/gateway.py measures it); a regression catcher, not a measurement: the bound grows with the
    # machine's own slowness right now, which the direct round trip shows (20 ms added at a load of 15, direct ~8 ms)
    assert added_ms < 15 + 2 * statistics.median(direct) * 1000
