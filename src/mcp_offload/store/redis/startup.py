"""The startup check of a Redis store URL against what answers there, and which masters have a replica.

A cluster URL whose seeds all fail to answer, a cluster URL naming a node that is not in cluster mode, a
single-node URL naming a cluster node, and a connection that fails for a reason no retry fixes (TLS: an expired or
untrusted certificate, a missing client certificate, a TLS URL to a plain port or the other way round;
`setup_problems.py`) are each one `StoreLocationError` line (the CLI exits 1, nothing is created). An unreachable
single node is not: it may come back, and every call then says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import redis
import redis.cluster
from redis.backoff import NoBackoff
from redis.retry import Retry

from mcp_offload.store.failures import is_driver_error
from mcp_offload.store.location import (
    StoreLocationError,
    normalise_url,
    open_redis_sync,
    parse_cluster,
    store_kind,
)
from mcp_offload.store.redis.setup_problems import setup_problem

if TYPE_CHECKING:
    from mcp_offload.store.location import SyncRedis

log = logging.getLogger(__name__)


@dataclass
class Probe:
    """What the startup check found: a cluster's connected sync client, and which masters have a replica (empty
    when nothing answered)."""

    sync: SyncRedis | None = None
    replicas: dict[str, bool] = field(default_factory=dict)


def check_mode(location: str, connect_timeout_s: float = 2.0) -> Probe:
    """Raise `StoreLocationError` when the kind of `location` (one node or a cluster) is not what answers there."""
    timeouts: dict[str, Any] = {"connect_timeout_s": connect_timeout_s, "socket_timeout_s": connect_timeout_s + 3}
    if store_kind(location) != "cluster":
        probe = open_redis_sync(location, **timeouts)
        assert isinstance(probe, redis.Redis)
        kwargs = probe.connection_pool.connection_kwargs
        where = f"{kwargs.get('host')}:{kwargs.get('port')}"
        if location.startswith("unix://"):
            where = str(kwargs.get("path"))
        info = _info(probe, where, tls=normalise_url(location).startswith("rediss://"))
        if info is None:
            return Probe()
        if int(info.get("cluster_enabled", 0)):
            raise StoreLocationError(
                f"{where} is a node of a Redis Cluster: use redis+cluster://{where} (one node serves only its own "
                "slots)"
            )
        return Probe(replicas={"redis": int(info.get("connected_slaves", 0)) > 0})
    seeds = parse_cluster(location)
    answered = False
    for host, port in seeds.seeds:
        node = redis.Redis(
            host=host,
            port=port,
            socket_connect_timeout=connect_timeout_s,
            socket_timeout=connect_timeout_s + 3,
            retry=Retry(NoBackoff(), 0),  # a seed that does not answer is asked once: the next seed may
            **seeds.options,
        )
        info = _info(node, f"{host}:{port}", tls=bool(seeds.options.get("ssl")))
        if info is not None and not int(info.get("cluster_enabled", 0)):
            raise StoreLocationError(
                f"{host}:{port} answers but is not in cluster mode: use redis://{host}:{port} for one Redis node, "
                f"or name the nodes of a Redis Cluster in {seeds.shown}"
            )
        answered = answered or info is not None
    if not answered:
        raise StoreLocationError(f"no node of {seeds.shown} answers; check the addresses, and that the cluster is up")
    try:
        sync = open_redis_sync(location, **timeouts)
        assert isinstance(sync, redis.cluster.RedisCluster)
        replicas = {}
        for primary in sync.get_primaries():  # type: ignore[no-untyped-call]
            found: dict[str, Any] = sync.info("replication", target_nodes=primary)
            replicas[primary.name] = int(found.get("connected_slaves", 0)) > 0
    except Exception as exc:
        if not is_driver_error(exc):
            raise
        log.debug("redis cluster: %s", exc)
        raise StoreLocationError(
            f"the nodes of {seeds.shown} answer but not as a working Redis Cluster ({str(exc).splitlines()[0]}); "
            "check that the cluster is up (redis-cli --cluster check)"
        ) from None
    return Probe(sync=sync, replicas=replicas)


def _info(client: redis.Redis, where: str, *, tls: bool) -> dict[str, Any] | None:
    """INFO of a node (cluster_enabled, connected_slaves among others); None when it does not answer;
    `StoreLocationError` when it cannot answer this client (a TLS mistake: `setup_problem`)."""
    try:
        info: dict[str, Any] = client.info()
        return info
    except Exception as exc:
        if not is_driver_error(exc):
            raise
        problem = setup_problem(exc, where, tls=tls, options=client.connection_pool.connection_kwargs)
        if problem is not None:
            raise StoreLocationError(problem) from None
        return None
    finally:
        client.close()
