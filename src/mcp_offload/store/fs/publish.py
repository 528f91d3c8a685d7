"""Publish: an output becomes visible only by the rename of a complete, fsynced staging directory.

The writer stages `content`, `index` and `meta.json` in `tmp/w-<random>/` under an exclusive flock (so a sweep
never takes it for debris; the content may be staged ahead by a thread while the caller builds the preview: `stage`),
then, under the store lock, refuses an existing handle, makes room (eviction) and
renames the directory into `scopes/<scope>/`. Any failure removes the staging directory: nothing half-written
is ever visible. A full disk is `StoreFull`, any other OS error `StoreUnavailable`.
"""

from __future__ import annotations

import os
import secrets
import threading

import orjson

try:
    import fcntl
except ImportError:  # pragma: no cover - not Linux/macOS: FilesystemStore refuses to start (os_support.py)
    fcntl = None  # type: ignore[assignment]

from mcp_offload.errors import HandleExists, StoreFull
from mcp_offload.store.base import OutputMeta
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.failures import filesystem_errors
from mcp_offload.store.fs.eviction import Eviction
from mcp_offload.store.fs.tree import CONTENT, DIR_FLAGS, INDEX, META, NEW_FILE_FLAGS
from mcp_offload.store.lifecycle import check_fits_at_all

DISK_FULL = "the store's disk is full; nothing was stored. Free disk space or lower the store's size limits."
WRITE_FAILED = "the store could not be written ({reason}); nothing was stored."


class Publishing(Eviction):
    """Stage and publish one output."""

    def stage(self, data: bytes) -> StagedFile | None:
        """Start writing (and fsyncing) the content file in a staging directory, in a thread of its own: `put` then
        writes only the index and metadata before publishing. None when the bytes could never fit."""
        try:
            check_fits_at_all(len(data), self.limits)
        except StoreFull:
            return None  # `put` refuses it with the reason
        return StagedFile(self, data)

    def _put_sync(
        self, scope: str, meta: OutputMeta, index: ContentIndex, data: bytes, staged: StagedFile | None = None
    ) -> None:
        staging = ""
        trash: list[tuple[str, int]] = []
        try:
            staging, out_fd = staged.take() if staged is not None else self._stage_content(data)
            try:
                self._finish_staging(out_fd, meta, index)
                with self._dir("tmp") as tmp_fd, self._store_lock():
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
            finally:
                os.close(out_fd)  # the flock goes with it: published, or removed below
        except OSError as exc:
            if staging:
                self._remove_tmp(staging)
            with filesystem_errors(WRITE_FAILED, full=DISK_FULL):
                raise exc
        except BaseException:
            if staging:
                self._remove_tmp(staging)
            raise
        finally:
            self._finish_removals(trash)

    def _stage_content(self, data: bytes) -> tuple[str, int]:
        """A new staging directory holding the content file, written and fsynced: its name and an open fd of it,
        holding the flock that tells a sweep a live writer owns it. Removed again on any error."""
        staging = "w-" + secrets.token_hex(12)
        with self._dir("tmp") as tmp_fd:
            os.mkdir(staging, 0o700, dir_fd=tmp_fd)
            try:
                out_fd = os.open(staging, DIR_FLAGS, dir_fd=tmp_fd)
                try:
                    fcntl.flock(out_fd, fcntl.LOCK_EX)  # "a live writer owns this": sweep leaves it alone
                    self._write_file(out_fd, CONTENT, data)
                except BaseException:
                    os.close(out_fd)
                    raise
            except BaseException:
                self._remove_tmp(staging)
                raise
        return staging, out_fd

    def _finish_staging(self, out_fd: int, meta: OutputMeta, index: ContentIndex) -> None:
        """The index and metadata beside the staged content, whose times become now (its recency starts at the
        publish, not at the write), all fsynced."""
        now_ns = self._now_ns()
        os.utime(CONTENT, ns=(now_ns, now_ns), dir_fd=out_fd, follow_symlinks=False)
        self._write_file(out_fd, INDEX, index.to_bytes())
        self._write_file(out_fd, META, orjson.dumps(meta.to_dict()))
        if self.fsync:
            os.fsync(out_fd)

    @staticmethod
    def _published(scope_fd: int, handle: str) -> bool:
        try:
            os.stat(handle, dir_fd=scope_fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def _write_file(self, dir_fd: int, name: str, payload: bytes) -> None:
        fd = os.open(name, NEW_FILE_FLAGS, 0o600, dir_fd=dir_fd)
        try:
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)


class StagedFile:
    """One output's content file, written and fsynced into a staging directory by a thread of its own
    (`Publishing.stage`). `take()` (for `put`, blocking) waits for the write and hands the directory over;
    `discard()` removes it, now or once the write ends."""

    def __init__(self, store: Publishing, data: bytes) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._state = "open"  # then "taken" (by a put: its directory now) or "discarded"
        self._staged: tuple[str, int] | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._write, args=(data,), name="store-stage", daemon=True).start()

    def _write(self, data: bytes) -> None:
        try:
            staged = self._store._stage_content(data)
        except BaseException as exc:  # handed to whoever takes it: `put` raises it as its own
            self._error = exc
            staged = None
        with self._lock:
            self._staged = staged
            self._done.set()
            discarded = self._state == "discarded"
        if discarded:
            self._remove()

    def take(self) -> tuple[str, int]:
        """The staging directory's name and fd, once written; raises the write's error."""
        with self._lock:
            if self._state != "open":
                raise RuntimeError(f"staged content taken after it was {self._state}")  # programming error
            self._state = "taken"
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._staged is not None
        return self._staged

    def discard(self) -> None:
        with self._lock:
            if self._state != "open":
                return
            self._state = "discarded"
            done = self._done.is_set()
        if done:
            self._remove()

    def _remove(self) -> None:
        if self._staged is not None:
            staging, out_fd = self._staged
            self._staged = None
            os.close(out_fd)
            self._store._remove_tmp(staging)
