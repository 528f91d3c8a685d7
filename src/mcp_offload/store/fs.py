"""Filesystem backend: one directory per output, published by an atomic rename, bounded by `StoreLimits`.

Layout under the root (directories 0700, files 0600):

    v1/lock                          flock'd (exclusive) by a put while it checks quotas, evicts and publishes
    v1/tmp/w-<random>/               staging: content, index, meta.json are written and fsynced here
    v1/tmp/d-<random>/               an evicted/deleted output being removed (renamed here first, then rmtree)
    v1/scopes/<scope>/<handle>/      published: rename(2) of the staging directory, all or nothing
    v1/tombs/<scope>/<handle>        tombstone: "expired" or "evicted"; mtime = when (see lifecycle.py)

Crash safety: an output becomes visible only by the rename of a complete, fsynced directory, and stops being
visible by the rename of that directory into tmp/ (before anything in it is deleted). `kill -9` at any point
leaves either the whole output or nothing under scopes/, plus at most some debris in tmp/ that `sweep()`
removes: a staging directory is locked (flock) by its writer, so debris is recognised as unlocked and older
than `DEBRIS_GRACE_S`.

Lifecycle bookkeeping lives in inode times of `content`, so a quota check costs one `stat` per output and
nothing is rewritten on read: mtime = when it was stored (drives expiry), atime = when it was last opened
(drives LRU; set explicitly with utime on every open, so `noatime` mounts do not matter).

Readers and eviction: `open()` holds a shared flock on the output's directory for as long as the output is
open; eviction takes an exclusive non-blocking flock first and skips outputs it cannot lock, so an output
is never evicted while any process reads it. An explicit `delete()` does not wait: it renames the directory
away, and readers in flight keep reading their mmap, which stays valid after unlink on Linux.

Every path is walked from the root with `openat`-style directory fds and `O_NOFOLLOW`, so a symlink planted
anywhere inside the store is refused rather than followed. Only validated handles and hex scope keys ever
become path components.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import logging
import mmap
import os
import secrets
import shutil
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import orjson

try:
    import fcntl
except ImportError:  # pragma: no cover - not Linux/macOS: FilesystemStore refuses to start (os_support.py)
    fcntl = None  # type: ignore[assignment]

from mcp_offload.errors import HandleExists, OffloadError, StoreFull, StoreUnavailable, UnknownHandle
from mcp_offload.os_support import O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, missing_for_fs_store
from mcp_offload.store.base import OutputMeta, ScannedOutput, StoredOutput
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.handles import validate_handle, validate_scope
from mcp_offload.store.lifecycle import (
    Candidate,
    StoreLimits,
    SweepReport,
    Usage,
    check_fits_at_all,
    fits,
    gone_error,
    is_expired,
    plan_eviction,
)

log = logging.getLogger(__name__)

_DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC
CONTENT, INDEX, META, LOCK = "content", "index", "meta.json", "lock"
DEBRIS_GRACE_S = 60.0
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


@dataclass(frozen=True, slots=True)
class _Entry:
    """One published output as a quota scan sees it."""

    scope: str
    handle: str
    size: int
    stored_at: float  # content mtime
    last_used: float  # content atime


class _Gone(Exception):
    """Internal: the output is not (or no longer) published; `_gone_error` says what the caller sees."""


def _try_lock(fd: int, exclusive: bool) -> bool:
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


class FilesystemStore:
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
        self._facts: dict[tuple[str, str], tuple[int, float]] = {}
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

    # -- path walking ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _dir(self, *parts: str, create: bool = False) -> Iterator[int]:
        """An fd for base/parts..., each component opened with O_NOFOLLOW (optionally created 0700)."""
        fd = os.open(self._base, _DIR_FLAGS)
        try:
            for part in parts:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o700, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
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

    # -- writing ---------------------------------------------------------------------------------------
    async def put(self, scope: str, meta: OutputMeta, index: ContentIndex, data: bytes) -> None:
        validate_scope(scope)
        validate_handle(meta.handle)
        if len(data) != index.size:
            raise ValueError("index does not describe the data")  # programming error
        check_fits_at_all(len(data), self.limits)  # before writing anything
        await anyio.to_thread.run_sync(self._put_sync, scope, meta, index, data)
        if self.clock() - self._last_sweep >= self.limits.sweep_interval_s:
            await self.sweep()

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
            if exc.errno in _FULL_ERRNOS:
                raise StoreFull(
                    "the store's disk is full; nothing was stored. Free disk space or lower the store's size limits."
                ) from exc
            raise StoreUnavailable(f"the store could not be written ({exc.strerror}); nothing was stored.") from exc
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
        fd = os.open(name, _NEW_FILE_FLAGS, 0o600, dir_fd=dir_fd)
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

    # -- lifecycle ---------------------------------------------------------------------------------------
    def _scan(self) -> list[_Entry]:
        """Every published output with its size and store time (`last_used` left at 0: see `_with_recency`).

        Outputs are immutable and handles never reused, so sizes and times come from a cache after the first
        sighting: a scan costs one directory listing per scope plus one stat per output not seen before.
        """
        entries: list[_Entry] = []
        seen: dict[tuple[str, str], tuple[int, float]] = {}
        with self._dir("scopes") as scopes_fd:
            scopes = [e.name for e in os.scandir(scopes_fd) if e.is_dir(follow_symlinks=False)]
        for scope in scopes:
            try:
                validate_scope(scope)
                with self._dir("scopes", scope) as scope_fd:
                    for item in os.scandir(scope_fd):
                        key = (scope, item.name)
                        facts = self._facts.get(key)
                        if facts is None:
                            if not item.is_dir(follow_symlinks=False):
                                continue
                            try:
                                validate_handle(item.name)
                                st = os.stat(f"{item.name}/{CONTENT}", dir_fd=scope_fd, follow_symlinks=False)
                            except (OffloadError, OSError):
                                continue
                            facts = (st.st_size, st.st_mtime)
                        seen[key] = facts
                        entries.append(_Entry(scope, item.name, facts[0], facts[1], 0.0))
            except (ValueError, OSError):
                continue
        self._facts = seen
        return entries

    def _with_recency(self, entries: list[_Entry]) -> list[_Entry]:
        """The entries with `last_used` (content atime), least recently used first: one stat each."""
        out: list[_Entry] = []
        by_scope: dict[str, list[_Entry]] = {}
        for entry in entries:
            by_scope.setdefault(entry.scope, []).append(entry)
        for scope, group in by_scope.items():
            try:
                with self._dir("scopes", scope) as scope_fd:
                    for entry in group:
                        try:
                            st = os.stat(f"{entry.handle}/{CONTENT}", dir_fd=scope_fd, follow_symlinks=False)
                        except OSError:
                            continue  # removed meanwhile (an explicit delete): its bytes are already free
                        out.append(_Entry(entry.scope, entry.handle, entry.size, entry.stored_at, st.st_atime))
            except OSError:
                continue
        out.sort(key=lambda e: e.last_used)
        return out

    def _lock_for_removal(self, scope: str, handle: str) -> int | None:
        """An exclusive-locked fd of a published output, or None if a reader has it open (or it is gone)."""
        try:
            with self._dir("scopes", scope) as scope_fd:
                fd = os.open(handle, _DIR_FLAGS, dir_fd=scope_fd)
        except OSError:
            return None
        if _try_lock(fd, exclusive=True):
            return fd
        os.close(fd)
        return None

    def _remove_locked(self, scope: str, handle: str, reason: str | None, tmp_fd: int) -> str | None:
        """Unpublish an output we hold locked: tombstone first, then rename into tmp/. Returns the trash name."""
        if reason:
            self._write_tombstone(scope, handle, reason)
        trash = "d-" + secrets.token_hex(12)
        try:
            with self._dir("scopes", scope) as scope_fd:
                os.rename(handle, trash, src_dir_fd=scope_fd, dst_dir_fd=tmp_fd)
        except FileNotFoundError:
            return None
        return trash

    def _make_room(self, scope: str, size: int, tmp_fd: int) -> list[tuple[str, int]]:
        """Under the store lock: drop expired outputs, then evict LRU outputs until `size` more bytes fit.

        Returns (trash name, locked fd) pairs to delete after the store lock is released.
        """
        now = self.clock()
        removed: list[tuple[str, int]] = []
        live: list[_Entry] = []
        for entry in self._scan():
            if is_expired(entry.stored_at, now, self.limits):
                fd = self._lock_for_removal(entry.scope, entry.handle)
                if fd is not None:
                    removed.append((self._remove_locked(entry.scope, entry.handle, "expired", tmp_fd) or "", fd))
                    continue
            live.append(entry)
        mine = [e for e in live if e.scope == scope]
        scope_usage = Usage(sum(e.size for e in mine), len(mine))
        total_usage = Usage(sum(e.size for e in live), len(live))
        if fits(size, scope_usage, total_usage, self.limits):
            return removed
        by_lru = self._with_recency(live)
        held: dict[tuple[str, str], int] = {}

        def pinned(cand: Candidate) -> bool:
            fd = self._lock_for_removal(cand.scope, cand.handle)
            if fd is None:
                return True
            held[(cand.scope, cand.handle)] = fd
            return False

        try:
            victims = plan_eviction(
                size,
                scope,
                scope_usage,
                total_usage,
                (Candidate(e.scope, e.handle, e.size, e.last_used) for e in by_lru if e.scope == scope),
                (Candidate(e.scope, e.handle, e.size, e.last_used) for e in by_lru),
                self.limits,
                pinned=pinned,
            )
            for victim in victims:
                fd = held.pop((victim.scope, victim.handle))
                removed.append((self._remove_locked(victim.scope, victim.handle, "evicted", tmp_fd) or "", fd))
        except BaseException:
            self._finish_removals(removed)
            raise
        finally:
            for fd in held.values():
                os.close(fd)
        if removed:
            log.info("store: removed %d output(s) to stay within limits", len(removed))
        return removed

    def _finish_removals(self, removed: list[tuple[str, int]]) -> None:
        for trash, fd in removed:
            if trash:
                self._remove_tmp(trash)
            os.close(fd)

    def _remove_tmp(self, name: str) -> None:
        with contextlib.suppress(OSError):
            shutil.rmtree(self._base / "tmp" / name)

    def _write_tombstone(self, scope: str, handle: str, reason: str) -> None:
        try:
            with self._dir("tombs", scope, create=True) as fd:
                tomb = os.open(handle, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600, dir_fd=fd)
                try:
                    os.write(tomb, reason.encode("ascii"))
                    now_ns = self._now_ns()
                    os.utime(tomb, ns=(now_ns, now_ns))
                finally:
                    os.close(tomb)
        except OSError as exc:  # best effort: without it the handle reads as unknown, nothing worse
            log.debug("store: tombstone not written (%s)", exc.strerror)

    def _gone_error(self, scope: str, handle: str) -> Exception:
        """ExpiredHandle if this scope has a fresh tombstone for `handle`, else the plain UnknownHandle."""
        try:
            with self._dir("tombs", scope) as fd:
                tomb = os.open(handle, _READ_FLAGS, dir_fd=fd)
                try:
                    reason = os.read(tomb, 16).decode("ascii", "replace")
                    when = os.fstat(tomb).st_mtime
                finally:
                    os.close(tomb)
            if self.clock() - when < self.limits.tombstone_ttl_s:
                return gone_error(handle, reason, self.limits)
        except OSError:
            pass
        return UnknownHandle(f"no output {handle} in this session")

    def clean_debris(self, older_than: float = DEBRIS_GRACE_S) -> int:
        """Remove staging/trash directories of writers that died. Returns how many were removed.

        An entry is debris when no live process holds its flock and it is older than `older_than` seconds
        (the grace covers the instant between a writer's mkdir and its flock).
        """
        removed = 0
        now = time.time()
        try:
            with self._dir("tmp") as tmp_fd:
                for entry in os.scandir(tmp_fd):
                    try:
                        if now - entry.stat(follow_symlinks=False).st_mtime < older_than:
                            continue
                        if not entry.is_dir(follow_symlinks=False):
                            os.unlink(entry.name, dir_fd=tmp_fd)
                            removed += 1
                            continue
                        fd = os.open(entry.name, _DIR_FLAGS, dir_fd=tmp_fd)
                        try:
                            if not _try_lock(fd, exclusive=True):
                                continue
                            shutil.rmtree(entry.name, dir_fd=tmp_fd)
                            removed += 1
                        finally:
                            os.close(fd)
                    except OSError:
                        continue
        except OSError:
            pass
        return removed

    async def sweep(self, *, debris_grace_s: float = DEBRIS_GRACE_S) -> SweepReport:
        """Remove expired outputs (leaving tombstones), crashed writers' debris and old tombstones."""
        self._last_sweep = self.clock()
        return await anyio.to_thread.run_sync(self._sweep_sync, debris_grace_s)

    def _sweep_sync(self, debris_grace_s: float) -> SweepReport:
        now = self.clock()
        removed: list[tuple[str, int]] = []
        try:
            with self._store_lock(), self._dir("tmp") as tmp_fd:
                for entry in self._scan():
                    if is_expired(entry.stored_at, now, self.limits):
                        fd = self._lock_for_removal(entry.scope, entry.handle)
                        if fd is not None:
                            trash = self._remove_locked(entry.scope, entry.handle, "expired", tmp_fd)
                            removed.append((trash or "", fd))
                self._rmdir_empty("scopes")
        except OSError as exc:
            log.warning("store sweep: %s", exc.strerror)
        finally:
            self._finish_removals(removed)
        debris = self.clean_debris(debris_grace_s)
        tombstones = self._prune_tombstones(now)
        return SweepReport(expired=len(removed), debris=debris, tombstones=tombstones)

    def _rmdir_empty(self, top: str) -> None:
        """Remove empty per-scope directories (under the store lock for scopes/, so no put races it)."""
        with self._dir(top) as top_fd:
            for entry in os.scandir(top_fd):
                if entry.is_dir(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.rmdir(entry.name, dir_fd=top_fd)

    def _prune_tombstones(self, now: float) -> int:
        """Drop tombstones older than their TTL, and the oldest beyond the per-scope cap."""
        pruned = 0
        try:
            with self._dir("tombs") as tombs_fd:
                scopes = [e.name for e in os.scandir(tombs_fd) if e.is_dir(follow_symlinks=False)]
            for scope in scopes:
                with self._dir("tombs", scope) as fd:
                    stones = sorted(
                        ((e.stat(follow_symlinks=False).st_mtime, e.name) for e in os.scandir(fd)), reverse=True
                    )
                    for rank, (when, name) in enumerate(stones):
                        if rank >= self.limits.tombstones_per_scope or now - when >= self.limits.tombstone_ttl_s:
                            with contextlib.suppress(OSError):
                                os.unlink(name, dir_fd=fd)
                                pruned += 1
            self._rmdir_empty("tombs")
        except OSError as exc:
            log.warning("store sweep (tombstones): %s", exc.strerror)
        return pruned

    # -- reading ---------------------------------------------------------------------------------------
    def _read_small(self, dir_fd: int, name: str) -> bytes:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as fh:
            return fh.read()

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

    async def meta(self, scope: str, handle: str) -> OutputMeta:
        validate_scope(scope)
        validate_handle(handle)
        return await anyio.to_thread.run_sync(self._meta_sync, scope, handle)

    def _open_sync(self, scope: str, handle: str) -> tuple[StoredOutput, int]:
        """Open, share-lock and validate an output. Returns it and the locked directory fd to close after use."""
        dir_fd = -1
        try:
            with self._dir("scopes", scope) as scope_fd:
                dir_fd = os.open(handle, _DIR_FLAGS, dir_fd=scope_fd)
                fcntl.flock(dir_fd, fcntl.LOCK_SH)  # an evictor holds LOCK_EX only across one rename
                published = os.stat(handle, dir_fd=scope_fd, follow_symlinks=False)
                mine = os.fstat(dir_fd)
                if (published.st_ino, published.st_dev) != (mine.st_ino, mine.st_dev):
                    raise _Gone  # evicted between our open and our lock
            meta = OutputMeta.from_dict(orjson.loads(self._read_small(dir_fd, META)))
            index = ContentIndex.from_bytes(self._read_small(dir_fd, INDEX))
            content_fd = os.open(CONTENT, _READ_FLAGS, dir_fd=dir_fd)
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

    @contextlib.asynccontextmanager
    async def open(self, scope: str, handle: str) -> AsyncIterator[StoredOutput]:
        validate_scope(scope)
        validate_handle(handle)
        output, dir_fd = await anyio.to_thread.run_sync(self._open_sync, scope, handle)
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
        return await anyio.to_thread.run_sync(self._list_sync, scope)

    def _list_sync(self, scope: str) -> builtins.list[OutputMeta]:  # builtins: `list` here is the method above
        metas: builtins.list[OutputMeta] = []
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

    async def delete(self, scope: str, handle: str) -> None:
        validate_scope(scope)
        validate_handle(handle)
        await anyio.to_thread.run_sync(self._delete_sync, scope, handle)

    def _delete_sync(self, scope: str, handle: str) -> None:
        trash = "d-" + secrets.token_hex(12)
        try:
            with self._dir("scopes", scope) as scope_fd, self._dir("tmp") as tmp_fd:
                os.rename(handle, trash, src_dir_fd=scope_fd, dst_dir_fd=tmp_fd)
        except OSError as exc:
            raise self._gone_error(scope, handle) from exc
        self._remove_tmp(trash)

    async def scan(self, *, expired: bool = False) -> builtins.list[ScannedOutput]:
        return await anyio.to_thread.run_sync(self._scan_outputs_sync, expired)

    def _scan_outputs_sync(self, expired: bool) -> builtins.list[ScannedOutput]:
        """Every live output, each read through O_NOFOLLOW dir fds; anything odd or vanishing is skipped."""
        now, found = self.clock(), builtins.list[ScannedOutput]()
        for entry in self._scan():
            try:
                with self._dir("scopes", entry.scope, entry.handle) as fd:
                    meta = OutputMeta.from_dict(orjson.loads(self._read_small(fd, META)))
                    st = os.stat(CONTENT, dir_fd=fd, follow_symlinks=False)
            except (OSError, ValueError, TypeError):
                continue
            if meta.handle == entry.handle and (expired or not is_expired(st.st_mtime, now, self.limits)):
                used = st.st_atime if st.st_atime_ns != st.st_mtime_ns else None  # a put sets both to one instant
                found.append(ScannedOutput(entry.scope, meta, used, st.st_mtime + self.limits.ttl_s))
        found.sort(key=lambda o: o.meta.created, reverse=True)
        return found

    async def aclose(self) -> None:
        return None
