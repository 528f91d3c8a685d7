"""Redis (or Valkey) backend: several mcp-offload instances share one store, any instance serves any read.

Keys, for prefix P (default `mcp-offload:v1`, `store.location.KEY_PREFIX`), scope s and handle h (member m = "s:h"):

    P:d:s:h     string   the content bytes
    P:m:s:h     hash     meta (JSON), index (ContentIndex.to_bytes), size
    P:p:s:h     string   reader pin count (a lease: expires if a reader dies)
    P:t:s:h     string   tombstone "expired <ms>"/"evicted <ms>", honoured for tombstone_ttl_s
    P:s:s:lru   zset     h -> last use (ms)            P:s:s:tot  hash  b (bytes), n (outputs)
    P:g:lru     zset     m -> last use (ms)            P:g:tot    hash  b, n
    P:g:exp     zset     m -> logical expiry (ms)      P:g:size   hash  m -> bytes
    P:w:s:<rand> string  staging for a put in progress (expires after an hour: crashed writers' debris)

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
a Redis "OOM" refusal is `StoreFull`. The client reconnects by itself when Redis is back.

Redis Cluster (`redis+cluster://host:port[,host:port…]`): every key a script touches comes in KEYS, and on a
cluster the scope in each key name is a hash tag (P:d:{s}:h, P:s:{s}:lru …), so one session's keys share a slot
and sessions spread over every master. The store-wide books cannot share a slot with a session, so on a cluster
each session keeps its own ledger (P:s:{s}:glru/exp/size/gtot) and the store-wide one (P:g:{g}:lru/exp/size/tot)
is kept beside it by reservation (ledger.py: the store-wide quota never overshoots, it can only be too strict for a
while after a crashed writer). A put returns once a replica acknowledged it when its master has one
(durability.py: WAIT on the publishing connection). The cluster client follows MOVED/ASK and reloads the slot map
after a failover; a call that falls into the window fails with `StoreUnavailable` within a few seconds.

One concept per module, each a layer that uses only the ones below it (import-linter checks the order):

    store.py        `RedisStore`: the `Store` protocol's face: clients, scripts, sweep, ping, close
    publish.py      put: upload to staging, plan LRU victims, publish atomically (publish.lua), retry on races
    reading.py      the pinned open (open.lua), meta, list, explicit delete (delete.lua)
    admin_scan.py   every output with its times, for the `outputs` admin command
    ledger.py       reaping, and a cluster's store-wide books (reserve, publish, forget: ledger.lua)
    durability.py   WAIT for a replica's ack after a publish, and which masters have a replica
    keyspace.py     the key names (one node or a cluster), the store clock in ms, the synchronous client
    buffer.py       `RedisBuffer`: the lazy, page-cached bytes view of a large output
    scripts.py      the Lua scripts of `store/lua/` (package data), loaded with their shared prelude
    startup.py      the startup check: the URL's kind against what answers there, which masters have a replica

The client comes from `store/location.py` (`open_redis`: URL aliases, one node or a cluster, timeouts, retry policy)
and redis-py failures are translated by `store/failures.py` (`redis_errors`), as for every record kept beside the
outputs.
"""

from mcp_offload.store.redis.buffer import RedisBuffer
from mcp_offload.store.redis.store import RedisStore

__all__ = ["RedisBuffer", "RedisStore"]
