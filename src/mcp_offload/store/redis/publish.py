"""Publish: upload to a staging key, plan the LRU victims in Python, publish all at once in `publish.lua`.

Invariants: the staging key always carries its expiry (each upload batch is MULTI/EXEC), so a crashed writer's
debris expires by itself; the script re-verifies the plan (no victim pinned, quotas hold) and publishes,
evicts and books everything in one step or nothing; on any failure the staging key is deleted. Concurrent
puts racing for the same victims retry with fresh numbers, at most `PUBLISH_ATTEMPTS` times, then `StoreFull`.

On a cluster the planned victims are evicted one by one first (each in its own session's slot), the output is
booked store-wide (ledger.py), then published without victims; see ledger.py for the quota's bound. Either way
`put` returns only once a replica has the output, when its master has one (durability.py).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
from dataclasses import dataclass
from typing import Any, cast

import anyio
import orjson

from mcp_offload.errors import HandleExists, StoreFull, StoreUnavailable
from mcp_offload.store.base import CHUNK, OutputMeta, StagedContent
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.failures import redis_errors
from mcp_offload.store.handles import validate_handle, validate_scope
from mcp_offload.store.lifecycle import (
    EvictionCandidate,
    NeedMoreCandidates,
    StoreUsage,
    check_fits_at_all,
    fits,
    plan_eviction,
)
from mcp_offload.store.redis.durability import ReplicaAcks, ReplicaLag
from mcp_offload.store.redis.ledger import Ledger

log = logging.getLogger(__name__)

STAGING_TTL_MS = 3600 * 1000
KEY_TTL_SLACK_MS = 60 * 1000
UPLOAD_BATCH = 8  # pieces per pipeline round trip while uploading
PUBLISH_ATTEMPTS = 40  # optimistic retries when concurrent puts race for the same victims


def _pinned_in(pinned: set[tuple[str, str]], c: EvictionCandidate) -> bool:
    return (c.scope, c.handle) in pinned


def _candidate(member: str, score: float, sizes: dict[str, Any]) -> EvictionCandidate:
    return EvictionCandidate(member[:32], member[33:], int(sizes.get(member) or 0), score / 1000)


@dataclass(frozen=True, slots=True)
class _Publication:
    """One output on its way in: where it goes (`scope`, `handle`), its staged content (`staging` key, `size`) and
    its metadata and content index as stored."""

    scope: str
    handle: str
    staging: str
    size: int
    meta_json: bytes
    index_raw: bytes


class Publishing(Ledger):
    """Store one output: upload, make room, publish."""

    _acks: ReplicaAcks

    def stage(self, data: bytes) -> StagedContent | None:
        """None: the upload runs in `put`, on the event loop (it is network I/O, not a thread's file writes)."""
        return None

    async def put(
        self, scope: str, meta: OutputMeta, index: ContentIndex, data: bytes, staged: StagedContent | None = None
    ) -> None:
        if staged is not None:
            staged.discard()  # another backend's: uploaded here instead
        validate_scope(scope)
        validate_handle(meta.handle)
        if len(data) != index.size:
            raise ValueError("index does not describe the data")  # programming error
        check_fits_at_all(len(data), self.limits)
        staging = self._staging(scope)
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

    async def _usage(self, scope: str) -> tuple[StoreUsage, StoreUsage]:
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.hmget(self._scope_key(scope, "tot"), "b", "n")
            pipe.hmget(self._global()[3], "b", "n")
            (sb, sn), (gb, gn) = await pipe.execute()
        return StoreUsage(int(sb or 0), int(sn or 0)), StoreUsage(int(gb or 0), int(gn or 0))

    async def _publish_with_room(
        self, scope: str, meta: OutputMeta, index: ContentIndex, staging: str, size: int
    ) -> None:
        limits = self.limits
        out = _Publication(scope, meta.handle, staging, size, orjson.dumps(meta.to_dict()), index.to_bytes())
        for attempt in range(PUBLISH_ATTEMPTS):
            await self._reap_some(64)
            scope_usage, total_usage = await self._usage(scope)
            victims = (
                []
                if fits(size, scope_usage, total_usage, limits)
                else await self._plan(scope, size, scope_usage, total_usage)
            )
            publish = self._publish_on_cluster if self.cluster else self._publish_script
            result = await publish(out, victims)
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

    async def _publish_script(
        self, out: _Publication, victims: list[EvictionCandidate], *, store_wide: bool = True
    ) -> bytes:
        """publish.lua, acknowledged by a replica when the master has one; on a lagging replica the output is
        removed again and the put fails (`StoreUnavailable`): it must not be reported stored."""
        limits, scope, handle = self.limits, out.scope, out.handle
        keys = [*self._group(scope, handle), *self._ledger(scope), out.staging]
        for v in victims:
            keys += self._group(v.scope, v.handle)
        unlimited = 2**62  # a cluster's session script leaves the store-wide quota to the ledger's reservation
        args: list[Any] = [
            self._now_ms(),
            scope,
            handle,
            out.size,
            int(limits.ttl_s * 1000),
            self._tomb_ms,
            int(limits.ttl_s * 1000) + KEY_TTL_SLACK_MS,
            out.meta_json,
            out.index_raw,
            limits.scope_max_bytes,
            limits.scope_max_outputs,
            limits.max_bytes if store_wide else unlimited,
            limits.max_outputs if store_wide else unlimited,
            *(f"{v.scope}:{v.handle}" for v in victims),
        ]
        try:
            return cast(bytes, await self._acks.run(self._publish, keys, args))
        except ReplicaLag:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await self._delete(
                    keys=[*self._group(scope, handle), *self._ledger(scope)],
                    args=[self._now_ms(), scope, handle, self._tomb_ms, "delete"],
                )
            raise StoreUnavailable(
                "the shared store (Redis) could not confirm that a replica holds the output within "
                f"{self._acks.timeout_ms} ms; nothing was stored. Retry in a moment."
            ) from None

    async def _publish_on_cluster(self, out: _Publication, victims: list[EvictionCandidate]) -> bytes:
        """Evict the victims one by one, book store-wide, publish in the session's slot, then settle the books."""
        evicted: list[str] = []
        try:
            for v in victims:
                found = await self._delete(
                    keys=[*self._group(v.scope, v.handle), *self._ledger(v.scope)],
                    args=[self._now_ms(), v.scope, v.handle, self._tomb_ms, "evict"],
                )
                if found[0] == b"pinned":
                    return b"pinned"
                evicted.append(f"{v.scope}:{v.handle}")
        finally:
            with anyio.CancelScope(shield=True):
                await self._unbook(evicted)
        member = f"{out.scope}:{out.handle}"
        reserved = await self._reserve(member, out.size)
        if reserved == b"exists":
            if await self._out_soon(out):
                return b"exists"
            await self._unbook([member])  # a booking left by an output already gone: drop it, plan again
            return b"over"
        if reserved != b"ok":
            return reserved
        result = b""
        try:
            result = await self._publish_script(out, [], store_wide=False)
        finally:
            with anyio.CancelScope(shield=True):
                if result == b"ok":
                    if await self._book_published(member) != b"ok":
                        log.warning("redis store: the store-wide booking of an output was reaped before it was out")
                else:
                    await self._unbook([member])
        return result

    async def _out_soon(self, out: _Publication) -> bool:
        """Whether the output a store-wide booking holds is out, or comes out while the writer that booked it is still
        publishing: two instances storing one result under its derived handle race here, and the second must not
        take the first one's booking, still in flight, for a leftover (that failed the second's offload). Waited for
        up to the replica-ack timeout and a second; a booking whose output never comes out is a leftover."""
        key = self._key("m", out.scope, out.handle)
        deadline = anyio.current_time() + self._acks.timeout_ms / 1000 + 1.0
        while not await self._client.exists(key):
            if anyio.current_time() >= deadline:
                return False
            await anyio.sleep(0.05)
        return True

    async def _plan(
        self, scope: str, size: int, scope_usage: StoreUsage, total_usage: StoreUsage
    ) -> list[EvictionCandidate]:
        """LRU victims via the shared policy, paging through the LRU zsets only as far as needed."""
        page = 64
        glru, _, gsize, _ = self._global()
        while True:
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.zrange(self._scope_key(scope, "lru"), 0, page - 1, withscores=True)
                pipe.zrange(glru, 0, page - 1, withscores=True)
                scope_lru, global_lru = await pipe.execute()
            members = [f"{scope}:{h.decode()}" for h, _ in scope_lru] + [m.decode() for m, _ in global_lru]
            members = list(dict.fromkeys(members))
            sizes: dict[str, Any] = {}
            pins: set[str] = set()
            if members:
                async with self._client.pipeline(transaction=False) as pipe:
                    pipe.hmget(gsize, members)
                    for m in members:
                        pipe.get(self._key("p", m[:32], m[33:]))
                    sizes_raw, *pins_raw = await pipe.execute()
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
