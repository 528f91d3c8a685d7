"""`FilesystemStore`: the `Store` protocol on the local filesystem, composed of the concepts of this package.

This module opens (and checks) the tree, validates every handle and scope at the API, runs the blocking work in a
worker thread and triggers a sweep every `sweep_interval_s` after a put. What each concept guarantees is in its
own module (see the package docstring).
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import mmap
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from mcp_offload.errors import StoreUnavailable
from mcp_offload.os_support import O_CLOEXEC, O_NOFOLLOW, missing_for_fs_store
from mcp_offload.store.base import OutputMeta, ScannedOutput, StagedContent, StoredOutput
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.failures import filesystem_errors
from mcp_offload.store.fs.admin_scan import AdminScan
from mcp_offload.store.fs.publish import Publishing, StagedFile
from mcp_offload.store.fs.reading import Reading
from mcp_offload.store.fs.sidecars import SidecarFiles
from mcp_offload.store.fs.sweep import DEBRIS_GRACE_S, Sweeping
from mcp_offload.store.fs.tree import LOCK
from mcp_offload.store.handles import validate_handle, validate_scope
from mcp_offload.store.lifecycle import StoreLimits, SweepReport, check_fits_at_all

log = logging.getLogger(__name__)
T = TypeVar("T")
IO_FAILED = "the store could not be read or written ({reason})"


class FilesystemStore(Publishing, Sweeping, Reading, AdminScan, SidecarFiles):
    """A `Store` on the local filesystem; several processes may share one root."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        fsync: bool = True,
        limits: StoreLimits | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = Path(root).expanduser().absolute()
        self.fsync = fsync
        self.limits = limits or StoreLimits()
        self.clock = clock
        self._base = self.root / "v1"
        self._last_sweep = clock()
        self._facts = {}
        missing = missing_for_fs_store()
        if missing:
            raise StoreUnavailable(
                f"the filesystem store needs {', '.join(missing)}, which this platform lacks (supported: Linux, "
                "macOS); use a Redis store instead: --store redis://host:port/db"
            )
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            for sub in ("", "tmp", "scopes", "tombs"):
                (self._base / sub).mkdir(mode=0o700, exist_ok=True)
            for path in (self.root, self._base, *(self._base / s for s in ("tmp", "scopes", "tombs"))):
                if path.is_symlink() or not path.is_dir():
                    raise StoreUnavailable(f"the store directory {path} is not a plain directory; check --store")
        except OSError as exc:
            where = exc.filename or self.root
            raise StoreUnavailable(f"cannot create the store directory {where}: {exc.strerror}") from exc
        with contextlib.suppress(OSError):  # a read-only store still serves reads
            os.close(os.open(self._base / LOCK, os.O_RDONLY | os.O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600))
        self.clean_debris()

    async def put(
        self, scope: str, meta: OutputMeta, index: ContentIndex, data: bytes, staged: StagedContent | None = None
    ) -> None:
        if staged is not None and not isinstance(staged, StagedFile):
            staged.discard()  # another backend's: written here instead
            staged = None
        try:
            validate_scope(scope)
            validate_handle(meta.handle)
            if len(data) != index.size:
                raise ValueError("index does not describe the data")  # programming error
            check_fits_at_all(len(data), self.limits)  # before writing anything
            await self._in_thread(self._put_sync, scope, meta, index, data, staged)
        except BaseException:
            if staged is not None:
                staged.discard()  # refused, or cancelled before the thread took it (a no-op once it did)
            raise
        if self.clock() - self._last_sweep >= self.limits.sweep_interval_s:
            await self.sweep()

    async def sweep(self, *, debris_grace_s: float = DEBRIS_GRACE_S) -> SweepReport:
        """Remove expired outputs (leaving tombstones), crashed writers' debris and old tombstones."""
        self._last_sweep = self.clock()
        return await self._in_thread(self._sweep_sync, debris_grace_s)

    async def meta(self, scope: str, handle: str) -> OutputMeta:
        validate_scope(scope)
        validate_handle(handle)
        return await self._in_thread(self._meta_sync, scope, handle)

    @contextlib.asynccontextmanager
    async def open(self, scope: str, handle: str) -> AsyncIterator[StoredOutput]:
        validate_scope(scope)
        validate_handle(handle)
        output, dir_fd = await self._in_thread(self._open_sync, scope, handle)
        try:
            yield output
        finally:
            if isinstance(output.data, mmap.mmap):
                try:
                    output.data.close()
                except BufferError:  # a caller still holds a memoryview: the mmap goes when that does
                    log.debug("store: mmap still exported at close")
            os.close(dir_fd)  # releases the reader lock

    async def list(self, scope: str) -> list[OutputMeta]:
        validate_scope(scope)
        return await self._in_thread(self._list_sync, scope)

    async def delete(self, scope: str, handle: str) -> None:
        validate_scope(scope)
        validate_handle(handle)
        await self._in_thread(self._delete_sync, scope, handle)

    async def scan(self, *, expired: bool = False) -> builtins.list[ScannedOutput]:  # builtins: `list` is a method here
        return await self._in_thread(self._scan_outputs_sync, expired)

    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking file work in a worker thread; an `OSError` it lets out is `StoreUnavailable` (each concept
        already translates the ones it expects: a missing output is `UnknownHandle`, a full disk `StoreFull`)."""
        with filesystem_errors(IO_FAILED):
            return await anyio.to_thread.run_sync(fn, *args)

    async def aclose(self) -> None:
        return None
