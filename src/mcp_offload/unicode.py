"""Exact text ⇄ UTF-8 bytes: the few rules every module that slices, counts or sends text must agree on.

Stored outputs keep lone surrogates (a Python str may hold them; they are encoded with "surrogatepass"), but UTF-8
on the wire cannot carry them, and tokenizers refuse them: `replace_surrogates` shows each as U+FFFD, one code point
for one, so character offsets stay the same. Byte positions into stored UTF-8 are moved to character boundaries with
`is_continuation_byte` / `CONTINUATION_BYTES`, and a byte slice that may end inside a character is decoded with
`decode_utf8_prefix`, which keeps lone surrogates and drops the incomplete tail.
"""

from __future__ import annotations

import codecs
import re

__all__ = [
    "CONTINUATION_BYTES",
    "decode_utf8_prefix",
    "encodes_as_utf8",
    "is_continuation_byte",
    "replace_surrogates",
    "splits_surrogate_pair",
    "utf8_length",
]

_SURROGATE = re.compile("[\ud800-\udfff]")
# UTF-8 continuation bytes (10xxxxxx): every byte of a character but its first.
CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
_UTF8_DECODER = codecs.getincrementaldecoder("utf-8")  # looked up once, not per call


def encodes_as_utf8(text: str) -> bool:
    """Whether `text` holds no surrogate code point, i.e. can go over the wire (and into re2, jq, tiktoken) as is."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def replace_surrogates(text: str) -> str:
    """`text` with each surrogate code point shown as U+FFFD (same length): sendable as UTF-8, tokenizable."""
    if encodes_as_utf8(text):
        return text
    return _SURROGATE.sub("\ufffd", text)


def splits_surrogate_pair(text: str, pos: int) -> bool:
    """Whether cutting `text` at `pos` would separate the two halves of a surrogate pair."""
    return 0 < pos < len(text) and "\ud800" <= text[pos - 1] <= "\udbff" and "\udc00" <= text[pos] <= "\udfff"


def utf8_length(text: str) -> int:
    """Bytes of `text` in UTF-8, lone surrogates included (3 bytes each, as stored)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def is_continuation_byte(byte: int) -> bool:
    """Whether a UTF-8 byte continues a character (so a position holding it is not a character boundary)."""
    return 0x80 <= byte < 0xC0


def decode_utf8_prefix(raw: bytes) -> str:
    """Decode UTF-8 that starts at a character boundary and may end inside one: lone surrogates are kept, the
    incomplete last character is dropped. Raises UnicodeDecodeError for bytes that are not such UTF-8."""
    if raw.isascii():  # the common case, and ~5x cheaper than building a decoder
        return raw.decode("ascii")
    return _UTF8_DECODER("surrogatepass").decode(raw)
