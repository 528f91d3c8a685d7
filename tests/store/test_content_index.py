"""The offload-time index: char ↔ byte and line ↔ byte lookups, checked against a naive oracle on the same text
(ASCII, multi-byte UTF-8, lone surrogates, CRLF, empty lines, no final newline, content across several blocks),
the serialised form, and blobs."""

from __future__ import annotations

import random
from dataclasses import dataclass
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_offload.store import content_index
from mcp_offload.store.content_index import BLOCK, ContentIndex

CONTINUATION = bytes(range(0x80, 0xC0))
SMALL_CHUNK = 4 * BLOCK  # the newline search's chunk in the property test (content_index._NEWLINE_CHUNK)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class Oracle:
    """The answers computed the slow, obvious way from the text itself."""

    text: str

    @property
    def data(self) -> bytes:
        return _encode(self.text)

    def byte_of_char(self, char: int) -> int:
        return len(_encode(self.text[: max(char, 0)]))

    def char_of_byte(self, pos: int) -> int:
        return len(self.data[: max(pos, 0)].decode("utf-8", "surrogatepass"))

    def byte_of_line(self, line: int) -> int:
        """Byte where 1-based `line` starts: after its (line-1)th newline; past the last line: the size."""
        starts = [0] + [i + 1 for i, b in enumerate(self.data) if b == 0x0A]
        return starts[line - 1] if 1 <= line <= len(starts) else (0 if line < 1 else len(self.data))

    def line_of_byte(self, pos: int) -> int:
        return self.data[: max(pos, 0)].count(b"\n") + 1

    @property
    def lines(self) -> int:
        return self.text.count("\n") + (1 if self.text and not self.text.endswith("\n") else 0)


def check(text: str, chars: list[int] | None = None, lines: list[int] | None = None) -> ContentIndex:
    """Every lookup at the given positions (all of them by default) equals the oracle's answer."""
    oracle = Oracle(text)
    data = oracle.data
    index = ContentIndex.build(data)
    assert (index.size, index.chars, index.lines) == (len(data), len(text), oracle.lines)
    assert index.ascii is text.isascii()
    for char in range(len(text) + 1) if chars is None else chars:
        pos = index.byte_of_char(data, char)
        assert pos == oracle.byte_of_char(char), char
        assert index.char_of_byte(data, pos) == oracle.char_of_byte(pos) == min(max(char, 0), len(text)), char
        assert index.line_of_byte(data, pos) == oracle.line_of_byte(pos), pos
        base, newlines, leads = index.checkpoint(pos)  # base may fall inside a character: leads are lead bytes
        assert 0 <= pos - base <= BLOCK and base % BLOCK == 0, pos
        assert (newlines, leads) == (data[:base].count(b"\n"), len(data[:base].translate(None, CONTINUATION))), pos
    for line in range(0, oracle.lines + 3) if lines is None else lines:
        pos = index.byte_of_line(data, line)
        assert pos == oracle.byte_of_line(line), line
    assert ContentIndex.from_bytes(index.to_bytes()) == index
    return index


@pytest.mark.parametrize(
    "text",
    [
        "hello\nworld\n",  # ASCII
        "no final newline\nlast",
        "\n\n\nthree empty lines, then text\n\n",
        "windows\r\nline endings\r\n\r\nend",  # "\r" stays part of its line
        "é€😀 mixed widths\nÜber ∑ 中文\n😀😀\n",  # 2-, 3- and 4-byte characters
        "lone \ud800 high and \udfff low surrogates\n\ud83d\n",  # kept with surrogatepass
        "\r",
        "\n",
        "x",
        "😀",
    ],
)
def test_lookups_match_the_oracle(text: str) -> None:
    check(text)


def test_the_worked_examples() -> None:
    text = "a\r\nbé\n\nc"
    data = _encode(text)
    index = ContentIndex.build(data)
    assert (index.size, index.chars, index.lines, index.ascii) == (9, 8, 4, False)
    assert [index.byte_of_line(data, n) for n in range(1, 6)] == [0, 3, 7, 8, 9]
    assert [index.byte_of_char(data, c) for c in (0, 3, 4, 5, 6, 8, 9)] == [0, 3, 4, 6, 7, 9, 9]
    assert index.line_of_byte(data, 2) == 1  # the "\r" belongs to line 1
    assert index.line_of_byte(data, 3) == 2
    assert index.char_of_byte(data, 6) == 5  # after "é" (two bytes)
    assert index.byte_of_char(data, -5) == 0 and index.byte_of_line(data, 0) == 0
    assert index.line_of_byte(data, 0) == 1 and index.char_of_byte(data, -1) == 0


def test_empty_content() -> None:
    index = check("")
    assert (index.size, index.chars, index.lines, index.ascii) == (0, 0, 0, True)
    assert index.byte_of_line(b"", 1) == 0 and index.byte_of_char(b"", 0) == 0 and index.line_of_byte(b"", 0) == 1


