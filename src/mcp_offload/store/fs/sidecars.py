"""Sidecars: files kept next to an output's content in its published directory (`sidecar.<name>`).

Invariants: the path is the output's own directory (walked with `O_NOFOLLOW` from the root by the validated scope
and handle) plus a name the code fixes (`SIDECAR_NAME`); nothing a caller says becomes a path. A sidecar is written
to a fresh temporary file in that directory and renamed over the old one, under a shared flock on the directory
(so eviction, which takes an exclusive one, skips the output meanwhile) and only while that directory is still the
published one. It is removed with its output: expiry, eviction and delete all rename the whole directory away. Not
fsynced and not counted in the store's quotas: it is a cache, which its reader validates (a torn or lost file
after a crash is rebuilt).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass

try:
    import fcntl
except ImportError:  # pragma: no cover - not Linux/macOS: FilesystemStore refuses to start (os_support.py)
    fcntl = None  # type: ignore[assignment]

from mcp_offload.store.base import SIDECAR_NAME
from mcp_offload.store.fs.tree import CONTENT, DIR_FLAGS, NEW_FILE_FLAGS, READ_FLAGS, StoreTree
from mcp_offload.store.handles import validate_handle, validate_scope
from mcp_offload.store.lifecycle import is_expired


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
                    published = os.stat(self.handle, dir_fd=scope_fd, follow_symlinks=False)
                    mine = os.fstat(dir_fd)
                    if (published.st_ino, published.st_dev) != (mine.st_ino, mine.st_dev):
                        return False  # removed (renamed away) between our open and our lock
                    self._replace(dir_fd, chunks)
                    return True
                finally:
                    os.close(dir_fd)
        except FileNotFoundError:
            return False

    def _replace(self, dir_fd: int, chunks: Iterable[bytes]) -> None:
        staging = f"{self.filename}.{secrets.token_hex(8)}.tmp"
        fd = os.open(staging, NEW_FILE_FLAGS, 0o600, dir_fd=dir_fd)
        try:
            try:
                for chunk in chunks:
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.rename(staging, self.filename, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(staging, dir_fd=dir_fd)
            raise

    def output_exists(self) -> bool:
        """Published and not expired (an expired output not yet swept counts as gone)."""
        try:
            with self.tree._dir("scopes", self.scope, self.handle) as dir_fd:
                stored_at = os.stat(CONTENT, dir_fd=dir_fd, follow_symlinks=False).st_mtime
        except OSError:
            return False
        return not is_expired(stored_at, self.tree.clock(), self.tree.limits)


class SidecarFiles(StoreTree):
    """Hand out the sidecar files of published outputs."""

    def sidecar(self, scope: str, handle: str, name: str) -> SidecarFile:
        validate_scope(scope)
        validate_handle(handle)
        if not SIDECAR_NAME.fullmatch(name):
            raise ValueError(f"not a sidecar name: {name!r}")  # programming error: names are fixed in the code
        return SidecarFile(self, scope, handle, f"sidecar.{name}")
