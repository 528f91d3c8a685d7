"""Sweep: expired outputs (leaving tombstones), crashed writers' debris in `tmp/`, empty scope directories.

Debris is a `tmp/` entry no live process holds the flock of and older than the grace (which covers the instant
between a writer's mkdir and its flock), so a sweep never removes a live writer's staging directory. Expired
outputs are removed under the store lock and only when no reader holds them (see eviction.py).
"""

from __future__ import annotations

import logging
import os
import shutil
import time

from mcp_offload.store.fs.eviction import Eviction
from mcp_offload.store.fs.tree import DIR_FLAGS, try_lock
from mcp_offload.store.lifecycle import SweepReport, is_expired

log = logging.getLogger(__name__)

DEBRIS_GRACE_S = 60.0


class Sweeping(Eviction):
    """Remove what expired or what crashed writers left behind."""

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
                        fd = os.open(entry.name, DIR_FLAGS, dir_fd=tmp_fd)
                        try:
                            if not try_lock(fd, exclusive=True):
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
