"""Exact slices by character or line range, capped in tokens, in O(range) via the offload-time index."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_offload.errors import InvalidContent, RangeError
from mcp_offload.store.base import StoredOutput
from mcp_offload.tokens import TokenCounter
from mcp_offload.unicode import decode_utf8_prefix

# Fetch at most this many bytes per allowed token before cutting by tokens: no real tokenizer packs more
# than this (o200k tops out at 128 bytes) into one token, and the cap keeps a huge request from pulling
# megabytes into memory.
BYTES_PER_TOKEN_CEILING = 128


@dataclass(frozen=True, slots=True)
class ReadResult:
    text: str
    mode: str  # "chars" | "lines"
    start: int  # 1-based inclusive, in the mode's unit
    end: int  # 1-based inclusive (start - 1 when nothing was returned)
    total: int  # total chars or lines of the output
    tokens: int
    truncated: bool  # the request was cut to fit the token cap
    next_start: int | None  # where to continue (same unit), None when the request was fully served
    note: str | None = None
    # the rest of the range: read it with (next_start, next_end) in `next_mode` (lines, or chars when one line alone
    # was over the cap: the rest of that line and of the range, by characters); reading it rebuilds the range exactly
    next_end: int | None = None
    next_mode: str | None = None


def read_range(
    output: StoredOutput,
    *,
    start: int | None = None,
    end: int | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
    max_tokens: int,
    counter: TokenCounter,
    max_bytes: int | None = None,
) -> ReadResult:
    """The range, cut at `max_tokens` tokens and (when given) `max_bytes` bytes of UTF-8; a cut result says where
    the rest of the range starts and ends (`next_start`, `next_end`, `next_mode`)."""
    meta, index = output.meta, output.index
    if meta.kind == "blob":
        raise InvalidContent(
            f"{meta.handle} is binary ({meta.mime_type or 'application/octet-stream'}, {meta.size:,} bytes) and has "
            f"no text to read; fetch it whole as the resource offload://outputs/{meta.handle}."
        )
    by_lines = start_line is not None or end_line is not None
    if by_lines and (start is not None or end is not None):
        raise RangeError("give either start/end (characters) or start_line/end_line (lines), not both.")
    unit, total = ("lines", index.lines) if by_lines else ("chars", index.chars)
    given = start_line if by_lines else start
    first = 1 if given is None else given
    last = end_line if by_lines else end
    if first < 1:
        raise RangeError(f"positions are 1-based: use {'start_line' if by_lines else 'start'}=1 for the beginning.")
    if first > total:
        raise RangeError(f"{meta.handle} has {total:,} {unit}; {first:,} is past the end.")
    note = None
    if last is None:
        last = total
    elif last < first:
        raise RangeError(f"the range is reversed ({first:,} > {last:,}); the end must be >= the start.")
    elif last > total:
        note = f"end {last:,} is past the end; read through {total:,}, the last of {total:,} {unit}."
        last = total

    data = output.data
    if by_lines:
        b0, b1 = index.byte_of_line(data, first), index.byte_of_line(data, last + 1)
    else:
        b0, b1 = index.byte_of_char(data, first - 1), index.byte_of_char(data, last)
    fetch_end = min(b1, b0 + max_tokens * BYTES_PER_TOKEN_CEILING)
    if max_bytes is not None:
        fetch_end = min(fetch_end, b0 + max(max_bytes, 1))
    text = decode_utf8_prefix(output.read_bytes(b0, fetch_end))
    cut = fetch_end < b1
    prefix, tokens = counter.truncate(text, max_tokens)
    if len(prefix) < len(text):
        cut = True
        text = prefix
    if not cut:
        return ReadResult(text, unit, first, last, total, tokens, False, None, note)

    if by_lines:
        complete = text.rfind("\n") + 1  # keep whole lines only
        if complete:
            text = text[:complete]
            got = text.count("\n")
            tokens = counter.count(text)
            return ReadResult(text, unit, first, first + got - 1, total, tokens, True, first + got, note, last, unit)
        # A single line longer than the cap: hand back its start and continue by characters to the range's end.
        char0 = index.char_of_byte(data, b0) + 1
        char_end = index.char_of_byte(data, b1)  # the range's last character (its last line's newline included)
        tokens = counter.count(text)
        note = f"line {first:,} alone is over the cap; returned its first {len(text):,} chars"
        return ReadResult(text, unit, first, first, total, tokens, True, char0 + len(text), note, char_end, "chars")
    got_end = first + len(text) - 1
    return ReadResult(text, unit, first, got_end, total, tokens, True, got_end + 1, note, last, unit)
