"""`RedisStore`: the `Store` protocol on Redis/Valkey, composed of the concepts of this package.

This module opens the clients (`store.location.open_redis`: timeouts and the retry policy), registers the scripts,
and holds the small operations of no concept of their own: sweep (reap expired outputs), ping and close.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from mcp_offload.errors import SettingsError
from mcp_offload.store.base import CHUNK
from mcp_offload.store.failures import redis_errors
from mcp_offload.store.lifecycle import StoreLimits, SweepReport
from mcp_offload.store.location import KEY_PREFIX, open_redis, store_kind
from mcp_offload.store.redis.admin_scan import AdminScan
from mcp_offload.store.redis.durability import ReplicaAcks
from mcp_offload.store.redis.publish import Publishing
from mcp_offload.store.redis.reading import Reading
from mcp_offload.store.redis.scripts import LUA_DELETE, LUA_LEDGER, LUA_OPEN, LUA_PUBLISH, LUA_REAP, LUA_UNPIN
from mcp_offload.store.redis.startup import Probe, check_mode

REPLICA_ACK_TIMEOUT_S = 2.0
REPLICAS_NEED_A_CLUSTER = (
    "reads from replicas (--store-read-from-replicas, MCP_OFFLOAD_STORE_READ_FROM_REPLICAS) are for a Redis Cluster "
    "store (redis+cluster://…): a single Redis URL names one node"
)


class RedisStore(Publishing, Reading, AdminScan):
    """A `Store` on Redis/Valkey (one node or a Redis Cluster), shared by every instance that points at the same
    Redis and prefix."""

    def __init__(
        self,
        url: str,
        *,
        limits: StoreLimits | None = None,
        clock: Callable[[], float] = time.time,
        prefix: str = KEY_PREFIX,
        connect_timeout_s: float = 2.0,
        socket_timeout_s: float = 5.0,
        eager_bytes: int = CHUNK,
        read_lease_s: float = 600.0,
        replica_ack_timeout_s: float = REPLICA_ACK_TIMEOUT_S,
        read_from_replicas: bool = False,
        check: bool = True,
    ) -> None:
        """`check`: the startup check of the URL against what answers there (client.check_mode); on by default.
        `read_from_replicas` (a cluster only): ranges of large outputs are read from replicas, the master answering
        for what a replica lacks (buffer.py)."""
        self.url = url
        self.cluster = store_kind(url) == "cluster"
        if read_from_replicas and not self.cluster:
            raise SettingsError(REPLICAS_NEED_A_CLUSTER)
        self.read_from_replicas = read_from_replicas
        self.limits = limits or StoreLimits()
        self.clock = clock
        self.prefix = prefix
        self.eager_bytes = eager_bytes
        self.read_lease_ms = int(read_lease_s * 1000)
        self._options: dict[str, Any] = {"connect_timeout_s": connect_timeout_s, "socket_timeout_s": socket_timeout_s}
        probe = check_mode(url, connect_timeout_s) if check else Probe()
        self._sync = probe.sync
        self._replica_sync = None
        self._sync_lock = threading.Lock()
        self._client = open_redis(url, **self._options)
        self._reap = self._client.register_script(LUA_REAP)
        self._publish = self._client.register_script(LUA_PUBLISH)
        self._open = self._client.register_script(LUA_OPEN)
        self._unpin = self._client.register_script(LUA_UNPIN)
        self._delete = self._client.register_script(LUA_DELETE)
        self._ledger_ops = self._client.register_script(LUA_LEDGER)
        self._acks = ReplicaAcks(self._client, cluster=self.cluster, timeout_ms=int(replica_ack_timeout_s * 1000))
        self._acks.announce(probe.replicas)

    async def sweep(self) -> SweepReport:
        """Reap expired outputs (staging debris and tombstones expire by themselves in Redis)."""
        expired = 0
        with redis_errors():
            while True:
                removed, examined = await self._reap_some(500)
                expired += removed
                if examined < 500 or not removed:
                    break
        return SweepReport(expired=expired)

    async def ping(self) -> None:
        """Raise `StoreUnavailable` unless Redis answers (for health checks and startup)."""
        with redis_errors():
            await self._client.ping()

    def sidecar(self, scope: str, handle: str, name: str) -> None:
        """None: Redis keeps no sidecars. Derived data (a search index) stays in the builder's process memory, and
        each process builds its own (an index is up to half its output's size: not worth Redis memory)."""
        return None

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._client.aclose()
        for sync in (self._sync, self._replica_sync):
            if sync is not None:
                with contextlib.suppress(Exception):
                    sync.close()
