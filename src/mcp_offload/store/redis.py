"""Redis (or Valkey) backend: several mcp-offload instances share one store, any instance serves any read.

Keys, for prefix P (default `mcp-offload:v1`), scope s and handle h (member m = "s:h"):

    P:d:s:h     string   the content bytes
    P:m:s:h     hash     meta (JSON), index (ContentIndex.to_bytes), size
    P:p:s:h     string   reader pin count (a lease: expires if a reader dies)
    P:t:s:h     string   tombstone "expired <ms>"/"evicted <ms>", honoured for tombstone_ttl_s
    P:s:s:lru   zset     h -> last use (ms)            P:s:s:tot  hash  b (bytes), n (outputs)
    P:g:lru     zset     m -> last use (ms)            P:g:tot    hash  b, n
    P:g:exp     zset     m -> logical expiry (ms)      P:g:size   hash  m -> bytes
    P:w:<rand>  string   staging for a put in progress (expires after an hour: crashed writers' debris)

Atomicity: a put APPENDs the content to a staging key in 1 MiB pieces, then one Lua script checks the quotas,
evicts the planned victims and RENAMEs staging -> P:d (plus meta and bookkeeping) all at once, so no reader
ever sees half an output and the bookkeeping never disagrees with the keys. The *choice* of victims is
made in Python by `lifecycle.plan_eviction` (the same policy as the filesystem backend); the script only
re-verifies it (no victim pinned, quotas hold after applying) and otherwise says "retry".

Lifecycle: expiry is logical (P:g:exp, against the store's clock) and reaped by puts and `sweep()`; Redis
key expiry (TTL + 60 s) is the safety net that frees memory even if no instance ever runs again. Reads refresh
recency in the LRU zsets. A reader pins the output (P:p, a 10-minute lease) so eviction skips it; the
pin also stretches the key TTL to cover the lease.

Reads, and why the data view is synchronous: `open()` is one round trip (a Lua script) that returns meta and
index and, for outputs up to `eager_bytes` (1 MiB), the content itself, so small outputs behave exactly like
the filesystem backend. For larger outputs `StoredOutput.data` is a `RedisBuffer`: a lazy, read-only bytes
view that fetches ranges with GETRANGE (Redis strings allow O(1) offset access, so the string itself is the
chunk store; no per-chunk keys needed) through a *synchronous* client with its own connection pool, keeping a
small page cache. `ContentIndex` lookups and `read_bytes` are synchronous, so this lets the existing read
path work unchanged; each call may block for a round trip, so callers should run lookups in a worker thread
(`anyio.to_thread.run_sync`), as they already do for any work over a large buffer. Whole-output scans (regex
search, jq) use `StoredOutput.contiguous()` (a bulk fetch in 1 MiB GETRANGEs) or `iter_chunks()`.

Measured (2 cores, loopback redis-server 7.0, redis-py 8.1 without hiredis, busy machine): put 10 MB ~65 ms
(filesystem with fsync ~36 ms); open + a 4 KB read at a random place in a 100 MB output ~0.9 ms, 2-3 round
trips (filesystem ~0.25 ms); `contiguous()` of 100 MB ~0.35 s (filesystem mmap ~0.08 s). Fetching 100 MB
at every open would cost that 0.35 s per read, hence the lazy view.

An explicit `delete()` of an output that a reader has open removes it from view at once but leaves the content
key to the reader until its lease ends (like an unlinked-but-mmapped file on the filesystem).

Failure: connect timeout 2 s, socket timeout 5 s, one immediate retry on a broken connection (to survive a
restarted server) and none on a timeout (a hung server), then `StoreUnavailable`;
a Redis "OOM" refusal is `StoreFull`. The client reconnects by itself when Redis is back. Lua scripts touch
keys computed at run time, so this backend targets a standalone Redis/Valkey, not Redis Cluster.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import importlib.resources
import logging
import random
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, cast

import anyio
import orjson
import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from mcp_offload.errors import HandleExists, StoreFull, StoreUnavailable, UnknownHandle
from mcp_offload.store.base import CHUNK, OutputMeta, ScannedOutput, StoredOutput
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.handles import validate_handle, validate_scope
from mcp_offload.store.lifecycle import (
    Candidate,
    NeedMoreCandidates,
    StoreLimits,
    SweepReport,
    Usage,
    check_fits_at_all,
    fits,
    gone_error,
    plan_eviction,
)

log = logging.getLogger(__name__)

STAGING_TTL_MS = 3600 * 1000
KEY_TTL_SLACK_MS = 60 * 1000
UPLOAD_BATCH = 8  # pieces per pipeline round trip while uploading
PUBLISH_ATTEMPTS = 40  # optimistic retries when concurrent puts race for the same victims


def _lua(name: str, *, prelude: bool = True) -> str:
    """A script of `store/lua/` (shipped as package data), with the shared prelude in front unless told not to."""
    body = (_LUA_DIR / f"{name}.lua").read_text(encoding="utf-8")
    return _LUA_PRELUDE + "\n" + body if prelude else body


_LUA_DIR = importlib.resources.files("mcp_offload.store") / "lua"
_LUA_PRELUDE = (_LUA_DIR / "prelude.lua").read_text(encoding="utf-8")
_LUA_REAP = _lua("reap")  # ARGV: P, now_ms, tomb_ms, limit  ->  {removed, examined}
_LUA_PUBLISH = _lua("publish")  # ARGV: see publish.lua  ->  'ok' | 'exists' | 'lost' | 'pinned' | 'over'
_LUA_OPEN = _lua("open")  # -> {'ok', meta, index, content-or-nil} | {'gone', reason} | {'unknown'}
_LUA_UNPIN = _lua("unpin", prelude=False)  # ARGV: P, s, h
_LUA_DELETE = _lua("delete")  # -> {'ok'} | {'gone', reason} | {'unknown'}


def _pinned_in(pinned: set[tuple[str, str]], c: Candidate) -> bool:
    return (c.scope, c.handle) in pinned


def normalise_url(url: str) -> str:
    """valkey:// and valkeys:// are aliases of redis:// and rediss:// (same protocol)."""
    for alias, real in (("valkey://", "redis://"), ("valkeys://", "rediss://")):
        if url.startswith(alias):
            return real + url[len(alias) :]
    return url


