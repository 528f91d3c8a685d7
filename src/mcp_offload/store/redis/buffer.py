"""`RedisBuffer`: the lazy, read-only bytes view of one large stored output (GETRANGE plus a page cache).

Invariants: it never holds more than `MAX_PAGES` pages (or the pages of the one slice asked for); a fetch that
comes back short means the key went away (evicted or deleted after its lease) and raises the error the store
gave it, never returns partial bytes.

Reads from replicas (a cluster store with `read_from_replicas`): each piece is asked of a replica first. A replica
holds an output whole or not at all (it is published by one RENAME, replicated as one step), so a piece of the
right length is the output's; a short piece (a replica that has not received the output yet: an offload that ran
without a replica's ack, a replica still syncing) or a failing replica is asked of the master, which is what the
pinned open found the output on. Only a short piece from the master means the output is gone.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

from mcp_offload.store.base import CHUNK
from mcp_offload.store.failures import driver_error_line, is_driver_error, redis_errors

if TYPE_CHECKING:
    from mcp_offload.store.location import SyncRedis

log = logging.getLogger(__name__)


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

    def __init__(
        self,
        client: SyncRedis,
        key: str,
        size: int,
        on_missing: Callable[[], Exception],
        *,
        replicas: SyncRedis | None = None,
    ) -> None:
        """`client` reads from the master; `replicas`, when given, is asked first (a cluster client whose reads go
        to replicas), the master only for what a replica lacks."""
        self._client = client
        self._replicas = replicas
        self._key = key
        self._size = size
        self._on_missing = on_missing
        self._pages: OrderedDict[int, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.round_trips = 0
        self.from_master = 0  # pieces a replica lacked, read from the master instead

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
        # one GETRANGE per PIECE, in sequence: redis-py parses 1 MiB replies much faster than one huge
        # reply, and pipelining them measured no faster (the parser, not the network, is the limit)
        parts = [self._piece(pos, min(pos + self.PIECE, stop)) for pos in range(start, stop, self.PIECE)]
        raw = parts[0] if len(parts) == 1 else b"".join(parts)
        if len(raw) != stop - start:
            raise self._on_missing()
        return raw

    def _piece(self, start: int, stop: int) -> bytes:
        """One GETRANGE: from a replica when reads go there and it has the output, else from the master."""
        self.round_trips += 1
        if self._replicas is not None:
            try:
                piece = cast(bytes, self._replicas.getrange(self._key, start, stop - 1))
            except Exception as exc:
                if not is_driver_error(exc):
                    raise
                log.debug("redis store: a replica failed a read (%s); the master answers", driver_error_line(exc))
                piece = b""
            if len(piece) == stop - start:
                return piece
            self.from_master += 1
            self.round_trips += 1
        with redis_errors():
            return cast(bytes, self._client.getrange(self._key, start, stop - 1))  # without decode_responses: bytes

    def _bounds(self, start: int | None, end: int | None) -> tuple[int, int]:
        a, b, _ = slice(start, end).indices(self._size)
        return a, b

    def find(self, sub: bytes, start: int | None = None, end: int | None = None) -> int:
        return self._search(sub, start, end, last=False)

    def rfind(self, sub: bytes, start: int | None = None, end: int | None = None) -> int:
        return self._search(sub, start, end, last=True)

    def _search(self, sub: bytes, start: int | None, end: int | None, *, last: bool) -> int:
        """`find` (the first match), or with `last` `rfind`, a chunk-sized window at a time (each window runs on by
        `len(sub) - 1` bytes, so a match across a chunk boundary is found in the window it starts in)."""
        a, b = self._bounds(start, end)
        if not sub:
            return (b if last else a) if a <= b else -1
        starts = range(a, b, CHUNK)
        for pos in reversed(starts) if last else starts:
            window: bytes = self[pos : min(pos + CHUNK + len(sub) - 1, b)]
            found = window.rfind(sub) if last else window.find(sub)
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
