"""Ranked (BM25) search over stored outputs: passages, an SQLite FTS5 index per output, and the ranking itself.

- `passages.py` cuts an output's bytes into passages of about a kilobyte at line ends;
- `fts_index.py` indexes them with SQLite FTS5 (stdlib `sqlite3`, Porter stemming over `unicode61`);
- `terms.py` turns a natural-language question into safe FTS5 terms (no query syntax reaches FTS5);
- `index_cache.py` keeps built indexes, keyed by the output (handle, creation time, size), one build per output;
- `rank.py` queries every output's index, merges the top passages and picks their best lines.

Why FTS5 (measured in `bench/ranked.py` against `tantivy` and `bm25s` on the same passages): it builds as fast as
tantivy here (both ~60-120 MB/s on this machine, bm25s ~12 MB/s), ranks the relevance set as well, answers a
question over 100 MB in well under 50 ms once common terms are pruned, and comes with Python: no new dependency.
"""
