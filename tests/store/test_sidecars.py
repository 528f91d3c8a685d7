"""Sidecars of the filesystem store: named by code, in the output's own directory, atomic, gone with the output,
never following a planted symlink; the Redis store keeps none."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_offload.errors import InvalidHandle
from mcp_offload.store.fs import FilesystemStore
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
