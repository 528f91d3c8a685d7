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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from mcp_offload.errors import SettingsError, StoreUnavailable

if TYPE_CHECKING:  # redis is imported when a client is made, so a filesystem store never loads it
    import redis
    import redis.asyncio

T = TypeVar("T")
StoreKind = Literal["fs", "redis", "cluster"]

KEY_PREFIX = "mcp-offload:v1"
REDIS_SCHEMES = ("redis://", "rediss://", "valkey://", "valkeys://", "unix://")
CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://", "valkey+cluster://", "valkeys+cluster://")
_ALIASES = (("valkey://", "redis://"), ("valkeys://", "rediss://"))  # same protocol, other name
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
KNOWN = "a directory, redis://…, rediss://…, valkey://…, unix://…, or redis+cluster://host:port[,host:port…]"


class StoreLocationError(SettingsError):
    """A store location that names no store this program knows (an unknown URL scheme, a malformed cluster URL).
    Reported at startup, before anything is created; the CLI exits with status 1."""

    exit_status = 1


def store_kind(location: str) -> StoreKind:
    """Which backend `location` names; `StoreLocationError` for a URL of a scheme no backend knows."""
    if location.startswith(REDIS_SCHEMES):
        return "redis"
    if location.startswith(CLUSTER_SCHEMES):
        return "cluster"
    found = _URL.match(location)
    if found:
        raise StoreLocationError(
            f"the store location {location!r} has the unknown scheme '{found.group(1)}://'; nothing was created. "
            f"A store is {KNOWN}"
        )
    return "fs"


def is_redis_location(location: str) -> bool:
    """A Redis or Redis Cluster URL (else a directory, or an error for an unknown scheme)."""
    return store_kind(location) != "fs"


def open_beside(location: str, *, directory: Callable[[str], T], redis: Callable[[str], T]) -> T:
    """The backend of one record type at `location`: `redis(location)` for a Redis (or Redis Cluster) URL, else
    `directory(location)`; `StoreLocationError` for a URL of an unknown scheme."""
    return redis(location) if is_redis_location(location) else directory(location)


def normalise_url(url: str) -> str:
    """valkey:// and valkeys:// are aliases of redis:// and rediss:// (same protocol)."""
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


def open_redis(
    location: str, *, connect_timeout_s: float = 2.0, socket_timeout_s: float = 5.0, retry_once: bool = True
) -> redis.asyncio.Redis:
    """An asyncio client for the Redis at `location` (connects lazily). `retry_once`: one immediate retry on a broken
    connection, none on a timeout; without it, redis-py's own default. A malformed URL is `StoreUnavailable`."""
    import redis.asyncio

    try:
        return redis.asyncio.Redis.from_url(
            normalise_url(location), **_client_options(connect_timeout_s, socket_timeout_s, retry_once)
        )
    except ValueError as exc:
        raise _invalid(exc) from exc


def open_redis_sync(
    location: str, *, connect_timeout_s: float = 2.0, socket_timeout_s: float = 5.0, retry_once: bool = True
) -> redis.Redis:
    """The synchronous twin of `open_redis` (its own connection pool), for reads made from worker threads."""
    import redis

    try:
        return redis.Redis.from_url(
            normalise_url(location), **_client_options(connect_timeout_s, socket_timeout_s, retry_once)
        )
    except ValueError as exc:
        raise _invalid(exc) from exc
