"""Quota scan and LRU eviction: which outputs exist, how big and how recently used, and unpublishing them.

Invariants: an output is removed only while this process holds an exclusive non-blocking flock on its
directory, so an output any reader has open is never evicted (it is skipped as pinned). Removal writes the
tombstone first, then renames the directory into `tmp/` (the rmtree happens after the store lock is released,
in `_finish_removals`), sidecars with it. An output's size in the quotas is its content plus its sidecar files.
Sizes and store times are cached per (scope, handle): outputs are immutable and handles never reused; sidecar
bytes are cached with their directory's stamp, and a scope's whole listing with the scope directory's (see
`_scan`).
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
import time
from dataclasses import dataclass

from mcp_offload.errors import OffloadError
from mcp_offload.store.fs.tombstones import TombstoneKeeping
from mcp_offload.store.fs.tree import CONTENT, DIR_FLAGS, sidecar_bytes, try_lock
from mcp_offload.store.handles import validate_handle, validate_scope
from mcp_offload.store.lifecycle import EvictionCandidate, StoreUsage, fits, is_expired, plan_eviction

log = logging.getLogger(__name__)


RACY_NS = 2_000_000_000  # a directory changed this recently may change again within its mtime's granularity


@dataclass(frozen=True, slots=True)
class _Entry:
    """One published output as a quota scan sees it."""

    scope: str
    handle: str
    size: int  # content bytes
    stored_at: float  # content mtime
    last_used: float  # content atime
    sidecars: int = 0  # bytes of its published sidecar files

    @property
    def used(self) -> int:
        """What it takes from the byte quotas and what removing it frees."""
        return self.size + self.sidecars


Stamp = tuple[int, int, int]  # a directory's (inode, mtime, ctime), in ns


def stamp_of(st: os.stat_result) -> Stamp | None:
    """What a cache may key on to see a directory change; None while a change could still go unseen (the "racy"
    window, as git's index has it: a change within the mtime's granularity would leave it as it was)."""
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True, slots=True)
class _Facts:
    """What a scan remembers of an output: its content never changes; its sidecars only with its directory."""

    size: int
    stored_at: float
    sidecars: int
    stamp: Stamp | None  # its directory's when `sidecars` was counted


@dataclass(frozen=True, slots=True)
class _ScopeFacts:
    """What a scan remembers of a scope: its outputs' facts, valid while the scope directory keeps `stamp`."""

    stamp: Stamp | None
    outputs: dict[str, _Facts]


class Eviction(TombstoneKeeping):
    """Scan the published outputs and remove expired or least recently used ones to make room."""

    _facts: dict[str, _ScopeFacts]

    def _scan(self) -> list[_Entry]:
        """Every published output with its size, sidecar bytes and store time (`last_used` left at 0: see
        `_with_recency`).

        Outputs are immutable and handles never reused, so sizes and times come from a cache after the first
        sighting. Sidecars are written later, and a sidecar write touches its scope's directory (`touch_scope`), as
        a put, a delete or a removal change it: a scope whose directory kept its stamp is taken from the cache
        whole (one stat); a changed one is listed, each output's directory stat'ed, and an output's sidecar files
        counted again only when its directory changed (or either stamp is still racy).
        """
        entries: list[_Entry] = []
        seen: dict[str, _ScopeFacts] = {}
        with self._dir("scopes") as scopes_fd:
            scopes = [e.name for e in os.scandir(scopes_fd) if e.is_dir(follow_symlinks=False)]
        for scope in scopes:
            try:
                validate_scope(scope)
                with self._dir("scopes", scope) as scope_fd:
                    stamp = stamp_of(os.fstat(scope_fd))
                    cached = self._facts.get(scope)
                    if stamp is not None and cached is not None and cached.stamp == stamp:
                        outputs = cached.outputs
                    else:
                        before = cached.outputs if cached is not None else {}
                        outputs = {}
                        for item in os.scandir(scope_fd):
                            facts = _facts_of(scope_fd, item, before.get(item.name))
                            if facts is not None:
                                outputs[item.name] = facts
            except (ValueError, OSError):
                continue
            seen[scope] = _ScopeFacts(stamp, outputs)
            entries.extend(_Entry(scope, h, f.size, f.stored_at, 0.0, f.sidecars) for h, f in outputs.items())
        self._facts = seen
        return entries

    def touch_scope(self, scope: str) -> None:
        """Mark a scope's outputs as changed for every process's scan cache (a sidecar write changes only the
        output's own directory)."""
        with self._dir("scopes", scope) as scope_fd:
            os.utime(scope_fd)

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
                        out.append(
                            _Entry(entry.scope, entry.handle, entry.size, entry.stored_at, st.st_atime, entry.sidecars)
                        )
            except OSError:
                continue
        out.sort(key=lambda e: e.last_used)
        return out

    def _lock_for_removal(self, scope: str, handle: str) -> int | None:
        """An exclusive-locked fd of a published output, or None if a reader has it open (or it is gone)."""
        try:
            with self._dir("scopes", scope) as scope_fd:
                fd = os.open(handle, DIR_FLAGS, dir_fd=scope_fd)
        except OSError:
            return None
        if try_lock(fd, exclusive=True):
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

    def _drop_expired(self, tmp_fd: int) -> tuple[list[_Entry], list[tuple[str, int]]]:
        """Under the store lock: remove expired outputs no reader holds. Returns the outputs left and the
        (trash name, locked fd) pairs to finish after the store lock is released."""
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
        return live, removed

    def _make_room(self, scope: str, size: int, tmp_fd: int) -> list[tuple[str, int]]:
        """Under the store lock: drop expired outputs, then evict LRU outputs until `size` more bytes fit.

        Returns (trash name, locked fd) pairs to delete after the store lock is released.
        """
        live, removed = self._drop_expired(tmp_fd)
        scope_usage, total_usage = quota_usage(live, scope)
        if fits(size, scope_usage, total_usage, self.limits):
            return removed
        by_lru = self._with_recency(live)
        held: dict[tuple[str, str], int] = {}

        def pinned(cand: EvictionCandidate) -> bool:
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
                (EvictionCandidate(e.scope, e.handle, e.used, e.last_used) for e in by_lru if e.scope == scope),
                (EvictionCandidate(e.scope, e.handle, e.used, e.last_used) for e in by_lru),
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


def quota_usage(live: list[_Entry], scope: str) -> tuple[StoreUsage, StoreUsage]:
    """The scope's and the store's usage: content and sidecar bytes, and outputs."""
    mine = [e for e in live if e.scope == scope]
    return StoreUsage(sum(e.used for e in mine), len(mine)), StoreUsage(sum(e.used for e in live), len(live))


def _facts_of(scope_fd: int, item: os.DirEntry[str], cached: _Facts | None) -> _Facts | None:
    """An output's facts, from `cached` where they cannot have changed; None for anything not an output."""
    try:
        st = item.stat(follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            return None
        stamp = stamp_of(st)
        if cached is not None and stamp is not None and cached.stamp == stamp:
            return cached
        if cached is None:
            validate_handle(item.name)
            content = os.stat(f"{item.name}/{CONTENT}", dir_fd=scope_fd, follow_symlinks=False)
            size, stored_at = content.st_size, content.st_mtime
        else:
            size, stored_at = cached.size, cached.stored_at
        fd = os.open(item.name, DIR_FLAGS, dir_fd=scope_fd)
        try:
            sidecars = sidecar_bytes(fd)
        finally:
            os.close(fd)
    except (OffloadError, OSError):
        return None
    return _Facts(size, stored_at, sidecars, stamp)
