"""Ranked search: the passages of one or more outputs that best answer a natural-language question (BM25).

Each output's FTS5 index (built once, cached: `index_cache.py`) picks its `CANDIDATES` x k best passages (by its
shards' BM25 without length normalisation); these are scored again with BM25 over the statistics of all outputs
searched together (passage count, document counts, average length, each passage's length) and all of the question's
terms, so passages of different outputs and shards compare, and the k best are returned. When the question's terms
hold more than `POSTINGS_BUDGET` passages in all, the most common terms are left out of finding the candidates (they
weigh least in BM25 but are what a query's time goes on: "error" over 100 MB of logs); they still count in the
re-scoring. Within each passage returned, its lines are ranked the same way (a scratch FTS5 table of those lines)
and the best `BEST_LINES` are shown, in order, with their line numbers; for JSON / JSON Lines, the jq path of the
best line's first matched word (`json_hits`).
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcp_offload.errors import SearchError
from mcp_offload.retrieve.json_hits import JSON_KINDS, HitPlace, json_hits
from mcp_offload.retrieve.positions import Match
from mcp_offload.retrieve.ranked.fts_index import PassageIndex
from mcp_offload.retrieve.ranked.index_cache import INDEXES
from mcp_offload.retrieve.ranked.terms import TOKENIZER, QueryTerms, query_terms
from mcp_offload.store.base import OutputSidecar, StoredOutput
from mcp_offload.tokens import TokenCounter

POSTINGS_BUDGET = 5_000  # passages a query may score in all outputs together before common terms are left out
CANDIDATES = 3  # per output, this many times k passages are re-scored with the statistics of all outputs
BEST_LINES = 3
MAX_PASSAGES = 20
COORD = 1.0  # a re-scored passage's BM25 times (share of the question's terms it holds) ** COORD
K1, B = 1.2, 0.75  # BM25's usual constants, FTS5's too


@dataclass(frozen=True, slots=True)
class RankedLine:
    line: int
    text: str  # cut to about line_chars around its first matched word


@dataclass(frozen=True, slots=True)
class RankedPassage:
    handle: str
    score: float
    start_line: int
    end_line: int
    start: int  # 1-based inclusive characters of the passage
    end: int
    lines: tuple[RankedLine, ...]
    place: HitPlace | None  # JSON: where the best line's first matched word is


@dataclass(frozen=True, slots=True)
class RankedResult:
    terms: tuple[str, ...]  # the words ranked by (after stop words and pruning)
    passages: tuple[RankedPassage, ...]
    outputs_searched: int


def rank_outputs(
    outputs: Sequence[StoredOutput],
    question: str,
    *,
    k: int,
    line_chars: int,
    counter: TokenCounter,
    max_tokens: int,
    sidecars: Callable[[str], OutputSidecar | None] | None = None,
) -> RankedResult:
    """The k best passages of `outputs` for `question` (sync: run it in a worker thread). `sidecars` gives the
    sidecar an output's index is kept in (by handle, within the caller's scope), if the store keeps one."""
    terms = query_terms(question)
    k = max(1, min(k, MAX_PASSAGES))
    searched = [o for o in outputs if o.meta.kind != "blob" and o.meta.size > 0]
    indexes = [
        (o, INDEXES.get((o.meta.handle, o.meta.created, o.meta.size), o.contiguous, _sidecar(sidecars, o)))
        for o in searched
    ]
    local = _document_counts(terms, [ix for _, ix in indexes])
    counts: dict[str, int] = {}
    for found in local:
        for term, docs in found.items():
            counts[term] = counts.get(term, 0) + docs
    keep = _affordable_terms(terms, counts)
    match = terms.match(keep)
    candidates = [(o, ix, hit.passage) for o, ix in indexes for hit in ix.top(match, CANDIDATES * k)]
    # every term of the question weighs in here, also those left out of finding the candidates, with the statistics
    # of all outputs (and shards) together and each passage's length (the indexes keep none: `fts_index.py`)
    scores = _global_bm25(candidates, frozenset(terms.terms), local, [ix for _, ix in indexes])
    order = sorted(range(len(candidates)), key=lambda i: -scores[i])[:k]
    texts = [_rows(_text(*candidates[i])) for i in order]
    best = _best_rows(texts, match)
    passages = [
        _passage(*candidates[i], scores[i], rows, lines, terms, line_chars)
        for i, rows, lines in zip(order, texts, best, strict=True)
    ]
    places = _places(passages, {o.meta.handle: o for o in searched}, counter, max_tokens)
    shown = tuple(w for w, t in zip(terms.words, terms.terms, strict=True) if t in keep)
    return RankedResult(
        shown,
        tuple(
            RankedPassage(p.handle, p.score, p.start_line, p.end_line, p.start, p.end, p.lines, place)
            for p, place in zip(passages, places, strict=True)
        ),
        len(searched),
    )


def _sidecar(sidecars: Callable[[str], OutputSidecar | None] | None, output: StoredOutput) -> OutputSidecar | None:
    return sidecars(output.meta.handle) if sidecars is not None else None


def _document_counts(terms: QueryTerms, indexes: Sequence[PassageIndex]) -> list[dict[str, int]]:
    """Per output, the passages holding each single term of the question (a phrase: each of its terms)."""
    single = sorted({t for phrase in terms.terms for t in phrase.split(" ")})
    return [ix.document_counts(single) for ix in indexes]


def _affordable_terms(terms: QueryTerms, counts: dict[str, int]) -> frozenset[str]:
    """The terms to query: all of them while their postings (passages to score) fit `POSTINGS_BUDGET`; past it, the
    most common terms are left out first (they weigh least in BM25 and cost most), keeping at least one."""
    cost = {t: sum(counts.get(part, 0) for part in t.split(" ")) for t in terms.terms}
    keep = sorted(terms.terms, key=lambda t: cost[t])
    while len(keep) > 1 and sum(cost[t] for t in keep) > POSTINGS_BUDGET:
        keep.pop()
    return frozenset(keep)


def _idf(passages: int, holding: int) -> float:
    """BM25's inverse document frequency as FTS5 computes it (never below 1e-6)."""
    return max(math.log((passages - holding + 0.5) / (holding + 0.5)), 1e-6)


