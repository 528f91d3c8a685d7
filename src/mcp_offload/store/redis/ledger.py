"""The store-wide books: reaping expired outputs everywhere, and on a cluster the store-wide ledger beside the
sessions' own.

On one node the scripts book every output in the store-wide keys (P:g:lru/exp/size/tot) in the same atomic step
that publishes or removes it, exactly as before clusters. A cluster cannot: those keys live in another hash slot
than a session's. There each session books its outputs in its own ledger (same slot), and the store-wide ledger (one
slot, `{g}`) is kept beside it by a reservation scheme:

1. *reserve* (before publishing): checks the store-wide quota and books the output's bytes and count at once, with
   a hold of `HOLD_MS` as its expiry; over the quota -> evict LRU outputs (each in its own session, then unbooked)
   and try again;
2. the session's publish script (session quota, exact and atomic as on one node);
3. *publish* (the hold becomes the real expiry and the output enters the store-wide LRU), or *forget* when step 2
   refused.

Removals go the other way: the session's script removes, then *forget* unbooks (idempotent, keyed on the member).

So the store-wide total is booked before an output exists and released only after it is gone: the store-wide quota
never overshoots; it can only be too strict, by the bytes of puts whose process died between steps 1 and 3 (until
their hold expires, one hour, and the next reap unbooks them) and of removals whose process died before *forget*
(until that output's expiry passes and a reap finds it gone). The session quota is exact on both layouts.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, cast

from mcp_offload.store.redis.keyspace import RedisKeyspace

HOLD_MS = 3600 * 1000  # a reservation's hold: as long as a staging key lives


class Ledger(RedisKeyspace):
    """Reaping, and the cluster's store-wide ledger operations."""

    async def _reap_some(self, limit: int) -> tuple[int, int]:
        """Remove up to `limit` expired outputs of any session -> (removed, examined)."""
        now = self._now_ms()
        raw = cast(list[bytes], await self._client.zrangebyscore(self._global()[1], "-inf", now, start=0, num=limit))
        members = [m.decode() for m in raw]
        if not members:
            return 0, 0
        by_scope: dict[str, list[str]] = defaultdict(list)
        for member in members:
            by_scope[member[:32] if self.cluster else ""].append(member)
        removed = 0
        for scope, group in by_scope.items():
            keys = [*self._ledger(scope or group[0][:32])]
            for member in group:
                keys += self._group(member[:32], member[33:])
            gone, absent = await self._reap(keys=keys, args=[now, self._tomb_ms, *group])
            removed += len(gone)
            if self.cluster:
                await self._unbook([m.decode() for m in (*gone, *absent)])
        return removed, len(members)

    async def _reserve(self, member: str, size: int) -> bytes:
        """Book `member` store-wide before it is published (cluster only) -> b'ok' | b'over' | b'exists'."""
        limits = self.limits
        args: list[Any] = ["reserve", self._now_ms(), member, size, limits.max_bytes, limits.max_outputs, HOLD_MS]
        return cast(bytes, await self._ledger_ops(keys=self._global(), args=args))

    async def _book_published(self, member: str) -> bytes:
        """The reserved `member` is out: its real expiry and its place in the store-wide LRU (cluster only)."""
        now = self._now_ms()
        args: list[Any] = ["publish", now, member, now + int(self.limits.ttl_s * 1000)]
        return cast(bytes, await self._ledger_ops(keys=self._global(), args=args))

    async def _unbook(self, members: list[str]) -> None:
        """Members gone from their sessions (or never published) leave the store-wide ledger (cluster only)."""
        if members:
            await self._ledger_ops(keys=self._global(), args=["forget", self._now_ms(), *members])
