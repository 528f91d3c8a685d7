"""Opening Redis from a store URL: one node (`redis://`, `rediss://`, `valkey://`, `unix://`) or a Redis Cluster
(`redis+cluster://host:port[,host:port…]`, `rediss+cluster://…`), for the store, the savings and the decision record.

A cluster URL lists seed nodes; the user, password and query options (TLS options included) apply to every node, and
the client learns the rest of the cluster from the seeds. `check_mode` is the startup check: a cluster URL whose
seeds all fail to answer, a cluster URL naming a node that is not in cluster mode, and a single-node URL naming a
cluster node are each one `StoreLocationError` line (an unreachable single node is not: it may come back, and
every call then says so).

Both clients retry on a broken connection. The cluster client also follows MOVED/ASK and reloads the slot map on a
connection error (a failover), with a short capped backoff, so a call that falls into a failover window fails
within a few seconds with `StoreUnavailable` instead of hanging, and the next call finds the new master.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.connection import parse_url
from redis.retry import Retry

from mcp_offload.store.location import CLUSTER_SCHEMES, StoreLocationError

log = logging.getLogger(__name__)

AsyncClient = redis.asyncio.Redis | redis.asyncio.RedisCluster
SyncClient = redis.Redis | redis.cluster.RedisCluster

CLUSTER_RETRIES = 3  # attempts after the first when a node fails: with the backoff below, ~2 s before giving up


def normalise_url(url: str) -> str:
    """valkey:// and valkeys:// are aliases of redis:// and rediss:// (same protocol); likewise for +cluster."""
    for alias, real in (
        ("valkey://", "redis://"),
        ("valkeys://", "rediss://"),
        ("valkey+cluster://", "redis+cluster://"),
        ("valkeys+cluster://", "rediss+cluster://"),
    ):
        if url.startswith(alias):
            return real + url[len(alias) :]
    return url


@dataclass(frozen=True)
class RedisTarget:
    """Where a store URL points: one node (`url`) or a cluster (`seeds` and the options shared by every node)."""

    url: str
    cluster: bool
    seeds: tuple[tuple[str, int], ...] = ()
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """The URL without credentials, for messages."""
        if not self.cluster:
            return self.url.split("@", 1)[-1] if "@" in self.url else self.url
        return "redis+cluster://" + ",".join(f"{h}:{p}" for h, p in self.seeds)


def parse_target(url: str) -> RedisTarget:
    """The target of a store URL (`StoreLocationError` for a cluster URL without a usable seed)."""
    url = normalise_url(url)
    if not url.startswith(CLUSTER_SCHEMES):
        return RedisTarget(url=url, cluster=False)
    scheme, rest = url.split("://", 1)
    tls = scheme.startswith("rediss")
    netloc, sep, tail = rest.partition("/")
    if not sep:
        netloc, q, query = rest.partition("?")
        tail = q + query
    else:
        tail = "/" + tail
    auth, _, hosts = netloc.rpartition("@")
    seeds: list[tuple[str, int]] = []
    for part in filter(None, hosts.split(",")):
        host, colon, port = part.rpartition(":")
        if not colon or not host or not port.isdigit():
            raise StoreLocationError(
                f"the cluster URL names the seed {part!r}; each seed is host:port; nothing was created"
            )
        seeds.append((unquote(host.strip("[]")), int(port)))
    if not seeds:
        raise StoreLocationError("the cluster URL names no node (redis+cluster://host:port[,host:port…])")
    parsed: dict[str, Any] = parse_url(  # type: ignore[no-untyped-call]
        f"{'rediss' if tls else 'redis'}://{auth + '@' if auth else ''}{hosts.split(',')[0]}{tail}"
    )
    if int(parsed.get("db") or 0):
        raise StoreLocationError("a Redis Cluster has only database 0: drop the /db from the cluster URL")
    options = {k: v for k, v in parsed.items() if k not in ("host", "port", "db", "connection_class")}
    if tls:
        options["ssl"] = True
    return RedisTarget(url=url, cluster=True, seeds=tuple(seeds), options=options)


def _cluster_options(target: RedisTarget, options: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in options.items() if k not in ("retry", "retry_on_timeout")}
    return {
        **target.options,
        **kept,
        "retry": Retry(ExponentialBackoff(cap=1.0, base=0.1), CLUSTER_RETRIES),
        "require_full_coverage": False,  # a slot without a master fails its own calls, not every call
    }


