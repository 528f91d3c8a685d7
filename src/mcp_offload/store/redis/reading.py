"""Reading: the pinned open, meta, list and the explicit delete, each one script or pipeline round trip.

Invariants: `open()` pins the output (a lease of `read_lease_ms`) in the same script that reads it, so eviction
skips it while it is open, and unpins it on the way out even when cancelled; outputs up to `eager_bytes` come
back whole, larger ones as a `RedisBuffer`. Expired or evicted handles raise `ExpiredHandle` while their
tombstone lasts, `UnknownHandle` after.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
import orjson

from mcp_offload.errors import UnknownHandle
from mcp_offload.store.base import OutputMeta, StoredOutput
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.failures import driver_error_line, is_driver_error, redis_errors
from mcp_offload.store.handles import validate_handle, validate_scope
from mcp_offload.store.lifecycle import gone_error
from mcp_offload.store.redis.buffer import RedisBuffer
from mcp_offload.store.redis.ledger import Ledger

log = logging.getLogger(__name__)


class Reading(Ledger):
    """Open (pinned), describe, list and delete published outputs."""

    async def _lookup(self, scope: str, handle: str, mode: str) -> list[Any]:
        validate_scope(scope)
        validate_handle(handle)
        with redis_errors():
            result: list[Any] = await self._open(
                keys=[*self._group(scope, handle), *self._ledger(scope)],
                args=[self._now_ms(), scope, handle, self._tomb_ms, self.read_lease_ms, mode, self.eager_bytes],
            )
            if self.cluster and result[0] == b"gone":
                await self._unbook([f"{scope}:{handle}"])  # removed on sight: the store-wide books follow
            elif self.cluster and result[0] == b"ok" and mode == "open":
                await self._client.zadd(self._global()[0], {f"{scope}:{handle}": self._now_ms()}, xx=True)
        if result[0] == b"gone":
            raise gone_error(handle, result[1].decode("ascii", "replace"), self.limits)
        if result[0] != b"ok":
            raise UnknownHandle(f"no output {handle} in this session")
        return result

    async def meta(self, scope: str, handle: str) -> OutputMeta:
        result = await self._lookup(scope, handle, "meta")
        return OutputMeta.from_dict(orjson.loads(result[1]))

    @contextlib.asynccontextmanager
    async def open(self, scope: str, handle: str) -> AsyncIterator[StoredOutput]:
        result = await self._lookup(scope, handle, "open")
        try:
            meta = OutputMeta.from_dict(orjson.loads(result[1]))
            index = ContentIndex.from_bytes(result[2])
            content = result[3]
            data: Any
            if content is not None:
                data = content
            else:
                data = RedisBuffer(
                    self._sync_client(),
                    self._key("d", scope, handle),
                    index.size,
                    lambda: gone_error(handle, "evicted", self.limits),
                    replicas=await anyio.to_thread.run_sync(self._replica_client),  # connects once: off the loop
                )
            yield StoredOutput(meta=meta, index=index, data=data, path=None)
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self._unpin(keys=[self._key("p", scope, handle)])
                except Exception as exc:
                    if not is_driver_error(exc):
                        raise
                    log.warning("redis store: could not release a reader pin (%s)", driver_error_line(exc))

    async def list(self, scope: str) -> list[OutputMeta]:
        validate_scope(scope)
        with redis_errors():
            members = cast(list[bytes], await self._client.zrange(self._scope_key(scope, "lru"), 0, -1))
            handles = [h.decode() for h in members]
            if not handles:
                return []
            async with self._client.pipeline(transaction=False) as pipe:
                for handle in handles:
                    pipe.hget(self._key("m", scope, handle), "meta")
                pipe.zmscore(self._ledger(scope)[1], [f"{scope}:{h}" for h in handles])
                *raw_metas, expiries = await pipe.execute()
        now = self._now_ms()
        metas = [
            OutputMeta.from_dict(orjson.loads(raw))
            for raw, exp in zip(raw_metas, expiries, strict=True)
            if raw is not None and exp is not None and exp > now
        ]
        metas.sort(key=lambda m: m.created, reverse=True)
        return metas

    async def delete(self, scope: str, handle: str) -> None:
        validate_scope(scope)
        validate_handle(handle)
        with redis_errors():
            result = await self._delete(
                keys=[*self._group(scope, handle), *self._ledger(scope)],
                args=[self._now_ms(), scope, handle, self._tomb_ms, "delete"],
            )
            if self.cluster and result[0] == b"ok":
                await self._unbook([f"{scope}:{handle}"])
        if result[0] == b"gone":
            raise gone_error(handle, result[1].decode("ascii", "replace"), self.limits)
        if result[0] != b"ok":
            raise UnknownHandle(f"no output {handle} in this session")
