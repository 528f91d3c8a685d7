"""Failure safety of the stores: writers killed with SIGKILL at random moments, a full disk, a read-only store.

After every failure the store must open cleanly, show only whole outputs, and every visible output's index and
metadata must agree with its content.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_offload.errors import StoreFull, StoreUnavailable
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.lifecycle import StoreLimits
from mcp_offload.store.redis import RedisStore
from support.store import SCOPE_A, put_bytes

ROUNDS = 20
LIMITS = StoreLimits(scope_max_outputs=6, scope_max_bytes=8 * 1024 * 1024)

# A writer that never stops: puts outputs whose bytes are a function of (seed, size) named in the output,
# under a tight quota so that evictions run too, and deletes now and then.
_WRITER = r"""
import asyncio, random, sys, time
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.base import OutputMeta
from mcp_offload.store.handles import new_handle
from mcp_offload.store.lifecycle import StoreLimits

def content(seed, size):
    unit = f"{seed} ✓ ünïcödé line with words\n".encode()
    return (unit * (size // len(unit) + 1))[:size]

async def main():
    backend, location, prefix, scope, seed = sys.argv[1:6]
    limits = StoreLimits(scope_max_outputs=6, scope_max_bytes=8 * 1024 * 1024)
    if backend == "fs":
        from mcp_offload.store.fs import FilesystemStore
        store = FilesystemStore(location, limits=limits)
    else:
        from mcp_offload.store.redis import RedisStore
        store = RedisStore(location, limits=limits, prefix=prefix)
    rng = random.Random(int(seed))
    ready = False
    while True:
        n = rng.choice([1, 1000, 50_000, 400_000, 1_500_000, 3_000_000])
        s = rng.randrange(10**9)
        data = content(s, n)
        index = ContentIndex.build(data)
        meta = OutputMeta(handle=new_handle(), kind="text", size=n, chars=index.chars, lines=index.lines,
                          tokens=n // 4, tokens_estimated=True, created=time.time(), name=f"{s} {n}")
        await store.put(scope, meta, index, data)
        if not ready:  # one whole output first: on a loaded machine the kill may land before a put would finish
            print("ready", flush=True)
            ready = True
        if rng.random() < 0.2:
            listed = await store.list(scope)
            if len(listed) > 1:
                await store.delete(scope, rng.choice(listed).handle)

asyncio.run(main())
"""


def _content(seed: int, size: int) -> bytes:
    unit = f"{seed} ✓ ünïcödé line with words\n".encode()
    return (unit * (size // len(unit) + 1))[:size]


def _kill_writer_rounds(backend: str, location: str, prefix: str) -> None:
    rng = random.Random(2024)
    for round_no in range(ROUNDS):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, backend, location, prefix, SCOPE_A, str(round_no)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line == b"ready\n", proc.stderr.read() if proc.stderr else line
            time.sleep(rng.uniform(0.0, 0.25))
            assert proc.poll() is None, (proc.stderr.read() if proc.stderr else b"").decode()
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


async def _check_every_visible_output(store: FilesystemStore | RedisStore) -> int:
    listed = await store.list(SCOPE_A)
    assert len(listed) <= LIMITS.scope_max_outputs
    assert sum(m.size for m in listed) <= LIMITS.scope_max_bytes
    for meta in listed:
        async with store.open(SCOPE_A, meta.handle) as out:
            data = bytes(out.contiguous())
            seed, size = map(int, (meta.name or "").split())
            assert data == _content(seed, size)
            built = ContentIndex.build(data)
            assert out.index.to_bytes() == built.to_bytes()
            assert (meta.size, meta.chars, meta.lines) == (built.size, built.chars, built.lines)
            assert out.meta == meta
    return len(listed)


async def test_fs_kill_9_during_puts_leaves_whole_outputs_only(tmp_path: Path) -> None:
    root = tmp_path / "store"
    FilesystemStore(root)
    _kill_writer_rounds("fs", str(root), "")
    store = FilesystemStore(root, limits=LIMITS)  # opens cleanly after 20 crashes
    assert await _check_every_visible_output(store) >= 1
    await store.sweep(debris_grace_s=0)
    assert list((root / "v1" / "tmp").iterdir()) == []  # the crashed writers' debris is gone
    handle = await put_bytes(store, SCOPE_A, b"still works")
    async with store.open(SCOPE_A, handle) as out:
        assert out.read_bytes(0, 11) == b"still works"


async def test_redis_kill_9_during_puts_leaves_whole_outputs_only(redis_url: str) -> None:
    import redis.asyncio

    prefix = f"mcp-offload-test:crash:{os.getpid()}:{time.time_ns()}"
    _kill_writer_rounds("redis", redis_url, prefix)
    store = RedisStore(redis_url, limits=LIMITS, prefix=prefix)
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        count = await _check_every_visible_output(store)
        assert count >= 1
        listed = await store.list(SCOPE_A)
        tot = await client.hgetall(f"{prefix}:s:{SCOPE_A}:tot")
        assert (int(tot[b"b"]), int(tot[b"n"])) == (sum(m.size for m in listed), len(listed))
        # staging debris is invisible and expires by itself
        for key in [k async for k in client.scan_iter(f"{prefix}:w:*")]:
            assert 0 < await client.pttl(key) <= 3600 * 1000
    finally:
        await client.aclose()
        await store.aclose()


# -- a full disk and a read-only store (a real tmpfs: needs root / CAP_SYS_ADMIN) ------------------------------
@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], capture_output=True, text=True
    )
    if result.returncode != 0:
        pytest.skip(
            "CANNOT MOUNT A TMPFS here (needs root/CAP_SYS_ADMIN), so the disk-full and read-only store "
            f"tests did NOT run: {result.stderr.strip()}"
        )
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def remount_read_only(path: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)


async def test_fs_disk_full_fails_cleanly_and_stays_usable(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", "1m") as mnt:
        store = FilesystemStore(mnt / "store")
        first = await put_bytes(store, SCOPE_A, b"f" * 100_000)
        with pytest.raises(StoreFull, match="disk is full"):
            await put_bytes(store, SCOPE_A, b"x" * 2_000_000)
        stored = [first]
        with pytest.raises(StoreFull):  # fill it up in steps: the failing put can fail in any file
            for i in range(100):
                stored.append(await put_bytes(store, SCOPE_A, bytes([i]) * 60_000))
        assert sorted(m.handle for m in await store.list(SCOPE_A)) == sorted(stored)
        assert list((mnt / "store" / "v1" / "tmp").iterdir()) == []  # nothing half-written left over
        for handle in stored:
            async with store.open(SCOPE_A, handle) as out:
                assert out.index.to_bytes() == ContentIndex.build(out.read_bytes(0, out.index.size)).to_bytes()
        await store.delete(SCOPE_A, stored[-1])  # after freeing space, puts work again
        again = await put_bytes(store, SCOPE_A, b"y" * 50_000)
        async with store.open(SCOPE_A, again) as out:
            assert out.read_bytes(0, 50_000) == b"y" * 50_000


async def test_fs_read_only_store_refuses_writes_and_still_reads(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", "4m") as mnt:
        store = FilesystemStore(mnt / "store")
        handle = await put_bytes(store, SCOPE_A, b"kept")
        remount_read_only(mnt)
        reopened = FilesystemStore(mnt / "store")  # a read-only store opens cleanly
        with pytest.raises(StoreUnavailable, match="could not be written") as err:
            await put_bytes(reopened, SCOPE_A, b"refused")
        assert str(mnt) not in str(err.value)
        async with reopened.open(SCOPE_A, handle) as out:
            assert out.read_bytes(0, 4) == b"kept"
        assert [m.handle for m in await reopened.list(SCOPE_A)] == [handle]
        await reopened.sweep()  # does not raise on a read-only store


async def test_fs_unwritable_directory_refuses_writes(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root, which ignores permission bits; the read-only mount test covers this")
    store = FilesystemStore(tmp_path / "store")
    (tmp_path / "store" / "v1" / "tmp").chmod(0o500)
    try:
        with pytest.raises(StoreUnavailable):
            await put_bytes(store, SCOPE_A, b"refused")
        assert await store.list(SCOPE_A) == []
    finally:
        (tmp_path / "store" / "v1" / "tmp").chmod(0o700)