def open_async(target: RedisTarget, **options: Any) -> AsyncClient:
    """The asyncio client of `target` (connects on first use). `options`: redis-py connection options."""
    if target.cluster:
        nodes = [redis.asyncio.cluster.ClusterNode(h, p) for h, p in target.seeds]
        return redis.asyncio.RedisCluster(startup_nodes=nodes, **_cluster_options(target, options))
    try:
        return redis.asyncio.Redis.from_url(target.url, **options)
    except ValueError as exc:
        raise StoreLocationError(f"the store location is not a valid Redis URL ({exc})") from None


def open_sync(target: RedisTarget, **options: Any) -> SyncClient:
    """The synchronous client of `target` (a cluster client connects at once, to learn the slot map)."""
    if target.cluster:
        nodes = [redis.cluster.ClusterNode(h, p) for h, p in target.seeds]  # type: ignore[no-untyped-call]
        return redis.cluster.RedisCluster(startup_nodes=nodes, **_cluster_options(target, options))
    return redis.Redis.from_url(target.url, **options)


def default_options(connect_timeout_s: float = 2.0, socket_timeout_s: float = 5.0) -> dict[str, Any]:
    """Timeouts and the single-node retry policy: one immediate retry on a broken connection (a restarted server),
    none on a timeout (a hung one)."""
    return {
        "socket_connect_timeout": connect_timeout_s,
        "socket_timeout": socket_timeout_s,
        "retry": Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,)),
        "retry_on_timeout": False,
    }


@dataclass
class Probe:
    """What the startup check found: a cluster's connected sync client, and which masters have a replica (empty
    when nothing answered)."""

    sync: SyncClient | None = None
    replicas: dict[str, bool] = field(default_factory=dict)


def check_mode(target: RedisTarget, connect_timeout_s: float = 2.0) -> Probe:
    """The startup check of the URL against what answers there.

    Raises `StoreLocationError` (one line) for: a cluster URL whose seeds all fail; a cluster URL naming a node not
    in cluster mode; a single-node URL naming a cluster node. An unreachable single node passes (it may come back).
    """
    options = default_options(connect_timeout_s, socket_timeout_s=connect_timeout_s + 3)
    if not target.cluster:
        try:
            probe = redis.Redis.from_url(target.url, **options)
        except ValueError as exc:
            raise StoreLocationError(f"the store location is not a valid Redis URL ({exc})") from None
        info = _info(probe)
        if info is None:
            return Probe()
        if int(info.get("cluster_enabled", 0)):
            host, port = (
                probe.connection_pool.connection_kwargs.get("host"),
                probe.connection_pool.connection_kwargs.get("port"),
            )
            raise StoreLocationError(
                f"{target.shown} is a node of a Redis Cluster: use redis+cluster://{host}:{port} "
                "(one node serves only its own slots)"
            )
        return Probe(replicas={"redis": int(info.get("connected_slaves", 0)) > 0})
    for host, port in target.seeds:
        info = _info(redis.Redis(host=host, port=port, **target.options, **options))
        if info is not None and not int(info.get("cluster_enabled", 0)):
            raise StoreLocationError(
                f"{host}:{port} answers but is not in cluster mode: use redis://{host}:{port} for one Redis "
                f"node, or name nodes of a Redis Cluster in {target.shown}"
            )
    try:
        sync = open_sync(target, **options)
        assert isinstance(sync, redis.cluster.RedisCluster)
        replicas = {}
        for node in sync.get_primaries():  # type: ignore[no-untyped-call]
            found: dict[str, Any] = sync.info("replication", target_nodes=node)
            replicas[node.name] = int(found.get("connected_slaves", 0)) > 0
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as exc:
        log.debug("redis cluster: %s", exc)
        raise StoreLocationError(
            f"no node of {target.shown} answers as a Redis Cluster ({type(exc).__name__}); check the "
            "addresses, and that the cluster is up"
        ) from None
    return Probe(sync=sync, replicas=replicas)


def _info(client: redis.Redis) -> dict[str, Any] | None:
    """INFO of a node (cluster_enabled, connected_slaves among others); None when it does not answer."""
    try:
        info: dict[str, Any] = client.info()
        return info
    except redis.exceptions.RedisError:
        return None
    finally:
        client.close()
