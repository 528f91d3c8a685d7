"""Linear-time regex / literal search inside stored outputs, with results shaped for a model.

Why RE2 (PyPI `google-re2`, module `re2`): its automata run in time linear in the text whatever the pattern,
so a hostile or careless pattern such as `(a+)+$` cannot pin a worker thread; the price is no backreferences,
lookarounds, possessive or atomic groups, which we reject with a message that says what to use instead.

How the search runs:
- On the stored UTF-8 bytes themselves (bytes or an mmap, via the buffer protocol: no copy, never decoded
  whole), in UTF-8 mode, with `(?m)` so `^`/`$` are per line and `.` never matches "\\n". A pattern that matches
  "\\n" explicitly (`\\n`, `\\s`, `[^x]`) may span lines; the match is reported on the line where it starts.
- The matching core is `scan.py`: windows of bounded size chosen from the pattern's shape so that every match
  is exactly the one RE2 would find on the whole text, the time budget checked between calls, and two ways to
  skip text (a rare byte of the leading literal; a required inner literal, found first, as ripgrep does).
- Matches are non-overlapping and leftmost-first, like Python's `re.finditer`. Counting goes on after
  `max_results` matches up to `max_total_count` or the time budget; past that the total is a lower bound.
- Positions for the model: 1-based line numbers and 1-based inclusive character (code point) offsets that
  feed `read_large_output(start, end)` directly. They are counted (newlines, UTF-8 lead bytes) forward from the
  previous match or from the offload-time index's checkpoint before the match, whichever is nearer: at most one
  16 KiB index block per match, however far apart the matches are.

Pattern rules: at most `max_chars` characters, not empty, no unpaired surrogates; a raw NUL is allowed only
with `literal=True` (in a regex it is almost always an escaping accident; write `\\x00`); a pattern that can
match the empty string (`a*`, `^`, `\\b`, `x|`) is rejected, since it would give empty matches everywhere.
Case-insensitive matching uses Unicode simple case folding ("É" finds "é", "k" finds KELVIN SIGN), but RE2's
`\\w`, `\\d`, `\\s` and `\\b` are ASCII-only: use `\\pL`, `\\p{N}` or `[\\p{L}\\p{N}_]` for any script.
Each compiled pattern owns its RE2 object (not `re2.compile`'s 128-entry cache), whose program and DFA cache
are capped by `max_mem`, and is freed with it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import re2
from re2 import _re2  # the bound RE2 class: searches a buffer at (pos, endpos) without building Python matches

from mcp_offload.errors import SearchError
from mcp_offload.retrieve.pattern_shape import PatternShape, shape_of
from mcp_offload.retrieve.scan import Scan, Searchable
from mcp_offload.store.base import StoredOutput
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.unicode import (
    CONTINUATION_BYTES,
    decode_utf8_prefix,
    encodes_as_utf8,
    replace_surrogates,
)

log = logging.getLogger(__name__)

HARD_MAX_RESULTS = 500  # settings.search_max_results_cap
MAX_CONTEXT_LINES = 10
MIN_LINE_CHARS = 20
MAX_LINE_CHARS = 10_000
DEFAULT_MAX_MEM = 8 << 20  # RE2's own default, set explicitly: program + DFA cache per compiled pattern
_WALK_MAX = 64 << 10  # non-ASCII spans up to this are counted directly; longer ones go through the index
_NEAR = 4096  # look this far for a line's "\n" before falling back to the index

_ANCHOR_BOTH = _re2.RE2.Anchor.ANCHOR_BOTH
_NO_MATCH = (-1, -1)
# One text per (previous, next) character class that RE2's empty-width assertions can tell apart: start/end of
# text, "\n", an ASCII word character, anything else. A pattern matches the empty string somewhere iff it
# matches it at some position of one of these.
_EMPTY_PROBES = tuple((a + b).encode() for a in ("", "\n", "a", " ") for b in ("", "\n", "a", " "))


@dataclass(frozen=True)
class SearchOptions:
    case_sensitive: bool = False
    literal: bool = False
    max_results: int = 50
    context_lines: int = 0
    line_chars: int = 300
    max_total_count: int = 100_000
    time_budget_s: float = 10.0


@dataclass(frozen=True)
class Match:
    """One match. `text` is the line where it starts, cut to about `line_chars` characters around the match.

    `start`/`end` are 1-based inclusive character offsets into the whole output (`text[start-1:end]` of the
    output is the matched text); `before`/`after` are (line number, cut line) pairs of context.
    """

    handle: str
    line: int
    start: int
    end: int
    text: str
    before: tuple[tuple[int, str], ...]
    after: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class SearchResult:
    matches: tuple[Match, ...]
    total_matches: int  # exact when total_is_exact, else a lower bound
    total_is_exact: bool
    truncated: bool  # there are (or may be) matches beyond those returned
    outputs_searched: int


@dataclass(frozen=True)
class CompiledPattern:
    """A validated pattern compiled for RE2. Build with `compile_pattern`; safe to share between threads."""

    pattern: str
    literal: bool
    case_sensitive: bool
    regexp: Any = field(repr=False, compare=False)  # re2._re2.RE2
    lead: str = ""  # text every match starts with ("" when unknown): lets a scan skip ahead on a rare byte
    shape: PatternShape | None = field(default=None, repr=False, compare=False)  # None: read when scanning


# -- compiling -------------------------------------------------------------------------------------------------

_LITERAL_HINT = "or pass literal=true to search for the text exactly as typed"


def _explain(error: str, pattern: str) -> str:
    """Turn an RE2 error into what was unsupported and what to write instead."""
    what, _, arg = error.partition(": ")
    if what == "invalid perl operator":
        if arg in ("(?=", "(?!"):
            return (
                "lookahead (?=...) / (?!...) is not supported (linear-time engine): search for the surrounding "
                f"text itself, e.g. 'foo bar' instead of 'foo(?= bar)', {_LITERAL_HINT}."
            )
        if arg in ("(?<=", "(?<!"):
            return (
                "lookbehind (?<=...) / (?<!...) is not supported (linear-time engine): search for the surrounding "
                f"text itself, e.g. 'foo bar' instead of '(?<=foo )bar', {_LITERAL_HINT}."
            )
        if arg == "(?>":
            return "atomic groups (?>...) are not supported (linear-time engine): use a plain group (?:...)."
        if arg == "(?(":
            return "conditionals (?(1)...|...) are not supported: use an alternation (a|b) instead."
        if arg == "(?#":
            return "inline comments (?#...) are not supported: remove them from the pattern."
        if arg == "(?P" and "(?P=" in pattern:
            return (
                "backreferences (?P=name) are not supported (linear-time engine): repeat the text you expect "
                f"instead, {_LITERAL_HINT}."
            )
        return (
            f"the inline flag or group syntax {arg!r} is not supported: use (?:...) for groups and (?i), (?s), (?m) "
            f"or (?U) for flags, {_LITERAL_HINT}."
        )
    if what == "invalid escape sequence":
        letter = arg[1:2]
        if letter.isdigit() or letter in ("g", "k"):
            return (
                f"backreferences like {arg} are not supported (linear-time engine): repeat the text you expect "
                f"instead (e.g. '(ab)ab' for '(ab)\\1'), {_LITERAL_HINT}."
            )
        if letter == "Z":
            return "\\Z is not supported: use \\z for the end of the text or $ for the end of a line."
        if letter in ("u", "U", "N"):
            return f"{arg} is not supported: write a code point as \\x{{263A}}, or put the character itself."
        if letter in ("G", "K", "R", "X", "h", "H", "v", "V", "e", "c"):
            return f"the escape {arg} is not supported: use \\s, \\w, \\d, [...] classes or \\x{{..}}, {_LITERAL_HINT}."
        return f"invalid escape sequence {arg}: escape only punctuation, {_LITERAL_HINT}."
    if what == "bad repetition operator":
        if len(arg) >= 2 and arg[-1] == "+":
            return (
                f"possessive quantifiers ({arg}) are not supported (linear-time engine, none are needed): "
                "drop the trailing '+', e.g. 'a+' instead of 'a++'."
            )
        return f"bad repetition operator {arg!r}: a quantifier must follow something to repeat, {_LITERAL_HINT}."
    if what == "invalid repetition size":
        return f"repetition count {arg} is too large: counts go up to 1000 in total, e.g. '\\w{{1,100}}'."
    if what == "invalid character class range" and arg.startswith(("\\p", "\\P")):
        return f"unknown unicode class {arg}: use e.g. \\p{{L}}, \\p{{Greek}}, \\p{{Nd}}, or a [...] class."
    if error.startswith("pattern too large"):
        return (
            "the pattern is too large for the linear-time engine's memory cap: use smaller repetition counts "
            f"(e.g. '\\w{{1,50}}' instead of '\\w{{1,1000}}') or fewer alternatives, {_LITERAL_HINT}."
        )
    return f"invalid regular expression ({error}): fix the pattern, {_LITERAL_HINT}."


def compile_pattern(
    pattern: str,
    *,
    literal: bool,
    case_sensitive: bool,
    max_chars: int = 4096,
    max_mem: int = DEFAULT_MAX_MEM,
) -> CompiledPattern:
    """Validate and compile `pattern` (raises `SearchError` with a message for the model)."""
    if not isinstance(pattern, str) or not pattern:
        raise SearchError("the pattern is empty: give the text or regular expression to search for.")
    if len(pattern) > max_chars:
        raise SearchError(
            f"the pattern has {len(pattern):,} characters; the limit is {max_chars:,}. Search for a shorter, "
            "distinctive part of the text."
        )
    if not encodes_as_utf8(pattern):
        raise SearchError("the pattern contains an unpaired surrogate code point: remove it or search nearby text.")
    if "\x00" in pattern and not literal:
        raise SearchError("the pattern contains a raw NUL character: write it as \\x00, or pass literal=true.")
    source = re2.escape(pattern) if literal else pattern
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True  # groups are not reported; one span per match is all RE2 needs to find
    options.case_sensitive = case_sensitive  # Unicode simple case folding: "É" finds "é"
    options.max_mem = max_mem
    regexp = _re2.RE2(("(?m)" + source).encode("utf-8"), options)
    if not regexp.ok():
        error = regexp.error()
        raise SearchError(_explain(error.decode("utf-8", "replace") if isinstance(error, bytes) else error, pattern))
    for probe in _EMPTY_PROBES:
        for pos in range(len(probe) + 1):
            if regexp.Match(_ANCHOR_BOTH, probe, pos, pos)[0] != _NO_MATCH:
                raise SearchError(
                    "the pattern can match the empty string (like 'a*', 'x?', '^', '$', '\\b' or an empty "
                    "alternative 'a|'), which would give empty matches everywhere. Make it consume at least one "
                    "character: use + instead of *, drop the empty alternative; to find empty lines search '^\\r?\\n'."
                )
    shape = shape_of(pattern, literal=literal, case_sensitive=case_sensitive)
    lead = pattern if literal else _leading_literal(pattern)
    if not lead and shape.prefix is not None and shape.prefix.folded != case_sensitive:
        lead = shape.prefix.text  # read by the parser past what the quick reader stops at, e.g. "(?s)timeout"
    return CompiledPattern(pattern, literal, case_sensitive, regexp, lead, shape)


_META = frozenset("\\.^$*+?()[]{}|")
_QUANTIFIERS = frozenset("*?{")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _leading_literal(pattern: str) -> str:
    """The literal text every match of `pattern` starts with, read conservatively ("" when unsure).

    Plain characters and escaped punctuation count; we stop at anything else (classes, groups, escapes like
    \\d, anchors) and drop a character that a quantifier makes optional. Any "|" anywhere gives "".
    """
    if "|" in pattern:
        return ""
    out: list[str] = []
    i = 1 if pattern.startswith("^") else 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if pattern[i + 1 : i + 2] not in _PUNCTUATION:
                break
            char, width = pattern[i + 1], 2
        elif char in _META:
            break
        else:
            width = 1
        after = pattern[i + width : i + width + 1]
        if after in _QUANTIFIERS:
            break
        out.append(char)
        if after == "+":
            break
        i += width
    return "".join(out)


# -- positions and lines for the model -------------------------------------------------------------------------


def _decode(raw: bytes) -> str:
    """Decode bytes that start at a character boundary and may end inside one (the incomplete tail is dropped);
    lone surrogates become U+FFFD so the text can always be serialised."""
    return replace_surrogates(decode_utf8_prefix(raw))


def _decode_tail(raw: bytes) -> str:
    """Decode bytes that end at a character boundary and may start inside one (leading continuations dropped)."""
    return _decode(raw.lstrip(CONTINUATION_BYTES))


def _cut_marks(body: str, cut_left: int, cut_right: int) -> str:
    left = f"[{cut_left:,} chars cut]…" if cut_left else ""
    right = f"…[{cut_right:,} chars cut]" if cut_right else ""
    return left + body + right


class _Locator:
    """Byte -> (line, char) for increasing byte positions, plus line bounds and cut line text.

    Counts newlines and UTF-8 lead bytes from the previous position or from the index checkpoint before the new
    one, whichever is nearer (`move`), so a lookup costs at most one index block (16 KiB), usually much less.
    """

    def __init__(self, data: Searchable, index: ContentIndex, line_chars: int) -> None:
        self.data = data
        self.index = index
        self.width = line_chars
        self.byte = 0
        self.char = 0  # characters before self.byte
        self.line = 1  # line containing self.byte

    def _chars(self, raw: bytes | bytearray) -> int:
        return len(raw) if self.index.ascii else len(raw.translate(None, CONTINUATION_BYTES))

    def chars_between(self, lo: int, hi: int) -> int:
        if self.index.ascii:
            return hi - lo
        if hi - lo <= _WALK_MAX:
            return self._chars(self.data[lo:hi])
        return self.index.char_of_byte(self.data, hi) - self.index.char_of_byte(self.data, lo)

    def move(self, pos: int) -> tuple[int, int]:
        """(line, characters before pos) for a character-boundary `pos` >= the previous one.

        Counts forward from the previous position or from the index checkpoint before `pos`, whichever is nearer:
        at most one index block (16 KiB) of newlines (and, for non-ASCII text, lead bytes) per match, however far
        apart the matches are (counting is the cost here: ~2 GB/s, where copying the gap is ~30)."""
        base, newlines, chars = self.index.checkpoint(pos)
        if 0 <= pos - self.byte <= pos - base:
            base, line, chars = self.byte, self.line, self.char
        else:
            line = newlines + 1
        raw = self.data[base:pos]  # a copy (mmap slice) of at most one block
        self.line = line + raw.count(b"\n")
        self.char = pos if self.index.ascii else chars + self._chars(raw)
        self.byte = pos
        return self.line, self.char

    def line_start(self, pos: int, line: int) -> int:
        """Byte where the line containing `pos` (whose number is `line`) starts."""
        lo = max(0, pos - _NEAR)
        found = self.data.rfind(b"\n", lo, pos)
        if found >= 0:
            return found + 1
        return 0 if lo == 0 else self.index.byte_of_line(self.data, line)

    def line_end(self, pos: int, line: int) -> int:
        """Byte where the line containing `pos` ends (its "\\n", or the end of the text)."""
        size = len(self.data)
        hi = min(size, pos + _NEAR)
        found = self.data.find(b"\n", pos, hi)
        if found >= 0:
            return found
        if hi == size:
            return size
        nxt = self.index.byte_of_line(self.data, line + 1)
        return nxt - 1 if nxt > pos and self.data[nxt - 1] == 0x0A else nxt

    def show_line(self, lo: int, hi: int) -> str:
        """The line occupying bytes [lo, hi), cut to `width` characters from its start."""
        limit = 4 * self.width + 4
        if hi - lo <= limit:
            text = _decode(bytes(self.data[lo:hi]))
            if len(text) <= self.width:
                return text.removesuffix("\r")
            return _cut_marks(text[: self.width], 0, len(text) - self.width)
        text = _decode(bytes(self.data[lo : lo + limit]))[: self.width]
        return _cut_marks(text, 0, self.chars_between(lo, hi) - self.width)

    def show_match_line(self, lo: int, hi: int, start: int, stop: int) -> str:
        """The line [lo, hi) cut to `width` characters around the match [start, stop) (clipped to the line)."""
        width, limit = self.width, 4 * self.width + 4
        if hi - lo <= width:  # the whole line fits (a character takes at least one byte): one decode, no cut
            return _decode(bytes(self.data[lo:hi])).removesuffix("\r")
        stop = min(stop, hi)
        near_left = max(lo, start - limit)
        left = _decode_tail(bytes(self.data[near_left:start]))
        left_total = len(left) if near_left == lo else self.chars_between(lo, start)
        body = _decode(bytes(self.data[start : min(stop, start + limit)]))
        body_total = len(body) if stop - start <= limit else self.chars_between(start, stop)
        right = _decode(bytes(self.data[stop : min(hi, stop + limit)]))
        right_total = len(right) if hi - stop <= limit else self.chars_between(stop, hi)
        if left_total + body_total + right_total <= width:
            return (left + body + right).removesuffix("\r")
        if body_total >= width:  # the match alone fills the window: show its beginning
            return _cut_marks(body[:width], left_total, body_total - width + right_total)
        room = width - body_total
        keep_right = min(right_total, room - min(left_total, room // 2))
        keep_left = min(left_total, room - keep_right)
        shown = (left[len(left) - keep_left :] if keep_left else "") + body + right[:keep_right]
        if keep_right == right_total:
            shown = shown.removesuffix("\r")
        return _cut_marks(shown, left_total - keep_left, right_total - keep_right)


def _build_match(output: StoredOutput, locator: _Locator, start: int, stop: int, context: int) -> Match:
    line, chars_before = locator.move(start)
    match_chars = locator.chars_between(start, stop)
    lo = locator.line_start(start, line)
    hi = locator.line_end(start, line)
    text = locator.show_match_line(lo, hi, start, stop)
    before: list[tuple[int, str]] = []
    cursor = lo
    for number in range(line - 1, max(0, line - 1 - context), -1):
        end = cursor - 1  # the "\n" that ends line `number`
        cursor = locator.line_start(end, number)
        before.append((number, locator.show_line(cursor, end)))
    before.reverse()
    after: list[tuple[int, str]] = []
    cursor = hi
    for number in range(line + 1, min(output.index.lines, line + context) + 1):
        begin = cursor + 1
        cursor = locator.line_end(begin, number)
        after.append((number, locator.show_line(begin, cursor)))
    return Match(
        handle=output.meta.handle,
        line=line,
        start=chars_before + 1,
        end=chars_before + match_chars,
        text=text,
        before=tuple(before),
        after=tuple(after),
    )


# -- the public searches ---------------------------------------------------------------------------------------


def _checked(options: SearchOptions, max_results_cap: int) -> SearchOptions:
    if options.max_results < 1:
        raise SearchError("max_results must be at least 1.")
    if not 0 <= options.context_lines <= MAX_CONTEXT_LINES:
        raise SearchError(f"context_lines must be between 0 and {MAX_CONTEXT_LINES}.")
    if not MIN_LINE_CHARS <= options.line_chars <= MAX_LINE_CHARS:
        raise SearchError(f"line_chars must be between {MIN_LINE_CHARS} and {MAX_LINE_CHARS:,}.")
    if options.max_total_count < 1 or options.time_budget_s <= 0:
        raise SearchError("max_total_count and time_budget_s must be positive.")
    if options.max_results > max_results_cap:
        options = replace(options, max_results=max_results_cap)
    return options


def _searchable(output: StoredOutput) -> Searchable:
    data = output.contiguous()  # bytes / mmap as they are; a lazy Redis view is fetched once (we run in a thread)
    return bytes(data) if isinstance(data, memoryview) else data  # a memoryview has no find/rfind: one copy


class _Tally:
    """Matches and counts across one or more outputs, under one shared budget."""

    def __init__(self, options: SearchOptions) -> None:
        self.options = options
        self.deadline = time.monotonic() + options.time_budget_s
        self.matches: list[Match] = []
        self.total = 0
        self.exact = True
        self.searched = 0

    def add(self, output: StoredOutput, pattern: CompiledPattern) -> bool:
        """Search one output; False once the budget (count or time) is spent."""
        options = self.options
        data = _searchable(output)
        locator = _Locator(data, output.index, options.line_chars)
        scan = Scan(data, pattern, self.deadline)
        if time.monotonic() > self.deadline:
            self.exact = False
            return False
        self.searched += 1
        for start, stop in scan:
            if self.total >= options.max_total_count:
                self.exact = False  # there is at least one more
                return False
            self.total += 1
            if len(self.matches) < options.max_results:
                self.matches.append(_build_match(output, locator, start, stop, options.context_lines))
        if not scan.finished:
            self.exact = False
            log.info("search stopped by its time budget after %d matches", self.total)
            return False
        return True

    def result(self) -> SearchResult:
        return SearchResult(
            matches=tuple(self.matches),
            total_matches=self.total,
            total_is_exact=self.exact,
            truncated=not self.exact or self.total > len(self.matches),
            outputs_searched=self.searched,
        )


def search_output(
    output: StoredOutput,
    pattern: CompiledPattern,
    options: SearchOptions,
    *,
    max_results_cap: int = HARD_MAX_RESULTS,
) -> SearchResult:
    """Search one text/json/jsonl output. Sync and CPU-bound: run it in a worker thread."""
    if output.meta.kind == "blob":
        raise SearchError(
            f"{output.meta.handle} is binary ({output.meta.mime_type or 'application/octet-stream'}) and cannot be "
            "searched; search a text or JSON output instead."
        )
    tally = _Tally(_checked(options, max_results_cap))
    tally.add(output, pattern)
    return tally.result()


def search_outputs(
    outputs: Iterable[StoredOutput],
    pattern: CompiledPattern,
    options: SearchOptions,
    *,
    max_results_cap: int = HARD_MAX_RESULTS,
) -> SearchResult:
    """Search several outputs in the order given (newest first), skipping binary ones; matches are merged in
    that order up to max_results, and the total counts all outputs under one count and time budget."""
    tally = _Tally(_checked(options, max_results_cap))
    for output in outputs:
        if output.meta.kind == "blob":
            continue
        if not tally.add(output, pattern):
            break
    return tally.result()
