"""Hostile handles and a hostile store directory: each fails cleanly, nothing outside the store is touched."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mcp_offload.errors import InvalidHandle, UnknownHandle
from mcp_offload.store.base import OutputMeta
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.handles import new_handle, scope_key, validate_handle

GOOD = "out_abcdefghijklmnopqrstuvwx23"

HOSTILE = [
    "../../etc/passwd",
    "..",
    "/etc/passwd",
    "out_abcdefghijklmnopqrstuvwx23/../../x",
    "..%2f..%2fetc%2fpasswd",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "%252e%252e%252fetc",  # double-encoded
    "..\\..\\windows\\system32",
    "C:\\Windows",
    "out_abcdefghijklmnopqrstuvwx2\x00",
    "out_abcdefghijklmnopqrstuvwx23\x00.txt",
    "out_abcdefghijklmnopqrstuvwx２３",  # fullwidth digits
    "out_abcdefghijklmnopqrstuvwx29",  # 9 is outside the base32 alphabet
    "οut_abcdefghijklmnopqrstuvwx23",  # Greek omicron look-alike
    "out_ABCDEFGHIJKLMNOPQRSTUVWX23",  # wrong case
    "out_abcdefghijklmnopqrstuvwx23 ",
    " out_abcdefghijklmnopqrstuvwx23",
    "out_abcdefghijklmnopqrstuvwx23\n",
    "out_" + "a" * 10_000,  # over-long
    "",
    "out_",
    "~/out_abcdefghijklmnopqrstuvwx23",
    "file:///etc/passwd",
]


@pytest.mark.parametrize("bad", HOSTILE)
def test_hostile_handles_rejected(bad: str) -> None:
    with pytest.raises(InvalidHandle) as exc:
        validate_handle(bad)
    assert "not a valid handle" in str(exc.value)
    assert len(str(exc.value)) < 400  # an over-long input is not echoed back whole


@pytest.mark.parametrize("bad", [None, 42, b"out_abcdefghijklmnopqrstuvwx23", ["x"]])
def test_non_string_handles_rejected(bad: object) -> None:
    with pytest.raises(InvalidHandle):
        validate_handle(bad)


def test_generated_handles_are_valid_and_unique() -> None:
    handles = {new_handle() for _ in range(5000)}
    assert len(handles) == 5000
    for h in handles:
        assert validate_handle(h) == h
    assert validate_handle(GOOD) == GOOD


def _meta(handle: str, size: int) -> OutputMeta:
    return OutputMeta(
        handle=handle, kind="text", size=size, chars=size, lines=1, tokens=1, tokens_estimated=False, created=1.0
    )


async def _put(store: FilesystemStore, scope: str, data: bytes) -> str:
    handle = new_handle()
    await store.put(scope, _meta(handle, len(data)), ContentIndex.build(data), data)
    return handle


@pytest.mark.parametrize("bad", HOSTILE[:12])
async def test_store_refuses_hostile_handles(tmp_path: Path, bad: str) -> None:
    store = FilesystemStore(tmp_path / "s")
    with pytest.raises(InvalidHandle):
        async with store.open(scope_key("a"), bad):
            pass
    with pytest.raises(InvalidHandle):
        await store.delete(scope_key("a"), bad)


async def test_permissions_and_layout(tmp_path: Path) -> None:
    store = FilesystemStore(tmp_path / "s")
    scope = scope_key("a")
    handle = await _put(store, scope, b"hello\n")
    out_dir = tmp_path / "s" / "v1" / "scopes" / scope / handle
    for path in [tmp_path / "s", out_dir.parent, out_dir]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    for name in ("content", "index", "meta.json"):
        assert stat.S_IMODE((out_dir / name).stat().st_mode) == 0o600
    assert not list((tmp_path / "s" / "v1" / "tmp").iterdir())  # staging cleaned by the rename


async def test_planted_symlinks_are_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    store = FilesystemStore(tmp_path / "s")
    scope = scope_key("victim")
    handle = await _put(store, scope, b"x")
    out_dir = tmp_path / "s" / "v1" / "scopes" / scope / handle
    # 1) the content file replaced by a symlink to a secret
    (out_dir / "content").unlink()
    os.symlink(secret, out_dir / "content")
    with pytest.raises(UnknownHandle):
        async with store.open(scope, handle):
            pass
    # 2) a whole output directory that is a symlink to elsewhere
    fake = new_handle()
    os.symlink(out_dir, out_dir.parent / fake)
    with pytest.raises(UnknownHandle):
        async with store.open(scope, fake):
            pass
    # 3) the scope directory itself a symlink to another scope
    other = scope_key("attacker")
    os.symlink(out_dir.parent, tmp_path / "s" / "v1" / "scopes" / other)
    with pytest.raises(UnknownHandle):
        async with store.open(other, handle):
            pass
    assert await store.list(other) == []


async def test_symlinked_store_root_subdir_refused(tmp_path: Path) -> None:
    root = tmp_path / "s"
    (root / "v1").mkdir(parents=True)
    os.symlink(tmp_path, root / "v1" / "scopes")
    from mcp_offload.errors import StoreUnavailable

    with pytest.raises(StoreUnavailable):
        FilesystemStore(root)
