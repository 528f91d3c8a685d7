"""Tombstones: `v1/tombs/<scope>/<handle>` holds "expired" or "evicted", its mtime says when.

A removed output leaves one so that its handle reads as `ExpiredHandle` (with the reason) rather than unknown
for `tombstone_ttl_s`; writing one is best effort. Sweeps prune those past their TTL and the oldest beyond
`tombstones_per_scope`.
"""

from __future__ import annotations

import contextlib
import logging
import os

from mcp_offload.errors import UnknownHandle
from mcp_offload.os_support import O_CLOEXEC, O_NOFOLLOW
from mcp_offload.store.fs.tree import READ_FLAGS, StoreTree
from mcp_offload.store.lifecycle import gone_error

log = logging.getLogger(__name__)


class TombstoneKeeping(StoreTree):
    """Write, read (into the caller's error) and prune tombstones."""

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
                tomb = os.open(handle, READ_FLAGS, dir_fd=fd)
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
