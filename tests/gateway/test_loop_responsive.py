"""A big turn never holds the gateway's event loop: while a turn carrying a fresh 12 MB tool result is parsed,
rewritten and ingested, a 1 ms timer on the gateway's own loop keeps firing and another agent's small turns keep
being answered. The bounds are relative to a yardstick measured in the same test (never an absolute wall time a loaded
machine breaks): parsing that body here with `orjson.loads` (what the gateway did on its loop). Done on the loop, the
parse alone stalls the timer and a small turn for at least that long (with the joins, digests and views that went with
it: 4x that, 287 ms against a 68 ms parse); the bound is that parse time (and at least 100 ms, far above scheduling
noise; under a load average of 20, the loop's worst stall was about half of it). The benchmark (bench/isolation.py)
measures the real figures."""

from __future__ import annotations

import asyncio
import json
import statistics
import threading
import time
from typing import Any

import httpx2
import orjson

from llm_upstream import UpstreamServer
from llm_upstream.script import reply
from support import HANG_TIMEOUT_S
from support.gateway_server import GatewayServer, StartGateway
from support.llm_conversations import BASH_ANTHROPIC, anthropic_messages

MODEL = "claude-sonnet-4-6"
HEADERS = {"content-type": "application/json", "anthropic-version": "2023-06-01"}


def _big_body() -> bytes:
    lines = [f"2026-11-21T10:{i // 60 % 60:02d}:{i % 60:02d}Z INFO api: request {i} handled by worker {i % 7} ok"
             for i in range(160_000)]  # fmt: skip
    return json.dumps({"model": MODEL, "max_tokens": 64, "messages": anthropic_messages("\n".join(lines)),
                       "tools": [BASH_ANTHROPIC]}).encode()  # fmt: skip


def _small_turn(http: httpx2.Client, gateway: GatewayServer, i: int) -> float:
    body = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": f"small turn {i}"}]}
    started = time.perf_counter()
    answer = http.post(gateway.base_url + "/v1/messages", json=body, headers={**HEADERS, "x-api-key": "sk-ant-x"})
    assert answer.status_code == 200, answer.text
    return time.perf_counter() - started


def _ready(gateway: GatewayServer) -> None:
    assert gateway.app is not None
    pool = gateway.app.services.ingest
    pool.start()
    deadline = time.monotonic() + HANG_TIMEOUT_S
    while not pool.ready:  # the workers load (seconds on a loaded machine): until then big bodies parse here
        assert time.monotonic() < deadline, "the ingest workers did not start"
        time.sleep(0.05)


def test_a_big_turn_does_not_hold_the_loop(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(lambda turn: reply("done"))
    gateway = start_gateway(upstream)
    _ready(gateway)
    body = _big_body()
    started = time.perf_counter()
    orjson.loads(body)
    parse_s = time.perf_counter() - started
    bound = max(0.1, parse_s)

    with httpx2.Client(timeout=600) as http:
        alone = [_small_turn(http, gateway, i) for i in range(20)]  # the small turns' own time, and warm-up
        # A second big turn (another agent, so the result is ingested afresh) only when the first one's figures miss:
        # the small turns cross this test process's own GIL too (the upstream and the clients run here), and on a
        # loaded CI machine one of them once waited 152 ms against a bound of 125. A loop that blocks misses twice.
        # A small turn may take twice the bound over its own time (the GIL it shares with the upstream and the
        # clients: 167 ms once, while the loop's own worst stall was 76 ms). A loop doing the turn's work holds one
        # for 4x the parse (above), and the timer catches any stall of the loop over the bound.
        for attempt, agent in enumerate(("sk-ant-y", "sk-ant-y2")):
            lags, small, big = _turns_during_a_big_one(http, gateway, body, agent)
            assert big.status_code == 200, big.text
            report = (f"loop stalled up to {max(lags) * 1000:.0f} ms, small turns up to {max(small) * 1000:.0f} ms "
                      f"(alone: median {statistics.median(alone) * 1000:.0f} ms, max {max(alone) * 1000:.0f} ms; "
                      f"parsing the body: {parse_s * 1000:.0f} ms; bound {bound * 1000:.0f} ms)")  # fmt: skip
            print(report)
            if lags and max(lags) < bound and small and max(small) < max(alone) + 2 * bound:
                break
            assert attempt == 0, report
    sent = [r.body for r in upstream.received("anthropic", ok_only=True) if r.body and len(r.body["messages"]) == 3]
    assert len(sent) == attempt + 1  # one upstream request per big turn
    assert all("Stored as out_" in json.dumps(one["messages"][2]) for one in sent)  # Y's turns: offloaded


def _turns_during_a_big_one(
    http: httpx2.Client, gateway: GatewayServer, body: bytes, agent: str
) -> tuple[list[float], list[float], Any]:
    """The 1 ms timer's lags on the gateway's loop and agent X's small turns, while agent `agent` sends `body`."""
    stop = threading.Event()
    lags: list[float] = []

    async def ticker() -> None:
        while not stop.is_set():
            tick = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - tick - 0.001)

    assert gateway.loop is not None
    ticking = asyncio.run_coroutine_threadsafe(ticker(), gateway.loop)
    small: list[float] = []

    def agent_x() -> None:
        with httpx2.Client(timeout=600) as x_http:
            while not stop.is_set():
                small.append(_small_turn(x_http, gateway, len(small)))

    x = threading.Thread(target=agent_x)
    x.start()
    big: Any = http.post(gateway.base_url + "/v1/messages", content=body,
                         headers={**HEADERS, "x-api-key": agent})  # fmt: skip
    stop.set()
    x.join(HANG_TIMEOUT_S)
    ticking.result(HANG_TIMEOUT_S)
    return lags, small, big
