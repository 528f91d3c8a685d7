"""The offload-time index that makes reads O(range), not O(output).

Content is stored as UTF-8 bytes (lone surrogates kept with `surrogatepass`, so every stored string round-trips
exactly). Every `BLOCK` bytes we record two checkpoints: how many characters and how many newlines come before
the block. A position lookup is a binary search over the checkpoints plus a scan of at most one block (16 KiB):
a 4 KB read from a 100 MB output touches ~20 KB, whatever the output's size.

"Character" means Unicode code point, counted as UTF-8 lead bytes (any byte that is not 0b10xxxxxx), which is
exact for everything we store from a `str`. Lines are split on "\\n" only; "\\r" stays part of the line, so a
read returns the exact original text. A final line without "\\n" still counts as a line.
"""

from __future__ import annotations

import codecs
import mmap
import struct
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Protocol

BLOCK = 16 * 1024
_NEWLINE_CHUNK = 4 << 20  # bytes compared at a time when finding newlines (bounds the comparison's temporary)
_CONTINUATION = bytes(range(0x80, 0xC0))
_MAGIC = b"MOIX1\n"

Buffer = bytes | bytearray | memoryview | mmap.mmap  # stored bytes or an mmap of them
Encoded = bytes | mmap.mmap  # a text's UTF-8 bytes, or a read-only mapping of them (slices of either are bytes)


class ByteSource(Protocol):
    """What lookups read from: stored bytes, an mmap, or a lazy view fetched on demand (the Redis backend)."""

    def __getitem__(self, key: slice, /) -> bytes | bytearray | memoryview: ...


_HEADER = struct.Struct("<QQQI?")


def _count_chars(chunk: bytes) -> int:
    """Code points in a UTF-8 chunk: every byte that is not a continuation byte starts one."""
    return len(chunk.translate(None, _CONTINUATION))


def _newlines(data: Encoded) -> tuple[int, array[int]]:
    """(newlines in `data`, newlines before each block). The newlines' offsets are found by numpy (a byte compare and
    a nonzero scan, ~0.25 ms a MB, where `bytes.count` block by block took ~1 ms), then counted per block by a
    binary search. numpy is imported here: a command that only lists the store (`outputs list`) never needs it."""
    import numpy as np

    view = np.frombuffer(data, dtype=np.uint8)
    found = [np.flatnonzero(view[at : at + _NEWLINE_CHUNK] == 10) + at for at in range(0, len(data), _NEWLINE_CHUNK)]
    offsets = np.concatenate(found) if found else np.zeros(0, dtype=np.intp)
    before = np.searchsorted(offsets, np.arange(0, len(data), BLOCK), side="left").astype(np.uint64)
    starts = array("Q")
    starts.frombytes(before.tobytes())
    return len(offsets), starts


