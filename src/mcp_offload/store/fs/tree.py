"""The store's tree on disk: directory fds walked from the root, the store-wide lock, small file reads.

Invariants: every path component is opened with `O_NOFOLLOW` from a directory fd (never a joined path), so a
symlink planted anywhere under the root is refused; only validated handles and hex scope keys become components.
The store lock (`v1/lock`, exclusive flock) serialises quota check, eviction and publish across processes.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not Linux/macOS: FilesystemStore refuses to start (os_support.py)
    fcntl = None  # type: ignore[assignment]

from mcp_offload.os_support import O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW
from mcp_offload.store.base import SIDECAR_NAME
from mcp_offload.store.lifecycle import StoreLimits

DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC
READ_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC
CONTENT, INDEX, META, LOCK = "content", "index", "meta.json", "lock"
SIDECAR_PREFIX = "sidecar."
SIDECAR_FILE = re.compile(re.escape(SIDECAR_PREFIX) + SIDECAR_NAME.pattern)  # published; staging ones do not match


def try_lock(fd: int, exclusive: bool) -> bool:
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def sidecar_bytes(output_fd: int) -> int:
    """The bytes of an output directory's published sidecar files (what they add to the output in the quotas)."""
    total = 0
    for entry in os.scandir(output_fd):
        if SIDECAR_FILE.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            total += entry.stat(follow_symlinks=False).st_size
    return total


class StoreTree:
    """The root's `v1/` tree and the settings every concept of the store reads (set by `FilesystemStore`)."""

    root: Path
    fsync: bool
    limits: StoreLimits
    clock: Callable[[], float]
    _base: Path

    @contextlib.contextmanager
    def _dir(self, *parts: str, create: bool = False) -> Iterator[int]:
        """An fd for base/parts..., each component opened with O_NOFOLLOW (optionally created 0700)."""
        fd = os.open(self._base, DIR_FLAGS)
        try:
            for part in parts:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o700, dir_fd=fd)
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nxt
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _store_lock(self) -> Iterator[None]:
        """Exclusive, store-wide (all processes): quota check + eviction + publish happen under it."""
        fd = os.open(self._base / LOCK, os.O_RDONLY | os.O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _now_ns(self) -> int:
        return int(self.clock() * 1e9)

    def _read_small(self, dir_fd: int, name: str) -> bytes:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as fh:
            return fh.read()

    def _remove_tmp(self, name: str) -> None:
        if not name or name in (".", "..") or "/" in name:
            raise ValueError(f"not a staging directory's name: {name!r}")  # programming error: never tmp/ itself
        with contextlib.suppress(OSError):
            shutil.rmtree(self._base / "tmp" / name)

    def _rmdir_empty(self, top: str) -> None:
        """Remove empty per-scope directories (under the store lock for scopes/, so no put races it)."""
        with self._dir(top) as top_fd:
            for entry in os.scandir(top_fd):
                if entry.is_dir(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.rmdir(entry.name, dir_fd=top_fd)
