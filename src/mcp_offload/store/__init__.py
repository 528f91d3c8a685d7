"""Output stores: the `Store` protocol and its backends. `open_store` picks one from a location string (the rule,
the Redis client and the key prefix are `location.py`'s, shared with the records kept beside the outputs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_offload.store.base import AdminStore, OutputMeta, ScannedOutput, Store, StoredOutput
from mcp_offload.store.lifecycle import StoreLimits, SweepReport
from mcp_offload.store.location import StoreLocationError, is_redis_location, open_beside, store_kind

__all__ = [
    "AdminStore",
    "OutputMeta",
    "ScannedOutput",
    "Store",
    "StoreLimits",
    "StoreLocationError",
    "StoredOutput",
    "SweepReport",
    "is_redis_location",
    "open_store",
    "store_kind",
]


def open_store(
    location: str, *, limits: StoreLimits | None = None, clock: Callable[[], float] | None = None, **options: Any
) -> AdminStore:
    """`redis://…`/`rediss://…`/`valkey://…` → Redis backend; a location without a URL scheme is a filesystem
    directory; a URL of any other scheme is a `StoreLocationError` (store/location.py), before anything is created.

    `limits` bounds the store (TTL, quotas; `StoreLimits.from_settings(settings)`); `clock` is for tests.
    """
    extra: dict[str, Any] = dict(options)
    if clock is not None:
        extra["clock"] = clock
    if store_kind(location) == "cluster":
        raise StoreLocationError(f"{location!r}: Redis Cluster stores are not supported yet; nothing was created")

    def redis(url: str) -> AdminStore:
        from mcp_offload.store.redis import RedisStore

        return RedisStore(url, limits=limits, **extra)

    def directory(path: str) -> AdminStore:
        from mcp_offload.store.fs import FilesystemStore

        return FilesystemStore(path, limits=limits, **extra)

    return open_beside(location, directory=directory, redis=redis)
