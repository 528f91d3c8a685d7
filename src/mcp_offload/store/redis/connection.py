"""The translation of redis-py failures (one node or a cluster) into the store's errors.

Invariant: no redis-py exception leaves the store; a Redis "OOM" refusal is `StoreFull`, anything else
`StoreUnavailable` with a message that names neither addresses nor tracebacks (the detail goes to the log).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import redis

from mcp_offload.errors import StoreFull, StoreUnavailable

log = logging.getLogger(__name__)


def _unavailable(exc: Exception) -> StoreUnavailable:
    return StoreUnavailable(
        "the shared output store (Redis) is unreachable right now; nothing was stored or read. "
        "Retry in a moment; if it persists, the operator must check the Redis server."
    )


@contextlib.contextmanager
def redis_errors() -> Iterator[None]:
    """Translate redis-py failures into the store's error family (no addresses or tracebacks leak)."""
    try:
        yield
    except redis.exceptions.ResponseError as exc:
        if str(exc).startswith("OOM"):
            raise StoreFull(
                "the shared output store (Redis) is out of memory; nothing was stored. "
                "Delete outputs you no longer need, or ask the operator to raise Redis maxmemory."
            ) from exc
        log.warning("redis store: %s", exc)
        raise _unavailable(exc) from exc
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as exc:
        # a cluster's own failures (no node answers, a slot not served during a failover) included
        log.warning("redis store: %s", exc)
        raise _unavailable(exc) from exc
