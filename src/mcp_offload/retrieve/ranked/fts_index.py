"""One output's passage index: in-memory SQLite FTS5 tables, contentless (the text stays in the store), in shards.

Built in one transaction per shard, with what measured fastest for bulk loading (`bench/ranked.py`; the numbers are
in the package docstring): the pending-terms hash (`hashsize`) large enough that a shard is written out as one
segment when it commits, so no `optimize` merge pass is needed and every query reads one segment per shard; no
per-passage token counts (`columnsize=0`: FTS5's own bm25() then ranks without length normalisation, which only
picks candidates: `rank.py` scores them with exact BM25, lengths from bytes); no automerge; `pgsz` 4000; no journal.

Shards: one SQLite database per builder thread. A question's lazy build of an output of `PARALLEL_MIN` bytes or more
uses `BUILDERS` threads side by side when a core is idle (`builders_now`; `sqlite3` lets go of the GIL while FTS5
tokenizes, which is where the time goes), each taking the next batch of passages as it gets to it, so a thread the
OS holds back never leaves the other waiting at the end: ~1.4-1.5x faster when a core is idle, no faster (and ~15 %
more CPU) when none is. The background build at offload uses one thread: it leaves the other core to the server's
calls. Rowids are passage numbers of the whole output; `bounds` maps them back to bytes. A question asks every shard
and merges. A shard whose pending terms outgrew `HASH_BYTES` (over ~50 MB of text) is merged into one segment
(`optimize`) after its commit.

Queries come from several worker threads: a lock serialises them per index.
"""

from __future__ import annotations

import heapq
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np

from mcp_offload.retrieve.ranked.passages import Int64s, passage_bounds
from mcp_offload.retrieve.ranked.terms import TOKENIZER
from mcp_offload.store.content_index import Buffer

BATCH = 1024  # passages (~1 MB, ~20 ms) per executemany: a background build pauses or stops between batches
HASH_BYTES = 64 << 20  # FTS5's pending terms: a shard of ~50 MB of text commits as one segment
PARALLEL_MIN = 1 << 20  # smaller outputs are one shard: ~20 ms to build, not worth a thread hand-off
BUILDERS = max(1, min(2, os.cpu_count() or 1))  # threads building shards of one output side by side

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


class BuildCancelled(Exception):
    """The output went away (deleted, expired) while its index was being built."""


@dataclass(frozen=True, slots=True)
class PassageHit:
    passage: int
    score: float  # BM25, higher is better (FTS5's bm25() negated)


@dataclass(frozen=True, slots=True)
class Shard:
    db: sqlite3.Connection
    rows: int  # passages indexed in this shard (batches of consecutive ones, whichever its thread took)
    tokens: int  # tokens indexed in them


@dataclass(slots=True)
class PassageIndex:
    bounds: Int64s  # passage i is bytes [bounds[i], bounds[i + 1])
    shards: tuple[Shard, ...] = field(repr=False)
    nbytes: int  # memory the index holds (SQLite pages + bounds), for the cache's budget
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def passages(self) -> int:
        return len(self.bounds) - 1

    @property
    def tokens(self) -> int:
        """Tokens indexed in all passages (for BM25's average passage length)."""
        return sum(s.tokens for s in self.shards)

    def document_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many passages hold each (stemmed) term; absent terms are left out."""
        if not terms:
            return {}
        marks = ",".join("?" * len(terms))
        counts: dict[str, int] = {}
        with self.lock:
            for shard in self.shards:
                for t, d in shard.db.execute(f"SELECT term, doc FROM vocab WHERE term IN ({marks})", tuple(terms)):
                    counts[str(t)] = counts.get(str(t), 0) + int(d)
        return counts

    def top(self, match: str, k: int) -> list[PassageHit]:
        """The k best candidate passages for an FTS5 MATCH expression (built by `terms.QueryTerms.match`), of all
        shards, by each shard's BM25 without length normalisation."""
        hits: list[PassageHit] = []
        with self.lock:
            for shard in self.shards:
                rows = shard.db.execute(
                    "SELECT rowid, bm25(p) FROM p WHERE p MATCH ? ORDER BY rank LIMIT ?", (match, k)
                ).fetchall()
                hits.extend(PassageHit(int(r), -float(s)) for r, s in rows)
        return heapq.nlargest(k, hits, key=lambda h: h.score) if len(self.shards) > 1 else hits

    def close(self) -> None:
        for shard in self.shards:
            shard.db.close()


