"""A natural-language question -> the terms ranked search looks for, with nothing of FTS5's query syntax left.

The question is split into words (runs of letters and digits; everything else, including FTS5 operators such
as quotes, `NEAR`, `AND`/`OR`/`NOT`, `col:` filters, `*` and `^`, is a separator). Each word goes through the
index's own tokenizer (`TOKENIZER`, in a scratch in-memory FTS5 table) so it is stemmed exactly as the indexed
text was; English stop words are dropped after stemming. In the MATCH expression each word is a double-quoted
FTS5 string (it holds letters and digits only, so it cannot close the quote), joined by OR.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from functools import lru_cache

from mcp_offload.errors import SearchError

TOKENIZER = "porter unicode61 remove_diacritics 2"
MAX_QUERY_CHARS = 2000
MAX_WORDS = 64  # distinct words looked up; later ones are ignored

_WORD = re.compile(r"[^\W_]+")

# English function words and question words: they say how a question is asked, not what it is about.
_STOP_TEXT = """a about above after again against all am an and any are aren as at be because been before being below
    between both but by can cannot could couldn did didn do does doesn doing don down during each few for from
    further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn it
    its itself just let me more most my myself no nor not now of off on once only or other ought our ours ourselves
    out over own same shall she should shouldn so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was wasn we were weren what when where which while who
    whom why will with won would wouldn you your yours yourself yourselves find show tell give get list please
    anything something thing things one ones line lines part"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


@dataclass(frozen=True, slots=True)
class QueryTerms:
    words: tuple[str, ...]  # as written (one per distinct term), each safe inside FTS5 double quotes
    terms: tuple[str, ...]  # the same words stemmed as the index stores them
    dropped: tuple[str, ...]  # stop words left out

    def match(self, keep: frozenset[str] | None = None) -> str:
        """The FTS5 MATCH expression: the kept words, each quoted, joined by OR."""
        chosen = [w for w, t in zip(self.words, self.terms, strict=True) if keep is None or t in keep]
        return " OR ".join(f'"{w}"' for w in chosen)


def _stems(words: list[str]) -> list[tuple[str, ...]]:
    """Each word's terms as the index's tokenizer makes them (usually one; none for a word it drops)."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE s USING fts5(w, tokenize='{TOKENIZER}')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, 'instance')")
        db.executemany("INSERT INTO s(rowid, w) VALUES (?, ?)", enumerate(words))
        found: list[list[str]] = [[] for _ in words]
        for term, doc in db.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
            found[doc].append(term)
        return [tuple(f) for f in found]
    finally:
        db.close()


@lru_cache(maxsize=1)
def _stemmed_stop_words() -> frozenset[str]:
    return frozenset(t for terms in _stems(sorted(STOP_WORDS)) for t in terms)


def query_terms(question: str) -> QueryTerms:
    """The distinct, non-stop-word terms of `question` (raises `SearchError` when there are none or it is too long)."""
    if len(question) > MAX_QUERY_CHARS:
        raise SearchError(
            f"a ranked question has at most {MAX_QUERY_CHARS:,} characters (this one has {len(question):,}): "
            "ask in a sentence with the distinctive words, e.g. 'timeout in the payment service'."
        )
    seen: dict[str, None] = {}
    for word in _WORD.findall(question):
        seen.setdefault(word.lower(), None)
        if len(seen) >= MAX_WORDS:
            break
    words = list(seen)
    if not words:
        raise SearchError(
            "the question has no words to rank by (only punctuation or symbols): ask with words, e.g. "
            "'timeout in the payment service', or search for the exact text with ranked=false."
        )
    stop = _stemmed_stop_words()
    kept_words: list[str] = []
    kept_terms: list[str] = []
    dropped: list[str] = []
    taken: set[str] = set()
    for word, terms in zip(words, _stems(words), strict=True):
        content = [t for t in terms if t not in stop]
        if not content or word in STOP_WORDS:
            dropped.append(word)
            continue
        key = " ".join(content)
        if key in taken:
            continue
        taken.add(key)
        kept_words.append(word)
        kept_terms.append(key)
    if not kept_words:
        shown = ", ".join(dropped[:8])
        raise SearchError(
            f"the question has only common words ({shown}), which say nothing about what to find: add a distinctive "
            "word (a name, an error, a field), e.g. 'timeout in the payment service'."
        )
    return QueryTerms(tuple(kept_words), tuple(kept_terms), tuple(dropped))
