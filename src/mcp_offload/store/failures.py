"""What a failing backend raises: `StoreError` (`StoreFull` or `StoreUnavailable`), never a driver's exception.

Every backend of everything kept beside the outputs (the outputs, the savings record, the decision record) wraps its
I/O in one of these, so a caller catches `StoreError` alone:

    redis_errors(...)       a redis-py failure: an "OOM" refusal is `StoreFull`, anything else `StoreUnavailable`
    filesystem_errors(...)  an `OSError`: with `full`, a full disk or quota is `StoreFull`; else `StoreUnavailable`

Messages name neither addresses nor tracebacks (the detail goes to the log); a filesystem message carries the
operating system's short reason (`strerror`) where its template says `{reason}`.
"""

from __future__ import annotations

import contextlib
import errno
import logging
from collections.abc import Iterator

from mcp_offload.errors import StoreError, StoreFull, StoreUnavailable

__all__ = ["StoreError", "filesystem_errors", "redis_errors"]

log = logging.getLogger(__name__)

REDIS_UNAVAILABLE = (
    "the shared output store (Redis) is unreachable right now; nothing was stored or read. "
    "Retry in a moment; if it persists, the operator must check the Redis server."
)
REDIS_FULL = (
    "the shared output store (Redis) is out of memory; nothing was stored. "
    "Delete outputs you no longer need, or ask the operator to raise Redis maxmemory."
)
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


@contextlib.contextmanager
def redis_errors(unavailable: str = REDIS_UNAVAILABLE, *, full: str | None = REDIS_FULL) -> Iterator[None]:
    """Translate redis-py failures into `StoreError`s. `full=None`: an "OOM" refusal is `unavailable` too."""
    import redis

    try:
        yield
    except redis.exceptions.ResponseError as exc:
        if full is not None and str(exc).startswith("OOM"):
            raise StoreFull(full) from exc
        log.warning("redis store: %s", exc)
        raise StoreUnavailable(unavailable) from exc
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as exc:
        # a cluster's own failures (no node answers, a slot not served during a failover) included
        log.warning("redis store: %s", exc)
        raise StoreUnavailable(unavailable) from exc


@contextlib.contextmanager
def filesystem_errors(unavailable: str, *, full: str | None = None) -> Iterator[None]:
    """Translate an `OSError` into `StoreUnavailable(unavailable.format(reason=strerror))`, or `StoreFull(full)` for a
    full disk or quota when `full` is given. `StoreError`s raised inside pass through unchanged."""
    try:
        yield
    except OSError as exc:
        if full is not None and exc.errno in FULL_ERRNOS:
            raise StoreFull(full) from exc
        raise StoreUnavailable(unavailable.format(reason=exc.strerror)) from exc
