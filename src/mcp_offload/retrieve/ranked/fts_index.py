"""One output's passage index: an in-memory SQLite FTS5 table, contentless (the text stays in the store).

Built lazily, by the first question that needs it (`index_cache.py`), in one transaction with page-size and merge
settings for bulk loading (`pgsz` 4000, no automerge while loading, one `optimize` at the end, which makes every
later query read one segment). Rowids are passage numbers; `bounds` maps them back to bytes. Queries come from
several worker threads: a lock serialises them per index.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mcp_offload.retrieve.ranked.passages import Int64s, passage_bounds
from mcp_offload.retrieve.ranked.terms import TOKENIZER
from mcp_offload.store.content_index import Buffer

_BATCH = 4096  # passages decoded and inserted per executemany


@dataclass(frozen=True, slots=True)
class PassageHit:
    passage: int
    score: float  # BM25, higher is better (FTS5's bm25() negated)


@dataclass(slots=True)
class PassageIndex:
    bounds: Int64s  # passage i is bytes [bounds[i], bounds[i + 1])
    db: sqlite3.Connection = field(repr=False)
    nbytes: int  # memory the index holds (SQLite pages + bounds), for the cache's budget
    tokens: int  # tokens indexed in all passages (for BM25's average passage length)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def passages(self) -> int:
        return len(self.bounds) - 1

    def document_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many passages hold each (stemmed) term; absent terms are left out."""
        if not terms:
            return {}
        marks = ",".join("?" * len(terms))
        with self.lock:
            rows = self.db.execute(f"SELECT term, doc FROM vocab WHERE term IN ({marks})", tuple(terms)).fetchall()
        return {str(t): int(d) for t, d in rows}

    def top(self, match: str, k: int) -> list[PassageHit]:
        """The k best passages for an FTS5 MATCH expression (built by `terms.QueryTerms.match`)."""
        with self.lock:
            rows = self.db.execute(
                "SELECT rowid, bm25(p) FROM p WHERE p MATCH ? ORDER BY rank LIMIT ?", (match, k)
            ).fetchall()
        return [PassageHit(int(r), -float(s)) for r, s in rows]


def build_index(data: Buffer) -> PassageIndex:
    """Cut `data` into passages and index them (UTF-8 decoded with replacement: invalid bytes never stop it)."""
    bounds = passage_bounds(data)
    db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute(f"CREATE VIRTUAL TABLE p USING fts5(body, content='', tokenize='{TOKENIZER}')")
        db.execute("INSERT INTO p(p, rank) VALUES ('pgsz', 4000)")
        db.execute("INSERT INTO p(p, rank) VALUES ('automerge', 0)")
        db.execute("CREATE VIRTUAL TABLE vocab USING fts5vocab(p, 'row')")
        db.execute("BEGIN")
        view = memoryview(data)
        try:
            count = len(bounds) - 1
            for first in range(0, count, _BATCH):
                last = min(first + _BATCH, count)
                db.executemany(
                    "INSERT INTO p(rowid, body) VALUES (?, ?)",
                    (
                        (i, str(view[int(bounds[i]) : int(bounds[i + 1])], "utf-8", "replace"))
                        for i in range(first, last)
                    ),
                )
        finally:
            view.release()
        db.execute("INSERT INTO p(p) VALUES ('optimize')")
        db.execute("COMMIT")
        pages = db.execute("PRAGMA page_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]
        averages = db.execute("SELECT block FROM p_data WHERE id = 1").fetchone()
        tokens = _averages_tokens(bytes(averages[0])) if averages else 0
    except BaseException:
        db.close()
        raise
    return PassageIndex(np.asarray(bounds, dtype=np.int64), db, int(pages) + bounds.nbytes, tokens)


def _averages_tokens(record: bytes) -> int:
    """The total token count from FTS5's "averages" record (row 1 of %_data): SQLite varints (big-endian groups of
    7 bits, the 9th byte whole), the row count then one total per column."""
    values: list[int] = []
    pos = 0
    while pos < len(record) and len(values) < 2:
        value = 0
        for i in range(9):
            byte = record[pos]
            pos += 1
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return values[1] if len(values) == 2 else 0
