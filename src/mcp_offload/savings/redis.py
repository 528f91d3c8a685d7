"""The savings record on the Redis store: one hash per UTC day, `<prefix>:savings:<day>`, with a TTL.

A field is a JSON array `[server, tool, counter]` and its value the count, so a flush is one pipeline of HINCRBY
(atomic, so any number of instances add up correctly) plus an EXPIRE per day touched; reading is one HGETALL per day.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from mcp_offload.savings.record import COUNTERS, FLUSH_INTERVAL_S, Batch, SavingsKey, SavingsRecord
from mcp_offload.store.failures import redis_errors
from mcp_offload.store.location import KEY_PREFIX, open_redis

TTL_S = 400 * 24 * 3600
UNAVAILABLE = "the shared store (Redis) is unreachable right now, so the savings record cannot be read or written"


class RedisSavings(SavingsRecord):
    enabled = True

    def __init__(
        self,
        url: str,
        *,
        prefix: str = KEY_PREFIX,
        ttl_s: int = TTL_S,
        clock: Callable[[], float] = time.time,
        flush_interval_s: float = FLUSH_INTERVAL_S,
    ) -> None:
        super().__init__(clock=clock, flush_interval_s=flush_interval_s)
        self.prefix = prefix
        self.ttl_s = ttl_s
        self._client: Any = open_redis(url, socket_timeout_s=2.0, retry_once=False)

    def _key(self, day: str) -> str:
        return f"{self.prefix}:savings:{day}"

    async def _write(self, batch: Batch) -> None:
        with redis_errors(UNAVAILABLE, full=None):
            await self._write_pipeline(batch)

    async def _write_pipeline(self, batch: Batch) -> None:
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
            with redis_errors(UNAVAILABLE, full=None):
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
