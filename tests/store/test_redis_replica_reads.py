"""Reads from replicas on a real Redis Cluster (`read_from_replicas`): the ranges of a large output come from its
master's replica, a replica that lacks the output is never taken for "gone" (the master answers), and no read sees
anything but the whole, published bytes, whether the offload waited for the replica's ack or not."""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis
import redis.cluster

from mcp_offload.errors import SettingsError
from mcp_offload.settings import Settings
from mcp_offload.store import open_store
from mcp_offload.store.handles import scope_key
from mcp_offload.store.location import open_redis_sync
from mcp_offload.store.redis import RedisBuffer, RedisStore
from support import free_port
from support.store import NO_REDIS, RedisCluster, have_redis_server, put_bytes

BIG = 3 * 1024 * 1024 + 17  # over eager_bytes (1 MiB): read in ranges, through a RedisBuffer


def _getranges(node: redis.Redis) -> int:
    stats: dict[str, Any] = node.info("commandstats")
    return int(stats.get("cmdstat_getrange", {}).get("calls", 0))


def _nodes_of(url: str, key: str) -> tuple[redis.Redis, redis.Redis]:
    """Plain clients of the master that holds `key` and of its replica, once the slot map lists that replica
    (CLUSTER SLOTS lists a replica only when gossip says it has data: a moment after the first write)."""
    deadline = time.monotonic() + 30
    while True:
        cluster = open_redis_sync(url)
        assert isinstance(cluster, redis.cluster.RedisCluster)
        try:
            nodes = cluster.nodes_manager.slots_cache[cluster.keyslot(key)]  # type: ignore[no-untyped-call]
        finally:
            cluster.close()
        if len(nodes) > 1:  # the master first, then its replica
            return redis.Redis(host=nodes[0].host, port=nodes[0].port), redis.Redis(
                host=nodes[1].host, port=nodes[1].port
            )
        assert time.monotonic() < deadline, "the slot map never listed the replica"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A cluster of this module alone: its nodes' command counts are this module's reads only (also under
    pytest-xdist, where other workers share the session's cluster)."""
    if not have_redis_server():
        pytest.skip(NO_REDIS)
    cluster = RedisCluster(tmp_path_factory.mktemp("replica-reads")).start()
    try:
        yield cluster.url
    finally:
        cluster.stop()


@pytest.fixture
async def replica_store(cluster_url: str) -> AsyncIterator[RedisStore]:
    store = RedisStore(cluster_url, prefix=f"mcp-offload-test:{secrets.token_hex(6)}", read_from_replicas=True)
    try:
        yield store
    finally:
        await store.aclose()


async def test_ranges_come_from_the_replica_not_the_master(replica_store: RedisStore, cluster_url: str) -> None:
    scope, data = scope_key("replica-reads"), os.urandom(BIG)
    handle = await put_bytes(replica_store, scope, data)  # returned: the replica acknowledged it (WAIT)
    key = replica_store._key("d", scope, handle)
    master, replica = _nodes_of(cluster_url, key)
    # read through a store whose client loads the slot map now that it lists the replica: a client that loaded it
    # before (the writer's, a moment after the cluster formed) reads from the master until it refreshes the map
    reader = RedisStore(cluster_url, prefix=replica_store.prefix, read_from_replicas=True)
    try:
        # and wait until its own map lists it: the node it asked may know the replica later than the one
        # `_nodes_of` asked (gossip; seen on a loaded machine), and redis-py sends a read to the master then
        replicas = await anyio.to_thread.run_sync(reader._replica_client)
        assert isinstance(replicas, redis.cluster.RedisCluster)
        deadline = time.monotonic() + 30
        while len(replicas.nodes_manager.slots_cache[replicas.keyslot(key)]) < 2:  # type: ignore[no-untyped-call]
            assert time.monotonic() < deadline, "the reader's slot map never listed the replica"
            await anyio.sleep(0.2)
            await anyio.to_thread.run_sync(replicas.nodes_manager.initialize)
        before = _getranges(master), _getranges(replica)
        async with reader.open(scope, handle) as out:
            assert isinstance(out.data, RedisBuffer)
            assert await anyio.to_thread.run_sync(out.contiguous) == data
            assert out.data.from_master == 0
        assert _getranges(master) == before[0]  # not one range from the master
        assert _getranges(replica) - before[1] >= BIG // (1024 * 1024)
    finally:
        await reader.aclose()
        master.close()
        replica.close()


async def test_a_replica_that_lacks_the_output_or_fails_is_never_taken_for_gone(
    cluster_url: str, redis_url: str
) -> None:
    """A cluster replica refuses writes (MOVED), so a replica that has not received an output yet is played by a Redis
    that never had it (GETRANGE answers b"", as such a replica does), and a failing one by a closed port: each piece
    then comes from the master, and only the master's short answer is "gone"."""
    store = RedisStore(cluster_url, prefix=f"mcp-offload-test:{secrets.token_hex(6)}")
    scope, data = scope_key("replica-lacks"), os.urandom(BIG)
    try:
        handle = await put_bytes(store, scope, data)
        key = store._key("d", scope, handle)
        master = open_redis_sync(cluster_url)
        for stand_in in (redis.Redis.from_url(redis_url), redis.Redis(port=free_port(), socket_connect_timeout=1)):
            view = RedisBuffer(master, key, len(data), lambda: AssertionError("not gone"), replicas=stand_in)
            assert await anyio.to_thread.run_sync(view.tobytes) == data
            assert view.from_master == 4  # each of the four 1 MiB pieces
            stand_in.close()
        await store.delete(scope, handle)
        gone = RedisBuffer(master, key, len(data), lambda: KeyError("gone"), replicas=redis.Redis.from_url(redis_url))
        with pytest.raises(KeyError, match="gone"):
            await anyio.to_thread.run_sync(gone.tobytes)
        master.close()
    finally:
        await store.aclose()


@pytest.mark.parametrize("ack_timeout_s", [2.0, 0.0], ids=["acknowledged", "no-wait"])
async def test_every_read_from_replicas_is_the_whole_published_output(cluster_url: str, ack_timeout_s: float) -> None:
    """Offloads in twelve sessions (spread over every master), each read back at once from replicas while the others
    are still being written: every read is the exact bytes. Without waiting for an ack (0 s) a replica may not have
    the output yet: the read takes it from the master."""
    prefix = f"mcp-offload-test:{secrets.token_hex(6)}"
    writer = RedisStore(cluster_url, prefix=prefix, replica_ack_timeout_s=ack_timeout_s)
    reader = RedisStore(cluster_url, prefix=prefix, read_from_replicas=True)
    from_master, mismatched = 0, []
    try:
        at_once = anyio.CapacityLimiter(4)  # four writers at a time: a loaded 2-core machine must not time out

        async def offload_and_read(i: int) -> None:
            nonlocal from_master
            data = os.urandom(1_100_000 + 50_000 * i)
            scope = scope_key(f"replica-reads-{i}")
            async with at_once:
                handle = await put_bytes(writer, scope, data)
            async with reader.open(scope, handle) as out:
                assert isinstance(out.data, RedisBuffer)
                read = await anyio.to_thread.run_sync(out.contiguous)
                from_master += out.data.from_master
            if hashlib.sha256(read).digest() != hashlib.sha256(data).digest():
                mismatched.append(handle)

        async with anyio.create_task_group() as tg:
            for i in range(12):
                tg.start_soon(offload_and_read, i)
    finally:
        await writer.aclose()
        await reader.aclose()
    print(f"ack timeout {ack_timeout_s} s: {from_master} piece(s) read from the master")
    assert mismatched == []


def test_reads_from_replicas_need_a_cluster(redis_url: str, tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="for a Redis Cluster store"):
        RedisStore(redis_url, read_from_replicas=True)
    with pytest.raises(SettingsError, match="the store is the directory"):
        open_store(str(tmp_path / "store"), read_from_replicas=True)
    assert Settings(store_read_from_replicas=True).store_read_from_replicas