def _global_bm25(
    candidates: Sequence[tuple[StoredOutput, PassageIndex, int]],
    keep: frozenset[str],
    local: Sequence[dict[str, int]],
    indexes: Sequence[PassageIndex],
) -> list[float]:
    """BM25 of each candidate with the statistics of all outputs searched together (passage count, document counts,
    average length), so that passages of different outputs compare (each output's index ranks with its own), times
    the share of the question's terms it holds (`COORD`).

    Term frequencies come from the candidates' text in a scratch FTS5 table (same tokenizer); a passage's length in
    tokens is its bytes times its output's tokens per byte. (Asking each output's index for per-term weights
    instead costs a whole posting-list scan per term and output: FTS5's bm25() counts the term's passages anew in
    every statement.)"""
    total = sum(ix.passages for ix in indexes)
    size = sum(int(ix.bounds[-1]) for ix in indexes)
    average = max(sum(ix.tokens for ix in indexes) / max(total, 1), 1.0)
    overall: dict[str, int] = {}
    for counts in local:
        for term, docs in counts.items():
            overall[term] = overall.get(term, 0) + docs
    wanted = sorted({part for t in keep for part in t.split(" ")})
    idf = {t: _idf(total, overall.get(t, 0)) for t in wanted}
    density = {id(ix): ix.tokens / max(int(ix.bounds[-1]), 1) for ix in indexes} if size else {}
    lengths = [
        (int(ix.bounds[p + 1]) - int(ix.bounds[p])) * density.get(id(ix), 0.0) or average for _, ix, p in candidates
    ]
    scores = [0.0] * len(candidates)
    matched = [0] * len(candidates)
    db = sqlite3.connect(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE c USING fts5(body, content='', tokenize='{TOKENIZER}')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(c, 'instance')")
        db.executemany("INSERT INTO c(rowid, body) VALUES (?, ?)", ((n, _text(*c)) for n, c in enumerate(candidates)))
        marks = ",".join("?" * len(wanted))
        rows = db.execute(f"SELECT doc, term, count(*) FROM v WHERE term IN ({marks}) GROUP BY doc, term", wanted)
        for doc, term, tf in rows:
            norm = K1 * (1 - B + B * lengths[doc] / average)
            scores[doc] += idf[term] * tf * (K1 + 1) / (tf + norm)
            matched[doc] += 1
    finally:
        db.close()
    return [score * (m / len(wanted)) ** COORD for score, m in zip(scores, matched, strict=True)]


def _text(output: StoredOutput, ix: PassageIndex, passage: int) -> str:
    """A passage's text (a slice: a lazy Redis output fetches just these bytes)."""
    return output.read_bytes(int(ix.bounds[passage]), int(ix.bounds[passage + 1])).decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class _Found:
    handle: str
    score: float
    start_line: int
    end_line: int
    start: int
    end: int
    lines: tuple[RankedLine, ...]
    first_char: int  # 1-based character of the first matched word of the best line (0: none found)
    first_line: int


def _rows(text: str) -> list[str]:
    rows = text.split("\n")
    if rows[-1] == "" and len(rows) > 1:
        rows.pop()
    return rows


def _passage(
    output: StoredOutput,
    ix: PassageIndex,
    passage: int,
    score: float,
    rows: list[str],
    best: list[int],
    terms: QueryTerms,
    width: int,
) -> _Found:
    data, index = output.data, output.index
    lo, hi = int(ix.bounds[passage]), int(ix.bounds[passage + 1])
    first_line = index.line_of_byte(data, lo)
    end_line = index.line_of_byte(data, hi - 1)  # the line of the passage's last byte (its "\n", if it ends one)
    start_char = index.char_of_byte(data, lo) + 1
    end_char = index.char_of_byte(data, hi)
    words = re.compile("|".join(re.escape(w) for w in sorted(terms.words, key=len, reverse=True)), re.IGNORECASE)
    shown: list[RankedLine] = []
    for row in sorted(best):
        hit = words.search(rows[row])
        shown.append(RankedLine(first_line + row, _cut(rows[row], hit.start() if hit else 0, width)))
    top = best[0]  # the best line: where a JSON passage's path points
    hit = words.search(rows[top])
    first_row = top if hit else -1
    first_char = (start_char + sum(len(r) + 1 for r in rows[:top]) + hit.start()) if hit else 0
    return _Found(
        output.meta.handle,
        round(score, 3),
        first_line,
        end_line,
        start_char,
        end_char,
        tuple(shown),
        first_char,
        first_line + max(first_row, 0),
    )


_ROW_BITS = 20  # a passage (<= LONGEST bytes) has fewer rows than this many bits count


def _best_rows(passages: list[list[str]], match: str) -> list[list[int]]:
    """For each passage (its rows), the numbers of its BEST_LINES best rows for `match`, best first (BM25 among all
    these rows, in one scratch FTS5 table); [0] for a passage none of whose rows matches on its own."""
    best: list[list[int]] = [[] for _ in passages]
    db = sqlite3.connect(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE l USING fts5(body, content='', tokenize='{TOKENIZER}')")
        db.executemany(
            "INSERT INTO l(rowid, body) VALUES (?, ?)",
            (((p << _ROW_BITS) | r, row) for p, rows in enumerate(passages) for r, row in enumerate(rows)),
        )
        for (rowid,) in db.execute("SELECT rowid FROM l WHERE l MATCH ? ORDER BY rank", (match,)):
            shown = best[rowid >> _ROW_BITS]
            if len(shown) < BEST_LINES:
                shown.append(rowid & ((1 << _ROW_BITS) - 1))
    finally:
        db.close()
    return [b or [0] for b in best]


def _cut(line: str, col: int, width: int) -> str:
    line = line.rstrip("\r")
    if len(line) <= width:
        return line
    lo = max(0, min(col - width // 3, len(line) - width))
    body = line[lo : lo + width]
    left = f"[{lo:,} chars cut]…" if lo else ""
    rest = len(line) - lo - width
    return left + body + (f"…[{rest:,} chars cut]" if rest > 0 else "")


def _places(
    passages: Sequence[_Found], outputs: dict[str, StoredOutput], counter: TokenCounter, max_tokens: int
) -> list[HitPlace | None]:
    """jq paths of the first matched words of JSON passages (text passages: None)."""
    wanted = [i for i, p in enumerate(passages) if p.first_char > 0 and outputs[p.handle].meta.kind in JSON_KINDS]
    if not wanted:
        return [None] * len(passages)
    matches = [
        Match(passages[i].handle, passages[i].first_line, passages[i].first_char, passages[i].first_char, "", (), ())
        for i in wanted
    ]
    try:
        placed = json_hits(outputs, matches, records=False, max_tokens=max_tokens, counter=counter)
    except (ValueError, IndexError) as exc:  # a JSON output the structure index cannot place into
        raise SearchError(f"could not place the passages in their JSON documents ({exc}).") from None
    places: list[HitPlace | None] = [None] * len(passages)
    for i, place in zip(wanted, placed.places, strict=True):
        places[i] = place
    return places
