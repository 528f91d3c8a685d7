"""One output's passage index: in-memory SQLite FTS5 tables, contentless (the text stays in the store), in shards.

Built in one transaction per shard, with what measured fastest for bulk loading (`bench/ranked.py`; the numbers are
in the package docstring): the pending-terms hash (`hashsize`) large enough that a shard is written out as one
segment when it commits, so no `optimize` merge pass is needed and every query reads one segment per shard; no
per-passage token counts (`columnsize=0`: FTS5's own bm25() then ranks without length normalisation, which only
picks candidates: `rank.py` scores them with exact BM25, lengths from bytes); no automerge; `pgsz` 4000; no journal.

Shards: consecutive passages, at most `SHARD_MAX` bytes each (one hash flush). A question's lazy build of an output of
`PARALLEL_MIN` bytes or more uses at least one shard per builder thread (`BUILDERS`), built side by side (`sqlite3`
lets go of the GIL while FTS5 tokenizes, which is where the time goes): ~1.5x faster when a core is idle, but ~15 %
more CPU, and slower when the other core is busy. So the background build at offload uses one thread: it leaves the
other core to the server's calls. Rowids are passage numbers of the whole output; `bounds` maps them back to bytes.
A question asks every shard and merges.

Queries come from several worker threads: a lock serialises them per index.
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np

from mcp_offload.retrieve.ranked.passages import Int64s, passage_bounds
from mcp_offload.retrieve.ranked.terms import TOKENIZER
from mcp_offload.store.content_index import Buffer

BATCH = 1024  # passages (~1 MB, ~20 ms) per executemany: a background build pauses or stops between batches
HASH_BYTES = 64 << 20  # FTS5's pending-terms hash: a shard of SHARD_MAX bytes fits it, so it commits as one segment
SHARD_MAX = 32 << 20
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
    first: int  # passages [first, last) of the output
    last: int
    tokens: int  # tokens indexed in this shard's passages


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


def shard_cuts(bounds: Int64s, builders: int) -> list[int]:
    """Passage numbers [0, c1, ..., passages] cutting the output into shards of about equal bytes, none over about
    `SHARD_MAX` bytes, and from `PARALLEL_MIN` bytes on at least `builders` of them."""
    passages = len(bounds) - 1
    size = int(bounds[-1])
    if passages < 2:
        return [0, passages]
    count = min(passages, max(builders if size >= PARALLEL_MIN else 1, math.ceil(size / SHARD_MAX)))
    if count == 1:
        return [0, passages]
    targets = np.arange(1, count, dtype=np.int64) * size // count
    inner = np.searchsorted(bounds, targets).tolist()
    return sorted({0, *(c for c in inner if 0 < c < passages), passages})


def build_index(
    data: Buffer, *, builders: int | None = None, checkpoint: Callable[[], None] | None = None
) -> PassageIndex:
    """Cut `data` into passages and index them (UTF-8 decoded with replacement: invalid bytes never stop it), with
    `builders` threads (default `BUILDERS`; 1: all in this thread).

    `checkpoint` is called between batches: it may pause the build, or stop it by raising `BuildCancelled`."""
    builders = BUILDERS if builders is None else max(1, builders)
    bounds = passage_bounds(data)
    cuts = shard_cuts(bounds, builders)
    offsets: list[int] = bounds.tolist()
    view = memoryview(data)
    shards: list[Shard] = []
    try:
        if builders == 1 or len(cuts) == 2:
            for lo, hi in itertools.pairwise(cuts):
                shards.append(_build_shard(view, offsets, lo, hi, checkpoint))
        else:
            pool = _builders()
            futures: list[Future[Shard]] = [
                pool.submit(_build_shard, view, offsets, lo, hi, checkpoint) for lo, hi in itertools.pairwise(cuts)
            ]
            wait(futures)  # every shard is done with `view` before it is released
            failed = None
            for future in futures:
                if future.exception() is None:
                    shards.append(future.result())
                elif failed is None:
                    failed = future.exception()
            if failed is not None:
                raise failed
    except BaseException:
        for shard in shards:
            shard.db.close()
        raise
    finally:
        view.release()
    return index_of(bounds, shards)


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
    view: memoryview, offsets: list[int], first: int, last: int, checkpoint: Callable[[], None] | None
) -> Shard:
    db = new_shard_db()
    try:
        db.execute("BEGIN")
        for lo in range(first, last, BATCH):
            if checkpoint is not None:
                checkpoint()
            hi = min(lo + BATCH, last)
            db.executemany(
                "INSERT INTO p(rowid, body) VALUES (?, ?)",
                ((i, str(view[offsets[i] : offsets[i + 1]], "utf-8", "replace")) for i in range(lo, hi)),
            )
        db.execute("COMMIT")
        return Shard(db, first, last, averages(db)[1])
    except BaseException:
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
