"""The store suite, run against both backends (filesystem and a real redis-server): the same semantics.

Covers the protocol (put/open/meta/list/delete), session isolation, TTL expiry and LRU eviction with a fake
clock and tiny limits, readers being safe from eviction, tombstones that leak nothing across sessions, and
(Redis) the lazy data view and an unreachable / restarted server.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from mcp_offload.errors import ExpiredHandle, InvalidHandle, StoreFull, StoreUnavailable, UnknownHandle
from mcp_offload.store import open_store
from mcp_offload.store.base import CHUNK, Store
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.lifecycle import DAY, StoreLimits, describe_duration
from mcp_offload.store.redis import RedisBuffer, RedisStore
from support import free_port
from support.store import SCOPE_A, SCOPE_B, FakeClock, RedisServer, StoreFactory, make_meta, put_bytes

TEXT = ("héllo wörld ✓ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\n" * 50).encode()
TINY = StoreLimits(scope_max_bytes=1000, scope_max_outputs=100, max_bytes=100_000, max_outputs=100)


async def read_all(store: Store, scope: str, handle: str) -> bytes:
    async with store.open(scope, handle) as out:
        return out.read_bytes(0, out.index.size)


# -- the protocol ------------------------------------------------------------------------------------------
async def test_put_open_meta_list_delete(make_store: StoreFactory) -> None:
    store = make_store()
    first = make_meta(TEXT, name="first", created=1000.0)
    second_data = b'{"a": [1, 2, 3]}\n' * 1000
    second = make_meta(second_data, kind="json", name="second", created=2000.0)
    await store.put(SCOPE_A, first, ContentIndex.build(TEXT), TEXT)
    await store.put(SCOPE_A, second, ContentIndex.build(second_data), second_data)

    async with store.open(SCOPE_A, first.handle) as out:
        assert out.meta == first
        assert out.read_bytes(0, len(TEXT)) == TEXT
        assert out.index.to_bytes() == ContentIndex.build(TEXT).to_bytes()
        n = out.index.byte_of_char(out.data, 13)
        assert out.read_bytes(0, n).decode() == TEXT.decode()[:13]
    assert await store.meta(SCOPE_A, second.handle) == second
    assert [m.handle for m in await store.list(SCOPE_A)] == [second.handle, first.handle]  # newest first

    await store.delete(SCOPE_A, first.handle)
    with pytest.raises(UnknownHandle):
        await store.meta(SCOPE_A, first.handle)
    with pytest.raises(UnknownHandle):
        async with store.open(SCOPE_A, first.handle):
            pass
    with pytest.raises(UnknownHandle):
        await store.delete(SCOPE_A, first.handle)
    assert [m.handle for m in await store.list(SCOPE_A)] == [second.handle]


async def test_scopes_are_isolated(make_store: StoreFactory) -> None:
    store = make_store()
    handle = await put_bytes(store, SCOPE_A, TEXT)
    for call in (lambda: store.meta(SCOPE_B, handle), lambda: store.delete(SCOPE_B, handle)):
        with pytest.raises(UnknownHandle) as err:
            await call()
        assert handle in str(err.value) and SCOPE_A not in str(err.value)
    with pytest.raises(UnknownHandle):
        async with store.open(SCOPE_B, handle):
            pass
    assert await store.list(SCOPE_B) == []
    assert await read_all(store, SCOPE_A, handle) == TEXT  # B's attempts changed nothing


async def test_invalid_handles_never_reach_the_backend(make_store: StoreFactory) -> None:
    store = make_store()
    for bad in ("../x", "out_" + "A" * 26, "out_abc", "", "out_" + "a" * 25 + "/", "out_aaaaaaaaaaaaaaaaaaaaaaaa\x00a"):
        with pytest.raises(InvalidHandle):
            await store.meta(SCOPE_A, bad)
        with pytest.raises(InvalidHandle):
            async with store.open(SCOPE_A, bad):
                pass


async def test_two_instances_share_one_store(make_store: StoreFactory) -> None:
    """Any instance on the same directory / Redis serves any retrieval; sessions stay apart."""
    writer, reader = make_store(), make_store()
    handle = await put_bytes(writer, SCOPE_A, TEXT)
    assert await read_all(reader, SCOPE_A, handle) == TEXT
    with pytest.raises(UnknownHandle):
        await reader.meta(SCOPE_B, handle)
    await reader.delete(SCOPE_A, handle)
    with pytest.raises(UnknownHandle):
        await writer.meta(SCOPE_A, handle)


# -- expiry --------------------------------------------------------------------------------------------------
async def test_ttl_expiry_and_tombstones(make_store: StoreFactory) -> None:
    clock = FakeClock()
    store = make_store(limits=StoreLimits(ttl_s=3 * DAY), clock=clock)
    handle = await put_bytes(store, SCOPE_A, TEXT)
    clock.advance(3 * DAY - 10)
    assert await read_all(store, SCOPE_A, handle) == TEXT  # reads do not extend the TTL ...
    clock.advance(20)  # ... so 3 days after the put it is gone
    with pytest.raises(ExpiredHandle) as err:
        async with store.open(SCOPE_A, handle):
            pass
    assert f"output {handle} expired after 3 days" in str(err.value)
    assert "re-run the tool" in str(err.value)
    with pytest.raises(ExpiredHandle):
        await store.meta(SCOPE_A, handle)
    assert await store.list(SCOPE_A) == []
    with pytest.raises(UnknownHandle):  # another session learns nothing
        await store.meta(SCOPE_B, handle)
    clock.advance(3 * DAY + 1)  # tombstones expire too
    await store.sweep()
    with pytest.raises(UnknownHandle):
        await store.meta(SCOPE_A, handle)


async def test_sweep_removes_expired_and_frees_quota(make_store: StoreFactory) -> None:
    clock = FakeClock()
    limits = StoreLimits(ttl_s=60, scope_max_bytes=10_000, scope_max_outputs=3)
    store = make_store(limits=limits, clock=clock)
    old = [await put_bytes(store, SCOPE_A, bytes([65 + i]) * 100) for i in range(3)]
    clock.advance(61)
    report = await store.sweep()
    assert report.expired == 3
    assert await store.list(SCOPE_A) == []
    fresh = [await put_bytes(store, SCOPE_A, b"x" * 100) for _ in range(3)]  # the freed quota is usable
    assert sorted(m.handle for m in await store.list(SCOPE_A)) == sorted(fresh)
    with pytest.raises(ExpiredHandle, match="expired after 1 minute"):
        await store.meta(SCOPE_A, old[0])


async def test_put_reaps_expired_outputs_without_sweep(make_store: StoreFactory) -> None:
    clock = FakeClock()
    store = make_store(limits=StoreLimits(ttl_s=60, scope_max_outputs=2), clock=clock)
    stale = [await put_bytes(store, SCOPE_A, b"old") for _ in range(2)]
    clock.advance(120)
    newer = [await put_bytes(store, SCOPE_A, b"new") for _ in range(2)]
    assert sorted(m.handle for m in await store.list(SCOPE_A)) == sorted(newer)
    with pytest.raises(ExpiredHandle, match="expired"):
        await store.meta(SCOPE_A, stale[1])


# -- quotas and LRU eviction -----------------------------------------------------------------------------------
async def test_lru_eviction_by_scope_bytes_and_reads_refresh_recency(make_store: StoreFactory) -> None:
    clock = FakeClock()
    store = make_store(limits=TINY, clock=clock)
    a = await put_bytes(store, SCOPE_A, b"a" * 400)
    clock.advance(1)
    b = await put_bytes(store, SCOPE_A, b"b" * 400)
    clock.advance(1)
    assert await read_all(store, SCOPE_A, a) == b"a" * 400  # a is now more recent than b
    clock.advance(1)
    c = await put_bytes(store, SCOPE_A, b"c" * 400)  # 1200 > 1000: the least recently used (b) goes
    assert {m.handle for m in await store.list(SCOPE_A)} == {a, c}
    with pytest.raises(ExpiredHandle) as err:
        await store.meta(SCOPE_A, b)
    assert "evicted to stay under the store's size limits" in str(err.value)
    with pytest.raises(UnknownHandle):
        await store.meta(SCOPE_B, b)


async def test_scope_count_quota(make_store: StoreFactory) -> None:
    clock = FakeClock()
    store = make_store(limits=StoreLimits(scope_max_outputs=3), clock=clock)
    handles = []
    for i in range(5):
        handles.append(await put_bytes(store, SCOPE_A, f"output {i}".encode()))
        clock.advance(1)
    assert {m.handle for m in await store.list(SCOPE_A)} == set(handles[2:])
    other = await put_bytes(store, SCOPE_B, b"other session")  # B has its own count
    assert [m.handle for m in await store.list(SCOPE_B)] == [other]
    assert len(await store.list(SCOPE_A)) == 3


async def test_global_quota_evicts_across_scopes(make_store: StoreFactory) -> None:
    clock = FakeClock()
    store = make_store(limits=StoreLimits(max_bytes=1000, max_outputs=10), clock=clock)
    b1 = await put_bytes(store, SCOPE_B, b"1" * 400)
    clock.advance(1)
    a1 = await put_bytes(store, SCOPE_A, b"2" * 400)
    clock.advance(1)
    a2 = await put_bytes(store, SCOPE_A, b"3" * 400)
    assert await store.list(SCOPE_B) == []
    assert {m.handle for m in await store.list(SCOPE_A)} == {a1, a2}
    with pytest.raises(ExpiredHandle, match="evicted"):  # B learns its output was evicted ...
        await store.meta(SCOPE_B, b1)
    with pytest.raises(UnknownHandle):  # ... A learns nothing about B's handle
        await store.meta(SCOPE_A, b1)

    store2 = make_store(limits=StoreLimits(max_bytes=1000, max_outputs=2), clock=clock)
    clock.advance(1)
    a3 = await put_bytes(store2, SCOPE_B, b"4")  # global count 2: a1 (LRU) goes
    assert {m.handle for m in await store2.list(SCOPE_A)} == {a2}
    assert [m.handle for m in await store2.list(SCOPE_B)] == [a3]


async def test_output_larger_than_quota_is_refused_and_nothing_changes(make_store: StoreFactory) -> None:
    store = make_store(limits=TINY)
    kept = await put_bytes(store, SCOPE_A, b"k" * 900)
    with pytest.raises(StoreFull) as err:
        await put_bytes(store, SCOPE_A, b"x" * 1001)
    assert "1,001 bytes" in str(err.value) and "nothing was stored" in str(err.value)
    assert [m.handle for m in await store.list(SCOPE_A)] == [kept]  # not evicted for a put that cannot fit


async def test_open_outputs_are_never_evicted(make_store: StoreFactory) -> None:
    clock = FakeClock()
    store = make_store(limits=StoreLimits(scope_max_outputs=2), clock=clock)
    a = await put_bytes(store, SCOPE_A, b"a" * 5000)
    clock.advance(1)
    b = await put_bytes(store, SCOPE_A, b"b" * 5000)
    clock.advance(1)
    async with store.open(SCOPE_A, a) as held:
        clock.advance(1)
        assert await read_all(store, SCOPE_A, b) == b"b" * 5000  # b is now the most recent; a the LRU ...
        clock.advance(1)
        c = await put_bytes(store, SCOPE_A, b"c" * 10)  # ... but a is open, so b goes
        assert {m.handle for m in await store.list(SCOPE_A)} == {a, c}
        assert held.read_bytes(0, 5000) == b"a" * 5000
        clock.advance(1)
        async with store.open(SCOPE_A, c):  # both remaining outputs are open: nothing can make room
            with pytest.raises(StoreFull, match="being read right now"):
                await put_bytes(store, SCOPE_A, b"d")
            assert {m.handle for m in await store.list(SCOPE_A)} == {a, c}
    clock.advance(1)
    d = await put_bytes(store, SCOPE_A, b"d")  # released: eviction proceeds, LRU first (a)
    assert {m.handle for m in await store.list(SCOPE_A)} == {c, d}


async def test_reader_in_flight_survives_delete(make_store: StoreFactory, backend: str) -> None:
    """A reader keeps its bytes when the output is deleted under it (mmap after unlink / pinned Redis key)."""
    data = os.urandom(3 * CHUNK)
    store = make_store(eager_bytes=0) if backend != "fs" else make_store()
    meta = make_meta(data, kind="blob")
    await store.put(SCOPE_A, meta, ContentIndex.for_blob(len(data)), data)
    async with store.open(SCOPE_A, meta.handle) as out:
        head = out.read_bytes(0, 10)
        await make_store().delete(SCOPE_A, meta.handle)  # another instance deletes it
        with pytest.raises(UnknownHandle):
            await store.meta(SCOPE_A, meta.handle)
        assert head + out.read_bytes(10, len(data)) == data
        assert out.read_bytes(2 * CHUNK, 2 * CHUNK + 7) == data[2 * CHUNK : 2 * CHUNK + 7]


async def test_concurrent_puts_respect_the_quota(make_store: StoreFactory) -> None:
    store = make_store(limits=StoreLimits(scope_max_outputs=4, scope_max_bytes=10_000))
    payloads = [f"payload {i} ".encode() * 50 for i in range(12)]
    async with anyio.create_task_group() as tg:
        for payload in payloads:
            tg.start_soon(put_bytes, store, SCOPE_A, payload)
    listed = await store.list(SCOPE_A)
    assert 1 <= len(listed) <= 4
    for meta in listed:
        content = await read_all(store, SCOPE_A, meta.handle)
        assert content in payloads and meta.size == len(content)


# -- filesystem specifics -------------------------------------------------------------------------------------
_EVICTOR = """
import asyncio, sys
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.lifecycle import StoreLimits
sys.path.insert(0, sys.argv[3])
from support.store import make_meta
from support.store import RedisServer
async def main():
    store = FilesystemStore(sys.argv[1], limits=StoreLimits(scope_max_outputs=1))
    data = b"from another process"
    try:
        await store.put(sys.argv[2], make_meta(data), ContentIndex.build(data), data)
        print("stored")
    except Exception as exc:
        print(type(exc).__name__)
