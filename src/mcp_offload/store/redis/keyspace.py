"""The store's key space: key names under the prefix, the store clock in milliseconds, the synchronous client.

Every concept of the Redis store reads its settings and clients from here (`RedisStore` sets them). A scope is
32 hex digits, so a member "scope:handle" splits at position 32 without ambiguity.

The layout differs in one thing between one node and a cluster: on a cluster the scope in every key is a hash tag
(`{scope}`), so all keys of one session (its outputs, its LRU and totals, its ledger) share one hash slot and each
script runs on one node; sessions spread over every master by their scope. On one node the names are the ones this
store always used (no braces), so an upgrade keeps every stored output readable.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from redis.cluster import RedisCluster
from redis.commands.core import AsyncScript

from mcp_offload.store.failures import driver_error_line, is_driver_error
from mcp_offload.store.lifecycle import StoreLimits
from mcp_offload.store.location import open_redis_sync

if TYPE_CHECKING:
    from mcp_offload.store.location import AsyncRedis, SyncRedis

log = logging.getLogger(__name__)

REPLICA_MAP_S = 30.0  # how often the replica-reading client reloads its slot map


class RedisKeyspace:
    """Settings, clients and scripts of one `RedisStore`, and the key names every concept uses."""

    url: str
    cluster: bool  # a Redis Cluster (redis+cluster://): the key layout below and the store-wide ledger
    limits: StoreLimits
    clock: Callable[[], float]
    prefix: str
    eager_bytes: int
    read_lease_ms: int
    read_from_replicas: bool  # a cluster: ranges of large outputs are read from replicas (buffer.py)
    _options: dict[str, Any]
    _client: AsyncRedis
    _sync: SyncRedis | None
    _replica_sync: SyncRedis | None
    _replica_map_at: float = 0.0
    _sync_lock: threading.Lock
    _reap: AsyncScript
    _publish: AsyncScript
    _open: AsyncScript
    _unpin: AsyncScript
    _delete: AsyncScript
    _ledger_ops: AsyncScript

    def _tag(self, scope: str) -> str:
        return f"{{{scope}}}" if self.cluster else scope

    def _key(self, kind: str, scope: str, handle: str) -> str:
        return f"{self.prefix}:{kind}:{self._tag(scope)}:{handle}"

    def _scope_key(self, scope: str, kind: str) -> str:
        """P:s:<scope>:lru (zset handle -> last use) or :tot (hash b, n) of one session."""
        return f"{self.prefix}:s:{self._tag(scope)}:{kind}"

    def _group(self, scope: str, handle: str) -> list[str]:
        """The 6 keys of one output a script touches (prelude.lua's `group`)."""
        return [
            *(self._key(kind, scope, handle) for kind in ("d", "m", "p", "t")),
            self._scope_key(scope, "lru"),
            self._scope_key(scope, "tot"),
        ]

    def _ledger(self, scope: str) -> list[str]:
        """The 4 ledger keys (lru, exp, size, tot; prelude.lua's `ledger`) that the scripts of `scope` book in: the
        store-wide ones on one node, the session's own on a cluster (the store-wide view is then `_global()`)."""
        if self.cluster:
            return [self._scope_key(scope, kind) for kind in ("glru", "exp", "size", "gtot")]
        return self._global()

    def _global(self) -> list[str]:
        """The store-wide books (lru, exp, size, tot): P:g:* on one node, one hash slot `{g}` on a cluster."""
        tag = ":{g}" if self.cluster else ""
        return [f"{self.prefix}:g{tag}:{kind}" for kind in ("lru", "exp", "size", "tot")]

    def _staging(self, scope: str) -> str:
        """A fresh staging key in the session's slot (publish.lua RENAMEs it into place)."""
        return f"{self.prefix}:w:{self._tag(scope)}:{secrets.token_hex(12)}"

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    @property
    def _tomb_ms(self) -> int:
        return max(int(self.limits.tombstone_ttl_s * 1000), 1)

    def _sync_client(self) -> SyncRedis:
        with self._sync_lock:
            if self._sync is None:
                self._sync = open_redis_sync(self.url, **self._options)
            return self._sync

    def _replica_client(self) -> SyncRedis | None:
        """The synchronous client whose reads go to replicas, when this store reads from them; else None. Blocks
        (it connects, and reloads its slot map every `REPLICA_MAP_S`): call it from a worker thread.

        Why reload: a client learns the replicas from CLUSTER SLOTS, which lists a replica only once the cluster's
        gossip knows it has data (a fresh cluster lists none), and redis-py reloads the map only after an error; so
        without it, replicas that joined (or became known) after the first read would never be read from."""
        if not self.read_from_replicas:
            return None
        with self._sync_lock:
            now = time.monotonic()
            if self._replica_sync is None:
                self._replica_sync, self._replica_map_at = (
                    open_redis_sync(self.url, replicas=True, **self._options),
                    now,
                )
                return self._replica_sync
            client, stale = self._replica_sync, now - self._replica_map_at > REPLICA_MAP_S
            if stale:
                self._replica_map_at = now
        if stale and isinstance(client, RedisCluster):
            try:
                client.nodes_manager.initialize()
            except Exception as exc:
                if not is_driver_error(exc):
                    raise
                log.debug("redis store: the replicas' slot map was not reloaded (%s)", driver_error_line(exc))
        return client