def build_index(
    data: Buffer, *, builders: int | None = None, checkpoint: Callable[[], None] | None = None
) -> PassageIndex:
    """Cut `data` into passages and index them (UTF-8 decoded with replacement: invalid bytes never stop it), with
    `builders` threads (default `builders_now()`; 1: all in this thread; outputs under `PARALLEL_MIN` bytes: one).

    `checkpoint` is called between batches: it may pause the build, or stop it by raising `BuildCancelled`."""
    builders = builders_now() if builders is None else max(1, builders)
    bounds = passage_bounds(data)
    offsets: list[int] = bounds.tolist()
    batches = _Batches(len(offsets) - 1)
    view = memoryview(data)
    shards: list[Shard] = []
    try:
        if builders == 1 or int(bounds[-1]) < PARALLEL_MIN:
            shards.append(_build_shard(view, offsets, batches, checkpoint))
        else:
            pool = _builders()
            futures = [pool.submit(_build_shard, view, offsets, batches, checkpoint) for _ in range(builders)]
            wait(futures)  # every shard is done with `view` before it is released
            failed = next((f.exception() for f in futures if f.exception() is not None), None)
            shards.extend(f.result() for f in futures if f.exception() is None)
            if failed is not None:
                raise failed
    except BaseException:
        for shard in shards:
            shard.db.close()
        raise
    finally:
        view.release()
    kept = [s for s in shards if s.rows] or shards[:1]
    for shard in shards:
        if shard not in kept:  # a thread that came too late for any batch
            shard.db.close()
    return index_of(bounds, kept)


def builders_now() -> int:
    """How many threads a build gets now: `BUILDERS` while the 1-minute load average leaves a core idle, else one
    (measured: a second thread where no core is free makes the build no faster, often slower, for ~15 % more CPU)."""
    try:
        idle = (os.cpu_count() or 1) - os.getloadavg()[0]
    except OSError:  # no load average on this platform
        return BUILDERS
    return max(1, min(BUILDERS, int(idle) + 1))


class _Batches:
    """The next batch of passages for whichever builder thread asks first (a thread the OS or the GIL holds back
    takes fewer: no shard waits for a straggler); a failed builder stops the others at their next batch."""

    def __init__(self, passages: int) -> None:
        self.passages = passages
        self.next = 0
        self.failed = False
        self.lock = threading.Lock()

    def take(self) -> range | None:
        with self.lock:
            if self.failed or self.next >= self.passages:
                return None
            lo = self.next
            self.next = min(lo + BATCH, self.passages)
            return range(lo, self.next)


def index_of(bounds: Int64s, shards: Sequence[Shard]) -> PassageIndex:
    """The index made of built (or loaded) shards, with the memory it holds."""
    pages = sum(_pages(s.db) for s in shards)
    return PassageIndex(np.asarray(bounds, dtype=np.int64), tuple(shards), pages + bounds.nbytes)


def _builders() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=BUILDERS, thread_name_prefix="passage-shard")
        return _POOL


def _build_shard(
    view: memoryview, offsets: list[int], batches: _Batches, checkpoint: Callable[[], None] | None
) -> Shard:
    db = new_shard_db()
    try:
        db.execute("BEGIN")
        while (batch := batches.take()) is not None:
            if checkpoint is not None:
                checkpoint()
            db.executemany(
                "INSERT INTO p(rowid, body) VALUES (?, ?)",
                ((i, str(view[offsets[i] : offsets[i + 1]], "utf-8", "replace")) for i in batch),
            )
        db.execute("COMMIT")
        if db.execute("SELECT count(DISTINCT segid) > 1 FROM p_idx").fetchone()[0]:
            db.execute("INSERT INTO p(p) VALUES ('optimize')")  # over HASH_BYTES of pending terms: one segment again
        rows, tokens = averages(db)
        return Shard(db, rows, tokens)
    except BaseException:
        with batches.lock:
            batches.failed = True
        db.close()
        raise


def new_shard_db() -> sqlite3.Connection:
    """An empty shard: the contentless FTS5 table `p`, set up for bulk loading, and its vocabulary `vocab`."""
    db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute(f"CREATE VIRTUAL TABLE p USING fts5(body, content='', columnsize=0, tokenize='{TOKENIZER}')")
        for option, value in (("pgsz", 4000), ("automerge", 0), ("hashsize", HASH_BYTES)):
            db.execute("INSERT INTO p(p, rank) VALUES (?, ?)", (option, value))
        db.execute("CREATE VIRTUAL TABLE vocab USING fts5vocab(p, 'row')")
    except BaseException:
        db.close()
        raise
    return db


def _pages(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA page_count").fetchone()[0]) * int(db.execute("PRAGMA page_size").fetchone()[0])


def averages(db: sqlite3.Connection) -> tuple[int, int]:
    """(rows, tokens) from FTS5's "averages" record (row 1 of %_data): SQLite varints (big-endian groups of 7 bits,
    the 9th byte whole), the row count then one total per column. (0, 0) for an empty table."""
    found = db.execute("SELECT block FROM p_data WHERE id = 1").fetchone()
    record = bytes(found[0]) if found else b""
    values: list[int] = []
    pos = 0
    while pos < len(record) and len(values) < 2:
        value = 0
        for i in range(9):
            if pos >= len(record):
                break
            byte = record[pos]
            pos += 1
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return (values[0], values[1]) if len(values) == 2 else (0, 0)
