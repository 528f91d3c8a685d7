"""Output stores: the `Store` protocol and its backends. `open_store` picks one from a location string (the rule,
the Redis client and the key prefix are `location.py`'s, shared with the records kept beside the outputs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_offload.errors import SettingsError
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
    location: str,
    *,
    limits: StoreLimits | None = None,
    clock: Callable[[], float] | None = None,
    replica_ack_timeout_s: float | None = None,
    read_from_replicas: bool = False,
    **options: Any,
) -> AdminStore:
    """`redis://…`/`rediss://…`/`valkey://…`/`redis+cluster://…` → Redis backend; a location without a URL
    scheme is a filesystem directory; a URL of any other scheme is a `StoreLocationError` (store/location.py),
    before anything is created.

    `limits` bounds the store (TTL, quotas; `StoreLimits.from_settings(settings)`); `clock` is for tests;
    `replica_ack_timeout_s`: how long a Redis put waits for a replica's ack (0: never waits; Redis only);
    `read_from_replicas`: a Redis Cluster reads large outputs' ranges from replicas (`SettingsError` for any other
    store).
    """
    extra: dict[str, Any] = dict(options)
    if clock is not None:
        extra["clock"] = clock

    def redis(url: str) -> AdminStore:
        from mcp_offload.store.redis import RedisStore

        if read_from_replicas:
            extra["read_from_replicas"] = True
        if replica_ack_timeout_s is not None:
            return RedisStore(url, limits=limits, replica_ack_timeout_s=replica_ack_timeout_s, **extra)
        return RedisStore(url, limits=limits, **extra)

    def directory(path: str) -> AdminStore:
        from mcp_offload.store.fs import FilesystemStore

        if read_from_replicas:
            raise SettingsError(
                "reads from replicas (--store-read-from-replicas, MCP_OFFLOAD_STORE_READ_FROM_REPLICAS) are for a "
                f"Redis Cluster store (redis+cluster://…); the store is the directory {path}"
            )
        return FilesystemStore(path, limits=limits, **extra)

    return open_beside(location, directory=directory, redis=redis)
