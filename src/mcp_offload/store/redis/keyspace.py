"""The store's key space: key names under the prefix, the store clock in milliseconds, the synchronous client.

Every concept of the Redis store reads its settings and clients from here (`RedisStore` sets them). A scope is
32 hex digits, so a member "scope:handle" splits at position 32 without ambiguity.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import redis
import redis.asyncio
from redis.commands.core import AsyncScript

from mcp_offload.store.lifecycle import StoreLimits
from mcp_offload.store.location import open_redis_sync


class RedisKeyspace:
    """Settings, clients and scripts of one `RedisStore`, and the key names every concept uses."""

    url: str
    limits: StoreLimits
    clock: Callable[[], float]
    prefix: str
    eager_bytes: int
    read_lease_ms: int
    _options: dict[str, Any]
    _client: redis.asyncio.Redis
    _sync: redis.Redis | None
    _sync_lock: threading.Lock
    _reap: AsyncScript
    _publish: AsyncScript
    _open: AsyncScript
    _unpin: AsyncScript
    _delete: AsyncScript

    def _key(self, kind: str, scope: str, handle: str) -> str:
        return f"{self.prefix}:{kind}:{scope}:{handle}"

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    @property
    def _tomb_ms(self) -> int:
        return max(int(self.limits.tombstone_ttl_s * 1000), 1)

    def _sync_client(self) -> redis.Redis:
        with self._sync_lock:
            if self._sync is None:
                self._sync = open_redis_sync(self.url, **self._options)
            return self._sync
