"""The decision record on both backends: set-if-absent (first writer wins, also under a race), counters that add
up across instances, sessions listing and expiry, accounting figures, and the Redis outage -> fail-open path."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.record import Decision, DecisionRecord, open_record, part_digest
from mcp_offload.cachesafe.record.base import RecordBackend
from mcp_offload.cachesafe.record.fs import FilesystemRecord
from mcp_offload.cachesafe.record.redis import RedisRecord
from mcp_offload.cachesafe.request_rewrite import RewriteUnavailable, rewrite_request
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.errors import StoreUnavailable
from mcp_offload.gateway.accounting import TurnCounters, record_turn, session_summary
from mcp_offload.providers.anthropic.provider import FIVE_MINUTES
from mcp_offload.store.handles import scope_key
from support.gateway_core import Conversation, headers_for, open_services
from support.store import FakeClock, RedisServer, have_redis_server, redis_location

SESSION = scope_key("record-test")


@pytest.fixture(params=["fs", "redis", "cluster"])
async def backends(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[list[RecordBackend]]:
    """Two backend objects on the same data (two "instances")."""
    made: list[RecordBackend] = []
    if request.param != "fs":
        url = redis_location(request, request.param)
        prefix = "gw-test:" + secrets.token_hex(6)
        made = [RedisRecord(url, prefix=prefix), RedisRecord(url, prefix=prefix)]
    else:
        made = [FilesystemRecord(tmp_path / "store"), FilesystemRecord(tmp_path / "store")]
    yield made
    for backend in made:
        await backend.aclose()


async def test_put_if_absent_keeps_the_first_value(backends: list[RecordBackend]) -> None:
    a, b = backends
    assert await a.get(SESSION, ["x", "y"]) == {}
    assert await a.put_if_absent(SESSION, {"x": "1"}) == {"x": "1"}
    assert await b.put_if_absent(SESSION, {"x": "2", "y": "3"}) == {"x": "1", "y": "3"}
    assert await a.get(SESSION, ["x", "y", "z"]) == {"x": "1", "y": "3"}
    assert await b.get(SESSION, ["y"]) == {"y": "3"}
    assert await a.get(scope_key("other"), ["x"]) == {}


async def test_put_latest_keeps_the_highest_order_whoever_writes_last(backends: list[RecordBackend]) -> None:
    """A retried request's expansion: the latest arrival wins, whichever instance finishes last; a field set by
    put_if_absent counts as the earliest; an equal or lower order changes nothing."""
    a, b = backends
    await a.put_if_absent(SESSION, {"x:1": "legacy"})
    await a.put_latest(SESSION, {"x:1": (20, "second attempt"), "x:2": (5, "only")})
    await b.put_latest(SESSION, {"x:1": (10, "first attempt, finished late")})
    await b.put_latest(SESSION, {"x:1": (20, "same order, later write")})
    assert await a.get(SESSION, ["x:1", "x:2"]) == await b.get(SESSION, ["x:1", "x:2"])
    assert await b.get(SESSION, ["x:1", "x:2"]) == {"x:1": "second attempt", "x:2": "only"}
    await b.put_latest(SESSION, {"x:1": (30, "a third attempt")})
    assert await a.get(SESSION, ["x:1"]) == {"x:1": "a third attempt"}
    assert await a.put_if_absent(SESSION, {"x:1": "set-if-absent never replaces"}) == {"x:1": "a third attempt"}

    async def write(order: int) -> None:
        await backends[order % 2].put_latest(SESSION, {"x:3": (order, f"attempt {order}")})

    async with anyio.create_task_group() as tg:
        for order in (3, 9, 1, 7, 5, 8, 2):
            tg.start_soon(write, order)
    assert await a.get(SESSION, ["x:3"]) == await b.get(SESSION, ["x:3"]) == {"x:3": "attempt 9"}


async def test_racing_writers_agree_on_one_value(backends: list[RecordBackend]) -> None:
    fields = [f"d:{i}" for i in range(20)]
    seen: dict[int, dict[str, str]] = {}

    async def writer(n: int) -> None:
        backend = backends[n % 2]
        seen[n] = await backend.put_if_absent(SESSION, {f: f"writer-{n}" for f in fields})

    async with anyio.create_task_group() as tg:
        for n in range(8):
            tg.start_soon(writer, n)
    final = await backends[0].get(SESSION, fields)
    assert all(view == final for view in seen.values())  # every writer was told the value that stuck
    assert len(set(final.values())) == 1  # a batch is atomic on both backends: one writer set them all


async def test_counters_add_up_across_instances(backends: list[RecordBackend]) -> None:
    a, b = backends
    await a.add(SESSION, {"requests": 1, "tokens_kept_out": 500, "zero": 0})
    await b.add(SESSION, {"requests": 2, "tokens_kept_out": 250})
    assert await a.counters(SESSION) == {"requests": 3, "tokens_kept_out": 750}
    listed = dict(await b.sessions())
    assert SESSION in listed and abs(listed[SESSION] - time.time()) < 60


async def test_fs_record_expires_idle_sessions(tmp_path: Path) -> None:
    clock = FakeClock()
    record = FilesystemRecord(tmp_path, ttl_s=100, clock=clock)
    await record.put_if_absent(SESSION, {"x": "1"})
    assert [s for s, _ in await record.sessions()] == [SESSION]
    clock.advance(1000)
    assert await record.sessions() == []
    assert await record.get(SESSION, ["x"]) == {}


async def test_fs_record_skips_a_torn_line_and_reads_on(tmp_path: Path) -> None:
    record = FilesystemRecord(tmp_path)
    await record.put_if_absent(SESSION, {"a": "1"})
    log = next((tmp_path / "gateway" / "v1").iterdir())
    with log.open("ab") as f:
        f.write(b'{"f": "b", "v": tru\n')  # a torn write
    other = FilesystemRecord(tmp_path)
    await other.put_if_absent(SESSION, {"c": "3"})
    assert await FilesystemRecord(tmp_path).get(SESSION, ["a", "b", "c"]) == {"a": "1", "c": "3"}


@pytest.mark.parametrize("bad", ["../etc", "A" * 32, "", "0" * 31])
async def test_session_keys_are_validated_before_any_path_or_key(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        await FilesystemRecord(tmp_path).put_if_absent(bad, {"x": "1"})


async def test_decisions_and_producers_round_trip(tmp_path: Path) -> None:
    record = DecisionRecord(FilesystemRecord(tmp_path))
    session = CacheSafeSession.of_key(SESSION)
    digest = part_digest("call_1", 0, "content")
    ours = Decision("out_" + "a" * 26, "Stored as …", "call_1", "bash", 900, 120, "threshold")
    theirs = Decision("out_" + "b" * 26, "other", "call_1", "bash", 900, 100, "cost")
    assert await record.decide(session, {digest: ours}, tools=True) == {digest: ours}
    assert await record.decide(session, {digest: theirs}, tools=False) == {digest: ours}
    state = await record.state(session, [digest, part_digest("call_2", 0, "x")])
    assert state.tools and state.decisions == {digest: ours} and state.bypass is None
    assert await record.producer(session, ours.handle) == ours
    assert ours.tokens_kept_out == 780


async def test_accounting_counts_and_an_honest_cost_ratio(tmp_path: Path) -> None:
    async with open_services(tmp_path / "store") as services:
        session = CacheSafeSession.of_key(SESSION)
        # turn 1: a 10k-token result offloaded (would have been written once, then read on every turn)
        await record_turn(
            services,
            session,
            TurnCounters(
                prices=FIVE_MINUTES,
                tokens_kept_out=9_500,
                tokens_offloaded=10_000,
                offloaded=1,
                input_tokens=100,
                cache_read_tokens=5_000,
                cache_write_tokens=1_000,
            ),
        )
        await record_turn(services, session, TurnCounters(prices=FIVE_MINUTES, retrieval_calls=1, loops=1, fail_open=1))
        summary = await session_summary(open_record(services))
        totals = summary["totals"]
        assert totals["requests"] == 2 and totals["retrieval_calls"] == 1 and totals["fail_open"] == 1
        # actual = 100 + 5000*0.1 + 1000*1.25 = 1850; direct = 1850 + 9500*0.1 + 10000*1.15 = 14300
        assert totals["cost_actual_milli"] == 1_850_000 and totals["cost_direct_milli"] == 14_300_000
        assert totals["cost_ratio"] == round(1850 / 14300, 4)
        assert summary["sessions"][0]["session"] == SESSION
        assert (await session_summary(open_record(services), "f" * 32))["sessions"] == []


@pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed (.ci/redis.sh start)")
async def test_redis_killed_means_fail_open_and_recovery(tmp_path: Path) -> None:
    server = RedisServer().start()
    try:
        async with open_services(server.url) as services:
            conv = Conversation("anthropic", seed=2, large_every=1)
            conv.advance()
            headers = headers_for("anthropic", "k-" + secrets.token_hex(4))
            policy = RewritePolicy(threshold_tokens=200)
            assert (await rewrite_request(services, api_named("anthropic"), conv.body(), headers, policy)).changed
            server.stop()
            conv.advance()
            body: dict[str, Any] = conv.body()
            started = time.monotonic()
            down = await rewrite_request(services, api_named("anthropic"), body, headers, policy)
            assert down.body is body and not down.changed and down.fail_open and "store" in down.fail_open
            assert time.monotonic() - started < 10  # no hang
            with pytest.raises(RewriteUnavailable):
                await rewrite_request(
                    services,
                    api_named("anthropic"),
                    body,
                    headers,
                    RewritePolicy(threshold_tokens=200, fail_closed=True),
                )
            with pytest.raises(StoreUnavailable):
                await open_record(services).backend.get(SESSION, ["x"])
            server.start()
            for _ in range(3):  # pooled connections broken by the restart are dropped on first use
                conv.advance()
                back = await rewrite_request(services, api_named("anthropic"), conv.body(), headers, policy)
                if back.fail_open is None:
                    break
            assert back.changed and back.fail_open is None  # Redis kept no data (no persistence): a new record
    finally:
        server.stop()


async def test_concurrent_adds_and_reads_never_double_count(backends: list[RecordBackend]) -> None:
    async def add(n: int) -> None:
        await backends[n % 2].add(SESSION, {"requests": 1, "tokens": n})
        await backends[(n + 1) % 2].get(SESSION, ["x"])  # reads interleaved with writes
        await backends[n % 2].counters(SESSION)

    async with anyio.create_task_group() as tg:
        for n in range(40):
            tg.start_soon(add, n)
    for backend in backends:
        assert await backend.counters(SESSION) == {"requests": 40, "tokens": sum(range(40))}


@pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed (.ci/redis.sh start)")
async def test_counts_made_while_the_store_is_down_are_added_when_it_is_back() -> None:
    server = RedisServer().start()
    try:
        async with open_services(server.url) as services:
            session = CacheSafeSession.of_key(scope_key("counted-" + secrets.token_hex(4)))
            await record_turn(services, session, TurnCounters(prices=FIVE_MINUTES, tokens_kept_out=10))
            server.stop()
            with pytest.raises(StoreUnavailable):
                await record_turn(services, session, TurnCounters(prices=FIVE_MINUTES, fail_open=1))
            with pytest.raises(StoreUnavailable):
                await record_turn(services, session, TurnCounters(prices=FIVE_MINUTES, fail_open=1))
            server.start()
            for _ in range(3):  # the first call after the restart may meet a broken pooled connection
                try:
                    await record_turn(services, session, TurnCounters(prices=FIVE_MINUTES, requests=0))
                    break
                except StoreUnavailable:
                    continue
            counters = await open_record(services).backend.counters(session.key)
            # Redis lost the first turn (no persistence), but the two fail-open turns were kept and added
            assert counters["fail_open"] == 2 and counters["requests"] == 2
    finally:
        server.stop()


async def test_fs_record_sweeps_idle_sessions_while_writing(tmp_path: Path) -> None:
    record = FilesystemRecord(tmp_path, ttl_s=100)
    await record.put_if_absent(SESSION, {"x": "1"})
    idle = tmp_path / "gateway" / "v1" / (SESSION + ".jsonl")
    os.utime(idle, (time.time() - 1000, time.time() - 1000))  # unused for longer than the ttl
    record._last_sweep -= 3600  # the sweep interval has passed
    other = scope_key("another")
    await record.put_if_absent(other, {"y": "2"})  # a write after the sweep interval removes idle logs
    assert sorted(p.name for p in idle.parent.iterdir()) == [other + ".jsonl"]
