"""The durable savings record (what offloading saved, per day, server and tool) and its backends.
`open_savings` picks the backend beside the store: a directory → fs.py, `redis://…` → redis.py.

The extension that feeds it from our own tools sits above the store layer:
`mcp_offload.mcp_server.savings_tap` (not imported here, so the services layer can use the record).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcp_offload.savings.record import (
    FLUSH_INTERVAL_S,
    SavingsKey,
    SavingsRecord,
    SavingsRow,
    last_days,
    summarize,
    summary_json,
)
from mcp_offload.store.location import open_beside

__all__ = ["SavingsKey", "SavingsRecord", "SavingsRow", "last_days", "open_savings", "summarize", "summary_json"]


def open_savings(
    location: str, *, clock: Callable[[], float] = time.time, flush_interval_s: float = FLUSH_INTERVAL_S
) -> SavingsRecord:
    """The record kept beside the store at `location` (same location string as `open_store`)."""

    def redis(url: str) -> SavingsRecord:
        from mcp_offload.savings.redis import RedisSavings

        return RedisSavings(url, clock=clock, flush_interval_s=flush_interval_s)

    def directory(path: str) -> SavingsRecord:
        from mcp_offload.savings.fs import FilesystemSavings

        return FilesystemSavings(path, clock=clock, flush_interval_s=flush_interval_s)

    return open_beside(location, directory=directory, redis=redis)
