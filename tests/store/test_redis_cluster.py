"""The Redis store on a real Redis Cluster (3 masters, 3 replicas): bad cluster URLs at start, sessions spread over
every master, quotas within their stated bound, and a master killed with SIGKILL right after a burst of offloads.

The store suite itself (test_store.py and the others) runs on the cluster through the `backend` parameter; these
are the cluster's own properties.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
import redis
import redis.cluster
from mcp import Client

from mcp_offload.core.services import build_services
from mcp_offload.errors import StoreFull, StoreUnavailable
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.settings import Settings
from mcp_offload.store import StoreLocationError
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.failures import REDIS_UNAVAILABLE
from mcp_offload.store.handles import scope_key
from mcp_offload.store.lifecycle import StoreLimits
from mcp_offload.store.location import open_redis_sync
from mcp_offload.store.redis import RedisStore
from support import HANG_TIMEOUT_S, free_port, text_of
from support.store import RedisCluster, make_meta, put_bytes

MASTERS = 3
REPLICA_LAG = "the shared store (Redis) could not confirm that a replica holds the output"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).with_name("mcp-offload"))
    return subprocess.run(
        [exe, *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=HANG_TIMEOUT_S
    )


def test_a_cluster_url_naming_no_reachable_node_is_one_line_at_start(tmp_path: Path) -> None:
    seeds = f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    started = time.monotonic()
    refused = _cli("--store", "foo://x", cwd=tmp_path)  # the yardstick: a start refused before any connection
    yardstick = time.monotonic() - started
    assert refused.returncode == 1
    started = time.monotonic()
    done = _cli("--store", f"redis+cluster://{seeds}", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and f"no node of redis+cluster://{seeds} answers" in done.stderr
    assert time.monotonic() - started < 2 * yardstick + 15  # a few connection attempts, no retry loop
    assert list(tmp_path.iterdir()) == []


def test_a_cluster_url_naming_a_single_node_says_which(redis_url: str, tmp_path: Path) -> None:
    node = redis_url.split("://", 1)[1].split("/", 1)[0]
    done = _cli("gateway", "--store", f"redis+cluster://{node}", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"{node} answers but is not in cluster mode: use redis://{node}" in done.stderr
    with pytest.raises(StoreLocationError, match="not in cluster mode"):
        RedisStore(f"redis+cluster://{node}")


def test_a_single_node_url_naming_a_cluster_node_says_which(redis_cluster_url: str, tmp_path: Path) -> None:
    node = redis_cluster_url.split("://", 1)[1].split(",")[0]
    done = _cli("outputs", "list", "--store", f"redis://{node}", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"{node} is a node of a Redis Cluster: use redis+cluster://{node}" in done.stderr


@pytest.mark.parametrize(
    "bad", ["redis+cluster://", "redis+cluster://host-without-port", "redis+cluster://h:1/3", "redis+cluster://h:x"]
)
def test_malformed_cluster_urls_are_refused(bad: str) -> None:
    with pytest.raises(StoreLocationError):
        RedisStore(bad)


async def test_keys_of_many_sessions_land_on_every_master(redis_cluster_url: str) -> None:
    prefix = f"mcp-offload-test:spread:{secrets.token_hex(4)}"
    store = RedisStore(redis_cluster_url, prefix=prefix)
    try:
        for i in range(24):
            await put_bytes(store, scope_key(f"spread-{i}"), f"output of session {i}\n".encode() * 20)
    finally:
        await store.aclose()
    client = open_redis_sync(redis_cluster_url)
    assert isinstance(client, redis.cluster.RedisCluster)
    try:
        per_master = {}
        for node in client.get_primaries():  # type: ignore[no-untyped-call]
            conn = client.get_redis_connection(node)
            per_master[node.name] = sum(1 for _ in conn.scan_iter(match=f"{prefix}:d:*", count=1000))
    finally:
        client.close()
    assert len(per_master) == MASTERS and sum(per_master.values()) == 24
    assert all(count > 0 for count in per_master.values()), per_master


async def test_quotas_refuse_on_the_cluster_and_the_store_wide_one_never_overshoots(redis_cluster_url: str) -> None:
    """Store-wide quota by reservation (store/redis/ledger.py): it never goes over, even with two instances racing;
    with every stored output pinned by a reader nothing can be evicted, so every further put is refused."""
    prefix = f"mcp-offload-test:quota:{secrets.token_hex(4)}"
    limits = StoreLimits(max_outputs=6, scope_max_outputs=3, max_bytes=60_000)
    a, b = (
        RedisStore(redis_cluster_url, prefix=prefix, limits=limits),
        RedisStore(redis_cluster_url, prefix=prefix, limits=limits),
    )
    scopes = [scope_key(f"quota-{i}") for i in range(4)]
    client = open_redis_sync(redis_cluster_url)
    worst = 0

    def store_wide() -> int:
        return int(client.hget(f"{prefix}:g:{{g}}:tot", "n") or 0)

    try:
        refused = 0

        async def put(i: int) -> None:
            nonlocal worst, refused
            try:
                await put_bytes((a, b)[i % 2], scopes[i % 4], f"racing put {i} ".encode() * 100)
            except StoreFull:  # every output that could make room was another put's victim right then: a clear
                refused += 1  # refusal (retry in a moment), which a race may give; going over never
            worst = max(worst, store_wide())

        async with anyio.create_task_group() as tg:
            for i in range(40):
                tg.start_soon(put, i)
        assert worst <= 6 and store_wide() <= 6 and refused < 40
        per_scope = [len(await a.list(s)) for s in scopes]
        assert all(n <= 3 for n in per_scope) and sum(per_scope) == store_wide()
        # a race may end below the limit (two puts that each evicted for the same room: fewer outputs, never more;
        # seen under load), so fill the store up to it first: each of these puts has room and evicts nothing
        for scope in scopes:
            while store_wide() < 6 and len(await a.list(scope)) < 3:
                await put_bytes(a, scope, b"topping up " * 50)  # alone now: nothing races it
        assert store_wide() == 6
        # pin everything: no victim left, so a put is refused and the books stay as they are
        handles = [(s, m.handle) for s in scopes for m in await a.list(s)]
        async with contextlib.AsyncExitStack() as readers:
            for scope, handle in handles:
                await readers.enter_async_context(a.open(scope, handle))
            for i in range(4):
                with pytest.raises(StoreFull):
                    await put_bytes(b, scopes[i], b"no room " * 50)
            assert store_wide() == len(handles)
    finally:
        client.close()
        await a.aclose()
        await b.aclose()


_READER = """
import asyncio, hashlib, sys
from mcp_offload.store.redis import RedisStore
async def main():
    store = RedisStore(sys.argv[1], prefix=sys.argv[2])
    for line in sys.stdin.read().split():
        scope, handle = line.split(",")
        async with store.open(scope, handle) as out:
            print(handle, hashlib.sha256(out.read_bytes(0, out.index.size)).hexdigest())
    await store.aclose()