def test_ascii_keeps_no_char_checkpoints() -> None:
    index = ContentIndex.build(b"x\n" * BLOCK)  # two blocks
    assert index.ascii and len(index.char_starts) == 0 and list(index.line_starts) == [0, BLOCK // 2]
    assert index.byte_of_char(b"", 1234) == 1234  # ASCII: no data needed at all
    assert index.char_of_byte(b"", 99) == 99


def _boundary_positions(data: bytes, text: str, around: int = 6) -> tuple[list[int], list[int]]:
    """Characters and lines whose start lies within `around` bytes of a block boundary."""
    char_starts, lines, offset, line = [], [], 0, 1
    near = {b + d for b in range(0, len(data) + BLOCK, BLOCK) for d in range(-around, around + 1)}
    for i, ch in enumerate(text):
        if offset in near:
            char_starts.append(i)
        if ch == "\n" and offset + 1 in near:
            lines.append(line + 1)
        offset += len(_encode(ch))
        line += ch == "\n"
    return [*char_starts, len(text)], [1, *lines, line, line + 1]


@pytest.mark.parametrize("width", ["a", "é", "€", "😀", "\udc80"])
@pytest.mark.parametrize("shift", [0, 1, 2, 3])
def test_characters_straddling_block_boundaries(width: str, shift: int) -> None:
    """Content across five blocks, with a multi-byte character cut by each boundary at every possible offset."""
    piece = "b" * (BLOCK - shift - 1) + width + "\n"
    text = (piece * 5) + "tail"
    data = _encode(text)
    assert len(data) > 4 * BLOCK
    chars, lines = _boundary_positions(data, text)
    rng = random.Random(shift)
    chars += rng.sample(range(len(text)), 40)
    index = check(text, chars=chars, lines=lines)
    assert len(index.line_starts) == -(-len(data) // BLOCK)
    assert list(index.line_starts) == [data[: k * BLOCK].count(b"\n") for k in range(len(index.line_starts))]


def test_many_short_lines_across_blocks() -> None:
    text = "".join(f"{'é' * (n % 7)}line {n}\n" + ("\n" if n % 5 == 0 else "") for n in range(6000))
    data = _encode(text)
    assert len(data) > 5 * BLOCK
    rng = random.Random(7)
    index = check(text, chars=rng.sample(range(len(text) + 1), 300), lines=rng.sample(range(1, 7300), 300))
    assert index.lines == text.count("\n")


def test_serialised_form_rejects_foreign_and_truncated_bytes() -> None:
    raw = ContentIndex.build(_encode("é" * BLOCK)).to_bytes()
    assert ContentIndex.from_bytes(raw) == ContentIndex.build(_encode("é" * BLOCK))
    with pytest.raises(ValueError, match="not a content index"):
        ContentIndex.from_bytes(b"JUNK" + raw)
    with pytest.raises(ValueError, match="truncated content index"):
        ContentIndex.from_bytes(raw[:-8])  # one checkpoint short
    with pytest.raises(ValueError):  # cut inside a checkpoint (the array itself refuses it)
        ContentIndex.from_bytes(raw[:-1])
    with pytest.raises(ValueError, match="truncated content index"):
        ContentIndex.from_bytes(raw + b"\0")


def test_blobs_have_bytes_only() -> None:
    blob = ContentIndex.for_blob(12_345)
    assert (blob.size, blob.chars, blob.lines, blob.ascii) == (12_345, 12_345, 0, True)
    assert len(blob.line_starts) == 0 and len(blob.char_starts) == 0
    assert ContentIndex.from_bytes(blob.to_bytes()) == blob


CHARS = st.one_of(
    st.characters(),  # any code point but surrogates
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=()),  # lone surrogates
    st.sampled_from(["\n", "\r", "a", "é", "€", "😀"]),  # "\r" then "\n": CRLF
)


@settings(max_examples=300, deadline=None)
@given(text=st.text(CHARS, max_size=200))
def test_random_unicode_matches_the_oracle(text: str) -> None:
    check(text)


@settings(max_examples=40, deadline=None)
@given(piece=st.text(CHARS, min_size=1, max_size=12), pad=st.integers(BLOCK - 40, BLOCK + 4), data=st.data())
def test_random_unicode_across_blocks_matches_the_oracle(piece: str, pad: int, data: st.DataObject) -> None:
    text = ("z" * pad + piece) * 3
    encoded = _encode(text)
    chars, lines = _boundary_positions(encoded, text, around=16)
    chars += data.draw(st.lists(st.integers(-2, len(text) + 2), max_size=20))
    check(text, chars=chars, lines=lines)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 3 * BLOCK + 7),
    st.lists(st.integers(0, 3 * BLOCK + 6), max_size=300),
    st.sampled_from([0, SMALL_CHUNK - 2 * BLOCK, SMALL_CHUNK - 5]),  # no chunk edge, one in the middle, near the start
)
def test_newline_checkpoints_are_the_newlines_before_each_block(size: int, at: list[int], pad: int) -> None:
    """The newlines' offsets are found with numpy: every checkpoint is still the count of b"\\n" before its block
    (block edges, a newline as the first or last byte, a search-chunk edge crossed: the chunk is made 4 blocks here
    so that each example is kilobytes, not 4 MiB; the real chunk's edge is the next test's)."""
    data = bytearray(b"x" * (pad + size))
    for i in at:
        if i < size:
            data[pad + i] = 10
    raw = bytes(data)
    with mock.patch.object(content_index, "_NEWLINE_CHUNK", SMALL_CHUNK):
        index = ContentIndex.build(raw)
    assert list(index.line_starts) == [raw.count(b"\n", 0, s) for s in range(0, len(raw), BLOCK)]
    assert index.lines == raw.count(b"\n") + (1 if raw and not raw.endswith(b"\n") else 0)


def test_newline_checkpoints_across_the_real_search_chunk_edge() -> None:
    chunk = content_index._NEWLINE_CHUNK
    raw = bytearray(b"x" * (chunk + 3 * BLOCK))
    for i in (0, BLOCK - 1, chunk - BLOCK, chunk - 1, chunk, chunk + 1, chunk + BLOCK, len(raw) - 1):
        raw[i] = 10
    index = ContentIndex.build(bytes(raw))
    assert list(index.line_starts) == [raw.count(b"\n", 0, s) for s in range(0, len(raw), BLOCK)]
    assert index.lines == raw.count(b"\n")
