"""What a failing backend raises: `StoreError` (`StoreFull` or `StoreUnavailable`), never a driver's exception.

Every backend of everything kept beside the outputs (the outputs, the savings record, the decision record) wraps its
I/O in one of these, so a caller catches `StoreError` alone:

    redis_errors(...)       a redis-py failure: an "OOM" refusal is `StoreFull`, anything else `StoreUnavailable`
                            (`is_driver_error` says what counts: redis-py's exception tree, and anything raised
                            inside redis-py, whatever its type)
    filesystem_errors(...)  an `OSError`: with `full`, a full disk or quota is `StoreFull`; else `StoreUnavailable`

Messages name neither addresses nor tracebacks (the detail goes to the log, one warning line naming the driver's
error class and its first line); a filesystem message carries the operating system's short reason (`strerror`) where
its template says `{reason}`.

Why "raised inside redis-py" and not a list of types: during a cluster failover redis-py's cluster client reloads its
slot map and closes the connections of the node that died while other tasks still use them, and those tasks then fail
with whatever the half-closed connection raises (seen: `AttributeError: 'NoneType' object has no attribute
'writelines'` from `send_packed_command`). Each such race is a driver failure the caller can only retry, so every
exception whose traceback passes through the driver's package is one; an exception of our own code (no driver frame
between the `with` and the raise) still propagates as it is, so a bug of ours is never disguised as an outage.
"""

from __future__ import annotations

import contextlib
import errno
import logging
from collections.abc import Iterator

from mcp_offload.errors import StoreError, StoreFull, StoreUnavailable

__all__ = ["StoreError", "filesystem_errors", "is_driver_error", "redis_errors"]

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


def is_driver_error(exc: BaseException) -> bool:
    """A failure of the Redis driver: redis-py's own exception tree (a cluster's `RedisClusterException` included),
    or any `Exception` raised inside redis-py's package (its internal races during a failover)."""
    import redis

    if isinstance(exc, (redis.exceptions.RedisError, redis.exceptions.RedisClusterException)):
        return True
    if not isinstance(exc, Exception) or isinstance(exc, StoreError):
        return False
    frame = exc.__traceback__
    while frame is not None:
        if str(frame.tb_frame.f_globals.get("__name__", "")).partition(".")[0] == "redis":
            return True
        frame = frame.tb_next
    return False


def driver_error_line(exc: BaseException) -> str:
    """What the log says of a driver failure: its class and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _out_of_memory(exc: Exception) -> bool:
    """Redis refused a write for its maxmemory: redis-py raises `OutOfMemoryError` (the "OOM" code taken off the
    message, also inside a pipeline); a script's error may still carry the code in its text."""
    import redis

    return isinstance(exc, redis.exceptions.OutOfMemoryError) or (
        isinstance(exc, redis.exceptions.ResponseError) and str(exc).startswith("OOM")
    )


@contextlib.contextmanager
def redis_errors(unavailable: str = REDIS_UNAVAILABLE, *, full: str | None = REDIS_FULL) -> Iterator[None]:
    """Translate redis-py failures into `StoreError`s. `full=None`: an "OOM" refusal is `unavailable` too. Anything
    else (our own errors, `StoreError`s raised inside) passes through unchanged."""
    try:
        yield
    except Exception as exc:
        if not is_driver_error(exc):
            raise
        if full is not None and _out_of_memory(exc):
            raise StoreFull(full) from exc
        log.warning("redis store: %s", driver_error_line(exc))
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
