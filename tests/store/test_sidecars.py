"""Sidecars of the filesystem store: named by code, in the output's own directory, atomic, gone with the output,
never following a planted symlink, counted in the store's byte quotas with their output and never kept over them
(nor making room by evicting outputs); the Redis store keeps none."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from mcp_offload.errors import ExpiredHandle, InvalidHandle
from mcp_offload.store.base import SidecarOverQuota
from mcp_offload.store.fs import FilesystemStore, eviction
from mcp_offload.store.lifecycle import StoreLimits
from support.store import SCOPE_A, SCOPE_B, put_bytes

HOSTILE_NAMES = ["../content", "meta.json", "a/b", "", "A", "x" * 40, "passages\x00", "passages ", ".hidden"]


@pytest.fixture
def fs_store(tmp_path: Path) -> FilesystemStore:
    return FilesystemStore(tmp_path / "store", fsync=False)


def output_dir(store: FilesystemStore, scope: str, handle: str) -> Path:
    return store.root / "v1" / "scopes" / scope / handle


async def test_write_read_replace_in_the_outputs_directory(fs_store: FilesystemStore) -> None:
    handle = await put_bytes(fs_store, SCOPE_A, b"hello\n" * 1000)
    side = fs_store.sidecar(SCOPE_A, handle, "passages")
    assert side.read(1 << 20) is None and side.output_exists()
    assert side.write([b"first ", b"version"])
    assert side.read(1 << 20) == b"first version"
    assert side.write([b"second"]) and side.read(1 << 20) == b"second"
    assert side.read(5) is None  # over the reader's bound: not read
    files = sorted(p.name for p in output_dir(fs_store, SCOPE_A, handle).iterdir())
    assert files == ["content", "index", "meta.json", "sidecar.passages"]  # no temporary file left
    assert (output_dir(fs_store, SCOPE_A, handle) / "sidecar.passages").stat().st_mode & 0o777 == 0o600
    # scoped like the output: another scope's sidecar of the same handle is not this file
    other = fs_store.sidecar(SCOPE_B, handle, "passages")
    assert other.read(1 << 20) is None and not other.output_exists() and not other.write([b"x"])


@pytest.mark.parametrize("name", HOSTILE_NAMES)
async def test_hostile_sidecar_names_are_refused(fs_store: FilesystemStore, name: str) -> None:
    handle = await put_bytes(fs_store, SCOPE_A, b"data")
    with pytest.raises(ValueError, match="not a sidecar name"):
        fs_store.sidecar(SCOPE_A, handle, name)


async def test_hostile_handles_are_refused(fs_store: FilesystemStore) -> None:
    for handle in ("../../etc", "out_abcdefghijklmnopqrstuvwx23/../x", ""):
        with pytest.raises(InvalidHandle):
            fs_store.sidecar(SCOPE_A, handle, "passages")


async def test_a_planted_symlink_is_not_followed(fs_store: FilesystemStore, tmp_path: Path) -> None:
    handle = await put_bytes(fs_store, SCOPE_A, b"data")
    target = tmp_path / "outside"
    target.write_bytes(b"secret")
    link = output_dir(fs_store, SCOPE_A, handle) / "sidecar.passages"
    os.symlink(target, link)
    side = fs_store.sidecar(SCOPE_A, handle, "passages")
    assert side.read(1 << 20) is None  # O_NOFOLLOW: refused
    assert side.write([b"index"])  # replaces the link itself (rename), never writes through it
    assert target.read_bytes() == b"secret" and not link.is_symlink() and link.read_bytes() == b"index"


async def test_gone_with_the_output(fs_store: FilesystemStore) -> None:
    handle = await put_bytes(fs_store, SCOPE_A, b"data")
    side = fs_store.sidecar(SCOPE_A, handle, "passages")
    assert side.write([b"index"])
    await fs_store.delete(SCOPE_A, handle)
    assert not side.output_exists() and side.read(1 << 20) is None
    assert not side.write([b"late"])  # a build finishing after the delete leaves nothing behind
    assert not output_dir(fs_store, SCOPE_A, handle).exists()
    assert not list((fs_store.root / "v1" / "tmp").iterdir())


def quota_store(tmp_path: Path, *, scope_max_bytes: int = 1000, max_bytes: int = 10_000) -> FilesystemStore:
    limits = StoreLimits(scope_max_bytes=scope_max_bytes, max_bytes=max_bytes)
    return FilesystemStore(tmp_path / "quota-store", fsync=False, limits=limits)


async def usage(store: FilesystemStore, scope: str | None = None) -> tuple[int, int]:
    """(bytes used against the quotas, of which sidecar bytes) as the admin scan reports them."""
    outputs = [o for o in await store.scan() if scope is None or o.scope == scope]
    return sum(o.used_bytes for o in outputs), sum(o.sidecar_bytes for o in outputs)


def handles(store: FilesystemStore, scope: str) -> set[str]:
    return {p.name for p in (store.root / "v1" / "scopes" / scope).iterdir()}


async def test_a_sidecar_counts_in_the_usage_with_its_output(tmp_path: Path) -> None:
    store = quota_store(tmp_path)
    handle = await put_bytes(store, SCOPE_A, b"a" * 400)
    assert await usage(store) == (400, 0)
    assert store.sidecar(SCOPE_A, handle, "passages").write([b"i" * 200, b"j" * 100])
    assert await usage(store) == (700, 300)
    [scanned] = await store.scan()
    assert (scanned.meta.size, scanned.sidecar_bytes, scanned.used_bytes) == (400, 300, 700)
    # a staging file a writer left behind is not a sidecar (it goes with the output, as before)
    (output_dir(store, SCOPE_A, handle) / "sidecar.passages.0123456789abcdef.tmp").write_bytes(b"x" * 50)
    assert await usage(store) == (700, 300)


async def test_a_sidecar_over_the_scope_quota_is_not_kept_and_evicts_nothing(tmp_path: Path) -> None:
    store = quota_store(tmp_path, scope_max_bytes=1000)
    first = await put_bytes(store, SCOPE_A, b"a" * 400)
    second = await put_bytes(store, SCOPE_A, b"b" * 400)
    side = store.sidecar(SCOPE_A, second, "passages")
    assert side.write([b"s" * 200])  # 1000 of 1000: fits exactly
    with pytest.raises(SidecarOverQuota, match="does not fit"):
        side.write([b"t" * 201])  # replacing 200 bytes by 201 would be 1001
    assert side.read(1 << 20) == b"s" * 200  # the old one stays
    assert handles(store, SCOPE_A) == {first, second}  # nothing evicted for it
    assert sorted(p.name for p in output_dir(store, SCOPE_A, second).iterdir()) == [
        "content",
        "index",
        "meta.json",
        "sidecar.passages",
    ]  # the refused bytes are not left behind
    other = store.sidecar(SCOPE_A, first, "passages")
    with pytest.raises(SidecarOverQuota):
        other.write([b"u"])
    assert other.read(1 << 20) is None and await usage(store) == (1000, 200)
    assert side.write([b"v" * 100])  # a smaller one replaces it
    assert await usage(store) == (900, 100)


async def test_a_sidecar_over_the_store_quota_is_not_kept_and_evicts_nothing(tmp_path: Path) -> None:
    store = quota_store(tmp_path, scope_max_bytes=1000, max_bytes=1000)
    mine = await put_bytes(store, SCOPE_A, b"a" * 400)
    theirs = await put_bytes(store, SCOPE_B, b"b" * 500)
    side = store.sidecar(SCOPE_A, mine, "passages")
    with pytest.raises(SidecarOverQuota):
        side.write([b"s" * 101])  # the session has room (501 of 1000), the store does not (1001 of 1000)
    assert handles(store, SCOPE_B) == {theirs} and handles(store, SCOPE_A) == {mine}
    assert side.read(1 << 20) is None
    assert side.write([b"s" * 100])
    assert await usage(store) == (1000, 100)


async def test_an_output_stored_after_a_sidecar_sees_the_smaller_headroom(tmp_path: Path) -> None:
    store = quota_store(tmp_path, scope_max_bytes=1000)
    first = await put_bytes(store, SCOPE_A, b"a" * 400)
    assert store.sidecar(SCOPE_A, first, "passages").write([b"s" * 300])
    fits = await put_bytes(store, SCOPE_A, b"b" * 300)  # 700 + 300: fits exactly, nothing evicted
    assert handles(store, SCOPE_A) == {first, fits}
    await store.delete(SCOPE_A, fits)
    # 400 + 400 would fit if the sidecar were not counted; with it (1100) the least recently used output goes,
    # and its sidecar with it
    late = await put_bytes(store, SCOPE_A, b"c" * 400)
    assert handles(store, SCOPE_A) == {late}
    with pytest.raises(ExpiredHandle):
        await store.meta(SCOPE_A, first)
    assert await usage(store) == (400, 0)
    assert not list((store.root / "v1" / "tmp").iterdir())


async def test_deleting_an_output_frees_its_sidecar_bytes(tmp_path: Path) -> None:
    store = quota_store(tmp_path, scope_max_bytes=1000)
    first = await put_bytes(store, SCOPE_A, b"a" * 400)
    assert store.sidecar(SCOPE_A, first, "passages").write([b"s" * 500])
    assert await usage(store, SCOPE_A) == (900, 500)
    await store.delete(SCOPE_A, first)
    assert await usage(store, SCOPE_A) == (0, 0)
    second = await put_bytes(store, SCOPE_A, b"b" * 500)
    assert store.sidecar(SCOPE_A, second, "passages").write([b"t" * 500])  # all 1000 bytes are free again
    assert await usage(store, SCOPE_A) == (1000, 500)


async def test_the_scan_cache_sees_a_sidecar_another_process_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scans cache a scope whole while its directory keeps its stamp (once past the racy window); a sidecar write,
    by any process, touches the scope, so every other scan counts again."""
    store = quota_store(tmp_path, scope_max_bytes=1000)
    other = quota_store(tmp_path, scope_max_bytes=1000)  # another server process on the same store
    handle = await put_bytes(store, SCOPE_A, b"a" * 400)
    side = store.sidecar(SCOPE_A, handle, "passages")
    assert side.write([b"s" * 100])
    monkeypatch.setattr(eviction, "RACY_NS", -(10**18))  # every directory counts as old enough to cache
    assert await usage(other) == (500, 100)
    cached = other._facts[SCOPE_A]
    assert cached.stamp is not None and cached.outputs[handle].stamp is not None
    await anyio.sleep(0.05)  # past the filesystem's timestamp granularity
    assert side.write([b"t" * 300])
    assert await usage(other) == (700, 300)
    # and the other process's quota check sees it too: 300 more would be 1000 + 1 over
    with pytest.raises(SidecarOverQuota):
        other.sidecar(SCOPE_A, handle, "passages").write([b"u" * 601])
    await anyio.sleep(0.05)
    late = await put_bytes(other, SCOPE_A, b"b" * 301)  # 700 + 301: the first output (and its index) goes
    assert handles(store, SCOPE_A) == {late}
