"""The matching core of search: every non-overlapping match of a compiled pattern in stored bytes, exactly as RE2's
leftmost-first `finditer` over the whole text would give them, in calls of bounded size.

RE2 releases the GIL while matching, but one call cannot be interrupted, so the text is searched in windows and
the time budget is checked between calls. A call on a window [pos, end) sees the bytes around it (`^`, `$`, `\\b`
look past the window), so a match it returns is a real match; it is the right one unless a match that the window
cuts off (one starting before its end and ending after) would have come first or been longer. Each window is
therefore chosen so that cannot happen, from the pattern's shape (`pattern_shape.py`):
- a pattern that cannot match "\\n" ends its window just after a "\\n" (no match crosses it); a single line
  longer than the window is searched in one call up to its end;
- a pattern whose matches are at most `L` bytes long (`L` <= `OVERLAP`) trusts a match starting at least `L`
  bytes before the window's end; otherwise the next window starts `L` - 1 bytes before the end;
- any other pattern (unbounded and able to cross lines, like `(?s)x.*y` or `a[^b]*b`) is searched to the end of
  the text in one call, which RE2 stops as soon as the next match is settled: exact, but such a call is only
  bounded by the distance to that point.

Two ways to skip text RE2 would otherwise read byte by byte (RE2 only accelerates on a literal first byte):
- `Skip`: when every match starts with a known literal whose first byte is common in this text but which holds
  a rare byte, find the rare part first (memchr, in C) and start the search just before it.
- `Prefilter`: when every match is on one line and contains one of a few literals that are rare in this text
  (`[a-z]+Exception: timeout` needs "Exception: timeout"; `timeout|ZEBRA-\\d+` needs "timeout" or "ZEBRA-";
  case-insensitive ones are found case-folded), find them first and search only the lines that hold them, one
  RE2 call per line (they are rare, or the prefilter is not used). Each literal is found from its rarest
  character on, by RE2's memchr on that character's byte (one finder per case variant when folded), so each
  finder reads the text once at memory speed; this is what ripgrep does with SIMD literal search.
"""

from __future__ import annotations

import mmap
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import re2

from mcp_offload.retrieve.pattern import CompiledPattern
from mcp_offload.retrieve.pattern_shape import Clause, Needle, PatternShape
from mcp_offload.retrieve.re2_binding import UNANCHORED, Regexp, build_regexp
from mcp_offload.unicode import is_continuation_byte

WINDOW = 1 << 20  # bytes per uninterruptible RE2 call: bounds how late the time budget can be noticed
OVERLAP = 64 << 10  # a pattern whose matches are at most this long is searched in overlapping windows
SKIP_MIN_BYTES = 256 << 10  # below this a plain scan is already fast
PREFILTER_MIN_BYTES = 256 << 10
PREFILTER_CHUNK = 16 << 20  # bytes per literal find between deadline checks
MAX_FINDERS = 8  # each finder is one memchr-speed pass over the text
_LINE_HITS = 4  # hits of one finder followed one by one on a line; past them, the line is searched to its end
_SAMPLE = 64 << 10

Searchable = bytes | bytearray | mmap.mmap  # stored bytes with find/rfind (memchr speed), searched in place


def _is_continuation(data: Searchable, pos: int) -> bool:
    return 0 < pos < len(data) and is_continuation_byte(data[pos])


def _char_boundary(data: Searchable, pos: int) -> int:
    """The first character boundary at or after byte `pos`."""
    while _is_continuation(data, pos):
        pos += 1
    return pos


def _whole_chars(data: Searchable, start: int, stop: int) -> tuple[int, int, int]:
    """A match [start, stop) widened to whole characters (only `\\C` can start or stop inside one), and where the
    search goes on: after it, or one character on from an empty span (which the patterns `compile_pattern`
    accepts cannot give), so a loop never stalls. A span with stop == start is not a match."""
    while start > 0 and 0x80 <= data[start] < 0xC0:
        start -= 1
    if stop < len(data) and 0x80 <= data[stop] < 0xC0:
        stop = _char_boundary(data, stop)
    return start, stop, stop if stop > start else _char_boundary(data, start + 1)


class Sample:
    """Three 64 KiB pieces of the text (start, middle, end) for the planners to count in, with the count of each
    byte value made in one vectorised pass the first time one is asked for (counting bytes one `bytes.count`
    at a time cost 0.15 ms each: ~3 ms to plan a 16-character literal, half of `rg`'s time on 10 MB)."""

    def __init__(self, data: Searchable) -> None:
        size = len(data)
        if size <= 3 * _SAMPLE:
            self.data = bytes(data)
        else:
            middle = size // 2
            self.data = bytes(data[:_SAMPLE]) + bytes(data[middle : middle + _SAMPLE]) + bytes(data[-_SAMPLE:])
        self._bytes: list[int] | None = None

    def __len__(self) -> int:
        return len(self.data)

    def count(self, needle: bytes) -> int:
        """Occurrences of `needle` in the sample."""
        if len(needle) != 1:
            return self.data.count(needle)
        if self._bytes is None:
            self._bytes = np.bincount(np.frombuffer(self.data, np.uint8), minlength=256).tolist()
        return self._bytes[needle[0]]


