"""unicode.py: surrogates replaced one for one, UTF-8 continuation bytes, prefix decoding that keeps surrogates."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_offload.unicode import (
    CONTINUATION_BYTES,
    decode_utf8_prefix,
    encodes_as_utf8,
    is_continuation_byte,
    replace_surrogates,
    splits_surrogate_pair,
    utf8_length,
)

ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=40)  # lone surrogates included


def test_replace_surrogates_keeps_length_and_other_text() -> None:
    assert replace_surrogates("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert replace_surrogates("\ud83d\ude00") == "\ufffd\ufffd"  # a pair in a str is two code points
    text = "héllo 😀"
    assert replace_surrogates(text) is text
    assert (encodes_as_utf8("ok é"), encodes_as_utf8("x\udc00")) == (True, False)


@given(text=ANY_TEXT)
def test_replaced_text_is_sendable_and_aligned(text: str) -> None:
    out = replace_surrogates(text)
    assert len(out) == len(text)
    out.encode("utf-8")
    assert encodes_as_utf8(out)
    assert all(a == b or b == "\ufffd" for a, b in zip(text, out, strict=True))


def test_continuation_bytes() -> None:
    assert bytes(b for b in range(256) if is_continuation_byte(b)) == CONTINUATION_BYTES
    raw = "aé€😀".encode()
    assert [is_continuation_byte(b) for b in raw] == [False, False, True, False, True, True, False, True, True, True]
    assert len(raw.translate(None, CONTINUATION_BYTES)) == 4  # characters = lead bytes


@pytest.mark.parametrize(
    ("text", "cuts"),
    [
        ("a€", ["", "a", "a", "a", "a€"]),
        ("x\ud800", ["", "x", "x", "x", "x\ud800"]),  # a lone surrogate's 3 surrogatepass bytes
        ("😀", ["", "", "", "", "😀"]),
    ],
)
def test_decode_utf8_prefix_drops_only_the_incomplete_tail(text: str, cuts: list[str]) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    assert [decode_utf8_prefix(raw[:n]) for n in range(len(raw) + 1)] == cuts


@given(text=ANY_TEXT, data=st.data())
def test_decode_utf8_prefix_is_the_longest_whole_character_prefix(text: str, data: st.DataObject) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    n = data.draw(st.integers(0, len(raw)))
    got = decode_utf8_prefix(raw[:n])
    assert text.startswith(got)
    assert utf8_length(got) <= n < utf8_length(text[: len(got) + 1]) or got == text


def test_decode_utf8_prefix_rejects_bytes_that_are_not_utf8() -> None:
    with pytest.raises(UnicodeDecodeError):
        decode_utf8_prefix(b"a\xffb")


def test_splits_surrogate_pair_and_utf8_length() -> None:
    text = "a\ud83d\ude00b"
    assert [splits_surrogate_pair(text, k) for k in range(len(text) + 1)] == [False, False, True, False, False]
    assert not splits_surrogate_pair("\ude00\ud83d", 1)  # low then high: not a pair
    assert [utf8_length(t) for t in ("abc", "é", "😀", "\ud800", "")] == [3, 2, 4, 3, 0]
