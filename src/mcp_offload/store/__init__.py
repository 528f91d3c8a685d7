"""Output stores: the `Store` protocol and its backends. `open_store` picks one from a location string."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_offload.store.base import AdminStore, OutputMeta, ScannedOutput, Store, StoredOutput
from mcp_offload.store.lifecycle import StoreLimits, SweepReport

__all__ = [
    "AdminStore",
    "OutputMeta",
    "ScannedOutput",
    "Store",
    "StoreLimits",
    "StoredOutput",
    "SweepReport",
    "is_redis_location",
    "open_store",
]

REDIS_SCHEMES = ("redis://", "rediss://", "valkey://", "valkeys://", "unix://")


def is_redis_location(location: str) -> bool:
    """The one rule for a location string (`--store`, MCP_OFFLOAD_STORE): a Redis/Valkey URL, else a directory.
    The store and the savings record beside it both choose their backend by it."""
    return location.startswith(REDIS_SCHEMES)


def open_store(
    location: str, *, limits: StoreLimits | None = None, clock: Callable[[], float] | None = None, **options: Any
) -> AdminStore:
    """`redis://…`/`rediss://…`/`valkey://…` → Redis backend; anything else is a filesystem directory.

    `limits` bounds the store (TTL, quotas; `StoreLimits.from_settings(settings)`); `clock` is for tests.
    """
    extra: dict[str, Any] = dict(options)
    if clock is not None:
        extra["clock"] = clock
    if is_redis_location(location):
        from mcp_offload.store.redis import RedisStore

        return RedisStore(location, limits=limits, **extra)
    from mcp_offload.store.fs import FilesystemStore

    return FilesystemStore(location, limits=limits, **extra)
