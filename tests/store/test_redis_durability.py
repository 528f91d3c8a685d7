"""Durable when it says so (store/redis/durability.py), on one Redis node with a replica: a put returns once the
replica has the output; a replica that does not acknowledge in time makes the put fail with nothing stored; a
master whose replica is gone keeps taking writes and says so once."""

from __future__ import annotations

import secrets
import signal
import time
from collections.abc import Callable, Iterator

import anyio
import pytest
import redis

from mcp_offload.errors import StoreUnavailable
from mcp_offload.store.redis import RedisStore
from support.store import NO_REDIS, SCOPE_A, RedisServer, have_redis_server, put_bytes


def _until(check: Callable[[], bool], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def master_and_replica() -> Iterator[tuple[RedisServer, RedisServer]]:
    if not have_redis_server():
        pytest.skip(NO_REDIS)
    master = RedisServer().start()
    replica = RedisServer(extra=["--replicaof", "127.0.0.1", str(master.port)]).start()
    try:
        probe = redis.Redis(port=replica.port)
        _until(lambda: probe.info("replication").get("master_link_status") == "up")
        probe.close()
        yield master, replica
    finally:
        replica.stop()
        master.stop()


async def test_a_put_waits_for_the_replica_and_fails_cleanly_when_it_does_not_ack(
    master_and_replica: tuple[RedisServer, RedisServer], caplog: pytest.LogCaptureFixture
) -> None:
    master, replica = master_and_replica
    prefix = f"mcp-offload-test:wait:{secrets.token_hex(4)}"
    store = RedisStore(master.url, prefix=prefix, replica_ack_timeout_s=0.5)
    on_replica = redis.Redis(port=replica.port)
    try:
        handle = await put_bytes(store, SCOPE_A, b"acknowledged by the replica\n")
        assert on_replica.exists(f"{prefix}:d:{SCOPE_A}:{handle}") == 1  # there when put returned
        assert replica.proc is not None
        replica.proc.send_signal(signal.SIGSTOP)  # connected, but never acknowledges
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="could not confirm that a replica holds the output") as err:
                await put_bytes(store, SCOPE_A, b"never acknowledged\n")
            assert time.monotonic() - started < 3 and "\n" not in str(err.value)
            assert [m.handle for m in await store.list(SCOPE_A)] == [handle]  # nothing stored, nothing booked
        finally:
            replica.proc.send_signal(signal.SIGCONT)
        replica.stop()  # the replica is gone: writes go on, said once
        with anyio.fail_after(10):
            while True:
                try:
                    await put_bytes(store, SCOPE_A, b"master alone\n")
                    break
                except StoreUnavailable:  # the master may not have noticed yet that its replica is gone
                    await anyio.sleep(0.2)
        await put_bytes(store, SCOPE_A, b"master alone, again\n")
        said = [r.getMessage() for r in caplog.records if "running without a replica ack" in r.getMessage()]
        assert len(said) == 1, said
        assert len(await store.list(SCOPE_A)) == 3
    finally:
        on_replica.close()
        await store.aclose()
