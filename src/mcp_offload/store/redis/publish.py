"""Publish: upload to a staging key, plan the LRU victims in Python, publish all at once in `publish.lua`.

Invariants: the staging key always carries its expiry (each upload batch is MULTI/EXEC), so a crashed writer's
debris expires by itself; the script re-verifies the plan (no victim pinned, quotas hold) and publishes,
evicts and books everything in one step or nothing; on any failure the staging key is deleted. Concurrent
puts racing for the same victims retry with fresh numbers, at most `PUBLISH_ATTEMPTS` times, then `StoreFull`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
import secrets
from typing import Any

import anyio
import orjson

from mcp_offload.errors import HandleExists, StoreFull, StoreUnavailable
from mcp_offload.store.base import CHUNK, OutputMeta
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.failures import redis_errors
from mcp_offload.store.handles import validate_handle, validate_scope
from mcp_offload.store.lifecycle import Candidate, NeedMoreCandidates, Usage, check_fits_at_all, fits, plan_eviction
from mcp_offload.store.redis.keyspace import RedisKeyspace

log = logging.getLogger(__name__)

STAGING_TTL_MS = 3600 * 1000
KEY_TTL_SLACK_MS = 60 * 1000
UPLOAD_BATCH = 8  # pieces per pipeline round trip while uploading
PUBLISH_ATTEMPTS = 40  # optimistic retries when concurrent puts race for the same victims


def _pinned_in(pinned: set[tuple[str, str]], c: Candidate) -> bool:
    return (c.scope, c.handle) in pinned


def _candidate(member: str, score: float, sizes: dict[str, Any]) -> Candidate:
    return Candidate(member[:32], member[33:], int(sizes.get(member) or 0), score / 1000)


class Publishing(RedisKeyspace):
    """Store one output: upload, make room, publish."""

    async def put(self, scope: str, meta: OutputMeta, index: ContentIndex, data: bytes) -> None:
        validate_scope(scope)
        validate_handle(meta.handle)
        if len(data) != index.size:
            raise ValueError("index does not describe the data")  # programming error
        check_fits_at_all(len(data), self.limits)
        staging = f"{self.prefix}:w:{secrets.token_hex(12)}"
        published = False
        try:
            with redis_errors():
                await self._upload(staging, data)
                await self._publish_with_room(scope, meta, index, staging, len(data))
                published = True
        finally:
            if not published:
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await self._client.delete(staging)

    async def _upload(self, staging: str, data: bytes) -> None:
        view = memoryview(data)
        if not view:
            await self._client.set(staging, b"", px=STAGING_TTL_MS)
            return
        pieces = [view[pos : pos + CHUNK] for pos in range(0, len(view), CHUNK)]
        for batch_start in range(0, len(pieces), UPLOAD_BATCH):
            # MULTI/EXEC: a writer killed mid-batch leaves nothing of it, so the staging key never exists
            # without its expiry (debris always expires by itself).
            async with self._client.pipeline(transaction=True) as pipe:
                for piece in pieces[batch_start : batch_start + UPLOAD_BATCH]:
                    pipe.append(staging, piece)
                pipe.pexpire(staging, STAGING_TTL_MS)
                await pipe.execute()

    async def _usage(self, scope: str) -> tuple[Usage, Usage]:
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.hmget(f"{self.prefix}:s:{scope}:tot", "b", "n")
            pipe.hmget(f"{self.prefix}:g:tot", "b", "n")
            (sb, sn), (gb, gn) = await pipe.execute()
        return Usage(int(sb or 0), int(sn or 0)), Usage(int(gb or 0), int(gn or 0))

    async def _publish_with_room(
        self, scope: str, meta: OutputMeta, index: ContentIndex, staging: str, size: int
    ) -> None:
        limits = self.limits
        meta_json, index_raw = orjson.dumps(meta.to_dict()), index.to_bytes()
        for attempt in range(PUBLISH_ATTEMPTS):
            await self._reap(args=[self.prefix, self._now_ms(), self._tomb_ms, 64])
            scope_usage, total_usage = await self._usage(scope)
            victims = (
                []
                if fits(size, scope_usage, total_usage, limits)
                else await self._plan(scope, size, scope_usage, total_usage)
            )
            result = await self._publish(
                args=[
                    self.prefix,
                    self._now_ms(),
                    scope,
                    meta.handle,
                    staging,
                    size,
                    int(limits.ttl_s * 1000),
                    self._tomb_ms,
                    int(limits.ttl_s * 1000) + KEY_TTL_SLACK_MS,
                    meta_json,
                    index_raw,
                    limits.scope_max_bytes,
                    limits.scope_max_outputs,
                    limits.max_bytes,
                    limits.max_outputs,
                    *(f"{v.scope}:{v.handle}" for v in victims),
                ]
            )
            if result == b"ok":
                if victims:
                    log.info("redis store: evicted %d output(s) to stay within limits", len(victims))
                return
            if result == b"lost":
                raise StoreUnavailable("the upload to the shared store (Redis) was lost; nothing was stored. Retry.")
            if result == b"exists":
                raise HandleExists("an output with this handle already exists in this scope; nothing was stored.")
            # "pinned" / "over": someone read or wrote meanwhile; plan again with fresh numbers, after a jitter
            await anyio.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise StoreFull(
            "the shared store is busy making room (other readers and writers keep changing it); nothing was "
            "stored. Retry in a moment."
        )

    async def _plan(self, scope: str, size: int, scope_usage: Usage, total_usage: Usage) -> list[Candidate]:
        """LRU victims via the shared policy, paging through the LRU zsets only as far as needed."""
        page = 64
        while True:
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.zrange(f"{self.prefix}:s:{scope}:lru", 0, page - 1, withscores=True)
                pipe.zrange(f"{self.prefix}:g:lru", 0, page - 1, withscores=True)
                scope_lru, global_lru = await pipe.execute()
            members = [f"{scope}:{h.decode()}" for h, _ in scope_lru] + [m.decode() for m, _ in global_lru]
            members = list(dict.fromkeys(members))
            sizes: dict[str, Any] = {}
            pins: set[str] = set()
            if members:
                async with self._client.pipeline(transaction=False) as pipe:
                    pipe.hmget(f"{self.prefix}:g:size", members)
                    pipe.mget([f"{self.prefix}:p:{m}" for m in members])
                    sizes_raw, pins_raw = await pipe.execute()
                sizes = dict(zip(members, sizes_raw, strict=True))
                pins = {m for m, p in zip(members, pins_raw, strict=True) if p and int(p) > 0}

            scope_c = [_candidate(f"{scope}:{h.decode()}", sc, sizes) for h, sc in scope_lru]
            global_c = [_candidate(m.decode(), sc, sizes) for m, sc in global_lru]
            pinned = {(c.scope, c.handle) for c in (*scope_c, *global_c) if f"{c.scope}:{c.handle}" in pins}

            try:
                return plan_eviction(
                    size,
                    scope,
                    scope_usage,
                    total_usage,
                    scope_c,
                    global_c,
                    self.limits,
                    pinned=functools.partial(_pinned_in, pinned),
                    complete=len(scope_lru) < page and len(global_lru) < page,
                )
            except NeedMoreCandidates:
                page *= 4
