"""What a store location string names, and the one place a Redis client is made from it.

The one rule for `--store` / MCP_OFFLOAD_STORE, asked by the store, the savings record and the decision record alike
(everything kept beside the outputs lives at the same location, each with a filesystem and a Redis backend):

    redis://  rediss://  valkey://  valkeys://  unix://          one Redis node (`RedisStore`, single-node layout)
    redis+cluster://host:port[,host:port…]  rediss+cluster://…    a Redis Cluster, through any of the seed nodes
    (valkey+cluster:// and valkeys+cluster:// are aliases)
    anything else without a scheme                                a directory (`FilesystemStore`)

A location that looks like a URL (`word://…`) with any other scheme is a mistake, never a directory: it is refused
before anything is created (a `--store foo://x` must not leave a folder named `foo:` behind).

    open_beside(location, directory=..., redis=...)   the backend of one record type at a location
    open_redis(location) / open_redis_sync(location)  the one place a Redis client is made from a location
    KEY_PREFIX                                        every Redis key starts with it (`mcp-offload:v1`)

A new kind of Redis location is one branch in `open_redis`/`open_redis_sync`; no backend changes. What a failing
backend raises is drawn in `store/failures.py`.

A cluster URL lists seed nodes; its user, password and query options (TLS options included) apply to every node, and
the client learns the rest of the cluster from the seeds. The cluster client follows MOVED/ASK and reloads the slot
map on a connection error (a failover), retrying `CLUSTER_RETRIES` times with a short capped backoff, so a call that
falls into a failover window fails within seconds (`StoreUnavailable`) instead of hanging, and the next call finds
the new master. `store/redis/startup.py` checks at start that the URL's kind matches what answers there.

TLS (rediss://, rediss+cluster://) takes redis-py's query options: ssl_ca_certs (the CA file), ssl_cert_reqs
(required, optional, none), ssl_certfile and ssl_keyfile (a client certificate); the `store_tls_*` settings put them
there (`Settings.store_location`). They are checked before anything connects (`StoreLocationError`): TLS options on a
plain URL, an ssl_cert_reqs of another word, a file that cannot be read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import parse_qsl, unquote

from mcp_offload.errors import SettingsError, StoreUnavailable
from mcp_offload.settings import TLS_CERT_REQS
from mcp_offload.units import check_url_port

if TYPE_CHECKING:  # redis is imported when a client is made, so a filesystem store never loads it
    import redis
    import redis.asyncio
    import redis.cluster

    AsyncRedis = redis.asyncio.Redis | redis.asyncio.RedisCluster
    SyncRedis = redis.Redis | redis.cluster.RedisCluster

T = TypeVar("T")
StoreKind = Literal["fs", "redis", "cluster"]

KEY_PREFIX = "mcp-offload:v1"
REDIS_SCHEMES = ("redis://", "rediss://", "valkey://", "valkeys://", "unix://")
CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://", "valkey+cluster://", "valkeys+cluster://")
_ALIASES = (  # same protocol, other name
    ("valkey://", "redis://"),
    ("valkeys://", "rediss://"),
    ("valkey+cluster://", "redis+cluster://"),
    ("valkeys+cluster://", "rediss+cluster://"),
)
CLUSTER_RETRIES = 3  # attempts after the first when a cluster node fails: ~2 s of backoff before giving up
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
KNOWN = "a directory, redis://…, rediss://…, valkey://…, unix://…, or redis+cluster://host:port[,host:port…]"


class StoreLocationError(SettingsError):
    """A store location that names no store this program knows (an unknown URL scheme, a malformed cluster URL).
    Reported at startup, before anything is created; the CLI exits with status 1."""

    exit_status = 1


def store_kind(location: str) -> StoreKind:
    """Which backend `location` names; `StoreLocationError` for a URL of a scheme no backend knows."""
    if location.startswith(REDIS_SCHEMES):
        _check_ports(location)
        _check_tls(location)
        return "redis"
    if location.startswith(CLUSTER_SCHEMES):
        _check_ports(location)
        _check_tls(location)
        return "cluster"
    found = _URL.match(location)
    if found:
        raise StoreLocationError(
            f"the store location {location!r} has the unknown scheme '{found.group(1)}://'; nothing was created. "
            f"A store is {KNOWN}"
        )
    return "fs"


def _check_ports(location: str) -> None:
    """`SettingsError` (exit status 2) for a port outside 1-65535 in a Redis URL or any cluster seed: redis-py
    would take port 0 as its default 6379, and 70000 must not be dialled as anything else."""
    try:
        check_url_port(location, numbers_only=True)  # "h:x" is the URL parsers' to refuse, in their words
    except ValueError as exc:
        raise SettingsError(f"the store location names a port out of range: {exc}; nothing was started") from None


TLS_FILES = {
    "ssl_ca_certs": "--store-tls-ca-file",
    "ssl_certfile": "--store-tls-cert-file",
    "ssl_keyfile": "--store-tls-key-file",
}


def _check_tls(location: str) -> None:
    """`StoreLocationError` for TLS query options that cannot work: on a plain URL, an unknown ssl_cert_reqs, a
    file that is not there (redis-py would say so only at the first connection, as an outage)."""
    query = dict(parse_qsl(location.partition("?")[2], keep_blank_values=True))
    tls_options = sorted(k for k in query if k.startswith("ssl_"))
    if not tls_options:
        return
    scheme = normalise_url(location).split("://", 1)[0]
    if scheme not in ("rediss", "rediss+cluster"):
        instead = "a unix socket has no TLS" if scheme == "unix" else f"use {scheme.replace('redis', 'rediss', 1)}://…"
        raise StoreLocationError(
            f"the store location {_shown(location)} is not TLS but carries TLS options ({', '.join(tls_options)}): "
            f"{instead} for a Redis over TLS, or drop them"
        )
    reqs = query.get("ssl_cert_reqs")
    if reqs is not None and reqs not in TLS_CERT_REQS:
        choices = ", ".join(TLS_CERT_REQS)
        raise StoreLocationError(
            f"ssl_cert_reqs={reqs} in the store location (--store-tls-cert-reqs): one of {choices}"
        )
    for option, flag in TLS_FILES.items():
        path = query.get(option)
        if path is not None and not os.access(path, os.R_OK):
            why = "is not readable" if os.path.exists(path) else "does not exist"
            raise StoreLocationError(f"the TLS file {path} ({option}, {flag}) {why}; nothing was started")


def _shown(location: str) -> str:
    """A store URL for messages: without its query and credentials."""
    scheme, _, rest = location.partition("?")[0].partition("://")
    return f"{scheme}://{rest.rpartition('@')[2]}"


def is_redis_location(location: str) -> bool:
    """A Redis or Redis Cluster URL (else a directory, or an error for an unknown scheme)."""
    return store_kind(location) != "fs"


def open_beside(location: str, *, directory: Callable[[str], T], redis: Callable[[str], T]) -> T:
    """The backend of one record type at `location`: `redis(location)` for a Redis (or Redis Cluster) URL, else
    `directory(location)`; `StoreLocationError` for a URL of an unknown scheme."""
    return redis(location) if is_redis_location(location) else directory(location)


def normalise_url(url: str) -> str:
    """valkey:// and valkeys:// are aliases of redis:// and rediss:// (same protocol), likewise with +cluster."""
    for alias, real in _ALIASES:
        if url.startswith(alias):
            return real + url[len(alias) :]
    return url


