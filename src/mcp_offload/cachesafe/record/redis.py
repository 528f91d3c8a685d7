"""The decision record on the Redis store: per session `P:gw:r:<session>` (hash: field -> JSON text) and
`P:gw:c:<session>` (hash: counter -> integer), plus `P:gw:sessions` (zset: session -> last write, ms). On a Redis
Cluster the session is a hash tag (`P:gw:r:{<session>}`), so a session's two hashes share a slot.

Set-if-absent is one Lua script on the session's hash (HSETNX per field, then HMGET of all of them, then the TTL),
followed by the session's recency in the sessions zset (another slot on a cluster), so any number of gateway
instances on one Redis or one cluster agree on every field: the first writer wins and everyone reads its value.
Counters are HINCRBY (instances add up). Keys expire `RECORD_TTL_S` after the session's last write.
Failures are `StoreUnavailable` (connect timeout 2 s, socket timeout 5 s; the client and the translation are the
store's: `store/location.py`, `store/failures.py`), which the gateway turns into fail-open.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcp_offload.cachesafe.record.base import RECORD_TTL_S
from mcp_offload.store.failures import redis_errors
from mcp_offload.store.handles import validate_scope
from mcp_offload.store.location import KEY_PREFIX, open_redis, store_kind

# KEYS: fields hash. ARGV: name1, value1, name2, value2, ..., ttl_ms
_PUT_IF_ABSENT = """
local n = #ARGV - 1
for i = 1, n, 2 do redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
local names = {}
for i = 1, n, 2 do names[#names + 1] = ARGV[i] end
local values = redis.call('HMGET', KEYS[1], unpack(names))
redis.call('PEXPIRE', KEYS[1], ARGV[n + 1])
return values
"""


# KEYS: fields hash. ARGV: name1, order1, value1, ..., ttl_ms. A field's order is
# kept in the field "o:<name>"; a field without one (set by put_if_absent) counts as the earliest.
_PUT_LATEST = """
local n = #ARGV - 1
for i = 1, n, 3 do
  local held = redis.call('HGET', KEYS[1], 'o:' .. ARGV[i])
  if not held or tonumber(held) < tonumber(ARGV[i + 1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2], 'o:' .. ARGV[i], ARGV[i + 1])
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[n + 1])
return 1
"""


UNAVAILABLE = "the shared store (Redis) is unreachable right now, so the gateway's decision record cannot be read"
_redis_errors = functools.partial(redis_errors, UNAVAILABLE, full=None)


class RedisRecord:
    def __init__(
        self,
        url: str,
        *,
        prefix: str = KEY_PREFIX,
        ttl_s: float = RECORD_TTL_S,
        clock: Callable[[], float] = time.time,
        connect_timeout_s: float = 2.0,
        socket_timeout_s: float = 5.0,
    ) -> None:
        self.prefix = prefix
        self.ttl_ms = int(ttl_s * 1000)
        self.clock = clock
        self._tag = "{%s}" if store_kind(url) == "cluster" else "%s"
        self._client: Any = open_redis(url, connect_timeout_s=connect_timeout_s, socket_timeout_s=socket_timeout_s)
        self._put = self._client.register_script(_PUT_IF_ABSENT)
        self._put_latest = self._client.register_script(_PUT_LATEST)

    def _fields_key(self, session: str) -> str:
        return f"{self.prefix}:gw:r:{self._tag % validate_scope(session)}"

    def _counters_key(self, session: str) -> str:
        return f"{self.prefix}:gw:c:{self._tag % validate_scope(session)}"

    @property
    def _sessions_key(self) -> str:
        return f"{self.prefix}:gw:sessions"

    async def get(self, session: str, fields: Sequence[str]) -> dict[str, str]:
        if not fields:
            return {}
        with _redis_errors():
            values = await self._client.hmget(self._fields_key(session), list(fields))
        return {f: v.decode("utf-8") for f, v in zip(fields, values, strict=True) if v is not None}

    async def put_if_absent(self, session: str, items: Mapping[str, str]) -> dict[str, str]:
        if not items:
            return {}
        names = list(items)
        args: list[Any] = [x for name in names for x in (name, items[name])]
        args.append(self.ttl_ms)
        with _redis_errors():
            values = await self._put(keys=[self._fields_key(session)], args=args)
            await self._touch(session)
        return {f: v.decode("utf-8") for f, v in zip(names, values, strict=True) if v is not None}

    async def put_latest(self, session: str, items: Mapping[str, tuple[int, str]]) -> None:
        if not items:
            return
        args: list[Any] = [x for name, (order, value) in items.items() for x in (name, order, value)]
        args.append(self.ttl_ms)
        with _redis_errors():
            await self._put_latest(keys=[self._fields_key(session)], args=args)
            await self._touch(session)

    async def add(self, session: str, counts: Mapping[str, int]) -> None:
        kept = {k: v for k, v in counts.items() if v}
        if not kept:
            return
        key = self._counters_key(session)
        with _redis_errors():
            async with self._client.pipeline(transaction=True) as pipe:  # the session's two hashes: one slot
                for name, value in kept.items():
                    pipe.hincrby(key, name, value)
                pipe.pexpire(key, self.ttl_ms)
                pipe.pexpire(self._fields_key(session), self.ttl_ms)  # a session in use keeps its decisions
                await pipe.execute()
            await self._touch(session)

    async def _touch(self, session: str) -> None:
        """The session's last write in the sessions zset, and sessions older than the TTL out of it."""
        now_ms = int(self.clock() * 1000)
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.zadd(self._sessions_key, {session: now_ms})
            pipe.zremrangebyscore(self._sessions_key, 0, now_ms - self.ttl_ms)
            await pipe.execute()

    async def counters(self, session: str) -> dict[str, int]:
        with _redis_errors():
            raw: dict[bytes, bytes] = await self._client.hgetall(self._counters_key(session))
        found: dict[str, int] = {}
        for name, value in raw.items():
            try:
                found[name.decode("utf-8")] = int(value)
            except ValueError:
                continue
        return found

    async def sessions(self) -> list[tuple[str, float]]:
        now_ms = int(self.clock() * 1000)
        with _redis_errors():
            await self._client.zremrangebyscore(self._sessions_key, 0, now_ms - self.ttl_ms)
            raw = await self._client.zrevrange(self._sessions_key, 0, -1, withscores=True)
        return [(member.decode("utf-8"), score / 1000) for member, score in raw]

    async def aclose(self) -> None:
        await self._client.aclose()