@dataclass(frozen=True)
class Skip:
    """A byte literal found inside every match, starting at most `max_offset` bytes after the match starts.

    RE2 accelerates a search only on the first byte of a pattern's literal prefix (memchr). When that byte is
    common in the text but the prefix holds a rare one, scanning for the rare part first (also memchr, in C)
    and starting the real search just before it skips most of the text.
    """

    regexp: Regexp
    size: int
    max_offset: int


def worth_skipping(rare: float, first: float, case_sensitive: bool) -> bool:
    """Rates are hits per byte in a sample of the text; a memchr hit costs about 12 ns. Case-insensitive
    searches otherwise run RE2's shift-DFA (about 0.25 ns a byte), so the rare byte must be rarer than about
    1 in 50 bytes; case-sensitive ones already memchr the lead's first byte, so the rare byte must beat it."""
    if case_sensitive:
        return rare * 4 <= first and rare <= 1 / 64
    return rare <= 1 / 64


def plan_skip(data: Searchable, pattern: CompiledPattern, sample: Sample | None = None) -> Skip | None:
    if not pattern.lead or not data or len(data) < SKIP_MIN_BYTES:
        return None
    raw = pattern.lead.encode("utf-8")
    seen = Sample(data) if sample is None else sample

    def rate(byte: int) -> float:
        return seen.count(bytes((byte,))) / len(seen)

    if pattern.case_sensitive:
        k = min(range(len(raw)), key=lambda j: rate(raw[j]))
        literal, max_offset = raw[k:], k  # the exact bytes of the lead follow the match start
    else:
        # Only ASCII non-letters are caseless; letters before them may match case variants of another length
        # (k ~ KELVIN SIGN), so bound the offset by 4 bytes per character.
        caseless = [j for j in range(len(raw)) if raw[j] < 0x80 and not chr(raw[j]).isalpha()]
        if not caseless:
            return None
        k = min(caseless, key=lambda j: rate(raw[j]))
        stop = k
        while stop < len(raw) and raw[stop] < 0x80 and not chr(raw[stop]).isalpha():
            stop += 1
        literal, max_offset = raw[k:stop], 4 * len(raw[:k].decode("utf-8"))
    if not worth_skipping(rate(raw[k]), rate(raw[0]), pattern.case_sensitive):
        return None
    regexp = build_regexp(literal, literal=True, latin1=True)  # raw bytes: it may start inside a character
    return Skip(regexp, len(literal), max_offset) if regexp.ok() else None


def worth_prefiltering(hits: int, sample_size: int) -> bool:
    """A candidate costs about a microsecond of Python (two finds, one RE2 call): worth it while candidates are
    rarer than about one in 4 KiB, where RE2 alone would read the text at about 1 GB/s."""
    return hits * 4096 <= sample_size


# Unicode simple case folding of ASCII letters, as RE2 applies it: each letter and its other case, plus KELVIN SIGN
# for k and LONG S for s (checked against RE2 over every code point in the tests).
_EXTRA_FOLDS = {"k": "\u212a", "s": "\u017f"}


def ascii_fold_orbit(char: str) -> tuple[str, ...]:
    """Every character RE2 treats as equal to the ASCII `char` under case-insensitive matching."""
    if not char.isalpha():
        return (char,)
    lower = char.lower()
    return (lower, lower.upper(), *_EXTRA_FOLDS.get(lower, ""))


def _regexp(pattern: bytes, *, literal: bool, latin1: bool) -> Regexp | None:
    regexp = build_regexp(pattern, literal=literal, latin1=latin1)  # latin1: a literal may start inside a character
    return regexp if regexp.ok() else None


@dataclass(frozen=True)
class Finder:
    """Finds every occurrence of one needle (its tail from a rare character on, with RE2's memchr on that
    character's first byte): a line holding the needle holds a hit. `reach` bounds a hit's length in bytes."""

    regexp: Regexp
    reach: int


def _finder_cost(variants: tuple[str, ...], sample: Sample) -> float:
    """What finding these characters costs, in hits of the sample: each variant is one more pass over the text
    (about 0.1 ns a byte at memchr speed), and each hit costs about 20 ns, so a pass is worth a hit in 200 bytes."""
    return len(variants) * len(sample) / 200 + sum(sample.count(variant.encode()) for variant in variants)