def _client_options(connect_timeout_s: float, socket_timeout_s: float, retry_once: bool) -> dict[str, Any]:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    options: dict[str, Any] = {"socket_connect_timeout": connect_timeout_s, "socket_timeout": socket_timeout_s}
    if retry_once:  # one immediate retry on a broken connection (a restarted server), none on a timeout (a hung one)
        options["retry"] = Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,))
        options["retry_on_timeout"] = False
    return options


def _invalid(exc: ValueError) -> StoreUnavailable:
    return StoreUnavailable(f"the store location is not a valid Redis URL ({exc})")


@dataclass(frozen=True)
class ClusterSeeds:
    """A cluster URL taken apart: the seed nodes, and the client options every node shares (credentials, TLS)."""

    seeds: tuple[tuple[str, int], ...]
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """The URL without credentials or options, for messages."""
        return "redis+cluster://" + ",".join(f"{h}:{p}" for h, p in self.seeds)


def parse_cluster(location: str) -> ClusterSeeds:
    """The seeds and shared options of a cluster URL (`StoreLocationError` when it names no usable seed)."""
    from redis.connection import parse_url

    scheme, rest = normalise_url(location).split("://", 1)
    tls = scheme.startswith("rediss")
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    netloc, tail = rest[:cut], rest[cut:]
    auth, _, hosts = netloc.rpartition("@")
    seeds: list[tuple[str, int]] = []
    for part in filter(None, hosts.split(",")):
        host, colon, port = part.rpartition(":")
        if not colon or not host or not port.isdigit():
            raise StoreLocationError(f"the cluster URL names the seed {part!r}; each seed is host:port")
        seeds.append((unquote(host.strip("[]")), int(port)))
    if not seeds:
        raise StoreLocationError("the cluster URL names no node (redis+cluster://host:port[,host:port…])")
    first = f"{'rediss' if tls else 'redis'}://{auth + '@' if auth else ''}{hosts.split(',')[0]}{tail}"
    try:
        parsed: dict[str, Any] = parse_url(first)  # type: ignore[no-untyped-call]
    except ValueError as exc:
        raise StoreLocationError(f"the cluster URL is not valid ({exc})") from None
    if int(parsed.get("db") or 0):
        raise StoreLocationError("a Redis Cluster has only database 0: drop the /db from the cluster URL")
    options = {k: v for k, v in parsed.items() if k not in ("host", "port", "db", "connection_class")}
    if tls:
        options["ssl"] = True
    return ClusterSeeds(tuple(seeds), options)


