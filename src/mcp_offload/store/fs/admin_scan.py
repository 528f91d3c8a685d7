"""Admin scan: every published output with its scope, meta, last use, expiry and sidecar bytes, for `mcp-offload
outputs` and the status page.

Read-only: each output is read through `O_NOFOLLOW` directory fds and anything odd or vanishing is skipped, never
raised; the last-use time is reported only once a reader has opened the output (a put sets atime = mtime).
"""

from __future__ import annotations

import os

import orjson

from mcp_offload.store.base import OutputMeta, ScannedOutput
from mcp_offload.store.fs.eviction import Eviction
from mcp_offload.store.fs.tree import CONTENT, META
from mcp_offload.store.lifecycle import is_expired


class AdminScan(Eviction):
    """List every output of every scope for the admin command."""

    def _scan_outputs_sync(self, expired: bool) -> list[ScannedOutput]:
        """Every live output, each read through O_NOFOLLOW dir fds; anything odd or vanishing is skipped."""
        now, found = self.clock(), list[ScannedOutput]()
        for entry in self._scan():
            try:
                with self._dir("scopes", entry.scope, entry.handle) as fd:
                    meta = OutputMeta.from_dict(orjson.loads(self._read_small(fd, META)))
                    st = os.stat(CONTENT, dir_fd=fd, follow_symlinks=False)
            except (OSError, ValueError, TypeError):
                continue
            if meta.handle == entry.handle and (expired or not is_expired(st.st_mtime, now, self.limits)):
                used = st.st_atime if st.st_atime_ns != st.st_mtime_ns else None  # a put sets both to one instant
                expires = st.st_mtime + self.limits.ttl_s
                found.append(ScannedOutput(entry.scope, meta, used, expires, sidecar_bytes=entry.sidecars))
        found.sort(key=lambda o: o.meta.created, reverse=True)
        return found
