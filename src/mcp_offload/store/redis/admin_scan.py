"""Admin scan: every published output with its scope, meta, last use and expiry, for `mcp-offload outputs`.

Read-only and cursor-based (ZSCAN), so it never blocks Redis; outputs removed meanwhile are skipped.
"""

from __future__ import annotations

import orjson

from mcp_offload.store.base import OutputMeta, ScannedOutput
from mcp_offload.store.failures import redis_errors
from mcp_offload.store.redis.ledger import Ledger


class AdminScan(Ledger):
    """List every output of every scope for the admin command."""

    async def scan(self, *, expired: bool = False) -> list[ScannedOutput]:
        """ZSCAN over the store-wide expiry zset (every published output is a member), then meta and recency in one
        pipeline (on a cluster, one per master).

        A put scores g:lru and g:exp at one instant (now, now + TTL): an output whose two scores are still one TTL
        apart (by this store's TTL setting) has not been opened since.
        """
        with redis_errors():
            glru, gexp, _, _ = self._global()
            expiries = {m.decode(): float(score) async for m, score in self._client.zscan_iter(gexp)}
            members = [m for m in expiries if len(m) > 33 and m[32] == ":"]
            if not members:
                return []
            async with self._client.pipeline(transaction=False) as pipe:
                for member in members:
                    pipe.hget(self._key("m", member[:32], member[33:]), "meta")
                pipe.zmscore(glru, members)
                *raw_metas, used = await pipe.execute()
        now, ttl_ms, found = self._now_ms(), int(self.limits.ttl_s * 1000), list[ScannedOutput]()
        for member, raw, last in zip(members, raw_metas, used, strict=True):
            exp = expiries[member]
            if raw is None or (exp <= now and not expired):
                continue  # removed meanwhile, or expired
            meta = OutputMeta.from_dict(orjson.loads(raw))
            opened = last is not None and abs(exp - float(last) - ttl_ms) >= 1
            found.append(ScannedOutput(member[:32], meta, float(last) / 1000 if opened else None, exp / 1000))
        found.sort(key=lambda o: o.meta.created, reverse=True)
        return found