asyncio.run(main())
"""


async def test_fs_reader_pins_hold_across_processes(tmp_path: Path) -> None:
    store = FilesystemStore(tmp_path / "s", limits=StoreLimits(scope_max_outputs=1))
    handle = await put_bytes(store, SCOPE_A, TEXT)

    def evict_from_another_process() -> str:
        proc = subprocess.run(
            [sys.executable, "-c", _EVICTOR, str(tmp_path / "s"), SCOPE_A, str(Path(__file__).parents[1])],
            capture_output=True,
            text=True,
            timeout=60,
        )
        return proc.stdout.strip() or proc.stderr

    async with store.open(SCOPE_A, handle) as out:
        assert evict_from_another_process() == "StoreFull"  # the only victim is open here
        assert out.read_bytes(0, len(TEXT)) == TEXT
    assert evict_from_another_process() == "stored"  # closed: now it may go
    with pytest.raises(ExpiredHandle, match="evicted"):
        await store.meta(SCOPE_A, handle)


async def test_fs_debris_of_dead_writers_is_swept(tmp_path: Path) -> None:
    import fcntl

    store = FilesystemStore(tmp_path / "s")
    tmp = tmp_path / "s" / "v1" / "tmp"
    dead, live = tmp / "w-dead", tmp / "w-live"
    for d in (dead, live):
        d.mkdir()
        (d / "content").write_bytes(b"half")
        os.utime(d, (time.time() - 7200, time.time() - 7200))
    fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a writer that is still alive
    try:
        report = await store.sweep()
        assert report.debris == 1
        assert not dead.exists() and live.exists()
    finally:
        os.close(fd)
    FilesystemStore(tmp_path / "s")  # a restart cleans what is left
    assert list(tmp.iterdir()) == []


async def test_fs_refuses_symlinked_outputs(tmp_path: Path) -> None:
    store = FilesystemStore(tmp_path / "s")
    handle = await put_bytes(store, SCOPE_A, TEXT)
    scope_dir = tmp_path / "s" / "v1" / "scopes" / SCOPE_A
    target = tmp_path / "elsewhere"
    (scope_dir / handle).rename(target)
    planted = "out_" + "b" * 26
    (scope_dir / planted).symlink_to(target)
    with pytest.raises(UnknownHandle):
        async with store.open(SCOPE_A, planted):
            pass
    assert await store.list(SCOPE_A) == []


# -- redis specifics -----------------------------------------------------------------------------------------
def _mixed_text(size: int) -> bytes:
    rng = random.Random(7)
    words = ["alpha", "βeta", "γάμμα", "needle", "✓✓", "𝔘𝔫𝔦", "\n", "\r\n", "plain words here"]
    out: list[str] = []
    total = 0
    while total < size:
        word = rng.choice(words)
        out.append(word + " ")
        total += len(word.encode()) + 1
    return "".join(out).encode()


async def test_redis_lazy_view_matches_bytes(redis_url: str) -> None:
    data = _mixed_text(3 * CHUNK + 12345)
    store = RedisStore(redis_url, prefix="mcp-offload-test:lazy", eager_bytes=0)
    try:
        meta = make_meta(data)
        index = ContentIndex.build(data)
        await store.put(SCOPE_A, meta, index, data)
        async with store.open(SCOPE_A, meta.handle) as out:
            lazy = out.data
            assert isinstance(lazy, RedisBuffer) and len(lazy) == len(data)

            def check() -> None:
                rng = random.Random(3)
                for _ in range(40):
                    ch = rng.randrange(index.chars + 1)
                    assert index.byte_of_char(lazy, ch) == index.byte_of_char(data, ch)
                    line = rng.randrange(1, index.lines + 2)
                    assert index.byte_of_line(lazy, line) == index.byte_of_line(data, line)
                    a = rng.randrange(len(data))
                    b = min(len(data), a + rng.randrange(1, 600_000))
                    assert out.read_bytes(a, b) == data[a:b]
                for sub in (b"needle", b"\r\n", "γάμμα".encode(), b"absent!", b""):
                    for lo, hi in ((None, None), (5, None), (CHUNK - 3, 2 * CHUNK + 2), (100, 50), (-1000, -2)):
                        assert lazy.find(sub, lo, hi) == data.find(sub, lo, hi), (sub, lo, hi)
                        assert lazy.rfind(sub, lo, hi) == data.rfind(sub, lo, hi), (sub, lo, hi)
                        assert lazy.count(sub, lo, hi) == data.count(sub, lo, hi), (sub, lo, hi)
                assert lazy.count(b"aa") == data.count(b"aa")
                assert lazy[0] == data[0] and lazy[-1] == data[-1] and lazy[-5:] == data[-5:]
                assert out.contiguous() == data
                assert b"".join(out.iter_chunks(size=CHUNK // 3)) == data

            await anyio.to_thread.run_sync(check)
    finally:
        await store.aclose()


async def test_redis_small_outputs_come_in_one_round_trip(redis_url: str) -> None:
    store = RedisStore(redis_url, prefix="mcp-offload-test:eager")
    try:
        handle = await put_bytes(store, SCOPE_A, TEXT)
        async with store.open(SCOPE_A, handle) as out:
            assert isinstance(out.data, bytes) and out.data == TEXT
    finally:
        await store.aclose()


async def test_redis_unreachable_fails_fast_with_a_clear_error() -> None:
    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0", connect_timeout_s=2.0)
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as err:
            await put_bytes(store, SCOPE_A, TEXT)
        with pytest.raises(StoreUnavailable):
            async with store.open(SCOPE_A, "out_" + "a" * 26):
                pass
        assert time.monotonic() - started < 5
        assert "Redis" in str(err.value) and "127.0.0.1" not in str(err.value)
    finally:
        await store.aclose()


async def test_redis_stopped_mid_run_then_recovers(private_redis: RedisServer) -> None:
    store = open_store(private_redis.url.replace("redis://", "valkey://"))
    try:
        big = os.urandom(3 * CHUNK)
        meta = make_meta(big, kind="blob")
        await store.put(SCOPE_A, meta, ContentIndex.for_blob(len(big)), big)
        small = await put_bytes(store, SCOPE_A, b"small")
        assert await read_all(store, SCOPE_A, small) == b"small"
        async with store.open(SCOPE_A, meta.handle) as out:
            assert out.read_bytes(0, 100) == big[:100]
            private_redis.stop()  # Redis dies while a reader is in flight
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                await anyio.to_thread.run_sync(out.read_bytes, CHUNK, CHUNK + 100)
        with pytest.raises(StoreUnavailable):
            await put_bytes(store, SCOPE_A, b"while down")
        with pytest.raises(StoreUnavailable):
            await store.list(SCOPE_A)
        assert time.monotonic() - started < 8  # errors, not hangs

        private_redis.start()  # same port, empty (no persistence)
        handle = await put_bytes(store, SCOPE_A, b"after restart")
        assert await read_all(store, SCOPE_A, handle) == b"after restart"
        with pytest.raises(UnknownHandle):
            await store.meta(SCOPE_A, small)
    finally:
        await store.aclose()


async def test_redis_hung_server_times_out_then_recovers(private_redis: RedisServer) -> None:
    store = RedisStore(private_redis.url, socket_timeout_s=1.0)
    try:
        handle = await put_bytes(store, SCOPE_A, b"before")
        assert private_redis.proc is not None
        private_redis.proc.send_signal(signal.SIGSTOP)  # accepts connections, never answers
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                await store.meta(SCOPE_A, handle)
            assert time.monotonic() - started < 3
        finally:
            private_redis.proc.send_signal(signal.SIGCONT)
        assert await read_all(store, SCOPE_A, handle) == b"before"
    finally:
        await store.aclose()


async def test_redis_bookkeeping_matches_the_keys(redis_url: str) -> None:
    import redis.asyncio

    clock = FakeClock()
    prefix = "mcp-offload-test:books"
    store = RedisStore(redis_url, prefix=prefix, clock=clock, limits=StoreLimits(scope_max_bytes=3000, ttl_s=100))
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        await client.delete(*[k async for k in client.scan_iter(f"{prefix}:*")] or ["none"])
        rng = random.Random(1)
        for i in range(30):
            scope = SCOPE_A if i % 3 else SCOPE_B
            await put_bytes(store, scope, bytes([rng.randrange(256)]) * rng.randrange(1, 900))
            clock.advance(rng.choice([1, 1, 1, 40]))
            if i % 7 == 0 and (listed := await store.list(scope)):
                await store.delete(scope, listed[-1].handle)
        await store.sweep()
        live = 0
        for scope in (SCOPE_A, SCOPE_B):
            metas = await store.list(scope)
            sizes = [m.size for m in metas]
            tot = await client.hgetall(f"{prefix}:s:{scope}:tot")
            assert int(tot.get(b"b", 0)) == sum(sizes) and int(tot.get(b"n", 0)) == len(sizes)
            assert sum(sizes) <= 3000
            for meta in metas:
                assert await client.strlen(f"{prefix}:d:{scope}:{meta.handle}") == meta.size
            live += len(metas)
        gtot = await client.hgetall(f"{prefix}:g:tot")
        assert int(gtot[b"n"]) == live == await client.zcard(f"{prefix}:g:lru")
        assert [k async for k in client.scan_iter(f"{prefix}:w:*")] == []  # no staging left behind
    finally:
        await client.aclose()
        await store.aclose()


def test_describe_duration() -> None:
    assert describe_duration(3 * DAY) == "3 days"
    assert describe_duration(DAY) == "1 day"
    assert describe_duration(7200) == "2 hours"
    assert describe_duration(90) == "90 seconds"
    assert describe_duration(60) == "1 minute"


def test_store_errors_name_the_directory(tmp_path: Path) -> None:
    taken = tmp_path / "x"
    taken.write_text("a file where the store should be")
    with pytest.raises(StoreUnavailable) as excinfo:
        FilesystemStore(taken)
    assert str(excinfo.value) == f"cannot create the store directory {taken}: File exists"
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "v1").symlink_to(tmp_path)
    with pytest.raises(StoreUnavailable, match=f"the store directory {tmp_path / 's' / 'v1'} is not a plain"):
        FilesystemStore(tmp_path / "s")
