"""Sidecars: files kept next to an output's content in its published directory (`sidecar.<name>`).

Invariants: the path is the output's own directory (walked with `O_NOFOLLOW` from the root by the validated scope
and handle) plus a name the code fixes (`SIDECAR_NAME`); nothing a caller says becomes a path. A sidecar is written
to a fresh temporary file in that directory, under a shared flock on the directory (so eviction, which takes an
exclusive one, skips the output meanwhile), then renamed over the old one under the store lock, only while that
directory is still the published one and only if the bytes it adds fit the scope's and the store's byte quotas
(`lifecycle.sidecar_fits`): a sidecar counts in the quotas with its output, and one that does not fit is not kept
(`SidecarOverQuota`), no output is evicted for it. It is removed with its output: expiry, eviction and delete all
rename the whole directory away. Not fsynced: it is a cache, which its reader validates (a torn or lost file after
a crash is rebuilt).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass

try:
    import fcntl
except ImportError:  # pragma: no cover - not Linux/macOS: FilesystemStore refuses to start (os_support.py)
    fcntl = None  # type: ignore[assignment]

from mcp_offload.store.base import SIDECAR_NAME, SidecarOverQuota
from mcp_offload.store.fs.eviction import Eviction, quota_usage
from mcp_offload.store.fs.tree import CONTENT, DIR_FLAGS, NEW_FILE_FLAGS, READ_FLAGS, SIDECAR_PREFIX
from mcp_offload.store.handles import validate_handle, validate_scope
from mcp_offload.store.lifecycle import is_expired, sidecar_fits


@dataclass(frozen=True, slots=True)
class SidecarFile:
    """One output's sidecar file (an `OutputSidecar`)."""

    tree: SidecarFiles
    scope: str
    handle: str
    filename: str

    def read(self, max_bytes: int) -> bytes | None:
        try:
            with self.tree._dir("scopes", self.scope, self.handle) as dir_fd:
                fd = os.open(self.filename, READ_FLAGS, dir_fd=dir_fd)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
                return None
            try:
                return fh.read(max_bytes + 1)
            except OSError:
                return None

    def write(self, chunks: Iterable[bytes]) -> bool:
        try:
            with self.tree._dir("scopes", self.scope) as scope_fd:
                dir_fd = os.open(self.handle, DIR_FLAGS, dir_fd=scope_fd)
                try:
                    fcntl.flock(dir_fd, fcntl.LOCK_SH)
                    if not _still_published(scope_fd, self.handle, dir_fd):
                        return False  # removed (renamed away) between our open and our lock
                    staging, size = self._stage(dir_fd, chunks)
                    try:
                        return self.tree._publish_sidecar(self.scope, self.handle, dir_fd, staging, self.filename, size)
                    finally:
                        with contextlib.suppress(OSError):  # refused or failed: the staged bytes go
                            os.unlink(staging, dir_fd=dir_fd)
                finally:
                    os.close(dir_fd)
        except FileNotFoundError:
            return False

    def _stage(self, dir_fd: int, chunks: Iterable[bytes]) -> tuple[str, int]:
        """The chunks in a fresh temporary file of the output's directory: its name and size."""
        staging = f"{self.filename}.{secrets.token_hex(8)}.tmp"
        fd = os.open(staging, NEW_FILE_FLAGS, 0o600, dir_fd=dir_fd)
        size = 0
        try:
            try:
                for chunk in chunks:
                    view = memoryview(chunk)
                    while view:
                        written = os.write(fd, view)
                        size += written
                        view = view[written:]
            finally:
                os.close(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(staging, dir_fd=dir_fd)
            raise
        return staging, size

    def output_exists(self) -> bool:
        """Published and not expired (an expired output not yet swept counts as gone)."""
        try:
            with self.tree._dir("scopes", self.scope, self.handle) as dir_fd:
                stored_at = os.stat(CONTENT, dir_fd=dir_fd, follow_symlinks=False).st_mtime
        except OSError:
            return False
        return not is_expired(stored_at, self.tree.clock(), self.tree.limits)


class SidecarFiles(Eviction):
    """Hand out the sidecar files of published outputs; keep a written one only within the quotas."""

    def sidecar(self, scope: str, handle: str, name: str) -> SidecarFile:
        validate_scope(scope)
        validate_handle(handle)
        if not SIDECAR_NAME.fullmatch(name):
            raise ValueError(f"not a sidecar name: {name!r}")  # programming error: names are fixed in the code
        return SidecarFile(self, scope, handle, f"{SIDECAR_PREFIX}{name}")

    def _publish_sidecar(self, scope: str, handle: str, dir_fd: int, staging: str, filename: str, size: int) -> bool:
        """Under the store lock: rename a staged sidecar (`size` bytes) over `filename` in the output's directory
        (`dir_fd`, share-locked by the caller) if the bytes it adds fit the quotas; False when the output is gone.

        Expired outputs are removed first, as a put does; nothing else is. Raises `SidecarOverQuota`."""
        removed: list[tuple[str, int]] = []
        try:
            with self._store_lock(), self._dir("tmp") as tmp_fd:
                live, removed = self._drop_expired(tmp_fd)
                if not any(e.scope == scope and e.handle == handle for e in live):
                    return False  # deleted meanwhile (a delete does not wait for the directory's lock)
                scope_usage, total_usage = quota_usage(live, scope)
                try:
                    old = os.stat(filename, dir_fd=dir_fd, follow_symlinks=False)
                    replaced = old.st_size if stat.S_ISREG(old.st_mode) else 0
                except FileNotFoundError:
                    replaced = 0
                if not sidecar_fits(size - replaced, scope_usage, total_usage, self.limits):
                    raise SidecarOverQuota(
                        errno.EDQUOT,
                        f"a {size:,}-byte sidecar does not fit the store's byte quotas "
                        f"(session: {scope_usage.bytes:,} of {self.limits.scope_max_bytes:,} bytes used, "
                        f"store: {total_usage.bytes:,} of {self.limits.max_bytes:,}); not kept",
                    )
                self.touch_scope(scope)  # first: a scan between the two sees a scope too fresh to cache
                os.rename(staging, filename, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                return True
        finally:
            self._finish_removals(removed)


def _still_published(scope_fd: int, handle: str, dir_fd: int) -> bool:
    """Whether the directory we opened (and locked) is still the one published under `handle`."""
    published = os.stat(handle, dir_fd=scope_fd, follow_symlinks=False)
    mine = os.fstat(dir_fd)
    return (published.st_ino, published.st_dev) == (mine.st_ino, mine.st_dev)