@dataclass(frozen=True, slots=True)
class ContentIndex:
    size: int  # bytes
    chars: int
    lines: int
    ascii: bool  # then char offsets == byte offsets and no per-block work is needed
    char_starts: array[int]  # chars before block k (only when not ascii)
    line_starts: array[int]  # newlines before block k

    # -- building -------------------------------------------------------------------------------------
    @classmethod
    def build(cls, data: Encoded, *, is_ascii: bool | None = None) -> ContentIndex:
        """`is_ascii`: whether `data` is all ASCII, when the caller knows (a `str`'s `isascii()` is free; the
        bytes' is a pass over them)."""
        size = len(data)
        if is_ascii is None:
            is_ascii = (data if isinstance(data, bytes) else data[:]).isascii()
        char_starts = array("Q")
        newlines, line_starts = _newlines(data)
        chars = 0
        if is_ascii:
            chars = size
        else:
            for start in range(0, size, BLOCK):
                char_starts.append(chars)
                chars += _count_chars(data[start : start + BLOCK])
        lines = newlines + (1 if size and data[size - 1 :] != b"\n" else 0)
        return cls(size, chars, lines, is_ascii, char_starts, line_starts)

    @classmethod
    def for_blob(cls, size: int) -> ContentIndex:
        """Binary content has bytes only: no characters or lines to index."""
        return cls(size, size, 0, True, array("Q"), array("Q"))

    # -- (de)serialisation -----------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        head = _HEADER.pack(self.size, self.chars, self.lines, len(self.line_starts), self.ascii)
        return _MAGIC + head + self.line_starts.tobytes() + self.char_starts.tobytes()

    @classmethod
    def from_bytes(cls, raw: bytes) -> ContentIndex:
        if not raw.startswith(_MAGIC):
            raise ValueError("not a content index")
        offset = len(_MAGIC)
        size, chars, lines, blocks, is_ascii = _HEADER.unpack_from(raw, offset)
        offset += _HEADER.size
        line_starts = array("Q")
        line_starts.frombytes(raw[offset : offset + 8 * blocks])
        offset += 8 * blocks
        char_starts = array("Q")
        if not is_ascii:
            char_starts.frombytes(raw[offset : offset + 8 * blocks])
            offset += 8 * blocks
        if offset != len(raw) or len(line_starts) != blocks or (not is_ascii and len(char_starts) != blocks):
            raise ValueError("truncated content index")
        return cls(size, chars, lines, bool(is_ascii), char_starts, line_starts)

    # -- lookups (data is the stored bytes: bytes or an mmap) -------------------------------------------
    def byte_of_char(self, data: ByteSource, char: int) -> int:
        """Byte offset where 0-based character `char` starts (`char == self.chars` gives `size`)."""
        if char <= 0:
            return 0
        if char >= self.chars:
            return self.size
        if self.ascii:
            return char
        k = bisect_right(self.char_starts, char) - 1
        start = k * BLOCK
        skip = char - self.char_starts[k]
        segment = bytes(data[start : start + BLOCK + 4])
        # Leading continuation bytes belong to a character counted in the previous block.
        lead = 0
        while lead < len(segment) and 0x80 <= segment[lead] < 0xC0:
            lead += 1
        # The segment may end inside a character: an incremental decoder keeps that tail pending.
        text = codecs.getincrementaldecoder("utf-8")("surrogatepass").decode(segment[lead:]) if skip else ""
        return start + lead + len(text[:skip].encode("utf-8", "surrogatepass"))

    def char_of_byte(self, data: ByteSource, pos: int) -> int:
        """Characters before byte offset `pos` (which must be a character boundary)."""
        if self.ascii or pos <= 0:
            return max(pos, 0) if self.ascii else 0
        k = min(pos // BLOCK, len(self.char_starts) - 1)
        return self.char_starts[k] + _count_chars(bytes(data[k * BLOCK : pos]))

    def byte_of_line(self, data: ByteSource, line: int) -> int:
        """Byte offset where 1-based `line` starts (`line == lines + 1` gives `size`)."""
        wanted = line - 1  # newlines that precede the line
        if wanted <= 0:
            return 0
        if line > self.lines:
            return self.size
        k = bisect_left(self.line_starts, wanted) - 1  # last block with fewer than `wanted` newlines before it
        start = k * BLOCK
        need = wanted - self.line_starts[k]
        segment = bytes(data[start : start + BLOCK])
        parts = segment.split(b"\n", need)
        return start + sum(len(p) for p in parts[:need]) + need

    def checkpoint(self, pos: int) -> tuple[int, int, int]:
        """The last checkpoint at or before byte `pos`: (its byte offset, newlines before it, characters before it).
        At most `BLOCK` bytes lie between it and `pos` (the last block may run to `size`)."""
        k = min(max(pos, 0) // BLOCK, len(self.line_starts) - 1)
        if k < 0:  # empty content: no checkpoints
            return 0, 0, 0
        start = k * BLOCK
        return start, self.line_starts[k], start if self.ascii else self.char_starts[k]

    def newlines_before_char(self, data: ByteSource, char: int) -> int:
        """Newlines among the first `char` characters (0-based character offset `char`)."""
        return self.line_of_byte(data, char if self.ascii else self.byte_of_char(data, char)) - 1

    def line_of_byte(self, data: ByteSource, pos: int) -> int:
        """1-based line number that contains byte offset `pos`."""
        if pos <= 0:
            return 1
        k = min(pos // BLOCK, len(self.line_starts) - 1)
        return self.line_starts[k] + bytes(data[k * BLOCK : pos]).count(b"\n") + 1
