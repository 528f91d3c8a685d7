"""The savings record on the Redis store: one hash per UTC day, `<prefix>:savings:<day>`, with a TTL.

A field is a JSON array `[server, tool, counter]` and its value the count, so a flush is one pipeline of HINCRBY
(atomic, so any number of instances add up correctly) plus an EXPIRE per day touched; reading is one HGETALL per day.
On a Redis Cluster each day's hash lives in its own slot; the flush pipeline goes to each day's master.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from mcp_offload.savings.record import COUNTERS, FLUSH_INTERVAL_S, Batch, SavingsKey, SavingsRecord

TTL_S = 400 * 24 * 3600
DEFAULT_PREFIX = "mcp-offload:v1"  # the store's own key prefix (store/redis.py)


class RedisSavings(SavingsRecord):
    enabled = True

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_s: int = TTL_S,
        clock: Callable[[], float] = time.time,
        flush_interval_s: float = FLUSH_INTERVAL_S,
    ) -> None:
        super().__init__(clock=clock, flush_interval_s=flush_interval_s)
        from mcp_offload.store.redis.client import open_async, parse_target

        self.prefix = prefix
        self.ttl_s = ttl_s
        self._client: Any = open_async(parse_target(url), socket_connect_timeout=2.0, socket_timeout=2.0)

    def _key(self, day: str) -> str:
        return f"{self.prefix}:savings:{day}"

    async def _write(self, batch: Batch) -> None:
        async with self._client.pipeline(transaction=False) as pipe:
            days: set[str] = set()
            for key, counts in batch.items():
                days.add(key.day)
                for name, value in counts.items():
                    pipe.hincrby(self._key(key.day), json.dumps([key.server, key.tool, name]), value)
            for day in days:
                pipe.expire(self._key(day), self.ttl_s)
            await pipe.execute()

    async def _read(self, days: Sequence[str]) -> Iterable[tuple[SavingsKey, dict[str, int]]]:
        found: list[tuple[SavingsKey, dict[str, int]]] = []
        for day in days:
            fields: dict[bytes, bytes] = await self._client.hgetall(self._key(day))
            for raw, value in fields.items():
                try:
                    server, tool, name = json.loads(raw)
                    count = int(value)
                except (ValueError, TypeError):
                    continue
                if isinstance(server, str) and isinstance(tool, str) and name in COUNTERS:
                    found.append((SavingsKey(day, server, tool), {name: count}))
        return found

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            await self._client.aclose()
