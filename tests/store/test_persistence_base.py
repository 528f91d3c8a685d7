"""The persistence base: one location rule, one Redis opener and key prefix, one "the store failed" error.

Everything kept beside the outputs (the outputs, the savings record, the decision record) opens its backend through
`store.location` and fails with a `StoreError` (`store.failures`), never with an `OSError` or a redis-py error."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_offload.cachesafe.record.fs import FilesystemRecord
from mcp_offload.cachesafe.record.redis import RedisRecord
from mcp_offload.errors import StoreError, StoreFull, StoreUnavailable
from mcp_offload.savings.fs import FilesystemSavings
from mcp_offload.savings.redis import RedisSavings
from mcp_offload.store import open_store
from mcp_offload.store.failures import redis_errors
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.location import KEY_PREFIX, is_redis_location, open_beside, open_redis
from mcp_offload.store.redis import RedisStore
from support.store import NO_REDIS, SCOPE_A, RedisServer, have_redis_server, put_bytes

SESSION = "0" * 32
DOWN = "redis://127.0.0.1:1/0"


@pytest.mark.parametrize(
    ("location", "kind"),
    [
        ("redis://h:6379/0", "redis"),
        ("rediss://h/0", "redis"),
        ("valkey://h/0", "redis"),
        ("valkeys://h/0", "redis"),
        ("unix:///run/redis.sock", "redis"),
        ("/var/lib/mcp-offload", "directory"),
        ("relative/dir", "directory"),
        ("redis-data", "directory"),
    ],
)
def test_one_rule_picks_the_backend(location: str, kind: str) -> None:
    assert open_beside(location, directory=lambda _: "directory", redis=lambda _: "redis") == kind
    assert is_redis_location(location) is (kind == "redis")


async def test_every_record_type_opens_its_redis_client_in_one_place() -> None:
    """Same prefix, same URL aliases: a valkey:// location reaches the same server as redis://."""
    store, savings, record = (
        RedisStore("valkey://127.0.0.1:1/3"),
        RedisSavings("valkey://127.0.0.1:1/3"),
        RedisRecord(DOWN),
    )
    try:
        assert [store.prefix, savings.prefix, record.prefix] == [KEY_PREFIX] * 3 == ["mcp-offload:v1"] * 3
        pool = savings._client.connection_pool.connection_kwargs
        assert (pool["host"], pool["port"], pool["db"]) == ("127.0.0.1", 1, 3)
    finally:
        await store.aclose()
        await savings.aclose()
        await record.aclose()


def test_a_malformed_redis_url_is_the_store_failing() -> None:
    with pytest.raises(StoreUnavailable, match="not a valid Redis URL"):
        open_redis("redis://h:notaport/0")


def test_the_store_failed_is_one_class() -> None:
    assert issubclass(StoreFull, StoreError) and issubclass(StoreUnavailable, StoreError)
    assert not issubclass(StoreError, OSError)


async def test_an_unreachable_redis_is_a_store_error_in_every_record_type() -> None:
    savings, record = RedisSavings(DOWN), RedisRecord(DOWN, connect_timeout_s=0.5)
    try:
        with pytest.raises(StoreUnavailable, match="savings record cannot be read"):
            await savings.read(1)
        with pytest.raises(StoreUnavailable, match="decision record cannot be read"):
            await record.get(SESSION, ["x"])
    finally:
        await savings.aclose()
        await record.aclose()
    store = open_store(DOWN)
    try:
        with pytest.raises(StoreUnavailable, match="unreachable"):
            await store.list(SESSION)
    finally:
        await store.aclose()


async def test_an_os_error_is_a_store_error_in_every_filesystem_backend(tmp_path: Path) -> None:
    """A day log, a session log and a scope that are directories or files where the other is expected."""
    savings = FilesystemSavings(tmp_path)
    (tmp_path / "savings" / "2025-10-09.jsonl").mkdir(parents=True)
    savings.clock = lambda: 1_760_000_000.0
    with pytest.raises(StoreUnavailable, match=r"savings record could not be read \(Is a directory\)"):
        await savings.read(1)

    record = FilesystemRecord(tmp_path)
    (tmp_path / "gateway" / "v1" / f"{SESSION}.jsonl").mkdir(parents=True)
    with pytest.raises(StoreUnavailable, match=r"gateway record could not be read"):
        await record.get(SESSION, ["x"])

    store = FilesystemStore(tmp_path / "store")
    try:
        (tmp_path / "store" / "v1" / "scopes").rmdir()
        (tmp_path / "store" / "v1" / "scopes").write_text("not a directory")
        with pytest.raises(StoreUnavailable, match=r"the store could not be read or written \(Not a directory\)"):
            await store.scan()
    finally:
        await store.aclose()


async def test_anything_raised_inside_the_driver_is_the_store_failing(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """During a cluster failover redis-py raises its own internal races (an AttributeError from a connection closed
    under it): whatever its type, an exception from inside the driver is `StoreUnavailable`, and the log names its
    class; an error of our own code inside the same block passes through as it is."""
    client = open_redis(redis_url)
    try:
        with pytest.raises(StoreUnavailable, match="unreachable right now") as err, redis_errors():
            await client.hset("mcp-offload-test:driver", mapping=5)  # type: ignore[arg-type]
        assert isinstance(err.value.__cause__, AttributeError)  # raised in redis-py, not a RedisError
        assert any(r.getMessage().startswith("redis store: AttributeError: ") for r in caplog.records)
        with pytest.raises(ValueError, match="ours"), redis_errors():
            await client.ping()
            raise ValueError("ours")
    finally:
        await client.aclose()


async def test_a_redis_at_its_maxmemory_is_a_full_store_not_an_outage() -> None:
    """redis-py raises `OutOfMemoryError` with the "OOM" code taken off its message: it is `StoreFull`."""
    if not have_redis_server():
        pytest.skip(NO_REDIS)
    server = RedisServer(extra=["--maxmemory", "2mb"]).start()
    store = RedisStore(server.url)
    try:
        with pytest.raises(StoreFull, match="out of memory; nothing was stored"):
            for _ in range(10):
                await put_bytes(store, SCOPE_A, b"x" * 1_000_000)
    finally:
        await store.aclose()
        server.stop()
