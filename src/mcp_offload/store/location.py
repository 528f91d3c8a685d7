"""Where everything kept beside the outputs lives: the location rule, the Redis key prefix, the Redis client.

A store location (`--store`, MCP_OFFLOAD_STORE) is a Redis/Valkey URL or a directory. The outputs (`store/`), the
savings record (`savings/`) and the gateway's decision record (`cachesafe/record/`) all live at the same location,
each with a filesystem and a Redis backend, and all of them choose and open their backend here:

    open_beside(location, directory=..., redis=...)   the one rule: a Redis URL, else a directory
    open_redis(location) / open_redis_sync(location)  the one place a Redis client is made from a location
    KEY_PREFIX                                        every Redis key starts with it (`mcp-offload:v1`)

A new kind of location (a Redis Cluster URL, say) is one scheme in `REDIS_SCHEMES` and one branch in
`_client_url`/`open_redis`; no backend changes. What a failing backend raises is drawn in `store/failures.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mcp_offload.errors import StoreUnavailable

if TYPE_CHECKING:  # redis is imported when a client is made, so a filesystem store never loads it
    import redis
    import redis.asyncio

T = TypeVar("T")

KEY_PREFIX = "mcp-offload:v1"
REDIS_SCHEMES = ("redis://", "rediss://", "valkey://", "valkeys://", "unix://")
_ALIASES = (("valkey://", "redis://"), ("valkeys://", "rediss://"))  # same protocol, other name


def is_redis_location(location: str) -> bool:
    """The one rule for a location string: a Redis/Valkey URL, else a directory."""
    return location.startswith(REDIS_SCHEMES)


def open_beside(location: str, *, directory: Callable[[str], T], redis: Callable[[str], T]) -> T:
    """The backend of one record type at `location`: `redis(location)` for a Redis URL, else `directory(location)`."""
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