asyncio.run(main())
"""


async def test_kill_9_a_master_right_after_a_burst_loses_no_returned_output(
    private_cluster: RedisCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Every offload that returned survives SIGKILL of a master (it waited for a replica's ack); calls during the
    failover fail cleanly and fast, never hang; the running store recovers without a restart, and a new process
    reads every output back byte for byte."""
    url, prefix = private_cluster.url, "mcp-offload-test:failover"
    store = RedisStore(url, prefix=prefix)
    stored: dict[tuple[str, str], str] = {}
    try:

        async def offload(i: int) -> None:
            data = os.urandom(1000 + 997 * i) + f"\noutput {i}\n".encode()
            scope = scope_key(f"failover-{i % 12}")
            meta = make_meta(data)
            await store.put(scope, meta, ContentIndex.build(data), data)
            stored[(scope, meta.handle)] = hashlib.sha256(data).hexdigest()

        async with anyio.create_task_group() as tg:
            for i in range(48):
                tg.start_soon(offload, i)
        assert len(stored) == 48
        sync = open_redis_sync(url)
        assert isinstance(sync, redis.cluster.RedisCluster)
        scope0, handle0 = next(iter(stored))
        victim = sync.get_node_from_key(f"{prefix}:d:{{{scope0}}}:{handle0}")  # type: ignore[no-untyped-call]
        sync.close()
        os.kill(private_cluster.pid(int(victim.port)), signal.SIGKILL)  # right after the burst returned

        failed, started = 0, time.monotonic()
        while True:  # the running store, calling through the failover window
            try:
                with anyio.fail_after(15):  # a call never hangs
                    async with store.open(scope0, handle0) as out:
                        assert (
                            hashlib.sha256(out.read_bytes(0, out.index.size)).hexdigest() == stored[(scope0, handle0)]
                        )
                break
            except StoreUnavailable as exc:
                assert "\n" not in str(exc)
                failed += 1
                assert time.monotonic() - started < 30, "the cluster did not fail over within 30 s"
                await anyio.sleep(0.2)
        recovered_s = time.monotonic() - started
        print(f"failover: {failed} call(s) failed, recovered in {recovered_s:.1f} s")

        for (scope, handle), digest in stored.items():  # through the running process
            async with store.open(scope, handle) as out:
                assert hashlib.sha256(out.read_bytes(0, out.index.size)).hexdigest() == digest
        await put_bytes(store, scope0, b"a write after the failover\n")  # writes go on without the replica
        await put_bytes(store, scope0, b"and another\n")
        said = [r.getMessage() for r in caplog.records if "running without a replica ack" in r.getMessage()]
        assert len(said) == 1, said  # said once
    finally:
        await store.aclose()

    listing = "\n".join(f"{s},{h}" for s, h in stored)  # through a new process
    done = await anyio.run_process([sys.executable, "-c", _READER, url, prefix], input=listing.encode(), check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    read_back = dict(line.split() for line in done.stdout.decode().splitlines())
    assert read_back == {h: d for (_, h), d in stored.items()}


async def test_a_slot_range_without_any_node_fails_calls_cleanly_and_recovers(private_cluster: RedisCluster) -> None:
    """A master and its replica both gone: no one serves their slots (and Redis stops the whole cluster, by its
    default cluster-require-full-coverage). Every call fails with one line within its bound, nothing hangs; once the
    nodes are back, the running store works again without a restart."""
    url, prefix = private_cluster.url, "mcp-offload-test:unserved"
    store = RedisStore(url, prefix=prefix, socket_timeout_s=2.0)
    try:
        scope = scope_key("unserved")
        await put_bytes(store, scope, b"before the outage\n")
        sync = open_redis_sync(url)
        assert isinstance(sync, redis.cluster.RedisCluster)
        master = sync.get_node_from_key(f"{prefix}:d:{{{scope}}}:x")  # type: ignore[no-untyped-call]
        nodes = redis.Redis(port=int(master.port)).execute_command("CLUSTER", "NODES").decode()  # type: ignore[no-untyped-call]
        sync.close()
        master_id = next(line.split()[0] for line in nodes.splitlines() if f":{master.port}@" in line)
        replica_ports = [
            int(line.split()[1].split("@")[0].rsplit(":", 1)[1])
            for line in nodes.splitlines()
            if line.split()[3] == master_id
        ]
        gone = [int(master.port), *replica_ports]
        for port in gone:
            os.kill(private_cluster.pid(port), signal.SIGKILL)
        failures = 0
        for _ in range(5):
            started = time.monotonic()
            with anyio.fail_after(20):  # never a hang
                try:
                    await put_bytes(store, scope, b"during the outage\n")
                except StoreUnavailable as exc:
                    assert "\n" not in str(exc)
                    failures += 1
            assert time.monotonic() - started < 15
        assert failures >= 4  # the first call may still be in flight before the loss is noticed
        for port in gone:
            private_cluster.restart(port)
        with anyio.fail_after(60):
            while True:
                try:
                    handle = await put_bytes(store, scope, b"after the outage\n")
                    break
                except StoreUnavailable:
                    await anyio.sleep(0.3)
        async with store.open(scope, handle) as out:
            assert out.read_bytes(0, 100) == b"after the outage\n"
    finally:
        await store.aclose()


async def test_every_failed_call_during_failovers_is_the_stores_one_line(
    private_cluster: RedisCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Offloads and searches through the real MCP client while a master is killed (SIGKILL) three times (each of the
    three, its replica promoted in its place before the next): every call that fails says the store's own one line
    (never "failed unexpectedly on the server": redis-py's cluster client raises its own internal races, e.g. an
    AttributeError from a connection a slot-map reload closed under it), and the log names the driver's error class
    each time. The deterministic half (an exception from inside the driver) is in test_persistence_base.py."""
    caplog.set_level(logging.WARNING, logger="mcp_offload.store")
    services = build_services(Settings(store=private_cluster.url, jq_workers=1))
    failed: list[str] = []
    succeeded, killed = 0, list[int]()
    try:
        async with Client(build_server(services)) as client:

            async def calls(worker: int, until: float) -> None:
                nonlocal succeeded
                i = 0
                while time.monotonic() < until:
                    i += 1
                    marker = f"worker {worker} call {i}"
                    result = await client.call_tool("offload", {"content": f"{marker}\n" + "x" * (1000 * (i % 40))})
                    if result.is_error:
                        failed.append(text_of(result))
                        continue
                    succeeded += 1
                    handle = result_of(result)["handle"]
                    found = await client.call_tool("search_large_output", {"handle": handle, "pattern": marker})
                    if found.is_error:
                        failed.append(text_of(found))

            for _ in range(MASTERS):  # calls from 1 s before the kill to 5 s after it (a failover takes 2-3 s)
                async with anyio.create_task_group() as tg:
                    for worker in range(6):
                        tg.start_soon(calls, worker, time.monotonic() + 6)
                    await anyio.sleep(1)
                    victim = next(port for port in private_cluster.masters() if port not in killed)
                    os.kill(private_cluster.pid(victim), signal.SIGKILL)
                    killed.append(victim)
                await anyio.to_thread.run_sync(private_cluster.wait_serving)
    finally:
        await services.aclose()
    print(f"failovers: {succeeded} offloads stored, {len(failed)} call(s) failed")
    assert succeeded > 0 and failed, "the kills failed no call: the test saw no failover"
    wrong = [text for text in failed if text != REDIS_UNAVAILABLE and not text.startswith(REPLICA_LAG)]
    assert not wrong, wrong
    said = [r.getMessage() for r in caplog.records if r.name == "mcp_offload.store.failures"]
    assert len(said) >= sum(text == REDIS_UNAVAILABLE for text in failed)
    assert all(re.match(r"redis store: [A-Z]\w+: \S", line) for line in said), said