def _unavailable(exc: Exception) -> StoreUnavailable:
    return StoreUnavailable(
        "the shared output store (Redis) is unreachable right now; nothing was stored or read. "
        "Retry in a moment; if it persists, the operator must check the Redis server."
    )


@contextlib.contextmanager
def _redis_errors() -> Iterator[None]:
    """Translate redis-py failures into the store's error family (no addresses or tracebacks leak)."""
    try:
        yield
    except redis.exceptions.ResponseError as exc:
        if str(exc).startswith("OOM"):
            raise StoreFull(
                "the shared output store (Redis) is out of memory; nothing was stored. "
                "Delete outputs you no longer need, or ask the operator to raise Redis maxmemory."
            ) from exc
        log.warning("redis store: %s", exc)
        raise _unavailable(exc) from exc
    except redis.exceptions.RedisError as exc:
        log.warning("redis store: %s", exc)
        raise _unavailable(exc) from exc


def _candidate(member: str, score: float, sizes: dict[str, Any]) -> Candidate:
    return Candidate(member[:32], member[33:], int(sizes.get(member) or 0), score / 1000)


class RedisBuffer:
    """A read-only, lazy `bytes`-like view of one stored Redis string (the `LazyBytes` protocol).

    Supports `len()`, `view[a:b]` -> bytes, `view[i]` -> int, `find`/`rfind`/`count` (with start/end),
    `iter_chunks()` and `tobytes()` (the whole output). Small slices go through a page cache (64 KiB pages, at
    most 4 MiB kept), so the two or three lookups of one read cost one round trip; big slices are fetched in
    1 MiB GETRANGEs. Every call may block on the network: use it from a worker thread. Thread-safe.
    """

    PAGE = 64 * 1024
    MAX_PAGES = 64
    CACHED_SLICE = 256 * 1024
    PIECE = CHUNK

    def __init__(self, client: redis.Redis, key: str, size: int, on_missing: Callable[[], Exception]) -> None:
        self._client = client
        self._key = key
        self._size = size
        self._on_missing = on_missing
        self._pages: OrderedDict[int, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.round_trips = 0

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, key: slice | int) -> Any:
        if isinstance(key, int):
            pos = key + self._size if key < 0 else key
            if not 0 <= pos < self._size:
                raise IndexError("index out of range")
            return self._read(pos, pos + 1)[0]
        start, stop, step = key.indices(self._size)
        if step != 1:
            raise ValueError("RedisBuffer slices must have step 1")
        return self._read(start, stop) if stop > start else b""

    def _read(self, start: int, stop: int) -> bytes:
        if stop - start > self.CACHED_SLICE:
            return self._fetch(start, stop)
        first, last = start // self.PAGE, (stop - 1) // self.PAGE
        with self._lock:
            missing = [p for p in range(first, last + 1) if p not in self._pages]
            if missing:
                lo, hi = missing[0] * self.PAGE, min((missing[-1] + 1) * self.PAGE, self._size)
                raw = self._fetch(lo, hi)
                for offset in range(0, len(raw), self.PAGE):
                    self._pages[missing[0] + offset // self.PAGE] = raw[offset : offset + self.PAGE]
            pages = []
            for p in range(first, last + 1):
                self._pages.move_to_end(p)
                pages.append(self._pages[p])
            while len(self._pages) > max(self.MAX_PAGES, last - first + 1):
                self._pages.popitem(last=False)
        joined = pages[0] if len(pages) == 1 else b"".join(pages)
        base = first * self.PAGE
        return joined[start - base : stop - base]

    def _fetch(self, start: int, stop: int) -> bytes:
        """Bytes [start, stop) straight from Redis (GETRANGE's end is inclusive)."""
        with _redis_errors():
            # one GETRANGE per PIECE, in sequence: redis-py parses 1 MiB replies much faster than one huge
            # reply, and pipelining them measured no faster (the parser, not the network, is the limit)
            parts: list[bytes] = []
            for pos in range(start, stop, self.PIECE):
                self.round_trips += 1
                piece = self._client.getrange(self._key, pos, min(pos + self.PIECE, stop) - 1)
                parts.append(cast(bytes, piece))  # a sync client without decode_responses: bytes
            raw = parts[0] if len(parts) == 1 else b"".join(parts)
        if len(raw) != stop - start:
            raise self._on_missing()
        return raw

    def _bounds(self, start: int | None, end: int | None) -> tuple[int, int]:
        a, b, _ = slice(start, end).indices(self._size)
        return a, b

    def find(self, sub: bytes, start: int | None = None, end: int | None = None) -> int:
        a, b = self._bounds(start, end)
        if not sub:
            return a if a <= b else -1
        for pos in range(a, b, CHUNK):
            window: bytes = self[pos : min(pos + CHUNK + len(sub) - 1, b)]
            found = window.find(sub)
            if found >= 0:
                return pos + found
        return -1

    def rfind(self, sub: bytes, start: int | None = None, end: int | None = None) -> int:
        a, b = self._bounds(start, end)
        if not sub:
            return b if a <= b else -1
        starts = range(a, b, CHUNK)
        for pos in reversed(starts):
            window: bytes = self[pos : min(pos + CHUNK + len(sub) - 1, b)]
            found = window.rfind(sub)
            if found >= 0:
                return pos + found
        return -1

    def count(self, sub: bytes, start: int | None = None, end: int | None = None) -> int:
        a, b = self._bounds(start, end)
        if not sub:
            return max(b - a, 0) + 1 if a <= b else 0
        total, next_free = 0, a  # non-overlapping, left to right, like bytes.count
        for pos in range(a, b, CHUNK):
            limit = min(pos + CHUNK, b)  # matches *starting* in [pos, limit) belong to this window
            window = self[pos : min(limit + len(sub) - 1, b)]
            found = window.find(sub, max(next_free - pos, 0))
            while found >= 0 and pos + found < limit:
                total += 1
                next_free = pos + found + len(sub)
                found = window.find(sub, next_free - pos)
        return total

    def iter_chunks(self, start: int = 0, end: int | None = None, size: int = CHUNK) -> Iterator[bytes]:
        a, b = self._bounds(start, end)
        for pos in range(a, b, size):
            yield self._fetch(pos, min(pos + size, b))

    def tobytes(self) -> bytes:
        return self._fetch(0, self._size) if self._size else b""

    def close(self) -> None:
        with self._lock:
            self._pages.clear()


class RedisStore:
    """A `Store` on Redis/Valkey, shared by every instance that points at the same server and prefix."""

    def __init__(
        self,
        url: str,
        *,
        limits: StoreLimits | None = None,
        clock: Callable[[], float] = time.time,
        prefix: str = "mcp-offload:v1",
        connect_timeout_s: float = 2.0,
        socket_timeout_s: float = 5.0,
        eager_bytes: int = CHUNK,
        read_lease_s: float = 600.0,
    ) -> None:
        self.url = normalise_url(url)
        self.limits = limits or StoreLimits()
        self.clock = clock
        self.prefix = prefix
        self.eager_bytes = eager_bytes
        self.read_lease_ms = int(read_lease_s * 1000)
        self._options: dict[str, Any] = {
            "socket_connect_timeout": connect_timeout_s,
            "socket_timeout": socket_timeout_s,
            # one immediate retry on a broken connection (a restarted server), none on a timeout (a hung one)
            "retry": Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,)),
            "retry_on_timeout": False,
        }
        try:
            self._client = redis.asyncio.Redis.from_url(self.url, **self._options)
        except ValueError as exc:
            raise StoreUnavailable(f"the store location is not a valid Redis URL ({exc})") from exc
        self._sync: redis.Redis | None = None
        self._sync_lock = threading.Lock()
        self._reap = self._client.register_script(_LUA_REAP)
        self._publish = self._client.register_script(_LUA_PUBLISH)
        self._open = self._client.register_script(_LUA_OPEN)
        self._unpin = self._client.register_script(_LUA_UNPIN)
        self._delete = self._client.register_script(_LUA_DELETE)

    # -- keys -------------------------------------------------------------------------------------------
    def _key(self, kind: str, scope: str, handle: str) -> str:
        return f"{self.prefix}:{kind}:{scope}:{handle}"

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    @property
    def _tomb_ms(self) -> int:
        return max(int(self.limits.tombstone_ttl_s * 1000), 1)

    def _sync_client(self) -> redis.Redis:
        with self._sync_lock:
            if self._sync is None:
                self._sync = redis.Redis.from_url(self.url, **self._options)
            return self._sync

    # -- writing ---------------------------------------------------------------------------------------
    async def put(self, scope: str, meta: OutputMeta, index: ContentIndex, data: bytes) -> None:
        validate_scope(scope)
        validate_handle(meta.handle)
        if len(data) != index.size:
            raise ValueError("index does not describe the data")  # programming error
        check_fits_at_all(len(data), self.limits)
        staging = f"{self.prefix}:w:{secrets.token_hex(12)}"
        published = False
        try:
            with _redis_errors():
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

    # -- lifecycle ---------------------------------------------------------------------------------------
    async def sweep(self) -> SweepReport:
        """Reap expired outputs (staging debris and tombstones expire by themselves in Redis)."""
        expired = 0
        with _redis_errors():
            while True:
                removed, examined = await self._reap(args=[self.prefix, self._now_ms(), self._tomb_ms, 500])
                expired += int(removed)
                if int(examined) < 500 or not removed:
                    break
        return SweepReport(expired=expired)

    # -- reading ---------------------------------------------------------------------------------------
    async def _lookup(self, scope: str, handle: str, mode: str) -> list[Any]:
        validate_scope(scope)
        validate_handle(handle)
        with _redis_errors():
            result: list[Any] = await self._open(
                args=[
                    self.prefix,
                    self._now_ms(),
                    scope,
                    handle,
                    self._tomb_ms,
                    self.read_lease_ms,
                    mode,
                    self.eager_bytes,
                ]
            )
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
                )
            yield StoredOutput(meta=meta, index=index, data=data, path=None)
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self._unpin(args=[self.prefix, scope, handle])
                except redis.exceptions.RedisError as exc:  # the pin lease expires by itself
                    log.warning("redis store: could not release a reader pin (%s)", exc)

    async def list(self, scope: str) -> list[OutputMeta]:
        validate_scope(scope)
        with _redis_errors():
            members = cast(list[bytes], await self._client.zrange(f"{self.prefix}:s:{scope}:lru", 0, -1))
            handles = [h.decode() for h in members]
            if not handles:
                return []
            async with self._client.pipeline(transaction=False) as pipe:
                for handle in handles:
                    pipe.hget(self._key("m", scope, handle), "meta")
                pipe.zmscore(f"{self.prefix}:g:exp", [f"{scope}:{h}" for h in handles])
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
        with _redis_errors():
            result = await self._delete(args=[self.prefix, self._now_ms(), scope, handle, self._tomb_ms])
        if result[0] == b"gone":
            raise gone_error(handle, result[1].decode("ascii", "replace"), self.limits)
        if result[0] != b"ok":
            raise UnknownHandle(f"no output {handle} in this session")

    async def scan(
        self, *, expired: bool = False
    ) -> builtins.list[ScannedOutput]:  # builtins: `list` here is the method above
        """ZSCAN over P:g:exp (every published output is a member), then meta and recency in one pipeline.

        A put scores g:lru and g:exp at one instant (now, now + TTL): an output whose two scores are still one TTL
        apart (by this store's TTL setting) has not been opened since.
        """
        with _redis_errors():
            expiries = {m.decode(): float(score) async for m, score in self._client.zscan_iter(f"{self.prefix}:g:exp")}
            members = [m for m in expiries if len(m) > 33 and m[32] == ":"]
            if not members:
                return []
            async with self._client.pipeline(transaction=False) as pipe:
                for member in members:
                    pipe.hget(self._key("m", member[:32], member[33:]), "meta")
                pipe.zmscore(f"{self.prefix}:g:lru", members)
                *raw_metas, used = await pipe.execute()
        now, ttl_ms, found = self._now_ms(), int(self.limits.ttl_s * 1000), builtins.list[ScannedOutput]()
        for member, raw, last in zip(members, raw_metas, used, strict=True):
            exp = expiries[member]
            if raw is None or (exp <= now and not expired):
                continue  # removed meanwhile, or expired
            meta = OutputMeta.from_dict(orjson.loads(raw))
            opened = last is not None and abs(exp - float(last) - ttl_ms) >= 1
            found.append(ScannedOutput(member[:32], meta, float(last) / 1000 if opened else None, exp / 1000))
        found.sort(key=lambda o: o.meta.created, reverse=True)
        return found

    async def ping(self) -> None:
        """Raise `StoreUnavailable` unless Redis answers (for health checks and startup)."""
        with _redis_errors():
            await self._client.ping()

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._client.aclose()
        if self._sync is not None:
            with contextlib.suppress(Exception):
                self._sync.close()
