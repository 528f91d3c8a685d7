"""Reading: the locked open, meta, list and the explicit delete.

Invariants: `open()` holds a shared flock on the output's directory for as long as the output is open, and
checks after locking that the directory it locked is still the published one (eviction may have renamed it
between open and lock). Opening sets the content atime (LRU recency) explicitly. An output found expired is
removed on the spot unless another reader holds it; the caller sees `ExpiredHandle`. `delete()` does not wait
for readers: it renames the directory away and readers in flight keep their mmap.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets

import orjson

try:
    import fcntl
except ImportError:  # pragma: no cover - not Linux/macOS: FilesystemStore refuses to start (os_support.py)
    fcntl = None  # type: ignore[assignment]

from mcp_offload.store.base import OutputMeta, StoredOutput
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.fs.eviction import Eviction
from mcp_offload.store.fs.tree import CONTENT, DIR_FLAGS, INDEX, META, READ_FLAGS
from mcp_offload.store.handles import validate_handle
from mcp_offload.store.lifecycle import gone_error, is_expired


class _Gone(Exception):
    """Internal: the output is not (or no longer) published; `_gone_error` says what the caller sees."""


class Reading(Eviction):
    """Open (share-locked), describe, list and delete published outputs."""

    def _expire_now(self, scope: str, handle: str) -> None:
        """Remove an output found expired on open/meta (unless someone else is reading it right now)."""
        fd = self._lock_for_removal(scope, handle)
        if fd is None:
            return
        trash = None
        try:
            with self._dir("tmp") as tmp_fd:
                trash = self._remove_locked(scope, handle, "expired", tmp_fd)
        except OSError:
            pass
        self._finish_removals([(trash or "", fd)])

    def _meta_sync(self, scope: str, handle: str, *, expire: bool = True) -> OutputMeta:
        try:
            with self._dir("scopes", scope, handle) as fd:
                meta = OutputMeta.from_dict(orjson.loads(self._read_small(fd, META)))
                stored_at = os.stat(CONTENT, dir_fd=fd, follow_symlinks=False).st_mtime
        except (OSError, ValueError, TypeError) as exc:
            raise self._gone_error(scope, handle) from exc
        if is_expired(stored_at, self.clock(), self.limits):
            if expire:
                self._expire_now(scope, handle)
            raise gone_error(handle, "expired", self.limits)
        return meta

    def _open_sync(self, scope: str, handle: str) -> tuple[StoredOutput, int]:
        """Open, share-lock and validate an output. Returns it and the locked directory fd to close after use."""
        dir_fd = -1
        try:
            with self._dir("scopes", scope) as scope_fd:
                dir_fd = os.open(handle, DIR_FLAGS, dir_fd=scope_fd)
                fcntl.flock(dir_fd, fcntl.LOCK_SH)  # an evictor holds LOCK_EX only across one rename
                published = os.stat(handle, dir_fd=scope_fd, follow_symlinks=False)
                mine = os.fstat(dir_fd)
                if (published.st_ino, published.st_dev) != (mine.st_ino, mine.st_dev):
                    raise _Gone  # evicted between our open and our lock
            meta = OutputMeta.from_dict(orjson.loads(self._read_small(dir_fd, META)))
            index = ContentIndex.from_bytes(self._read_small(dir_fd, INDEX))
            content_fd = os.open(CONTENT, READ_FLAGS, dir_fd=dir_fd)
        except (_Gone, OSError, ValueError, TypeError) as exc:
            if dir_fd >= 0:
                os.close(dir_fd)
            raise self._gone_error(scope, handle) from exc
        try:
            st = os.fstat(content_fd)
            if is_expired(st.st_mtime, self.clock(), self.limits):
                os.close(dir_fd)
                dir_fd = -1
                self._expire_now(scope, handle)
                raise gone_error(handle, "expired", self.limits)
            with contextlib.suppress(OSError):  # recency for LRU; a read-only store just stops tracking it
                os.utime(content_fd, ns=(self._now_ns(), st.st_mtime_ns))
            data = mmap.mmap(content_fd, 0, access=mmap.ACCESS_READ) if st.st_size else b""
        except BaseException:
            if dir_fd >= 0:
                os.close(dir_fd)
            raise
        finally:
            os.close(content_fd)
        path = self._base / "scopes" / scope / handle / CONTENT
        return StoredOutput(meta=meta, index=index, data=data, path=path), dir_fd

    def _list_sync(self, scope: str) -> list[OutputMeta]:
        metas: list[OutputMeta] = []
        try:
            with self._dir("scopes", scope) as scope_fd:
                names = os.listdir(scope_fd)
        except OSError:
            return []
        for name in names:
            try:
                metas.append(self._meta_sync(scope, validate_handle(name), expire=False))
            except Exception:  # expired, vanished, or a foreign file in the scope dir: never listed
                continue
        metas.sort(key=lambda m: m.created, reverse=True)
        return metas

    def _delete_sync(self, scope: str, handle: str) -> None:
        trash = "d-" + secrets.token_hex(12)
        try:
            with self._dir("scopes", scope) as scope_fd, self._dir("tmp") as tmp_fd:
                os.rename(handle, trash, src_dir_fd=scope_fd, dst_dir_fd=tmp_fd)
        except OSError as exc:
            raise self._gone_error(scope, handle) from exc
        self._remove_tmp(trash)
