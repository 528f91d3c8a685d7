"""Token counts with tiktoken, exact, and counting that stops early (the vocabulary comes from vocab.py).

* Budgets (preview size, read caps) need "does this fit in N tokens?" on outputs of 100 MB. Counting costs O(text),
  so `count_upto` and `truncate` tokenize only a prefix proportional to N. That is exact because tiktoken splits
  text into pieces with a regex before BPE, and some positions are piece boundaries whatever text follows (see
  `_BOUNDARY`): the count of a text is the sum of the counts of its parts cut at such positions.
* Whole outputs over `EXACT_LIMIT_CHARS` get a sampled count (`count_large`), flagged as approximate.
* Any Python str is accepted, including lone surrogates (which the stored content keeps): each surrogate code
  point counts as U+FFFD, one for one, so character offsets in the text and in what we tokenize agree.
* A counter without an encoding (none could be loaded offline) estimates: UTF-8 bytes / 4, flagged `estimated`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import tiktoken

from mcp_offload.unicode import decode_utf8_prefix, replace_surrogates, splits_surrogate_pair, utf8_length

__all__ = ["ESTIMATE_BYTES_PER_TOKEN", "EXACT_LIMIT_CHARS", "TokenCounter"]

# count_large counts exactly up to this many characters and extrapolates from samples beyond. Measured on the dev
# machine (2 cores, Python 3.11, tiktoken 0.14, o200k_base and cl100k_base): exact counting runs at 11-23 MB/s on
# ASCII prose and 8-14 MB/s on JSON (the low ends with the machine busy), so 1M chars costs 45-120 ms; a sampled
# count reads EXACT_LIMIT_CHARS // 4 chars whatever the size, so a 10 MB output costs 13-32 ms.
EXACT_LIMIT_CHARS = 1_000_000
# Bytes per token of the last-resort estimate.
ESTIMATE_BYTES_PER_TOKEN = 4

# A position is a boundary of tiktoken's pre-tokenization in every encoding tiktoken ships (gpt2, r50k, p50k,
# cl100k, o200k) whatever follows, when it holds
#   * a space after a non-whitespace character: no piece contains "X " (letter/number pieces take a space only as
#     their first character, punctuation pieces only before their first character, whitespace pieces no X), or
#   * ASCII punctuation other than the apostrophe after an ASCII letter or digit: letter and number pieces never
#     take a following punctuation character (only the contractions 's 't ..., which start with an apostrophe).
# No alternative can match across such a position, so the pieces before it are the same with or without the rest
# of the text, and those after it start fresh (the patterns have no lookbehind). Python's \S is narrower than
# "not Unicode White_Space" (it also excludes U+001C..U+001F), which keeps the rule on the safe side.
_BOUNDARY = re.compile(r"(?<=\S) |(?<=[A-Za-z0-9])[!-&(-/:-@\[-`{-~]")
# count_upto/truncate tokenize about this many chars per wanted token first (real text averages 2-5).
_CHARS_PER_TOKEN_GUESS = 6
# count() tokenizes long texts in parts of about this size (cut at boundaries, so still exact): no megabyte-sized
# token lists, and the caller's string does not get a cached UTF-8 copy attached to it.
_COUNT_PART_CHARS = 1 << 20
# count_large: number of evenly spaced sample windows.
_SAMPLE_WINDOWS = 64
# truncate: re-counts of candidate cuts to try before settling for the last boundary.
_MAX_CUT_STEPS = 16


class TokenCounter:
    """Counts tokens of one encoding (or estimates them, when `estimated`); safe to share between threads."""

    def __init__(self, encoding_name: str, encoding: tiktoken.Encoding | None, source: str) -> None:
        self.encoding_name = encoding_name
        self.source = source
        self.estimated = encoding is None
        self._enc = encoding
        # No token spans more code points than its byte length, so a text has >= len(text) / this many tokens.
        self._max_token_chars = _longest_token(encoding) if encoding is not None else ESTIMATE_BYTES_PER_TOKEN
        core = getattr(encoding, "_core_bpe", None)
        # The buffer API counts without building a list of Python ints (~30% faster on prose); plain
        # encode_ordinary is the fallback should a tiktoken release drop it.
        self._encode_buffer: Callable[[str, Any], Any] | None = getattr(core, "encode_to_tiktoken_buffer", None)

    def __repr__(self) -> str:
        return f"TokenCounter({self.encoding_name!r}, source={self.source!r})"

    # -- public API ------------------------------------------------------------------------------------------

    def count(self, text: str) -> int:
        """Exact token count of `text` (O(len(text)); use count_upto / count_large when a bound will do)."""
        if self._enc is None:
            return _estimate(text)
        n = len(text)
        if n <= _COUNT_PART_CHARS:
            return self._count_part(text)
        total, pos = 0, 0
        while pos < n:
            end = n if pos + _COUNT_PART_CHARS >= n else self._boundary_at_or_after(text, pos + _COUNT_PART_CHARS, n)
            total += self._count_part(text[pos:end])
            pos = end
        return total

    def count_upto(self, text: str, limit: int) -> int:
        """The exact count when `text` has <= `limit` tokens; otherwise some value > `limit`. Costs O(limit)."""
        limit = max(limit, 0)
        n = len(text)
        if self._enc is None:
            if n > limit * ESTIMATE_BYTES_PER_TOKEN:  # bytes >= chars, so the estimate is over the limit
                return -(-n // ESTIMATE_BYTES_PER_TOKEN)
            return _estimate(text)
        total, pos = 0, 0
        while True:
            budget = limit - total
            if n - pos > budget * self._max_token_chars:  # the rest alone has more than `budget` tokens
                return limit + 1
            want = pos + (budget + 1) * _CHARS_PER_TOKEN_GUESS
            end = n if want >= n else self._boundary_at_or_after(text, want, n)
            total += self._count_part(text[pos:end])
            if end == n or total > limit:
                return total
            pos = end

    def truncate(self, text: str, max_tokens: int) -> tuple[str, int]:
        """The longest prefix of `text`, cut at a token boundary, with <= `max_tokens` tokens, and its count.

        The cut never splits a code point or a surrogate pair, and the count is that of the prefix on its own (what
        a model is charged for it). Costs O(max_tokens), not O(len(text)).
        """
        max_tokens = max(max_tokens, 0)
        if self._enc is None:
            return _truncate_estimate(text, max_tokens)
        n = len(text)
        total, pos = 0, 0
        while True:
            budget = max_tokens - total
            want = pos + (budget + 1) * _CHARS_PER_TOKEN_GUESS
            # Past `hard` the chunk surely holds more than `budget` tokens: search no further for a boundary.
            hard = pos + (budget + 1) * self._max_token_chars
            if want >= n:
                end = n
            else:
                found = _BOUNDARY.search(text, want, min(n, hard))
                end = found.start() if found else min(n, hard)
            chunk = text[pos:end]
            tokens = self._encode(chunk)
            if len(tokens) <= budget:
                total += len(tokens)
                if end == n:
                    return text, total
                pos = end  # a boundary: chunks past `hard` always hold more than `budget` tokens
                continue
            cut, used = self._cut_chunk(chunk, tokens, budget)
            return text[: pos + cut], total + used

    def count_large(self, text: str, exact_limit_chars: int = EXACT_LIMIT_CHARS) -> tuple[int, bool]:
        """Token count of a whole output and whether it is approximate.

        Exact up to `exact_limit_chars` characters; beyond, extrapolated from evenly spaced samples totalling
        max(exact_limit_chars // 4, 64 Ki) chars (each cut at boundaries, so counted exactly), so that a 100 MB
        output does not cost seconds. Texts under twice the sample size are always counted exactly. Also
        approximate when the counter itself is an estimate.
        """
        n = len(text)
        sample_chars = max(exact_limit_chars // 4, 1 << 16)
        if self._enc is None or n <= max(exact_limit_chars, 2 * sample_chars):
            return self.count(text), self.estimated
        window = sample_chars // _SAMPLE_WINDOWS
        tokens = chars = 0
        for i in range(_SAMPLE_WINDOWS):
            start = i * (n - window) // (_SAMPLE_WINDOWS - 1)
            found = _BOUNDARY.search(text, start, min(n, start + window))
            a = found.start() if found else start
            found = _BOUNDARY.search(text, a + window, min(n, a + 2 * window))
            b = found.start() if found else min(n, a + window)
            tokens += self._count_part(text[a:b])
            chars += b - a
        return max(1, round(tokens * n / max(chars, 1))), True

    # -- internals -------------------------------------------------------------------------------------------

    def _encode(self, text: str) -> list[int]:
        assert self._enc is not None
        return self._enc.encode_ordinary(replace_surrogates(text))

    def _count_part(self, text: str) -> int:
        if self._encode_buffer is None:
            return len(self._encode(text))
        return memoryview(self._encode_buffer(replace_surrogates(text), set())).nbytes // 4

    def _boundary_at_or_after(self, text: str, pos: int, n: int) -> int:
        found = _BOUNDARY.search(text, pos)
        return found.start() if found else n

    def _cut_chunk(self, chunk: str, tokens: Sequence[int], budget: int) -> tuple[int, int]:
        """(chars, tokens) of the longest prefix of `chunk` ending at one of its token boundaries, that counts
        <= budget tokens on its own, such that the next such prefix counts more.

        The first `budget` tokens are the natural cut, but re-encoding a prefix that ends inside a pre-token piece
        can give a different count, so the cut walks down until it fits, then up while the next one still fits.
        """
        assert self._enc is not None
        enc = self._enc

        def chars_of(j: int) -> int | None:
            try:
                k = len(enc.decode_bytes(tokens[:j]).decode("utf-8"))
            except UnicodeDecodeError:  # ends inside a multi-byte character
                return None
            if splits_surrogate_pair(chunk, k):
                return None  # between the halves of a surrogate pair
            return k

        best: tuple[int, int] | None = None
        j, steps = budget, 0
        while j > 0 and steps < _MAX_CUT_STEPS:
            k = chars_of(j)
            if k is not None:
                steps += 1
                used = self._count_part(chunk[:k])
                if used <= budget:
                    best = (k, used)
                    break
            j -= 1
        if best is None:
            if j > 0:  # gave up walking down: the last boundary before the natural cut is exact and fits
                natural = len(enc.decode(tokens[:budget], errors="ignore"))
                k = max((m.start() for m in _BOUNDARY.finditer(chunk, 1, natural + 1)), default=0)
                return k, self._count_part(chunk[:k])
            return 0, 0
        j, steps = j + 1, 0
        while j < len(tokens) and steps < _MAX_CUT_STEPS:
            k = chars_of(j)
            if k is not None:
                steps += 1
                used = self._count_part(chunk[:k])
                if used > budget:
                    break
                best = (k, used)
            j += 1
        return best


def _estimate(text: str) -> int:
    return -(-utf8_length(text) // ESTIMATE_BYTES_PER_TOKEN)


def _truncate_estimate(text: str, max_tokens: int) -> tuple[str, int]:
    max_bytes = max_tokens * ESTIMATE_BYTES_PER_TOKEN
    head = text[:max_bytes]  # bytes >= chars: no longer prefix can fit
    raw = head.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return head, -(-len(raw) // ESTIMATE_BYTES_PER_TOKEN)
    prefix = decode_utf8_prefix(raw[:max_bytes])
    if splits_surrogate_pair(text, len(prefix)):
        prefix = prefix[:-1]
    return prefix, _estimate(prefix)


def _longest_token(encoding: tiktoken.Encoding) -> int:
    """The byte length of `encoding`'s longest token: from the ranks it was built from (10 ms for o200k_base), not
    from `token_byte_values()`, which makes a sorted list of 200,000 new bytes objects first (80 ms, on every
    process's start)."""
    ranks = getattr(encoding, "_mergeable_ranks", None)
    if isinstance(ranks, dict) and ranks:
        return max(map(len, ranks))
    return max(len(b) for b in encoding.token_byte_values())
