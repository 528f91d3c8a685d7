"""Ranked search: the passages of one or more outputs that best answer a natural-language question (BM25).

Each output's passages are scored by its own FTS5 index (built once, cached: `index_cache.py`); the top passages
of all outputs are merged by score. Terms that appear in more than `COMMON_SHARE` of all passages are left out of
the query when rarer ones remain (they weigh almost nothing in BM25 but are what a query's time goes on: a
question with "error" over 100 MB of logs would score most passages). Within each passage returned, its lines are
ranked the same way (a scratch FTS5 table of those lines) and the best `BEST_LINES` are shown, in order, with their
line numbers; for JSON / JSON Lines, the jq path of the best line's first matched word (`json_hits`).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from mcp_offload.errors import SearchError
from mcp_offload.retrieve.json_hits import JSON_KINDS, HitPlace, json_hits
from mcp_offload.retrieve.ranked.fts_index import PassageIndex
from mcp_offload.retrieve.ranked.index_cache import INDEXES
from mcp_offload.retrieve.ranked.terms import TOKENIZER, QueryTerms, query_terms
from mcp_offload.retrieve.search import Match
from mcp_offload.store.base import StoredOutput
from mcp_offload.tokens import TokenCounter

COMMON_SHARE = 0.2
BEST_LINES = 3
MAX_PASSAGES = 20


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
    place: HitPlace | None  # JSON: where the first shown line's first matched word is


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
) -> RankedResult:
    """The k best passages of `outputs` for `question` (sync: run it in a worker thread)."""
    terms = query_terms(question)
    k = max(1, min(k, MAX_PASSAGES))
    searched = [o for o in outputs if o.meta.kind != "blob" and o.meta.size > 0]
    indexes = [(o, INDEXES.get((o.meta.handle, o.meta.created, o.meta.size), o.contiguous())) for o in searched]
    keep = _rare_terms(terms, [ix for _, ix in indexes])
    match = terms.match(keep)
    candidates: list[tuple[float, int, StoredOutput, PassageIndex]] = []
    for o, ix in indexes:
        candidates.extend((hit.score, hit.passage, o, ix) for hit in ix.top(match, k))
    candidates.sort(key=lambda c: -c[0])
    chosen = candidates[:k]
    passages = [_passage(o, ix, passage, score, match, terms, line_chars) for score, passage, o, ix in chosen]
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


def _rare_terms(terms: QueryTerms, indexes: Sequence[PassageIndex]) -> frozenset[str]:
    """The terms to query: those in at most COMMON_SHARE of all passages, or the rarest one if none is."""
    total = sum(ix.passages for ix in indexes)
    counts = dict.fromkeys(terms.terms, 0)
    for ix in indexes:
        for term, docs in ix.document_counts(list(terms.terms)).items():
            counts[term] += docs
    # a word the tokenizer splits in two is a phrase, with no one count: it is kept
    rare = {t for t in terms.terms if " " in t or counts[t] <= COMMON_SHARE * total}
    if not rare:
        rare = {min(terms.terms, key=lambda t: counts[t])}
    return frozenset(rare)


@dataclass(frozen=True, slots=True)
class _Found:
    handle: str
    score: float
    start_line: int
    end_line: int
    start: int
    end: int
    lines: tuple[RankedLine, ...]
    first_char: int  # 1-based character of the first matched word of the first shown line (0: none found)
    first_line: int


def _passage(
    output: StoredOutput, ix: PassageIndex, passage: int, score: float, match: str, terms: QueryTerms, width: int
) -> _Found:
    data, index = output.contiguous(), output.index
    lo, hi = int(ix.bounds[passage]), int(ix.bounds[passage + 1])
    text = bytes(data[lo:hi]).decode("utf-8", "replace")
    first_line = index.line_of_byte(data, lo)
    end_line = index.line_of_byte(data, hi - 1)  # the line of the passage's last byte (its "\n", if it ends one)
    start_char = index.char_of_byte(data, lo) + 1
    end_char = index.char_of_byte(data, hi)
    rows = text.split("\n")
    if rows and rows[-1] == "" and len(rows) > 1:
        rows.pop()
    best = _best_rows(rows, match)
    words = re.compile("|".join(re.escape(w) for w in sorted(terms.words, key=len, reverse=True)), re.IGNORECASE)
    shown: list[RankedLine] = []
    first_char = 0
    first_row = -1
    for row in sorted(best):
        hit = words.search(rows[row])
        col = hit.start() if hit else 0
        shown.append(RankedLine(first_line + row, _cut(rows[row], col, width)))
        if first_row < 0 and hit:
            first_row = row
            first_char = start_char + sum(len(r) + 1 for r in rows[:row]) + col
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


def _best_rows(rows: list[str], match: str) -> list[int]:
    """Row numbers of the passage's BEST_LINES best lines for `match` (by BM25 among those lines)."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE l USING fts5(body, content='', tokenize='{TOKENIZER}')")
        db.executemany("INSERT INTO l(rowid, body) VALUES (?, ?)", enumerate(rows))
        found = db.execute("SELECT rowid FROM l WHERE l MATCH ? ORDER BY rank LIMIT ?", (match, BEST_LINES))
        best = [int(r) for (r,) in found]
    finally:
        db.close()
    return best or [0]


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
