"""The printer: a match's place for the model (line number, character offsets) and the lines shown with it.

Positions are 1-based line numbers and 1-based inclusive character (code point) offsets that feed
`read_large_output(start, end)` directly. They are counted (newlines, UTF-8 lead bytes) forward from the previous
match or from the offload-time index's checkpoint before the match, whichever is nearer: at most one 16 KiB index
block per match, however far apart the matches are. A shown line is cut to about `line_chars` characters around
the match, with the number of characters cut on each side.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_offload.retrieve.scan import Searchable
from mcp_offload.store.base import StoredOutput
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.unicode import CONTINUATION_BYTES, decode_utf8_prefix, replace_surrogates

_WALK_MAX = 64 << 10  # non-ASCII spans up to this are counted directly; longer ones go through the index
_NEAR = 4096  # look this far for a line's "\n" before falling back to the index


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


class Locator:
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


def build_match(output: StoredOutput, locator: Locator, start: int, stop: int, context: int) -> Match:
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