def _finders(needle: Needle, sample: Sample) -> tuple[Finder, ...] | None:
    """The finders that together hit every occurrence of `needle`, each from its rarest character on."""
    text = needle.text
    if not needle.folded:
        raw = text.encode("utf-8")
        k = min(range(len(raw)), key=lambda j: sample.count(raw[j : j + 1]))
        regexp = _regexp(raw[k:], literal=True, latin1=True)
        return None if regexp is None else (Finder(regexp, len(raw) - k),)
    # Folded: start from the ASCII character whose case variants are rarest (one finder per variant, each led by
    # a literal byte); the tail after it is matched case-insensitively by RE2 itself, so folds agree with RE2's.
    ascii_at = [j for j, char in enumerate(text) if char < "\x80"]
    if not ascii_at:
        return None
    k = min(ascii_at, key=lambda j: _finder_cost(ascii_fold_orbit(text[j]), sample))
    tail = re2.escape(text[k + 1 :])
    reach = 4 * (len(text) - k)  # a folded character takes at most 4 bytes
    finders = []
    for variant in ascii_fold_orbit(text[k]):
        source = re2.escape(variant) + (f"(?i:{tail})" if tail else "")
        regexp = _regexp(source.encode("utf-8"), literal=False, latin1=False)
        if regexp is None:
            return None
        finders.append(Finder(regexp, reach))
    return tuple(finders)


def _count(needle: Needle, sample: Sample) -> int:
    if not needle.folded:
        return sample.count(needle.text.encode("utf-8"))
    options = re2.Options()
    options.case_sensitive = False
    options.literal = True
    options.log_errors = False
    return sum(1 for _ in re2.compile(needle.text.encode("utf-8"), options).finditer(sample.data))


@dataclass(frozen=True)
class Prefilter:
    """Needles one of which every match holds on its line, and the finders that hit every occurrence of them."""

    needles: Clause
    finders: tuple[Finder, ...]


def plan_prefilter(data: Searchable, shape: PatternShape, sample: Sample | None = None) -> Prefilter | None:
    """The clause to find first (the rarest in a sample of the text), or None to search the text as it is."""
    if shape.spans_lines or not shape.needs or len(data) < PREFILTER_MIN_BYTES:
        return None
    sample = Sample(data) if sample is None else sample
    counts: dict[Needle, int] = {}
    for clause in shape.needs:
        for needle in clause:
            if needle not in counts:
                counts[needle] = _count(needle, sample)

    def cost(clause: Clause) -> tuple[int, int, int]:
        return sum(counts[n] for n in clause), len(clause), -min(len(n.text) for n in clause)

    best = min(shape.needs, key=cost)
    if not worth_prefiltering(cost(best)[0], len(sample)):
        return None
    finders: list[Finder] = []
    for needle in best:
        found = _finders(needle, sample)
        if found is None:
            return None
        finders.extend(found)
    return Prefilter(best, tuple(finders)) if len(finders) <= MAX_FINDERS else None