def _cluster_options(seeds: ClusterSeeds, connect_timeout_s: float, socket_timeout_s: float) -> dict[str, Any]:
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    return {
        **seeds.options,
        "socket_connect_timeout": connect_timeout_s,
        "socket_timeout": socket_timeout_s,
        "retry": Retry(ExponentialBackoff(cap=1.0, base=0.1), CLUSTER_RETRIES),
        "require_full_coverage": False,  # a slot without a master fails its own calls, not every call
    }


def open_redis(
    location: str, *, connect_timeout_s: float = 2.0, socket_timeout_s: float = 5.0, retry_once: bool = True
) -> AsyncRedis:
    """An asyncio client for the Redis (or Redis Cluster) at `location` (connects lazily). `retry_once`: one
    immediate retry on a broken connection, none on a timeout; without it, redis-py's own default (a cluster client
    always has its own policy, above). A malformed URL is `StoreUnavailable`."""
    import redis.asyncio

    if store_kind(location) == "cluster":
        seeds = parse_cluster(location)
        nodes = [redis.asyncio.cluster.ClusterNode(h, p) for h, p in seeds.seeds]
        return redis.asyncio.RedisCluster(
            startup_nodes=nodes, **_cluster_options(seeds, connect_timeout_s, socket_timeout_s)
        )
    try:
        return redis.asyncio.Redis.from_url(
            normalise_url(location), **_client_options(connect_timeout_s, socket_timeout_s, retry_once)
        )
    except ValueError as exc:
        raise _invalid(exc) from exc


def open_redis_sync(
    location: str,
    *,
    connect_timeout_s: float = 2.0,
    socket_timeout_s: float = 5.0,
    retry_once: bool = True,
    replicas: bool = False,
) -> SyncRedis:
    """The synchronous twin of `open_redis` (its own connection pool), for reads made from worker threads. A cluster
    client connects at once, to learn the slot map. `replicas` (a cluster only): its read commands go to the slot's
    replicas in turn (READONLY connections; the master when a slot has no replica), its writes to the master."""
    import redis
    import redis.cluster

    if store_kind(location) == "cluster":
        seeds = parse_cluster(location)
        nodes = [redis.cluster.ClusterNode(h, p) for h, p in seeds.seeds]  # type: ignore[no-untyped-call]
        options = _cluster_options(seeds, connect_timeout_s, socket_timeout_s)
        if replicas:
            options["load_balancing_strategy"] = redis.cluster.LoadBalancingStrategy.ROUND_ROBIN_REPLICAS
        return redis.cluster.RedisCluster(startup_nodes=nodes, **options)
    if replicas:
        raise ValueError("reads from replicas are for a Redis Cluster")  # programming error: callers check the kind
    try:
        return redis.Redis.from_url(
            normalise_url(location), **_client_options(connect_timeout_s, socket_timeout_s, retry_once)
        )
    except ValueError as exc:
        raise _invalid(exc) from exc
