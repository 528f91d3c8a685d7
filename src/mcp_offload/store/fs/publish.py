"""Publish: an output becomes visible only by the rename of a complete, fsynced staging directory.

The writer stages `content`, `index` and `meta.json` in `tmp/w-<random>/` under an exclusive flock (so a sweep
never takes it for debris), then, under the store lock, refuses an existing handle, makes room (eviction) and
renames the directory into `scopes/<scope>/`. Any failure removes the staging directory: nothing half-written
is ever visible. A full disk is `StoreFull`, any other OS error `StoreUnavailable`.
"""

from __future__ import annotations

import os
import secrets

import orjson

try:
    import fcntl
except ImportError:  # pragma: no cover - not Linux/macOS: FilesystemStore refuses to start (os_support.py)
    fcntl = None  # type: ignore[assignment]

from mcp_offload.errors import HandleExists
from mcp_offload.store.base import OutputMeta
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.failures import filesystem_errors
from mcp_offload.store.fs.eviction import Eviction
from mcp_offload.store.fs.tree import CONTENT, INDEX, META, NEW_FILE_FLAGS

DISK_FULL = "the store's disk is full; nothing was stored. Free disk space or lower the store's size limits."
WRITE_FAILED = "the store could not be written ({reason}); nothing was stored."


class Publishing(Eviction):
    """Stage and publish one output."""

    def _put_sync(self, scope: str, meta: OutputMeta, index: ContentIndex, data: bytes) -> None:
        staging = "w-" + secrets.token_hex(12)
        trash: list[tuple[str, int]] = []
        try:
            with self._dir("tmp") as tmp_fd:
                os.mkdir(staging, 0o700, dir_fd=tmp_fd)
                with self._dir("tmp", staging) as out_fd:
                    fcntl.flock(out_fd, fcntl.LOCK_EX)  # "a live writer owns this": sweep leaves it alone
                    now_ns = self._now_ns()
                    self._write_file(out_fd, CONTENT, data, times_ns=(now_ns, now_ns))
                    self._write_file(out_fd, INDEX, index.to_bytes())
                    self._write_file(out_fd, META, orjson.dumps(meta.to_dict()))
                    if self.fsync:
                        os.fsync(out_fd)
                    with self._store_lock():
                        with self._dir("scopes", scope, create=True) as scope_fd:
                            if self._published(scope_fd, meta.handle):
                                raise HandleExists(
                                    "an output with this handle already exists in this scope; nothing was stored."
                                )
                        trash = self._make_room(scope, len(data), tmp_fd)
                        with self._dir("scopes", scope, create=True) as scope_fd:
                            os.rename(staging, meta.handle, src_dir_fd=tmp_fd, dst_dir_fd=scope_fd)
                            if self.fsync:
                                os.fsync(scope_fd)
        except OSError as exc:
            self._remove_tmp(staging)
            with filesystem_errors(WRITE_FAILED, full=DISK_FULL):
                raise exc
        except BaseException:
            self._remove_tmp(staging)
            raise
        finally:
            self._finish_removals(trash)

    @staticmethod
    def _published(scope_fd: int, handle: str) -> bool:
        try:
            os.stat(handle, dir_fd=scope_fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def _write_file(self, dir_fd: int, name: str, payload: bytes, *, times_ns: tuple[int, int] | None = None) -> None:
        fd = os.open(name, NEW_FILE_FLAGS, 0o600, dir_fd=dir_fd)
        try:
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if self.fsync:
                os.fsync(fd)
            if times_ns is not None:
                os.utime(fd, ns=times_ns)
        finally:
            os.close(fd)
