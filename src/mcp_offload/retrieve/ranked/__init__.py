"""Ranked (BM25) search over stored outputs: passages, an SQLite FTS5 index per output, and the ranking itself.

- `passages.py` cuts an output's bytes into passages of about a kilobyte at line ends;
- `fts_index.py` indexes them with SQLite FTS5 (stdlib `sqlite3`, Porter stemming over `unicode61`), in shards
  built side by side for outputs of 1 MiB or more;
- `terms.py` turns a natural-language question into safe FTS5 terms (no query syntax reaches FTS5);
- `index_file.py` writes an index as bytes and reads it back, checked, for the output's store sidecar;
- `index_cache.py` keeps indexes, keyed by the output (handle, creation time, size): one build per output, started
  in the background when the output is stored, kept in memory and in the sidecar (a restart loads it);
- `rank.py` queries every output's index, merges the top passages and picks their best lines.

Why FTS5, by measurement (`bench/ranked.py`, 100 MB in 10 outputs, the same ~1 KB passages, this shared 2-core VM
at load ~6): building, FTS5 18 MB/s wall / 39 MB/s CPU, `tantivy` 9 / 17, `bm25s` 5 / 9 (on a quiet machine FTS5
built a 20 MB output at ~85 MB/s); relevance set, top 3 within an output: FTS5 41/42, tantivy 41/42, bm25s 39/42.
Raw top-20 queries are where tantivy wins (2 ms against FTS5's 92 ms: FTS5 scores every passage holding a term,
tantivy skips with block-max WAND); our questions prune common terms from candidate finding (`rank.py`), which brings
a whole question through the API to ~20 ms CPU (62-69 ms wall at load ~10) on that machine. FTS5 comes with Python (no
new dependency), builds fastest here and ranks as well, so it is the engine; tantivy is the one to switch to if
question latency on large sessions matters more than a dependency.

Build speed (100 MB in 10 outputs, median of 3 rounds taken in turns, this VM at load ~2.3): a bare FTS5 table with
SQLite's defaults fed the same passages (the yardstick) 50 MB/s; with our tokenizer 46; the build before this one 44
(0.89x the yardstick); ours on one thread (the background build) 59 (1.18x); on two threads (a question's build,
taken only while a core is idle) 57 median, 89 in a round when a core was free. What it takes (`fts_index.py`): one
segment per shard at commit instead of an `optimize` merge, no per-passage token counts, shards side by side.
Measured and left: no Porter stemming (+25 %, but paraphrased questions need it), no diacritics folding (+3 %),
`detail=column`/`none` (+10-20 %, but no term frequencies or phrases), 2 KB passages (+5 %, coarser answers),
multi-row `INSERT ... VALUES` (2x slower), one `INSERT ... SELECT` over `json_each` (no GIL hand-offs, but slower),
bytes instead of str (no gain). Page sizes 16-64 KB: no steady gain, 64 KB queries 1.5x slower.
"""