class Scan:
    """The non-overlapping matches of one output as (start, end) byte spans, in order, until a deadline.

    `finished` tells whether the text was scanned to its end (False: the deadline stopped it).
    """

    def __init__(self, data: Searchable, pattern: CompiledPattern, deadline: float) -> None:
        self.data = data
        self.regexp = pattern.regexp
        self.shape = pattern.shape
        # A case-sensitive leading literal is RE2's own fast path (memchr on its first byte, or `Skip` to a rarer
        # byte in it); a folded one is not (RE2 reads it with a slower shift-DFA), nor is a literal further in.
        sample = Sample(data) if len(data) >= min(PREFILTER_MIN_BYTES, SKIP_MIN_BYTES) else None
        self.prefilter = None if pattern.lead and pattern.case_sensitive else plan_prefilter(data, self.shape, sample)
        self.skip = None if self.prefilter is not None else plan_skip(data, pattern, sample)
        self.deadline = deadline
        self.finished = False
        self._stopped = False

    def __iter__(self) -> Iterator[tuple[int, int]]:
        if self.prefilter is None:
            yield from self._matches(0, len(self.data))
        else:
            yield from self._prefiltered(self.prefilter.finders)
        self.finished = not self._stopped

    def _late(self) -> bool:
        if time.monotonic() > self.deadline:
            self._stopped = True
        return self._stopped

    def _next_hit(self, finder: Finder, at: int) -> int:
        """The first hit of `finder` at or after `at`, or -1 (none, or the deadline passed: see `_stopped`)."""
        data, size = self.data, len(self.data)
        while at < size:
            stop = min(size, at + max(PREFILTER_CHUNK, 2 * finder.reach))
            found: int = finder.regexp.Match(UNANCHORED, data, at, stop)[0][0]
            if found >= 0:
                return found
            if stop >= size or self._late():
                return -1
            at = stop - finder.reach + 1  # a hit may straddle the chunk's end
        return -1

    def _prefiltered(self, finders: tuple[Finder, ...]) -> Iterator[tuple[int, int]]:
        """The matches on the lines that hold a hit of the finders, so every match. Each finder keeps its next
        hit, so each reads the text once.

        The hot loop of a prefiltered search (thousands of candidate lines are common), kept lean: a line (at
        most a window long) is searched inline, as `_matches` searches one final window (no match crosses a
        line's ends), without its window and skip bookkeeping, which cost a third of the whole search. Every
        match holds a hit, so once a line's hits are all before the end of a match, the line has no more."""
        data, size = self.data, len(self.data)
        match, find, rfind = self.regexp.Match, data.find, data.rfind
        next_hit, clock, deadline = self._next_hit, time.monotonic, self.deadline
        hits = [next_hit(finder, 0) for finder in finders]
        floor = 0  # a line start: every match before it has been yielded
        while not self._stopped:
            if clock() > deadline:
                self._stopped = True
                return
            found = -1
            for hit in hits:
                if hit >= 0 and (found < 0 or hit < found):
                    found = hit
            if found < 0:
                return
            newline = rfind(b"\n", floor, found)
            lo = newline + 1 if newline >= 0 else floor
            newline = find(b"\n", found)
            hi = floor = size if newline < 0 else newline + 1
            last = found  # the last hit on this line (or, past a few hits, the line's end)
            for i, hit in enumerate(hits):
                for _ in range(_LINE_HITS):
                    if not 0 <= hit < hi:
                        break
                    last = max(last, hit)
                    hit = hits[i] = next_hit(finders[i], hit + 1)
                else:
                    if 0 <= hit < hi:
                        last = hi
                        hits[i] = next_hit(finders[i], hi)
            if hi - lo > WINDOW:
                yield from self._matches(lo, hi)
                continue
            pos = lo
            while pos <= last:  # a match holds a hit: none starts after the line's last hit
                start, stop = match(UNANCHORED, data, pos, hi)[0]
                if start < 0:
                    break
                start, stop, pos = _whole_chars(data, start, stop)
                if stop > start:
                    yield start, stop

    def _line_end(self, pos: int) -> int:
        """Just after the "\\n" that ends the line holding byte `pos` - 1 (or the end of the text)."""
        found = self.data.find(b"\n", pos)
        return len(self.data) if found < 0 else found + 1

    def _window_end(self, pos: int, hi: int) -> tuple[int, bool]:
        """Where the next RE2 call stops, and whether every match it returns is final (no match crosses it)."""
        if hi - pos <= WINDOW:
            return hi, True
        data, shape = self.data, self.shape
        if not shape.spans_lines:
            newline = data.rfind(b"\n", pos, pos + WINDOW)
            if newline >= pos:
                return newline + 1, True
        if shape.max_bytes is not None and shape.max_bytes <= OVERLAP < WINDOW:
            return _char_boundary(data, pos + WINDOW), False
        if not shape.spans_lines:  # one line longer than the window: search it to its end
            return min(hi, self._line_end(pos + WINDOW)), True
        return hi, True

    def _matches(self, lo: int, hi: int) -> Iterator[tuple[int, int]]:
        """The matches in [lo, hi), where no match crosses `lo` or `hi`."""
        data, regexp, skip = self.data, self.regexp, self.skip
        longest = self.shape.max_bytes or 0
        pos = lo  # every match starting before pos has been yielded
        end, final = lo, True  # the current window [.., end): kept while pos is inside it (one rfind per window)
        while pos < hi:
            if self._late():
                return
            if skip is not None:
                # A match starting at s >= pos holds the skip literal at s + offset (offset <= max_offset), so
                # no match starts before (first such literal at or after pos) - max_offset.
                limit = min(hi, pos + max(WINDOW, 4 * (skip.size + skip.max_offset)))
                found = skip.regexp.Match(UNANCHORED, data, pos, limit)[0][0]
                if found < 0:
                    if limit >= hi:
                        return
                    pos = _char_boundary(data, limit - skip.size + 1 - skip.max_offset)
                    continue
                if found - skip.max_offset > pos:
                    pos = found - skip.max_offset
                    while _is_continuation(data, pos):
                        pos -= 1
            if pos >= end:
                end, final = self._window_end(pos, hi)
            start, stop = regexp.Match(UNANCHORED, data, pos, end)[0]
            if not final and (start < 0 or start + longest > end):
                # No match starts in [pos, end - longest]: one there would lie inside the window.
                # (A window made at pos has end - longest >= pos; one kept from earlier is just made anew here.)
                pos = _char_boundary(data, max(pos, end - longest + 1))
                end = pos
                continue
            if start < 0:
                if end >= hi:
                    return
                pos = end
                continue
            start, stop, pos = _whole_chars(data, start, stop)
            if stop > start:
                yield start, stop
